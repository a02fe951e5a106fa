//! The medoid: the point closest to the centroid, DiskANN's entry point.

use super::space::BuildSpace;
use rayon::prelude::*;

/// Centroid of the rows (f64 accumulation, so the result does not depend on
/// the number of threads).
pub fn centroid(data: &[f32], dim: usize) -> Vec<f32> {
    let n = data.len() / dim;
    let mut sum = vec![0f64; dim];
    for row in data.chunks_exact(dim) {
        for (s, &x) in sum.iter_mut().zip(row) {
            *s += x as f64;
        }
    }
    sum.iter().map(|&s| (s / n.max(1) as f64) as f32).collect()
}

/// Index of the row nearest (L2) to the centroid; ties go to the smaller id.
pub fn medoid(space: &BuildSpace) -> u32 {
    let dim = space.dim();
    let n = space.n();
    let mut all = Vec::with_capacity(n * dim);
    for i in 0..n as u32 {
        all.extend_from_slice(space.row(i));
    }
    let c = centroid(&all, dim);
    (0..n as u32)
        .into_par_iter()
        .map(|i| (stratavec_simd::l2_sq_f32(space.row(i), &c), i))
        .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)))
        .map(|(_, i)| i)
        .unwrap_or(0)
}
