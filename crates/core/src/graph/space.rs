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
        }
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
