//! Range ground truth and its scores.
//!
//! File layout (big-ann-benchmarks' range ground truth): i32 nq, i32 total,
//! nq i32 result counts, total i32 ids, total f32 distances; each query's
//! results nearest first.

use super::{DataError, Metric, VectorRows};
use rayon::prelude::*;
use std::path::Path;

#[derive(Clone, Debug, PartialEq)]
pub struct RangeGroundTruth {
    /// Query i's results are `ids[lims[i]..lims[i + 1]]`.
    pub lims: Vec<usize>,
    pub ids: Vec<u32>,
    pub dists: Vec<f32>,
}

impl RangeGroundTruth {
    pub fn nq(&self) -> usize {
        self.lims.len() - 1
    }

    pub fn ids_of(&self, q: usize) -> &[u32] {
        &self.ids[self.lims[q]..self.lims[q + 1]]
    }

    pub fn write(&self, path: impl AsRef<Path>) -> Result<(), DataError> {
        let mut b = Vec::with_capacity(8 + 4 * self.nq() + 8 * self.ids.len());
        b.extend((self.nq() as i32).to_le_bytes());
        b.extend((self.ids.len() as i32).to_le_bytes());
        for w in self.lims.windows(2) {
            b.extend(((w[1] - w[0]) as i32).to_le_bytes());
        }
        for &i in &self.ids {
            b.extend((i as i32).to_le_bytes());
        }
        for &d in &self.dists {
            b.extend(d.to_le_bytes());
        }
        let path = path.as_ref();
        std::fs::write(path, b).map_err(|e| DataError::io(path, "write", e))
    }

    pub fn read(path: impl AsRef<Path>) -> Result<Self, DataError> {
        let path = path.as_ref();
        let b = std::fs::read(path).map_err(|e| DataError::io(path, "read", e))?;
        let bad = |field: &'static str, want: String, got: String| DataError::Invalid {
            path: path.to_path_buf(),
            field,
            expected: want,
            found: got,
        };
        if b.len() < 8 {
            return Err(bad(
                "header",
                "8 bytes (nq, total)".into(),
                format!("{} bytes", b.len()),
            ));
        }
        let i32_at = |o: usize| i32::from_le_bytes(b[o..o + 4].try_into().expect("4 bytes"));
        let (nq, total) = (i32_at(0), i32_at(4));
        if nq < 0 || total < 0 {
            return Err(bad(
                "nq/total",
                "non-negative".into(),
                format!("{nq}/{total}"),
            ));
        }
        let (nq, total) = (nq as usize, total as usize);
        let want = 8 + 4 * nq + 8 * total;
        if b.len() != want {
            return Err(bad(
                "file size",
                format!("{want} bytes for nq={nq}, total={total}"),
                format!("{} bytes", b.len()),
            ));
        }
        let mut lims = vec![0usize];
        for q in 0..nq {
            let c = i32_at(8 + 4 * q);
            if c < 0 {
                return Err(bad(
                    "result count",
                    "non-negative".into(),
                    format!("{c} (query {q})"),
                ));
            }
            lims.push(lims[q] + c as usize);
        }
        if lims[nq] != total {
            return Err(bad(
                "sum of counts",
                total.to_string(),
                lims[nq].to_string(),
            ));
        }
        let o = 8 + 4 * nq;
        let ids = (0..total).map(|i| i32_at(o + 4 * i) as u32).collect();
        let o = o + 4 * total;
        let dists = (0..total)
            .map(|i| f32::from_le_bytes(b[o + 4 * i..o + 4 * i + 4].try_into().expect("4 bytes")))
            .collect();
        Ok(RangeGroundTruth { lims, ids, dists })
    }
}

/// Every base vector within `radius` (the metric's distance) of each query,
/// nearest first (ties by id); exact, parallel over queries on its own pool
/// of `threads` (0 = one per CPU).
pub fn brute_force_range<B: VectorRows + ?Sized, Q: VectorRows + ?Sized>(
    base: &B,
    queries: &Q,
    metric: Metric,
    radius: f32,
    threads: usize,
) -> RangeGroundTruth {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build();
    let run = || range_lists(base, queries, metric, radius);
    let per_query = match pool {
        Ok(p) => p.install(run),
        Err(_) => run(),
    };
    let mut gt = RangeGroundTruth {
        lims: vec![0],
        ids: vec![],
        dists: vec![],
    };
    for v in per_query {
        gt.ids.extend(v.iter().map(|e| e.1));
        gt.dists.extend(v.iter().map(|e| e.0));
        gt.lims.push(gt.ids.len());
    }
    gt
}

fn range_lists<B: VectorRows + ?Sized, Q: VectorRows + ?Sized>(
    base: &B,
    queries: &Q,
    metric: Metric,
    radius: f32,
) -> Vec<Vec<(f32, u32)>> {
    (0..queries.n())
        .into_par_iter()
        .map(|qi| {
            let q = queries.row(qi);
            let mut v: Vec<(f32, u32)> = (0..base.n())
                .filter_map(|i| {
                    let d = metric.distance(q, base.row(i));
                    (d <= radius).then_some((d, i as u32))
                })
                .collect();
            v.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            v
        })
        .collect()
}

/// Range scores of `results` (each query's ids, nearest first) against
/// `gt`: mean average precision (per query, the mean over true results of
/// the precision at the rank where each is found; 1 for a query with no true
/// result and no answer, 0 with answers), and overall recall and precision.
pub fn range_scores(results: &[Vec<u32>], gt: &RangeGroundTruth) -> (f64, f64, f64) {
    let (mut ap_sum, mut hits_all, mut returned, mut truth) = (0.0, 0usize, 0usize, 0usize);
    for (q, res) in results.iter().enumerate() {
        let mut want: Vec<u32> = gt.ids_of(q).to_vec();
        want.sort_unstable();
        truth += want.len();
        returned += res.len();
        if want.is_empty() {
            ap_sum += if res.is_empty() { 1.0 } else { 0.0 };
            continue;
        }
        let (mut hits, mut ap) = (0usize, 0.0);
        for (rank, id) in res.iter().enumerate() {
            if want.binary_search(id).is_ok() {
                hits += 1;
                ap += hits as f64 / (rank + 1) as f64;
            }
        }
        hits_all += hits;
        ap_sum += ap / want.len() as f64;
    }
    let nq = results.len().max(1) as f64;
    let recall = if truth > 0 {
        hits_all as f64 / truth as f64
    } else {
        1.0
    };
    let precision = if returned > 0 {
        hits_all as f64 / returned as f64
    } else {
        1.0
    };
    (ap_sum / nq, recall, precision)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Vectors;

    #[test]
    fn round_trip_and_scores() {
        let base = [0.0f32, 1.0, 2.0, 3.0, 10.0];
        let queries = [0.0f32, 9.0];
        let gt = brute_force_range(
            &Vectors::f32(&base, 1).unwrap(),
            &Vectors::f32(&queries, 1).unwrap(),
            Metric::L2,
            4.0,
            1,
        );
        assert_eq!(gt.ids_of(0), &[0, 1, 2]);
        assert_eq!(gt.ids_of(1), &[4]);
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("r.bin");
        gt.write(&p).unwrap();
        assert_eq!(RangeGroundTruth::read(&p).unwrap(), gt);
        // Perfect answers: AP 1. Query 0 misses id 2 and returns a wrong one first.
        assert_eq!(
            range_scores(&[vec![0, 1, 2], vec![4]], &gt),
            (1.0, 1.0, 1.0)
        );
        let (ap, recall, precision) = range_scores(&[vec![3, 0, 1], vec![4]], &gt);
        assert!((ap - ((1.0 / 2.0 + 2.0 / 3.0) / 3.0 + 1.0) / 2.0).abs() < 1e-12);
        assert!((recall - 0.75).abs() < 1e-12 && (precision - 0.75).abs() < 1e-12);
        std::fs::write(&p, [1u8, 0, 0]).unwrap();
        assert!(RangeGroundTruth::read(&p)
            .unwrap_err()
            .to_string()
            .contains("r.bin"));
    }
}
