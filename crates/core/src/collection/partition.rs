//! Which segment each vector goes to (Starling §1–§2's setting: a large
//! collection split into data segments, each a disk index of its own).
//!
//! - `range`: consecutive rows, segments within one vector of equal size;
//!   every query must search every segment.
//! - `kmeans`: the balanced k-means of the ivf profile (`ivf_assign`), one
//!   cluster a segment, no replication: segments stay near equal in size
//!   (≤ 1.3 × n / S) and a query can skip those whose centroid is far.

use super::manifest::Partition;
use crate::data::{normalize_f32, Elems, Metric};
use crate::error::{Error, Result};
use crate::layout::ivf_assign::{AssignParams, Assignment};

/// A k-means segment holds at most this × n / S vectors. A tighter cap
/// pushes boundary vectors out of their nearest segment, where routing by
/// centroid does not look: on wordnet-minilm (4 segments) the share of the
/// true 10-NN inside a query's 2 nearest segments is 0.869 at 1.1, 0.908
/// at 1.3 and 0.920 unbalanced (0.964 / 0.976 / 0.980 at 3).
const BALANCE: f32 = 1.3;
const KMEANS_ITERS: usize = 12;

/// The segment of every row, and (k-means) the segments' centroids.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub segments: usize,
    pub segment_of: Vec<u32>,
    /// Row-major `segments x dim` (normalised for cosine), k-means only.
    pub centroids: Option<Vec<f32>>,
}

impl Plan {
    /// Each segment's rows, ascending.
    pub fn rows(&self) -> Vec<Vec<u32>> {
        let mut rows = vec![Vec::new(); self.segments];
        for (i, &s) in self.segment_of.iter().enumerate() {
            rows[s as usize].push(i as u32);
        }
        rows
    }
}

/// Checks that `segments` parts of `partition` can be made of `n` vectors
/// under `metric`.
pub fn check(n: usize, segments: usize, partition: Partition, metric: Metric) -> Result<()> {
    if segments == 0 || segments > n.max(1) {
        return Err(Error::argument(
            "segments",
            format!("1..={n} (at most one a vector)"),
            segments,
        ));
    }
    if partition == Partition::Kmeans && metric == Metric::InnerProduct {
        return Err(Error::argument(
            "partition",
            "range for metric ip (k-means centroids rank l2 and cosine, not inner products)",
            "kmeans",
        ));
    }
    Ok(())
}

/// Splits the `dim`-wide rows of `data` into `segments`.
pub fn plan(
    data: Elems<'_>,
    dim: usize,
    segments: usize,
    partition: Partition,
    metric: Metric,
    seed: u64,
) -> Result<Plan> {
    let n = data.len() / dim.max(1);
    check(n, segments, partition, metric)?;
    match partition {
        Partition::Range => Ok(Plan {
            segments,
            segment_of: (0..n)
                .map(|i| (i as u128 * segments as u128 / n as u128) as u32)
                .collect(),
            centroids: None,
        }),
        Partition::Kmeans => {
            let mut points = data.to_f32().into_owned();
            if metric == Metric::Cosine {
                points.chunks_exact_mut(dim).for_each(normalize_f32);
            }
            let a = Assignment::build(
                &points,
                dim,
                &AssignParams {
                    clusters: segments,
                    replicas: 1,
                    closure: 0.0,
                    balance: BALANCE,
                    iters: KMEANS_ITERS,
                    seed,
                },
            );
            if let Some(empty) = a.members.iter().position(|m| m.is_empty()) {
                return Err(Error::argument(
                    "partition",
                    format!("k-means clusters holding vectors (segment {empty} got none: duplicate vectors? use range)"),
                    "kmeans",
                ));
            }
            Ok(Plan {
                segments,
                segment_of: a.primary,
                centroids: Some(a.centroids),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn range_segments_are_consecutive_and_near_equal(n in 1usize..5000, s in 1usize..17) {
            let s = s.min(n);
            let data = vec![0f32; n * 2];
            let p = plan(Elems::F32(&data), 2, s, Partition::Range, Metric::L2, 0).unwrap();
            prop_assert!(p.segment_of.windows(2).all(|w| w[0] <= w[1]));
            let sizes: Vec<usize> = p.rows().iter().map(|r| r.len()).collect();
            prop_assert_eq!(sizes.len(), s);
            prop_assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1);
        }
    }

    #[test]
    fn kmeans_segments_are_balanced_and_cover_every_row() {
        let mut rng = crate::util::rng::Rng::new(5);
        let (n, dim, s) = (3000, 8, 4);
        let data: Vec<f32> = (0..n * dim).map(|_| rng.unit_f32()).collect();
        let p = plan(Elems::F32(&data), dim, s, Partition::Kmeans, Metric::L2, 1).unwrap();
        let rows = p.rows();
        assert_eq!(rows.iter().map(|r| r.len()).sum::<usize>(), n);
        let cap = (BALANCE as f64 * n as f64 / s as f64).ceil() as usize;
        assert!(rows.iter().all(|r| !r.is_empty() && r.len() <= cap));
        assert_eq!(p.centroids.unwrap().len(), s * dim);
    }

    #[test]
    fn bad_requests_are_refused_by_name() {
        let data = vec![0f32; 10];
        let e = plan(Elems::F32(&data), 2, 6, Partition::Range, Metric::L2, 0).unwrap_err();
        assert!(e.to_string().contains("segments"), "{e}");
        let e = plan(
            Elems::F32(&data),
            2,
            2,
            Partition::Kmeans,
            Metric::InnerProduct,
            0,
        )
        .unwrap_err();
        assert!(e.to_string().contains("partition"), "{e}");
    }
}
