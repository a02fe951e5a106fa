//! What one request may ask of `stratavec serve`, and how long and how
//! many it may wait: the bounds of the HTTP contract (docs/serve.md), each
//! a flag, with the defaults the Ray Serve server (python/stratavec/serve.py)
//! shares.

use std::time::Duration;

pub const DEFAULT_MAX_BODY_BYTES: usize = 16 * 1024 * 1024;
pub const DEFAULT_MAX_QUERIES: usize = 1024;
pub const DEFAULT_MAX_K: usize = 1000;
pub const DEFAULT_MAX_RESULTS: usize = 100_000;
pub const DEFAULT_MAX_COMPLEXITY: usize = 10_000;
pub const DEFAULT_MAX_WORK: usize = 1_000_000;
pub const DEFAULT_BODY_TIMEOUT_S: f64 = 10.0;
pub const DEFAULT_SEARCH_TIMEOUT_S: f64 = 30.0;
pub const DEFAULT_MAX_QUEUE: usize = 64;

/// The bounds as flags of `stratavec serve` (`#[command(flatten)]`).
#[derive(clap::Args, Clone, Debug)]
pub struct BoundFlags {
    /// Largest request body, bytes: 413 beyond, by Content-Length before
    /// reading and while reading.
    #[arg(long, default_value_t = DEFAULT_MAX_BODY_BYTES, conflicts_with = "max_body_mb")]
    pub max_body_bytes: usize,
    /// Largest request body in MiB (2^20 bytes), as the Ray server's flag;
    /// instead of --max-body-bytes.
    #[arg(long, value_name = "MIB")]
    pub max_body_mb: Option<f64>,
    /// Queries one request may carry: 413 beyond.
    #[arg(long, default_value_t = DEFAULT_MAX_QUERIES)]
    pub max_queries: usize,
    /// Largest k (also at most the vectors held): 400 beyond.
    #[arg(long, default_value_t = DEFAULT_MAX_K)]
    pub max_k: usize,
    /// Largest k x queries of one request (the answer's size): 413 beyond.
    #[arg(long, default_value_t = DEFAULT_MAX_RESULTS)]
    pub max_results: usize,
    /// Largest search list size (complexity) a request may ask: 400 beyond.
    #[arg(long, default_value_t = DEFAULT_MAX_COMPLEXITY)]
    pub max_complexity: usize,
    /// Largest complexity x queries of one request (its search work): 413
    /// beyond.
    #[arg(long, default_value_t = DEFAULT_MAX_WORK)]
    pub max_work: usize,
    /// Seconds a request may take to send its body, from when its headers
    /// arrived (headers too must arrive within it): 408 beyond.
    #[arg(long, default_value_t = DEFAULT_BODY_TIMEOUT_S, value_name = "SECONDS")]
    pub body_timeout_s: f64,
    /// Seconds a search may take from admission (waiting for a slot
    /// included): 504 beyond, and its queries not yet searched are not.
    #[arg(long, default_value_t = DEFAULT_SEARCH_TIMEOUT_S, value_name = "SECONDS")]
    pub search_timeout_s: f64,
    /// Searches running at once. Default: the number of CPUs.
    #[arg(long)]
    pub max_concurrent: Option<usize>,
    /// Searches waiting for one of those slots; a request beyond them gets
    /// 503 with Retry-After: 1.
    #[arg(long, default_value_t = DEFAULT_MAX_QUEUE)]
    pub max_queue: usize,
}

/// The bounds in force (from [`BoundFlags`], checked).
#[derive(Clone, Debug)]
pub struct Limits {
    pub max_body_bytes: usize,
    pub max_queries: usize,
    pub max_k: usize,
    pub max_results: usize,
    pub max_complexity: usize,
    pub max_work: usize,
    pub body_timeout: Duration,
    pub search_timeout: Duration,
    pub max_concurrent: usize,
    pub max_queue: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_queries: DEFAULT_MAX_QUERIES,
            max_k: DEFAULT_MAX_K,
            max_results: DEFAULT_MAX_RESULTS,
            max_complexity: DEFAULT_MAX_COMPLEXITY,
            max_work: DEFAULT_MAX_WORK,
            body_timeout: Duration::from_secs_f64(DEFAULT_BODY_TIMEOUT_S),
            search_timeout: Duration::from_secs_f64(DEFAULT_SEARCH_TIMEOUT_S),
            max_concurrent: crate::default_threads(),
            max_queue: DEFAULT_MAX_QUEUE,
        }
    }
}

impl BoundFlags {
    /// The limits these flags set, or what is wrong with one of them.
    pub fn limits(&self) -> anyhow::Result<Limits> {
        let max_body_bytes = match self.max_body_mb {
            Some(mb) if !(mb.is_finite() && mb > 0.0 && mb * 1048576.0 < usize::MAX as f64) => {
                anyhow::bail!("--max-body-mb: expected a positive number of MiB, found {mb}")
            }
            Some(mb) => (mb * 1048576.0) as usize,
            None => self.max_body_bytes,
        };
        let counts = [
            ("--max-body-bytes", max_body_bytes),
            ("--max-queries", self.max_queries),
            ("--max-k", self.max_k),
            ("--max-results", self.max_results),
            ("--max-complexity", self.max_complexity),
            ("--max-work", self.max_work),
        ];
        for (flag, v) in counts {
            if v == 0 {
                anyhow::bail!("{flag}: expected at least 1, found 0");
            }
        }
        let seconds = |flag: &str, s: f64| -> anyhow::Result<Duration> {
            if !(s.is_finite() && s > 0.0 && s < 1e9) {
                anyhow::bail!("{flag}: expected a positive number of seconds, found {s}");
            }
            Ok(Duration::from_secs_f64(s))
        };
        let max_concurrent = self.max_concurrent.unwrap_or_else(crate::default_threads);
        if max_concurrent == 0 {
            anyhow::bail!("--max-concurrent: expected at least 1, found 0");
        }
        Ok(Limits {
            max_body_bytes,
            max_queries: self.max_queries,
            max_k: self.max_k,
            max_results: self.max_results,
            max_complexity: self.max_complexity,
            max_work: self.max_work,
            body_timeout: seconds("--body-timeout-s", self.body_timeout_s)?,
            search_timeout: seconds("--search-timeout-s", self.search_timeout_s)?,
            max_concurrent,
            max_queue: self.max_queue,
        })
    }
}

/// Seconds as messages print them: 10 s, 0.5 s (no trailing ".0").
pub fn secs(d: Duration) -> String {
    format!("{}", d.as_secs_f64())
}
