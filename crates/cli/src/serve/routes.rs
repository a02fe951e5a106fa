//! The routes (`POST /search`, `GET /health`, `GET /stats`, a trailing
//! slash tolerated), their handlers, and the one place every answer is
//! counted and logged ([`finish`]).

use super::body::read_body;
use super::errors::{json_bytes, json_response, new_id, ApiError};
use super::request::{media, parse_search, SearchRequest};
use super::work::{self, Job, Outcome};
use super::App;
use crate::search_target::Answer;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::response::Response;
use axum::routing::any;
use axum::Router;
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use stratavec::collection::Probe;
use stratavec::SearchParams;
use tokio::time::Instant;

/// Bodies this large are parsed on a blocking thread, not the event loop
/// (a 16 MiB JSON body takes tens of milliseconds to parse).
pub(super) const PARSE_INLINE_BYTES: usize = 64 * 1024;

pub fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/search", any(search))
        .route("/search/", any(search))
        .route("/health", any(health))
        .route("/health/", any(health))
        .route("/stats", any(stats))
        .route("/stats/", any(stats))
        .route("/insert", any(super::writes::insert))
        .route("/insert/", any(super::writes::insert))
        .route("/delete", any(super::writes::delete))
        .route("/delete/", any(super::writes::delete))
        .fallback(not_found)
        .with_state(app)
}

/// What a log line adds to method, path, status and time.
#[derive(Default)]
pub(super) struct Note {
    /// 200 with failed queries: the id their messages carry, how many, the
    /// first one's details.
    failed: Option<(String, usize, String)>,
}

/// Counts, logs and returns the answer (or the error's).
pub(super) fn finish(
    app: &App,
    method: &Method,
    path: &str,
    t0: Instant,
    out: Result<(Response, Note), ApiError>,
) -> Response {
    let ms = t0.elapsed().as_secs_f64() * 1e3;
    match out {
        Ok((r, note)) => {
            app.stats.request(r.status().as_u16(), None);
            match note.failed {
                Some((id, n, first)) => eprintln!(
                    "{method} {path} {} {ms:.1} ms id={id} {n} queries failed, first: {first}",
                    r.status().as_u16()
                ),
                None if !app.quiet => {
                    eprintln!("{method} {path} {} {ms:.1} ms", r.status().as_u16())
                }
                None => {}
            }
            r
        }
        Err(e) => {
            app.stats.request(e.status.as_u16(), e.rejected);
            let status = e.status.as_u16();
            let detail = e.detail.clone().unwrap_or_else(|| e.message.clone());
            let (r, id) = e.into_response_with_id();
            match id {
                Some(id) => eprintln!("{method} {path} {status} {ms:.1} ms id={id} {detail}"),
                None if !app.quiet => eprintln!("{method} {path} {status} {ms:.1} ms"),
                None => {}
            }
            r
        }
    }
}

pub(super) fn only(
    method: &Method,
    want: Method,
    path: &str,
    allow: &'static str,
) -> Result<(), ApiError> {
    if *method != want {
        return Err(ApiError::method(
            format!(
                "{}: expected method {want}, found {method}",
                path.trim_end_matches('/')
            ),
            allow,
        ));
    }
    Ok(())
}

async fn not_found(State(app): State<Arc<App>>, req: Request) -> Response {
    let t0 = Instant::now();
    let path = req.uri().path().to_string();
    let shown: String = path.chars().take(80).collect();
    let e = ApiError::not_found(format!(
        "path {shown}: expected POST /search, POST /insert, POST /delete, GET /health or GET /stats"
    ));
    finish(&app, req.method(), &path, t0, Err(e))
}

async fn health(State(app): State<Arc<App>>, req: Request) -> Response {
    let t0 = Instant::now();
    let path = req.uri().path().to_string();
    let out = only(req.method(), Method::GET, &path, "GET").map(|()| {
        let t = &app.target;
        let draining = app.draining.load(Ordering::Acquire);
        let mut doc = json!({
            "status": if draining { "unavailable" } else { "ok" },
            "kind": t.kind(),
            "n": t.len(),
            "dim": t.dim(),
            "metric": t.metric().to_string(),
            "profile": t.profile(),
            "segments": t.segment_count(),
        });
        if let Some(p) = t.partition() {
            doc["partition"] = json!(p);
        }
        let (inserted, deleted) = t.pending();
        doc["pending"] = json!({"inserted": inserted, "deleted": deleted});
        doc["writes"] = json!(!app.read_only);
        if draining {
            doc["reason"] = json!("shutting down");
        }
        let status = if draining {
            StatusCode::SERVICE_UNAVAILABLE
        } else {
            StatusCode::OK
        };
        (json_response(status, &doc), Note::default())
    });
    finish(&app, req.method(), &path, t0, out)
}

async fn stats(State(app): State<Arc<App>>, req: Request) -> Response {
    let t0 = Instant::now();
    let path = req.uri().path().to_string();
    let out = only(req.method(), Method::GET, &path, "GET").map(|()| {
        let doc = app.stats.to_json(&*app.target, &app.admission, &app.limits);
        (json_response(StatusCode::OK, &doc), Note::default())
    });
    finish(&app, req.method(), &path, t0, out)
}

async fn search(State(app): State<Arc<App>>, req: Request) -> Response {
    let t0 = Instant::now();
    let (method, path) = (req.method().clone(), req.uri().path().to_string());
    let out = match only(&method, Method::POST, &path, "POST") {
        Ok(()) => run_search(&app, req, t0).await,
        Err(e) => Err(e),
    };
    finish(&app, &method, &path, t0, out)
}

/// Sets the request's cancel flag when dropped: when the handler's future
/// is dropped (the client closed its connection) or returns (the deadline
/// passed), the work behind it stops at its next chunk. Dropped before the
/// search ended, it counts and logs the request as abandoned (no answer is
/// sent, so `finish` never sees it).
struct CancelOnDrop {
    cancel: Arc<AtomicBool>,
    app: Arc<App>,
    t0: Instant,
    ended: bool,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.cancel.store(true, Ordering::Release);
        if !self.ended {
            self.app.stats.abandoned();
            if !self.app.quiet {
                eprintln!(
                    "POST /search abandoned by its client after {:.1} ms; its search stops at its next chunk",
                    self.t0.elapsed().as_secs_f64() * 1e3
                );
            }
        }
    }
}

async fn run_search(
    app: &Arc<App>,
    req: Request,
    t0: Instant,
) -> Result<(Response, Note), ApiError> {
    let (parts, body) = req.into_parts();
    let media = media(parts.headers.get(axum::http::header::CONTENT_TYPE))?;
    let bytes = read_body(body, &parts.headers, &app.limits, t0).await?;
    app.stats.body(bytes.len());
    let query = parts.uri.query().map(str::to_string);
    let parsed = if bytes.len() <= PARSE_INLINE_BYTES {
        parse_search(
            media,
            &bytes,
            query.as_deref(),
            &app.shape_now(),
            &app.limits,
        )
    } else {
        let a = app.clone();
        tokio::task::spawn_blocking(move || {
            parse_search(media, &bytes, query.as_deref(), &a.shape_now(), &a.limits)
        })
        .await
        .map_err(|e| ApiError::internal(format!("request parser panicked: {e}")))?
    };
    let req = parsed?;
    // Filters are parsed against the labels before a slot is taken: an
    // unknown label or a malformed expression is the client's 400.
    let filters = match &req.filter {
        Some(f) => {
            let parsed = app
                .target
                .parse_filters(&f.texts)
                .map_err(|e| ApiError::bad(format!("{e:#}")))?;
            Some((Arc::new(parsed), f.way))
        }
        None => None,
    };
    let deadline = Instant::now() + app.limits.search_timeout;
    let permit = app
        .admission
        .admit(deadline, app.limits.search_timeout)
        .await?;
    let cancel = Arc::new(AtomicBool::new(false));
    let mut guard = CancelOnDrop {
        cancel: cancel.clone(),
        app: app.clone(),
        t0,
        ended: false,
    };
    let nq = req.nq;
    let mut job = job_of(app, req, cancel, deadline.into_std());
    job.filters = filters;
    let a = app.clone();
    let started = Instant::now();
    let handle = tokio::task::spawn_blocking(move || {
        // The permit goes with the work: a slot is free only when its
        // search has really stopped, not when its client stopped waiting.
        let _permit = permit;
        match work::run(&*a.target, &a.plan, &job, &a.stats) {
            Outcome::Done(answer) => Ok(Some(answer_json(&answer))),
            Outcome::Stopped => Ok(None),
            Outcome::Failed(e) => Err(e),
        }
    });
    let timeout = || {
        ApiError::deadline(format!(
            "search: did not finish within {} s (search_timeout_s); its work was cancelled",
            super::limits::secs(app.limits.search_timeout)
        ))
    };
    let ended = tokio::time::timeout_at(deadline, handle).await;
    guard.ended = true;
    match ended {
        Ok(Ok(Ok(None))) if app.stop_all.load(Ordering::Acquire) => Err(ApiError::stopping(
            "search: cancelled, the server is stopping (its grace period is over)",
        )),
        Err(_) | Ok(Ok(Ok(None))) => Err(timeout()),
        Ok(Err(join)) => Err(ApiError::internal(format!("search panicked: {join}"))),
        Ok(Ok(Err(e))) => Err(ApiError::internal(format!("search failed: {e:#}"))),
        Ok(Ok(Ok(Some((body, failed))))) => {
            app.stats.searched(nq, started.elapsed().as_secs_f64());
            Ok((json_bytes(StatusCode::OK, body), Note { failed }))
        }
    }
}

fn job_of(
    app: &App,
    req: SearchRequest,
    cancel: Arc<AtomicBool>,
    deadline: std::time::Instant,
) -> Job {
    let complexity = req.complexity_used(&app.shape);
    Job {
        dim: app.shape.dim,
        params: SearchParams {
            k: req.k,
            complexity,
            ..app.plan.params.clone()
        },
        probe: app.shape.segments.map(|_| Probe::nearest(req.probe)),
        queries: req.queries,
        filters: None,
        cancel,
        stop_all: app.stop_all.clone(),
        deadline,
    }
}

/// `{"ids": [[...]], "distances": [[...]]}`, nearest first, -1 / null in
/// slots not filled (JSON has no infinity); and `"errors"` (null or a
/// message a query) only when some query failed, its details left to the
/// log line under the id the messages carry.
fn answer_json(a: &Answer) -> (Vec<u8>, Option<(String, usize, String)>) {
    /// Serialised as is: f32 distances print as f32 (0.1, not f64's
    /// 0.10000000149011612).
    #[derive(serde::Serialize)]
    struct Body<'a> {
        ids: Vec<&'a [i64]>,
        distances: Vec<Vec<Option<f32>>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        errors: Option<Vec<Option<&'a str>>>,
    }
    let k = a.k.max(1);
    let failed = a.errors.iter().filter(|e| e.is_some()).count();
    let id = (failed > 0).then(new_id);
    let message = id
        .as_ref()
        .map(|id| format!("this query's search failed (id {id})"));
    let body = Body {
        ids: a.ids.chunks(k).collect(),
        distances: a
            .dists
            .chunks(k)
            .map(|r| r.iter().map(|&d| d.is_finite().then_some(d)).collect())
            .collect(),
        errors: message
            .as_deref()
            .map(|m| a.errors.iter().map(|e| e.as_ref().map(|_| m)).collect()),
    };
    let note = id.map(|id| {
        let first = a
            .errors
            .iter()
            .flatten()
            .next()
            .cloned()
            .unwrap_or_default();
        (id, failed, first)
    });
    (serde_json::to_vec(&body).unwrap_or_default(), note)
}

#[cfg(test)]
#[path = "routes_tests.rs"]
mod tests;
