//! Which segments a query searches, and how hard: all of them, or
//! (k-means partitions) the `probe` whose centroids are nearest it — the
//! skip that makes a partitioned collection cheaper than searching every
//! segment — with a list size that shrinks by rank, nearest first.
//!
//! Why shrink: measured on wordnet-minilm in 4 balanced k-means segments,
//! a query's true 10 nearest lie in its nearest segment 69% of the time,
//! in its nearest two 91%, in three 98%. The far segments hold a few
//! stragglers, which a short list finds as well as a long one; a full list
//! there pays a full search's reads for them. Halving L at each rank
//! (40, 20, 10) kept recall@10 0.957 at 70 reads a query against 85 at
//! (30, 30, 30) for 0.95 (docs/design-notes.md, "Collections").

use super::manifest::Partition;
use crate::data::{normalize_f32, Metric};
use crate::error::{Error, Result};

/// Each further segment's list size as a fraction of the one before.
pub const DEFAULT_SHRINK: f32 = 0.5;

/// How a query spreads over a collection's segments.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Probe {
    /// Nearest segments a query searches (k-means partitions); `None`:
    /// all. A range partition always searches all.
    pub segments: Option<usize>,
    /// The list size at rank r (0 = the nearest centroid) is
    /// `max(k, ceil(L · shrink^r))`; 1 searches every segment at L. Only
    /// k-means partitions rank segments; a range partition uses L in all.
    pub shrink: f32,
}

impl Default for Probe {
    fn default() -> Probe {
        Probe {
            segments: None,
            shrink: DEFAULT_SHRINK,
        }
    }
}

impl Probe {
    /// Every segment at the same list size: what merging each segment's
    /// own answer at L returns.
    pub fn exhaustive() -> Probe {
        Probe {
            segments: None,
            shrink: 1.0,
        }
    }

    /// The `segments` nearest, lists shrinking by the default.
    pub fn nearest(segments: Option<usize>) -> Probe {
        Probe {
            segments,
            ..Probe::default()
        }
    }

    pub fn check(&self) -> Result<()> {
        if self.segments == Some(0) {
            return Err(Error::argument("probe", "1 or more segments", 0));
        }
        if !(self.shrink > 0.0 && self.shrink <= 1.0) {
            return Err(Error::argument(
                "probe shrink",
                "a fraction in (0, 1]",
                self.shrink,
            ));
        }
        Ok(())
    }

    /// The list size a query searches its rank-`rank` segment with.
    pub fn complexity(&self, complexity: usize, k: usize, rank: u32) -> usize {
        let l = (complexity as f64 * (self.shrink as f64).powi(rank as i32)).ceil() as usize;
        l.clamp(k, complexity.max(k))
    }
}

/// A query routed to a segment: its row in the batch and the segment's
/// rank among the query's (0 = nearest centroid; always 0 when segments
/// are not ranked).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Routed {
    pub row: u32,
    pub rank: u32,
}

/// For each of `segments`, the rows of `queries` (row-major, `dim` wide)
/// it searches, with the segment's rank for each. A range partition sends
/// every query everywhere at rank 0; a k-means partition ranks segments by
/// centroid distance (ties by segment number) and sends each query to its
/// `probe.segments` nearest (all when `None`).
pub fn route(
    partition: Partition,
    centroids: Option<&[f32]>,
    segments: usize,
    metric: Metric,
    queries: &[f32],
    dim: usize,
    probe: &Probe,
) -> Result<Vec<Vec<Routed>>> {
    probe.check()?;
    let nq = queries.len() / dim.max(1);
    let centroids = match (partition, centroids) {
        (Partition::Kmeans, Some(c)) => c,
        // A range partition has no centroids: every segment may hold a
        // query's neighbours, and none is nearer than another.
        _ => {
            let all = (0..nq as u32).map(|row| Routed { row, rank: 0 }).collect();
            return Ok(vec![all; segments]);
        }
    };
    let probe = probe.segments.unwrap_or(segments).min(segments);
    let mut out = vec![Vec::new(); segments];
    let mut q = vec![0f32; dim];
    let mut order: Vec<(f32, u32)> = Vec::with_capacity(segments);
    for (i, row) in queries.chunks_exact(dim).enumerate() {
        q.copy_from_slice(row);
        if metric == Metric::Cosine {
            normalize_f32(&mut q);
        }
        order.clear();
        order.extend(
            centroids
                .chunks_exact(dim)
                .enumerate()
                .map(|(s, c)| (stratavec_simd::l2_sq_f32(&q, c), s as u32)),
        );
        order.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        for (rank, &(_, s)) in order[..probe].iter().enumerate() {
            out[s as usize].push(Routed {
                row: i as u32,
                rank: rank as u32,
            });
        }
    }
    Ok(out)
}

/// One search call of a fan-out: `rows` of the batch searched in
/// `segment` at list size `complexity`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Visit {
    pub segment: usize,
    pub complexity: usize,
    pub rows: Vec<u32>,
}

/// The fan-out's calls: each segment's routed rows grouped by the list
/// size their rank gives (`Probe::complexity`), nearest ranks first.
pub fn visits(routes: &[Vec<Routed>], probe: &Probe, complexity: usize, k: usize) -> Vec<Visit> {
    let mut out: Vec<Visit> = Vec::new();
    for (segment, routed) in routes.iter().enumerate() {
        let first = out.len();
        for r in routed {
            let l = probe.complexity(complexity, k, r.rank);
            match out[first..].iter_mut().find(|v| v.complexity == l) {
                Some(v) => v.rows.push(r.row),
                None => out.push(Visit {
                    segment,
                    complexity: l,
                    rows: vec![r.row],
                }),
            }
        }
        out[first..].sort_by_key(|v| std::cmp::Reverse(v.complexity));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(r: &[Routed]) -> Vec<u32> {
        r.iter().map(|r| r.row).collect()
    }

    #[test]
    fn a_query_goes_to_its_nearest_centroids() {
        // Centroids at 0, 10, 20 on a line; queries at 1 and 19.
        let c = [0.0, 10.0, 20.0];
        let q = [1.0, 19.0];
        let go = |part, c: Option<&[f32]>, p| route(part, c, 3, Metric::L2, &q, 1, &p).unwrap();
        let r = go(Partition::Kmeans, Some(&c), Probe::nearest(Some(2)));
        assert_eq!(
            r.iter().map(|s| rows(s)).collect::<Vec<_>>(),
            vec![vec![0], vec![0, 1], vec![1]]
        );
        // Query 0 is nearest segment 0, then 1; query 1 nearest 2, then 1.
        assert_eq!(
            r[1],
            vec![Routed { row: 0, rank: 1 }, Routed { row: 1, rank: 1 }]
        );
        assert_eq!(r[2], vec![Routed { row: 1, rank: 0 }]);
        let r = go(Partition::Kmeans, Some(&c), Probe::nearest(None));
        assert!(r.iter().all(|s| rows(s) == [0, 1]));
        assert_eq!(r[2][0].rank, 2);
        let r = go(Partition::Range, None, Probe::nearest(Some(1)));
        assert!(r.iter().flatten().all(|x| x.rank == 0) && r.iter().all(|s| rows(s) == [0, 1]));
        let bad = |p| route(Partition::Kmeans, Some(&c), 3, Metric::L2, &q, 1, &p).is_err();
        assert!(bad(Probe::nearest(Some(0))));
        assert!(bad(Probe {
            segments: None,
            shrink: 0.0
        }));
        assert!(bad(Probe {
            segments: None,
            shrink: 1.5
        }));
        assert!(bad(Probe {
            segments: None,
            shrink: f32::NAN
        }));
    }

    #[test]
    fn lists_shrink_by_rank_and_never_below_k() {
        let p = Probe::default();
        let l: Vec<usize> = (0..5).map(|r| p.complexity(40, 10, r)).collect();
        assert_eq!(l, [40, 20, 10, 10, 10]);
        assert_eq!(Probe::exhaustive().complexity(40, 10, 3), 40);
        assert_eq!(
            Probe {
                segments: None,
                shrink: 0.7
            }
            .complexity(30, 5, 1),
            21
        );
        // L below k is raised to k, as a single index's search does.
        assert_eq!(p.complexity(4, 10, 0), 10);
    }

    #[test]
    fn visits_group_a_segments_rows_by_list_size() {
        let at = |row, rank| Routed { row, rank };
        let routes = vec![
            vec![at(0, 0), at(1, 1), at(2, 0), at(3, 2)],
            vec![],
            vec![at(1, 0), at(3, 3)],
        ];
        let v = visits(&routes, &Probe::default(), 40, 10);
        let got: Vec<(usize, usize, Vec<u32>)> = v
            .into_iter()
            .map(|v| (v.segment, v.complexity, v.rows))
            .collect();
        assert_eq!(
            got,
            vec![
                (0, 40, vec![0, 2]),
                (0, 20, vec![1]),
                (0, 10, vec![3]),
                (2, 40, vec![1]),
                (2, 10, vec![3]),
            ]
        );
        let v = visits(&routes, &Probe::exhaustive(), 40, 10);
        assert_eq!(v.len(), 2);
        assert!(v.iter().all(|v| v.complexity == 40));
    }
}
