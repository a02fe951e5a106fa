//! `stratavec serve`: an HTTP search service over one index or collection
//! on this machine, without Ray (issue #54). The contract — routes, bodies,
//! messages, bounds — is the Ray Serve server's (python/stratavec/serve.py)
//! and docs/serve.md's; one Python test suite checks both.
//!
//! A request goes: route and method (`routes`), Content-Type (415), body
//! within its size and time (`body`: 413, 408), parsing (`request`: 400,
//! 413), a search slot (`admission`: 503, or 504 when waiting outlives the
//! deadline), the search in chunks on a blocking thread (`work`: 504 when
//! the deadline passes, and its remaining work is not done), the answer.
//! Every answer is counted (`stats`) and logged, one line.

pub mod admission;
pub mod body;
pub mod errors;
pub mod filter_request;
pub mod limits;
pub mod listen;
pub mod request;
pub mod routes;
pub mod stats;
pub mod work;
pub mod write_request;
pub mod writes;

/// The tests' HTTP client (shared with the CLI tests and the load example).
#[cfg(test)]
#[path = "../../tests/common/http.rs"]
mod test_http;

use crate::search_target::Target;
use admission::Admission;
use limits::Limits;
use request::Shape;
use stats::Stats;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use work::Plan;

/// Everything a handler needs, shared by all of them.
pub struct App {
    pub target: Arc<dyn Target>,
    pub shape: Shape,
    pub limits: Limits,
    pub plan: Plan,
    pub admission: Admission,
    pub stats: Stats,
    /// Set on SIGTERM/SIGINT: `/health` answers 503 from then on.
    pub draining: AtomicBool,
    /// Set when the grace period is over: searches still running stop at
    /// their next chunk.
    pub stop_all: Arc<AtomicBool>,
    /// No per-request log lines (5xx and failed queries are still logged:
    /// their ids are only useful with the details).
    pub quiet: bool,
    /// `--read-only`: /insert and /delete answer 403.
    pub read_only: bool,
}

impl App {
    pub fn new(
        target: Arc<dyn Target>,
        limits: Limits,
        plan: Plan,
        quiet: bool,
        read_only: bool,
    ) -> App {
        let shape = Shape {
            kind: target.kind(),
            dim: target.dim(),
            n: target.len(),
            max_k: target.max_k(),
            segments: target.partition().map(|_| target.segment_count()),
            dtype: target.dtype(),
            default_complexity: plan.params.complexity,
        };
        App {
            admission: Admission::new(limits.max_concurrent, limits.max_queue),
            target,
            shape,
            limits,
            plan,
            stats: Stats::default(),
            draining: AtomicBool::new(false),
            stop_all: Arc::new(AtomicBool::new(false)),
            quiet,
            read_only,
        }
    }

    /// The shape requests are checked against now: the vectors held (and
    /// so the largest k) change with every insert and delete.
    pub fn shape_now(&self) -> Shape {
        Shape {
            n: self.target.len(),
            max_k: self.target.max_k(),
            ..self.shape.clone()
        }
    }
}
