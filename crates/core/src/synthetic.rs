//! Seeded synthetic data: anisotropic Gaussian clusters. Used for scale and
//! high-dimension tests and for the demo when the real data set cannot be
//! made; always labelled "synthetic" wherever it is reported.

use crate::util::rng::Rng;

#[derive(Clone, Debug)]
pub struct SyntheticSpec {
    pub n: usize,
    pub queries: usize,
    pub dim: usize,
    pub clusters: usize,
    pub seed: u64,
}

/// Returns (base, queries), row-major f32. Each cluster has its own centre
/// and per-axis scales (spread over 1/8..1), so the data has the uneven,
/// low-intrinsic-dimension structure of real embeddings rather than being
/// an isotropic ball where every point is equally far from every other.
/// Queries are drawn from the same mixture.
pub fn clustered(spec: &SyntheticSpec) -> (Vec<f32>, Vec<f32>) {
    let mut rng = Rng::new(spec.seed);
    let d = spec.dim;
    let c = spec.clusters.max(1);
    let centres: Vec<f32> = (0..c * d).map(|_| rng.normal() * 2.0).collect();
    let scales: Vec<f32> = (0..c * d)
        .map(|_| 0.125 + 0.875 * rng.unit_f32().powi(3))
        .collect();
    let draw = |count: usize, rng: &mut Rng| {
        let mut out = Vec::with_capacity(count * d);
        for _ in 0..count {
            let k = rng.below(c);
            for j in 0..d {
                out.push(centres[k * d + j] + scales[k * d + j] * rng.normal());
            }
        }
        out
    };
    let base = draw(spec.n, &mut rng.fork(1));
    let queries = draw(spec.queries, &mut rng.fork(2));
    (base, queries)
}
