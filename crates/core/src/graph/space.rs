//! The vectors a graph is built over, and the distance the build uses.
//!
//! Vamana's pruning rule (`alpha * d(p', v) <= d(p, v)`) needs a metric
//! distance. L2 is one; cosine data is normalised before the build so L2
//! ranks it the same way. Inner product is not a metric, so the build uses the
//! classic MIPS-to-L2 reduction (Bachrach et al. 2014): each x gains one
//! coordinate `e = sqrt(M^2 - |x|^2)` (M = largest norm), which makes every
//! augmented vector the same length, so L2 order between augmented vectors
//! equals inner-product order. The extra coordinate is kept as one float per
//! point and folded into the distance; nothing is copied.

use crate::data::Metric;

pub struct BuildSpace<'a> {
    data: &'a [f32],
    dim: usize,
    /// The extra coordinate per point (inner product only).
    ext: Option<Vec<f32>>,
    /// 2 M^2 (inner product only).
    two_m_sq: f32,
    /// Each point's labels, for a label-aware prune ([`Self::covers`]).
    labels: Option<&'a crate::labels::LabelSets>,
}

impl<'a> BuildSpace<'a> {
    /// `data` is row-major `n x dim`. For `Metric::Cosine` it must already be
    /// normalised (the index builder does that once).
    pub fn new(data: &'a [f32], dim: usize, metric: Metric) -> Self {
        assert!(dim > 0 && data.len().is_multiple_of(dim));
        let (ext, two_m_sq) = match metric {
            Metric::InnerProduct => {
                let norms: Vec<f32> = data
                    .chunks_exact(dim)
                    .map(|r| stratavec_simd::dot_f32(r, r))
                    .collect();
                let m_sq = norms.iter().cloned().fold(0.0f32, f32::max);
                let ext = norms.iter().map(|&s| (m_sq - s).max(0.0).sqrt()).collect();
                (Some(ext), 2.0 * m_sq)
            }
            Metric::L2 | Metric::Cosine => (None, 0.0),
        };
        BuildSpace {
            data,
            dim,
            ext,
            two_m_sq,
            labels: None,
        }
    }

    /// The space with each point's labels (one set a point): its prune
    /// becomes label-aware ([`Self::covers`]).
    pub fn with_labels(mut self, labels: Option<&'a crate::labels::LabelSets>) -> Self {
        debug_assert!(labels.is_none_or(|l| l.len() == self.n()));
        self.labels = labels;
        self
    }

    /// Whether `by`, chosen as a neighbour of `p`, may occlude `c`: always
    /// without labels; with them, only if `by` carries every label `p`
    /// and `c` share (FilteredVamana's FilteredRobustPrune, Gollapudi et
    /// al. WWW'23 Algorithm 3). An edge to `c` is then kept where it is
    /// the only link of `p` within a label they share, so each label's
    /// points stay connected among themselves and a filtered search can
    /// walk through matches.
    #[inline]
    pub fn covers(&self, p: u32, by: u32, c: u32) -> bool {
        let Some(l) = self.labels else {
            return true;
        };
        shared_within(l.row(p as usize), l.row(c as usize), l.row(by as usize))
    }

    pub fn n(&self) -> usize {
        self.data.len() / self.dim
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    #[inline]
    pub fn row(&self, i: u32) -> &'a [f32] {
        let s = i as usize * self.dim;
        &self.data[s..s + self.dim]
    }

    /// Build distance between points `i` and `j`.
    #[inline]
    pub fn dist(&self, i: u32, j: u32) -> f32 {
        match &self.ext {
            None => stratavec_simd::l2_sq_f32(self.row(i), self.row(j)),
            Some(ext) => {
                let dot = stratavec_simd::dot_f32(self.row(i), self.row(j));
                (self.two_m_sq - 2.0 * (dot + ext[i as usize] * ext[j as usize])).max(0.0)
            }
        }
    }
}

/// Whether every label in both `a` and `b` is in `c` (each sorted,
/// without repeats): one merge over the three.
fn shared_within(a: &[u32], b: &[u32], c: &[u32]) -> bool {
    let (mut i, mut j, mut k) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                while k < c.len() && c[k] < a[i] {
                    k += 1;
                }
                if k == c.len() || c[k] != a[i] {
                    return false;
                }
                i += 1;
                j += 1;
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn set(v: &[u32]) -> Vec<u32> {
        let mut v = v.to_vec();
        v.sort_unstable();
        v.dedup();
        v
    }

    proptest! {
        /// Against the plain definition: (a ∩ b) ⊆ c.
        #[test]
        fn shared_within_is_the_subset_test(
            a in proptest::collection::vec(0u32..12, 0..8),
            b in proptest::collection::vec(0u32..12, 0..8),
            c in proptest::collection::vec(0u32..12, 0..8),
        ) {
            let (a, b, c) = (set(&a), set(&b), set(&c));
            let want = a.iter().filter(|x| b.contains(x)).all(|x| c.contains(x));
            prop_assert_eq!(shared_within(&a, &b, &c), want);
        }
    }
}
