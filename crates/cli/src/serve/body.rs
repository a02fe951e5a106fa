//! Reading a request's body within its bounds: at most `max_body_bytes`
//! (413 by Content-Length before reading, or as soon as more arrives) and
//! by `body_timeout_s` from when the request's headers arrived (408), so a
//! client that sends slowly, or declares more than it sends, holds a
//! connection for a bounded time and never a search slot.

use super::errors::ApiError;
use super::limits::{secs, Limits};
use axum::body::{Body, HttpBody};
use axum::http::{header, HeaderMap};
use std::pin::Pin;
use tokio::time::Instant;

/// The whole body, or the 4xx that says which bound it broke.
pub async fn read_body(
    mut body: Body,
    headers: &HeaderMap,
    limits: &Limits,
    started: Instant,
) -> Result<Vec<u8>, ApiError> {
    let max = limits.max_body_bytes;
    let declared = match headers.get(header::CONTENT_LENGTH) {
        None => None,
        Some(v) => {
            let text = String::from_utf8_lossy(v.as_bytes());
            match text.trim().parse::<u64>() {
                Ok(n) => Some(n),
                Err(_) => {
                    return Err(ApiError::bad(format!(
                        "Content-Length: expected an integer, found '{text}'"
                    ))
                    .closing())
                }
            }
        }
    };
    if let Some(n) = declared.filter(|&n| n > max as u64) {
        return Err(ApiError::too_large(format!(
            "body: expected at most {max} bytes (max_body_bytes), found Content-Length {n}"
        ))
        .closing());
    }
    let deadline = started + limits.body_timeout;
    let mut buf = Vec::with_capacity(declared.unwrap_or(0) as usize);
    loop {
        let frame = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx));
        match tokio::time::timeout_at(deadline, frame).await {
            Err(_) => {
                let of = declared.map_or("a body of no declared length".to_string(), |n| {
                    n.to_string()
                });
                let s = secs(limits.body_timeout);
                return Err(ApiError::slow_body(format!(
                    "body: expected the whole body within {s} s (body_timeout_s), found {} bytes of {of} after {s} s",
                    buf.len()
                )));
            }
            Ok(None) => return Ok(buf),
            Ok(Some(Err(e))) => {
                return Err(ApiError::bad(format!(
                    "body: expected the whole body, found a broken stream ({e})"
                ))
                .closing())
            }
            Ok(Some(Ok(frame))) => {
                if let Ok(data) = frame.into_data() {
                    if buf.len() + data.len() > max {
                        return Err(ApiError::too_large(format!(
                            "body: expected at most {max} bytes (max_body_bytes), found more"
                        ))
                        .closing());
                    }
                    buf.extend_from_slice(&data);
                }
            }
        }
    }
}
