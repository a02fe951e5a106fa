//! `POST /insert` and `POST /delete` (issue #55): a batch of writes, logged
//! and fsynced by the index before the answer says so. A write goes the
//! way a search does — method, Content-Type (JSON only), body bounds,
//! parsing (`write_request`), a slot (`admission`) — then runs on a
//! blocking thread to its end: a write is never abandoned half-way, so it
//! has no deadline once admitted (a write that fills the delta merges
//! before it answers, which may take as long as a build).
//!
//! 400 for a batch the index refuses (its message names the row and the
//! value), 403 on a `--read-only` server, 409 while another process holds
//! the index's writer lock, 500 (with an id) for what failed otherwise. A
//! collection routes each write to its segments (`collection::update`).

use super::body::read_body;
use super::errors::{json_response, ApiError};
use super::request::{media, Media};
use super::routes::{finish, only, Note, PARSE_INLINE_BYTES};
use super::write_request::{parse_delete, parse_insert, WriteRequest};
use super::App;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::response::Response;
use serde_json::json;
use std::sync::Arc;
use stratavec::update::live::Applied;
use tokio::time::Instant;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Insert,
    Delete,
}

pub async fn insert(State(app): State<Arc<App>>, req: Request) -> Response {
    write(app, req, Kind::Insert).await
}

pub async fn delete(State(app): State<Arc<App>>, req: Request) -> Response {
    write(app, req, Kind::Delete).await
}

async fn write(app: Arc<App>, req: Request, kind: Kind) -> Response {
    let t0 = Instant::now();
    let (method, path) = (req.method().clone(), req.uri().path().to_string());
    let out = match only(&method, Method::POST, &path, "POST") {
        Ok(()) => run_write(&app, req, kind, t0).await,
        Err(e) => Err(e),
    };
    finish(&app, &method, &path, t0, out)
}

async fn run_write(
    app: &Arc<App>,
    req: Request,
    kind: Kind,
    t0: Instant,
) -> Result<(Response, Note), ApiError> {
    let name = match kind {
        Kind::Insert => "insert",
        Kind::Delete => "delete",
    };
    if app.read_only {
        return Err(ApiError::forbidden(format!(
            "{name}: this server is read-only (started with --read-only)"
        )));
    }
    let (parts, body) = req.into_parts();
    if media(parts.headers.get(axum::http::header::CONTENT_TYPE))? != Media::Json {
        return Err(ApiError::media_type(format!(
            "Content-Type: expected application/json for /{name}, found application/octet-stream"
        )));
    }
    if let Some(q) = parts.uri.query().filter(|q| !q.is_empty()) {
        return Err(ApiError::bad(format!(
            "query string: expected none for /{name} (give everything in the JSON body), found {} bytes",
            q.len()
        )));
    }
    let bytes = read_body(body, &parts.headers, &app.limits, t0).await?;
    app.stats.body(bytes.len());
    let inline = bytes.len() <= PARSE_INLINE_BYTES;
    let parse = {
        let a = app.clone();
        move || match kind {
            Kind::Insert => parse_insert(&bytes, &a.shape, &a.limits),
            Kind::Delete => parse_delete(&bytes),
        }
    };
    let parsed = if inline {
        parse()
    } else {
        tokio::task::spawn_blocking(parse)
            .await
            .map_err(|e| ApiError::internal(format!("request parser panicked: {e}")))?
    }?;
    let deadline = Instant::now() + app.limits.search_timeout;
    let permit = app
        .admission
        .admit(deadline, app.limits.search_timeout)
        .await?;
    let a = app.clone();
    let done = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        match parsed {
            WriteRequest::Insert {
                vectors,
                ids,
                labels,
                batch,
                ..
            } => a
                .target
                .insert(&vectors, ids.as_deref(), &labels, batch)
                .map(|r| (r, ids.is_none())),
            WriteRequest::Delete { ids, batch } => a.target.delete(&ids, batch).map(|r| (r, false)),
        }
    })
    .await
    .map_err(|e| ApiError::internal(format!("{name} panicked: {e}")))?;
    let (applied, given_ids) = done.map_err(|e| refused(name, e))?;
    // A retried batch was answered again, not applied: it adds no vectors.
    let applied_now = if applied.repeated { 0 } else { applied.count };
    app.stats.wrote(kind == Kind::Insert, applied_now);
    let doc = match kind {
        Kind::Insert => inserted(&applied, given_ids),
        Kind::Delete => json!({
            "deleted": applied.count,
            "missing": applied.missing,
            "seq": applied.seq,
            "repeated": applied.repeated,
        }),
    };
    Ok((json_response(StatusCode::OK, &doc), Note::default()))
}

/// The answer to an insert; the ids the index gave when the request gave
/// none (consecutive from the batch's first).
fn inserted(a: &Applied, gave_ids: bool) -> serde_json::Value {
    let mut doc = json!({
        "inserted": a.count,
        "seq": a.seq,
        "repeated": a.repeated,
    });
    if gave_ids {
        let ids: Vec<i64> = (0..a.count as i64).map(|i| a.first_id + i).collect();
        doc["ids"] = json!(ids);
    }
    doc
}

/// The engine's refusal as the client's status: a bad batch is 400 (its
/// message names the row and value, nothing of the machine), another
/// writer 409, anything else 500 with the details in the log only.
fn refused(name: &str, e: anyhow::Error) -> ApiError {
    use stratavec::error::Error;
    match e.downcast_ref::<Error>() {
        Some(Error::Argument { .. }) => ApiError::bad(format!("{name}: {e}")),
        Some(Error::Index { found, .. })
            if found.contains("held by") || found.contains("rebuilt or merged") =>
        {
            ApiError::conflict(format!(
                "{name}: another process is writing this index or has rebuilt it since the \
                 server opened it; try again, or restart the server on the new index"
            ))
        }
        _ => ApiError::internal(format!("{name} failed: {e:#}")),
    }
}
