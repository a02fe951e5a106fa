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
    /// Reads whose node no longer ranked in the list when they arrived
    /// (the pipelined search's lost speculation).
    pub wasted_per_query: f64,
    /// Single-vector reads of a cluster search (paper 002 §6.2's small
    /// I/Os): members stored outside the probed clusters' groups.
    pub small_reads_per_query: f64,
    pub cache_hits_per_query: f64,
    pub exact_per_query: f64,
    pub estimated_per_query: f64,
    /// CPU microseconds a query in exact distances and in preparing and
    /// estimating (strategies that time them: laser; 0 otherwise), for
    /// AlayaLaser §2's split of a query's time.
    pub exact_us_per_query: f64,
    pub estimate_us_per_query: f64,
    pub io_wait_s: f64,
    pub failed: usize,
    pub io_backend: String,
}

/// Reads per query above which a k-NN search at list size `complexity` has
/// not converged as it should. A search reads about L blocks per query
/// (measured: 0.8-1.2 L on wordnet-minilm, 2.1 L at L = 10 on small
/// synthetic sets, where the last hop's beam is most of it); 8 L + 64
/// leaves room for every profile and still catches the regression that once
/// read 1,181 blocks at L = 40 (block search ranking exact distances among
/// estimates: it never converged).
pub fn runaway_bound(complexity: usize) -> f64 {
    8.0 * complexity as f64 + 64.0
}

impl Measured {
    /// A warning when reads per query passed [`runaway_bound`].
    pub fn runaway(&self, complexity: usize) -> Option<String> {
        let bound = runaway_bound(complexity);
        (self.reads_per_query > bound).then(|| {
            format!(
                "warning: {:.1} reads per query at L={complexity}, above 8 L + 64 = {bound:.0}: \
                 the search did not converge (a search reads about L blocks)",
                self.reads_per_query
            )
        })
    }
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
        wasted_per_query: t.wasted as f64 / n,
        small_reads_per_query: t.small_reads as f64 / n,
        cache_hits_per_query: t.cache_hits as f64 / n,
        exact_per_query: t.exact as f64 / n,
        estimated_per_query: t.estimated as f64 / n,
        exact_us_per_query: t.exact_ns as f64 / 1e3 / n,
        estimate_us_per_query: t.estimate_ns as f64 / 1e3 / n,
        io_wait_s: res.io_wait_s,
        failed: res.failed(),
        io_backend: res.io_backend.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_reads(reads_per_query: f64) -> Measured {
        Measured {
            recall: None,
            recall_at_1: None,
            recall_at_10: None,
            recall_at_100: None,
            qps: 0.0,
            search_s: 0.0,
            mean_us: 0.0,
            p50_us: 0.0,
            p99_us: 0.0,
            p999_us: 0.0,
            reads_per_query,
            bytes_per_query: 0.0,
            proc_reads_per_query: None,
            hops_per_query: 0.0,
            wasted_per_query: 0.0,
            small_reads_per_query: 0.0,
            cache_hits_per_query: 0.0,
            exact_per_query: 0.0,
            estimated_per_query: 0.0,
            exact_us_per_query: 0.0,
            estimate_us_per_query: 0.0,
            io_wait_s: 0.0,
            failed: 0,
            io_backend: String::new(),
        }
    }

    #[test]
    fn runaway_flags_the_non_converging_search_and_not_normal_ones() {
        // The regression of 43c327c: 1,181 reads per query at L = 40.
        let w = with_reads(1181.0).runaway(40).expect("flagged");
        assert!(w.contains("1181.0 reads per query at L=40"), "{w}");
        assert!(w.contains("384"), "{w}");
        // Normal searches: 35.1 reads at L = 40, 21.4 at L = 10.
        assert_eq!(with_reads(35.1).runaway(40), None);
        assert_eq!(with_reads(21.4).runaway(10), None);
    }
}
