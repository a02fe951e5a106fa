//! What one search batch measured, computed one way for `search` and `bench`:
//! recall (tie-aware, against exact ground truth), throughput, latency
//! percentiles and per-query counters.

use serde::Serialize;
use stratavec::data::{recall, GroundTruth};
use stratavec::BatchResult;

#[derive(Serialize, Clone, Debug)]
pub struct Measured {
    /// Recall@k at the k searched (None without ground truth).
    pub recall: Option<f64>,
    pub recall_at_1: Option<f64>,
    pub recall_at_10: Option<f64>,
    pub recall_at_100: Option<f64>,
    pub qps: f64,
    pub search_s: f64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub reads_per_query: f64,
    pub bytes_per_query: f64,
    /// Reads per query as the kernel counted them (`/proc/self/io`).
    pub proc_reads_per_query: Option<f64>,
    pub hops_per_query: f64,
    pub cache_hits_per_query: f64,
    pub exact_per_query: f64,
    pub estimated_per_query: f64,
    pub io_wait_s: f64,
    pub failed: usize,
    pub io_backend: String,
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

pub fn measure(res: &BatchResult, gt: Option<&GroundTruth>, k: usize) -> anyhow::Result<Measured> {
    let lists: Vec<&[u32]> = res.ids.chunks(k).collect();
    let at = |kk: usize| -> anyhow::Result<Option<f64>> {
        match gt {
            Some(gt) if kk <= k && kk <= gt.k => Ok(Some(recall(&lists, gt, kk)?.mean)),
            _ => Ok(None),
        }
    };
    let t = res.total();
    let mut lat: Vec<f64> = res.stats.iter().map(|s| s.latency_us).collect();
    lat.sort_by(|a, b| a.total_cmp(b));
    let n = res.stats.len().max(1) as f64;
    // The kernel counts bytes; our reads are of `span` bytes each.
    let span = if t.reads > 0 {
        t.bytes as f64 / t.reads as f64
    } else {
        4096.0
    };
    Ok(Measured {
        recall: at(k)?,
        recall_at_1: at(1)?,
        recall_at_10: at(10)?,
        recall_at_100: at(100)?,
        qps: n / res.wall_s,
        search_s: res.wall_s,
        mean_us: t.latency_us / n,
        p50_us: percentile(&lat, 0.5),
        p99_us: percentile(&lat, 0.99),
        p999_us: percentile(&lat, 0.999),
        reads_per_query: t.reads as f64 / n,
        bytes_per_query: t.bytes as f64 / n,
        proc_reads_per_query: res.proc_read_bytes.map(|b| b as f64 / span / n),
        hops_per_query: t.hops as f64 / n,
        cache_hits_per_query: t.cache_hits as f64 / n,
        exact_per_query: t.exact as f64 / n,
        estimated_per_query: t.estimated as f64 / n,
        io_wait_s: res.io_wait_s,
        failed: res.failed(),
        io_backend: res.io_backend.clone(),
    })
}
