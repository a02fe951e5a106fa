//! The data the planner tries compositions on (issue #57): a sample of the
//! rows, queries held out from it, and each query's exact top 10 within
//! the sample, plus the budget that leaves a sample index the share of RAM
//! the full index gets.

use crate::data::Metric;
use crate::util::rng::Rng;

/// Results a trial query is scored on (recall@10; `pq_plan::exact_top10`
/// gives the sample's).
pub const K: usize = 10;

/// Sample size: 2% of the rows, at least [`MIN_SAMPLE`] (a graph of fewer
/// nodes reaches any recall within a few hops, and its caches' shares stop
/// meaning what they mean at full size) and at most [`MAX_SAMPLE`] (the
/// trials' builds must stay a fraction of the real one).
pub const SAMPLE_SHARE: f64 = 0.02;
pub const MIN_SAMPLE: usize = 5_000;
pub const MAX_SAMPLE: usize = 50_000;
/// Queries drawn from the rows outside the sample.
pub const QUERIES: usize = 200;

/// Rows below which the planner does not sample: a trial would build
/// nearly the whole index, so `auto` keeps the default profile.
pub const MIN_ROWS: usize = MIN_SAMPLE + QUERIES;

/// Bytes of RAM every open index holds whatever its size: the PQ codebook
/// (256 centroids of every dimension) and a thread's read buffers.
fn fixed_bytes(dim: usize, threads: usize) -> usize {
    256 * dim * 4 + dim * 4 + threads.max(1) * crate::search::READ_SLOTS * 4096
}

/// The sample a planner's trials run on.
pub struct Sample {
    pub dim: usize,
    /// The sampled rows, row-major.
    pub rows: Vec<f32>,
    pub queries: Vec<f32>,
    /// Each query's exact top [`K`] among `rows` (row numbers).
    pub exact: Vec<Vec<u32>>,
    /// The budget of a sample index: the fixed bytes, and the rest of the
    /// full budget scaled by the sample's share of the rows.
    pub budget: usize,
}

impl Sample {
    /// Draws the sample of `data` (`n` rows of `dim`, at least
    /// [`MIN_ROWS`]) for a full budget of `budget` bytes, its queries
    /// [`QUERIES`] of `given` (spread over them) where the caller has
    /// queries, else as many rows held out of the data.
    pub fn draw(
        data: &[f32],
        dim: usize,
        metric: Metric,
        budget: usize,
        threads: usize,
        seed: u64,
        given: Option<&[f32]>,
    ) -> Sample {
        let n = data.len() / dim;
        assert!(n >= MIN_ROWS, "the planner samples {MIN_ROWS} rows or more");
        let held = match given {
            Some(_) => 0,
            None => QUERIES,
        };
        let size = ((n as f64 * SAMPLE_SHARE) as usize)
            .clamp(MIN_SAMPLE, MAX_SAMPLE)
            .min(n - held);
        let mut rng = Rng::new(seed ^ 0x4155_544F);
        let picked = rng.sample(n, size + held);
        let gather = |rows: &[f32], ids: &[usize]| -> Vec<f32> {
            ids.iter()
                .flat_map(|&i| rows[i * dim..(i + 1) * dim].iter().copied())
                .collect()
        };
        let rows = gather(data, &picked[..size]);
        let queries = match given {
            Some(q) => {
                let nq = q.len() / dim;
                let spread: Vec<usize> = (0..nq.min(QUERIES))
                    .map(|i| i * nq / nq.min(QUERIES))
                    .collect();
                gather(q, &spread)
            }
            None => gather(data, &picked[size..]),
        };
        let exact = crate::memory::pq_plan::exact_top10(&rows, &queries, dim, metric);
        let fixed = fixed_bytes(dim, threads);
        let share = size as f64 / n as f64;
        let budget = fixed + (budget.saturating_sub(fixed) as f64 * share) as usize;
        Sample {
            dim,
            rows,
            queries,
            exact,
            budget,
        }
    }

    pub fn len(&self) -> usize {
        self.rows.len() / self.dim
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Mean recall@[`K`] of `ids` (`K` a query, row numbers of the sample).
    pub fn recall(&self, ids: &[u32], k: usize) -> f64 {
        let hits: usize = self
            .exact
            .iter()
            .zip(ids.chunks(k))
            .map(|(truth, got)| got.iter().take(K).filter(|id| truth.contains(id)).count())
            .sum();
        hits as f64 / (self.exact.len() * K).max(1) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sample_holds_out_its_queries_and_scales_the_budget() {
        let (n, dim) = (6_000, 8);
        let mut rng = Rng::new(3);
        let data: Vec<f32> = (0..n * dim).map(|_| rng.normal()).collect();
        let s = Sample::draw(&data, dim, Metric::L2, 10_000_000, 2, 1, None);
        assert_eq!(s.len(), MIN_SAMPLE);
        assert_eq!(s.queries.len(), QUERIES * dim);
        // No query is a sampled row.
        for q in s.queries.chunks(dim) {
            assert!(s.rows.chunks(dim).all(|r| r != q));
        }
        let fixed = fixed_bytes(dim, 2);
        let want = fixed + ((10_000_000 - fixed) as f64 * MIN_SAMPLE as f64 / n as f64) as usize;
        assert_eq!(s.budget, want);
        // The exact answers score 1, nothing scores 0.
        let ids: Vec<u32> = s.exact.iter().flatten().copied().collect();
        assert_eq!(s.recall(&ids, K), 1.0);
        assert_eq!(s.recall(&vec![u32::MAX; QUERIES * K], K), 0.0);
    }
}
