//! The counters `GET /stats` reports: the server's (requests by status,
//! searches, queries, writes, bytes read, rejections by bound) and the engine's
//! (reads, hops, cache hits, I/O wait, failed queries), the latter added
//! per chunk of work, so a search cut short by its deadline still counts
//! what it did.

use super::admission::Admission;
use super::errors::Rejected;
use super::limits::Limits;
use crate::search_target::{Answer, Target};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Instant;

pub struct Stats {
    started: Instant,
    counts: Mutex<Counts>,
}

#[derive(Default)]
struct Counts {
    requests: u64,
    /// Answered searches (200), their queries and seconds searching.
    searches: u64,
    queries: u64,
    search_s: f64,
    status: BTreeMap<u16, u64>,
    /// Body bytes read, of every request that sent one.
    bytes_in: u64,
    queue_full: u64,
    deadline: u64,
    slow_body: u64,
    /// Searches whose client closed its connection before the answer.
    abandoned: u64,
    /// Answered writes, and the vectors they inserted and deleted.
    writes: u64,
    inserted: u64,
    deleted: u64,
    engine: Engine,
}

/// What the engine did, summed over every chunk searched.
#[derive(Default)]
struct Engine {
    batches: u64,
    queries: u64,
    failed_queries: u64,
    reads: u64,
    bytes_read: u64,
    hops: u64,
    cache_hits: u64,
    latency_us: f64,
    wall_s: f64,
    io_wait_s: f64,
    merge_s: f64,
    segment_queries: Vec<u64>,
    io_backend: String,
}

impl Default for Stats {
    fn default() -> Self {
        Stats {
            started: Instant::now(),
            counts: Mutex::default(),
        }
    }
}

impl Stats {
    fn with<R>(&self, f: impl FnOnce(&mut Counts) -> R) -> R {
        // A panic elsewhere while holding the lock leaves counts that are
        // still counts: keep counting.
        let mut c = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut c)
    }

    /// One answered request, of any route.
    pub fn request(&self, status: u16, rejected: Option<Rejected>) {
        self.with(|c| {
            c.requests += 1;
            *c.status.entry(status).or_default() += 1;
            match rejected {
                Some(Rejected::QueueFull) => c.queue_full += 1,
                Some(Rejected::Deadline) => c.deadline += 1,
                Some(Rejected::SlowBody) => c.slow_body += 1,
                None => {}
            }
        })
    }

    pub fn abandoned(&self) {
        self.with(|c| c.abandoned += 1)
    }

    pub fn body(&self, bytes: usize) {
        self.with(|c| c.bytes_in += bytes as u64)
    }

    /// A search answered: its queries and seconds from its first chunk to
    /// its last.
    pub fn searched(&self, queries: usize, seconds: f64) {
        self.with(|c| {
            c.searches += 1;
            c.queries += queries as u64;
            c.search_s += seconds;
        })
    }

    /// A write answered (200): `count` vectors inserted or deleted.
    pub fn wrote(&self, insert: bool, count: usize) {
        self.with(|c| {
            c.writes += 1;
            match insert {
                true => c.inserted += count as u64,
                false => c.deleted += count as u64,
            }
        })
    }

    /// One chunk's work, as the engine counted it.
    pub fn chunk(&self, a: &Answer) {
        self.with(|c| {
            let e = &mut c.engine;
            e.batches += 1;
            e.queries += a.errors.len() as u64;
            e.failed_queries += a.errors.iter().filter(|x| x.is_some()).count() as u64;
            e.reads += a.totals.reads;
            e.bytes_read += a.totals.bytes;
            e.hops += a.totals.hops;
            e.cache_hits += a.totals.cache_hits;
            e.latency_us += a.totals.latency_us;
            e.wall_s += a.wall_s;
            e.io_wait_s += a.io_wait_s;
            e.merge_s += a.merge_s;
            if e.segment_queries.len() < a.segment_queries.len() {
                e.segment_queries.resize(a.segment_queries.len(), 0);
            }
            for (t, &n) in e.segment_queries.iter_mut().zip(&a.segment_queries) {
                *t += n as u64;
            }
            if !a.io_backend.is_empty() {
                e.io_backend.clone_from(&a.io_backend);
            }
        })
    }

    /// The `/stats` document: `{"server": ..., "index" | "collection": ...}`.
    pub fn to_json(&self, target: &dyn Target, admission: &Admission, limits: &Limits) -> Value {
        let uptime_s = self.started.elapsed().as_secs_f64();
        let (server, mut engine) = self.with(|c| {
            let e = &c.engine;
            let per_query = |x: f64| if e.queries > 0 { x / e.queries as f64 } else { 0.0 };
            let server = json!({
                "requests": c.requests,
                "searches": c.searches,
                "queries": c.queries,
                "status": c.status.iter().map(|(s, n)| (s.to_string(), json!(n))).collect::<serde_json::Map<_, _>>(),
                "bytes_in": c.bytes_in,
                "search_s": c.search_s,
                "rejected": {"queue_full": c.queue_full, "deadline": c.deadline, "slow_body": c.slow_body},
                "abandoned": c.abandoned,
                "writes": {"requests": c.writes, "inserted": c.inserted, "deleted": c.deleted},
                "running": admission.running(),
                "waiting": admission.waiting(),
                "max_concurrent": limits.max_concurrent,
                "max_queue": limits.max_queue,
                "uptime_s": uptime_s,
            });
            let engine = json!({
                "batches": e.batches,
                "queries": e.queries,
                "failed_queries": e.failed_queries,
                "reads": e.reads,
                "bytes_read": e.bytes_read,
                "hops": e.hops,
                "cache_hits": e.cache_hits,
                "reads_per_query": per_query(e.reads as f64),
                "mean_latency_us": per_query(e.latency_us),
                "search_s": e.wall_s,
                "io_wait_s": e.io_wait_s,
                "io_backend": e.io_backend,
                "merge_s": e.merge_s,
                "segment_queries": e.segment_queries,
            });
            (server, engine)
        });
        let m = engine.as_object_mut().expect("an object");
        m.insert("n".into(), json!(target.len()));
        m.insert("dim".into(), json!(target.dim()));
        m.insert("metric".into(), json!(target.metric().to_string()));
        m.insert("profile".into(), json!(target.profile()));
        m.insert("memory_bytes".into(), json!(target.memory_bytes()));
        m.insert("cached_nodes".into(), json!(target.cached_nodes()));
        let (inserted, deleted) = target.pending();
        m.insert(
            "pending".into(),
            json!({"inserted": inserted, "deleted": deleted}),
        );
        if let Some(p) = target.partition() {
            m.insert("segments".into(), json!(target.segment_count()));
            m.insert("partition".into(), json!(p));
        } else {
            m.remove("merge_s");
            m.remove("segment_queries");
        }
        json!({"server": server, target.kind(): engine})
    }
}
