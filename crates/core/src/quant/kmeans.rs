//! Lloyd's k-means for PQ sub-spaces: small dimension (a few to a few dozen),
//! k = 256. Centroids are kept transposed (`dim x k`), so the assignment step
//! is one `l2_sq_transposed` kernel call per point, vectorised across the k
//! centroids — far cheaper than one distance call per (point, centroid) at
//! dimension 8.

use crate::util::rng::Rng;
use rayon::prelude::*;

/// Index of the nearest centroid for one point. `ct` is transposed:
/// `ct[j * k + c]` is component j of centroid c. `dists` is scratch of len k.
#[inline]
pub fn nearest(point: &[f32], ct: &[f32], k: usize, dists: &mut [f32]) -> usize {
    stratavec_simd::nearest_transposed(point, ct, &mut dists[..k])
}

/// Transposes row-major `k x dim` centroids to `dim x k`.
pub fn transpose(centroids: &[f32], k: usize, dim: usize) -> Vec<f32> {
    let mut t = vec![0.0; k * dim];
    for c in 0..k {
        for j in 0..dim {
            t[j * k + c] = centroids[c * dim + j];
        }
    }
    t
}

/// Trains `k` centroids (row-major `k x dim`) on `points` (row-major).
/// Initialised from distinct random points; an empty cluster is re-seeded
/// with a random point, so there are always `k` distinct-ish centroids even
/// when there are fewer distinct points than `k`.
pub fn train(points: &[f32], dim: usize, k: usize, iters: usize, rng: &mut Rng) -> Vec<f32> {
    train_until(points, dim, k, iters, rng, &crate::progress::never)
}

/// [`train`] that polls `stop` before every iteration and returns the
/// centroids so far when it says so (the caller checks `stop` and throws
/// them away).
pub fn train_until(
    points: &[f32],
    dim: usize,
    k: usize,
    iters: usize,
    rng: &mut Rng,
    stop: &crate::progress::Stop,
) -> Vec<f32> {
    let n = points.len() / dim;
    assert!(n > 0 && dim > 0);
    let mut centroids = Vec::with_capacity(k * dim);
    let init = rng.sample(n, k.min(n));
    for c in 0..k {
        let i = init[c % init.len()];
        centroids.extend_from_slice(&points[i * dim..(i + 1) * dim]);
    }
    let mut assign = vec![0usize; n];
    let mut sums = vec![0f64; k * dim];
    let mut counts = vec![0usize; k];
    for _ in 0..iters {
        if stop() {
            break;
        }
        let ct = transpose(&centroids, k, dim);
        // In parallel: at 384-d and a thousand centres (extended RaBitQ's,
        // `exrabitq_centres`) the assignment is the whole cost.
        assign
            .par_iter_mut()
            .zip(points.par_chunks_exact(dim))
            .for_each_init(|| vec![0f32; k], |d, (a, p)| *a = nearest(p, &ct, k, d));
        sums.fill(0.0);
        counts.fill(0);
        for (i, p) in points.chunks_exact(dim).enumerate() {
            let c = assign[i];
            counts[c] += 1;
            for (s, &x) in sums[c * dim..(c + 1) * dim].iter_mut().zip(p) {
                *s += x as f64;
            }
        }
        for c in 0..k {
            let dst = &mut centroids[c * dim..(c + 1) * dim];
            if counts[c] == 0 {
                let i = rng.below(n);
                dst.copy_from_slice(&points[i * dim..(i + 1) * dim]);
            } else {
                for (d, &s) in dst.iter_mut().zip(&sums[c * dim..(c + 1) * dim]) {
                    *d = (s / counts[c] as f64) as f32;
                }
            }
        }
    }
    centroids
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::rng::Rng;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn nearest_matches_reference(dim in 1usize..20, k in 1usize..40, seed in 0u64..1000) {
            let mut rng = Rng::new(seed);
            let cents: Vec<f32> = (0..k * dim).map(|_| rng.normal()).collect();
            let p: Vec<f32> = (0..dim).map(|_| rng.normal()).collect();
            let ct = transpose(&cents, k, dim);
            let mut scratch = vec![0.0; k];
            let got = nearest(&p, &ct, k, &mut scratch);
            let d = |c: usize| stratavec_simd::scalar::l2_sq_f32(&p, &cents[c * dim..(c + 1) * dim]);
            let best = (0..k).map(d).fold(f32::MAX, f32::min);
            prop_assert!((d(got) - best).abs() <= 1e-5 * (1.0 + best));
        }
    }

    #[test]
    fn finds_well_separated_clusters() {
        let mut rng = Rng::new(1);
        let centers = [[0.0f32, 0.0], [10.0, 10.0], [-10.0, 10.0]];
        let mut pts = vec![];
        for i in 0..300 {
            let c = centers[i % 3];
            pts.push(c[0] + 0.1 * rng.normal());
            pts.push(c[1] + 0.1 * rng.normal());
        }
        // Random initialisation may put two seeds in one cluster; with a few
        // spare centroids every cluster still gets one.
        let cents = train(&pts, 2, 8, 10, &mut Rng::new(2));
        for c in centers {
            let best = (0..8)
                .map(|i| stratavec_simd::scalar::l2_sq_f32(&c, &cents[i * 2..i * 2 + 2]))
                .fold(f32::MAX, f32::min);
            assert!(best < 0.1, "{cents:?}");
        }
    }
}
