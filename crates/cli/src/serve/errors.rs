//! A refused or failed request: its status and the JSON body the client
//! gets. A 4xx names the field or limit, what was expected and what was
//! found, and nothing of the machine (no path, no type name, no trace); a
//! 5xx says what failed in general terms plus an id, and the id and the
//! details go to the server's log line only.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};

/// Which bound a rejection counts against in `/stats` (`rejected`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rejected {
    QueueFull,
    Deadline,
    SlowBody,
}

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    /// What the client reads in `{"error": ...}`.
    pub message: String,
    /// 5xx: what the log line says beside the id (never sent).
    pub detail: Option<String>,
    pub rejected: Option<Rejected>,
    /// 405: the method the path takes.
    pub allow: Option<&'static str>,
    /// The body was not read to its end (413, 408, 415): the connection
    /// cannot carry another request, so the answer closes it.
    pub close: bool,
}

impl ApiError {
    fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            message: message.into(),
            detail: None,
            rejected: None,
            allow: None,
            close: false,
        }
    }

    /// 400: the request is malformed or asks what the target cannot give.
    pub fn bad(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, message)
    }

    /// 413: a bound on the request's size or work.
    pub fn too_large(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, message)
    }

    /// 403: the server does not take this request at all (`--read-only`).
    pub fn forbidden(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::FORBIDDEN, message)
    }

    /// 409: the request conflicts with the target's state (another
    /// process holds its writer lock).
    pub fn conflict(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::CONFLICT, message)
    }

    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, message)
    }

    pub fn method(message: impl Into<String>, allow: &'static str) -> ApiError {
        ApiError {
            allow: Some(allow),
            ..ApiError::new(StatusCode::METHOD_NOT_ALLOWED, message)
        }
    }

    pub fn media_type(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNSUPPORTED_MEDIA_TYPE, message).closing()
    }

    pub fn slow_body(message: impl Into<String>) -> ApiError {
        ApiError {
            rejected: Some(Rejected::SlowBody),
            ..ApiError::new(StatusCode::REQUEST_TIMEOUT, message).closing()
        }
    }

    /// 503 with Retry-After: every slot and every queue place is taken.
    pub fn busy(message: impl Into<String>) -> ApiError {
        ApiError {
            rejected: Some(Rejected::QueueFull),
            ..ApiError::new(StatusCode::SERVICE_UNAVAILABLE, message)
        }
    }

    /// 503 without Retry-After's promise: the server is stopping.
    pub fn stopping(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, message)
    }

    pub fn deadline(message: impl Into<String>) -> ApiError {
        ApiError {
            rejected: Some(Rejected::Deadline),
            ..ApiError::new(StatusCode::GATEWAY_TIMEOUT, message)
        }
    }

    /// 500: the server's fault; `detail` is logged, never sent.
    pub fn internal(detail: impl Into<String>) -> ApiError {
        ApiError {
            detail: Some(detail.into()),
            ..ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal error")
        }
    }

    /// The answer closes the connection (its body was left unread).
    pub fn closing(mut self) -> ApiError {
        self.close = true;
        self
    }

    /// The response, and for a 5xx the id its log line carries.
    pub fn into_response_with_id(self) -> (Response, Option<String>) {
        let (body, id) = if self.status.is_server_error() {
            let id = new_id();
            let message = if self.status == StatusCode::INTERNAL_SERVER_ERROR {
                format!("{} (id {id})", self.message)
            } else {
                self.message
            };
            (serde_json::json!({"error": message, "id": id}), Some(id))
        } else {
            (serde_json::json!({"error": self.message}), None)
        };
        let mut r = json_response(self.status, &body);
        let h = r.headers_mut();
        if let Some(allow) = self.allow {
            h.insert(header::ALLOW, HeaderValue::from_static(allow));
        }
        if self.rejected == Some(Rejected::QueueFull) {
            h.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        if self.close {
            h.insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        (r, id)
    }
}

/// A JSON answer with its status.
pub fn json_response(status: StatusCode, doc: &serde_json::Value) -> Response {
    json_bytes(status, serde_json::to_vec(doc).unwrap_or_default())
}

/// Serialised JSON bytes as an answer with its status.
pub fn json_bytes(status: StatusCode, body: Vec<u8>) -> Response {
    let mut r = (status, body).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// An id for a 5xx: 16 hex digits, unpredictable (std's random hash keys
/// over a counter), so ids do not reveal how many requests came before.
pub fn new_id() -> String {
    static KEYS: std::sync::OnceLock<RandomState> = std::sync::OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("{:016x}", KEYS.get_or_init(RandomState::new).hash_one(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_differ_and_are_16_hex_digits() {
        let (a, b) = (new_id(), new_id());
        assert_ne!(a, b);
        assert!(
            a.len() == 16 && a.chars().all(|c| c.is_ascii_hexdigit()),
            "{a}"
        );
    }

    #[test]
    fn a_500_carries_an_id_and_no_detail() {
        let (r, id) = ApiError::internal("read /secret/path: EIO").into_response_with_id();
        assert_eq!(r.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert!(id.is_some());
    }

    #[test]
    fn a_503_says_when_to_retry_and_a_405_what_is_allowed() {
        let (r, _) = ApiError::busy("server busy").into_response_with_id();
        assert_eq!(r.headers()[header::RETRY_AFTER], "1");
        let (r, id) = ApiError::method("no", "GET").into_response_with_id();
        assert_eq!(r.headers()[header::ALLOW], "GET");
        assert!(id.is_none());
    }
}
