//! Recall@k, with big-ann-benchmarks' treatment of distance ties.
//!
//! big-ann-benchmarks (`benchmark/plotting/metrics.py`,
//! `compute_recall_with_distance_ties`) extends query i's true set from the
//! first k ground-truth ids to every following id whose distance is within
//! 1e-6 (absolute) of the distance at rank k-1, because those neighbors are
//! equally correct answers. A result id is a hit if it is in that set; recall
//! is hits / k averaged over queries. We follow it exactly, including the
//! absolute (not relative) 1e-6, so numbers are comparable with published
//! results. Without ground-truth distances it is the plain top-k overlap.
//!
//! Only the first k entries of each result list are looked at; a repeated id
//! counts once; padding ids (u32::MAX, negative) never count.

use super::{DataError, GroundTruth};

/// big-ann-benchmarks' tie tolerance (`abs(d - d_k) < 1e-6`, evaluated in
/// f64 as numpy does).
pub const TIE_EPSILON: f64 = 1e-6;

/// A result id as returned by a search: anything that is a u32 id, or
/// padding. u64/usize ids beyond u32 cannot be in a ground truth and never
/// count.
pub trait NeighborId: Copy {
    /// The id, or `None` for padding.
    fn id(self) -> Option<u32>;
}

impl NeighborId for u32 {
    fn id(self) -> Option<u32> {
        (self != u32::MAX).then_some(self)
    }
}

impl NeighborId for u64 {
    fn id(self) -> Option<u32> {
        u32::try_from(self).ok().and_then(NeighborId::id)
    }
}

impl NeighborId for usize {
    fn id(self) -> Option<u32> {
        u32::try_from(self).ok().and_then(NeighborId::id)
    }
}

impl NeighborId for i32 {
    fn id(self) -> Option<u32> {
        u32::try_from(self).ok()
    }
}

impl NeighborId for i64 {
    fn id(self) -> Option<u32> {
        u32::try_from(self).ok().and_then(NeighborId::id)
    }
}

/// Recall of a whole run.
#[derive(Clone, Debug, PartialEq)]
pub struct Recall {
    /// Mean over queries of hits / k.
    pub mean: f64,
    /// hits / k of each query.
    pub per_query: Vec<f64>,
    /// Queries whose true set was extended by ties (big-ann-benchmarks
    /// prints this count as a warning).
    pub queries_with_ties: usize,
}

/// Mean recall@k of `results` (one id list per query) against `gt`.
pub fn recall_at_k<R, I>(results: &[R], gt: &GroundTruth, k: usize) -> Result<f64, DataError>
where
    R: AsRef<[I]>,
    I: NeighborId,
{
    recall(results, gt, k).map(|r| r.mean)
}

/// Recall@k with the per-query breakdown.
pub fn recall<R, I>(results: &[R], gt: &GroundTruth, k: usize) -> Result<Recall, DataError>
where
    R: AsRef<[I]>,
    I: NeighborId,
{
    const CTX: &str = "recall";
    if k == 0 || k > gt.k {
        return Err(DataError::argument(
            CTX,
            "k",
            format!("1..={} (the ground truth's k)", gt.k),
            k,
        ));
    }
    if results.len() != gt.nq {
        let want = format!("{} (the ground truth's nq)", gt.nq);
        return Err(DataError::argument(
            CTX,
            "number of result lists",
            want,
            results.len(),
        ));
    }
    // The fields are public, so a hand-built ground truth may be inconsistent.
    let m = gt.nq.checked_mul(gt.k);
    if m != Some(gt.ids.len()) || gt.dists.as_ref().is_some_and(|d| m != Some(d.len())) {
        let found = format!(
            "{} ids, {:?} distances",
            gt.ids.len(),
            gt.dists.as_ref().map(Vec::len)
        );
        let want = format!("nq*k = {}*{} of each", gt.nq, gt.k);
        return Err(DataError::argument(CTX, "ground truth", want, found));
    }
    let mut per_query = Vec::with_capacity(gt.nq);
    let mut queries_with_ties = 0;
    let mut truth: Vec<u32> = Vec::with_capacity(gt.k);
    let mut seen: Vec<u32> = Vec::with_capacity(k);
    for (q, res) in results.iter().enumerate() {
        let ids = gt.ids_of(q);
        let end = match gt.dists_of(q) {
            Some(d) => {
                let anchor = d[k - 1] as f64;
                (k..gt.k)
                    .find(|&i| (anchor - d[i] as f64).abs() >= TIE_EPSILON)
                    .unwrap_or(gt.k)
            }
            None => k,
        };
        queries_with_ties += (end > k) as usize;
        truth.clear();
        truth.extend(ids[..end].iter().copied().filter(|&id| id != u32::MAX));
        truth.sort_unstable();
        seen.clear();
        seen.extend(res.as_ref().iter().take(k).filter_map(|x| x.id()));
        seen.sort_unstable();
        seen.dedup();
        let hits = seen
            .iter()
            .filter(|id| truth.binary_search(id).is_ok())
            .count();
        per_query.push(hits as f64 / k as f64);
    }
    let mean = if per_query.is_empty() {
        0.0
    } else {
        per_query.iter().sum::<f64>() / per_query.len() as f64
    };
    Ok(Recall {
        mean,
        per_query,
        queries_with_ties,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padding_ids() {
        assert_eq!(u32::MAX.id(), None);
        assert_eq!((-1i64).id(), None);
        assert_eq!((-1i32).id(), None);
        assert_eq!((u32::MAX as u64 + 5).id(), None);
        assert_eq!(7u64.id(), Some(7));
    }
}
