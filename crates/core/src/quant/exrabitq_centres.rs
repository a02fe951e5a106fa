//! Cluster centres for extended RaBitQ: each vector is coded relative to
//! its nearest of K k-means centres instead of the data's one mean, as
//! RaBitQ is used inside an IVF index (Gao & Long 2024 §3.1.1 normalises a
//! vector by its cluster's centroid; Gao et al. 2025 §5 the same).
//!
//! Why: an estimate's error, and so its bound, scale with the norm of what
//! was coded (`‖o − c‖`, RaBitQ Theorem 3.2). Split `o − c` into the
//! centre's offset `c_i − c` and the residual `r = o − c_i`: the offset's
//! part of `⟨q − c, o − c⟩` is computed exactly, once a query for every
//! centre (one f16 matrix product), and only `⟨q − c, r⟩` is estimated,
//! with an error that scales with `‖r‖`. On wordnet-minilm the near
//! neighbours' `‖r‖` is 0.84 of `‖o − c‖` at 256 centres and 0.78 at
//! 1,024.
//!
//! The query is rotated once (`P(q − c)`): the offsets are kept in the
//! rotated space (`P(c_i − c)`, through the same rounded P as the codes,
//! then rounded to f16), so a query costs one product of K rows, not a
//! rotation per centre. A vector's residual is taken in that space too,
//! `P(o − c) − offset_i`, against the offset as held: the f16 rounding of
//! an offset moves the residual, not the estimate, and only the product's
//! own error ([`Centres::slack`]) joins the bound. For L2 the estimate is
//! of `⟨q − c_i, r⟩`, the query taken from the vector's centre too
//! (`ExRabitQ`'s notes), so its error scales with `‖q − c_i‖·‖r‖`, both
//! small for the near pairs a refinement decides.

use super::kmeans;
use crate::util::rng::Rng;
use stratavec_simd::half::{f16_to_f32, f32_to_f16};
use stratavec_simd::F16Matrix;

/// Centres for `n` vectors when the build names none: about one for every
/// [`ROWS_PER_CENTRE`] vectors, a power of two, at most [`MAX_CENTRES`].
/// A query pays a product of K rows, and K × D f16 values stay in RAM.
///
/// Measured at 20% of wordnet-minilm (gorgeous, 4-bit codes, f16 shuffled
/// blocks, 2 threads), reads a query at R@10 0.95 interpolated over L:
/// 7.0 with the mean alone, 6.45 at 256 centres, 6.7 at 512 and 6.6 at
/// 1,024, where the offsets (768 KB) and the larger factors left 3% of the
/// adjacency lists out of RAM. The bound's ε₀, measured at train, rises
/// with K (2.97 at one centre, 3.31 at 1,024): rows stand in for queries
/// less well once both are taken from the same centre.
pub fn default_count(n: usize) -> usize {
    let want = (n / ROWS_PER_CENTRE).max(1);
    let floor = 1usize << want.ilog2();
    floor.min(MAX_CENTRES)
}

/// Vectors a centre stands for at the default count.
pub const ROWS_PER_CENTRE: usize = 400;
/// The most centres by default ([`default_count`]'s measurements).
pub const MAX_CENTRES: usize = 256;
/// The most centres a file may hold (a vector's centre is a u16).
pub const LIMIT: usize = 1 << 16;

/// Rows of the k-means sample per centre, and Lloyd iterations: the
/// centres only need to sit near the data, not to converge.
const SAMPLE_PER_CENTRE: usize = 32;
const ITERS: usize = 8;

/// The centres' offsets from the data's mean, rotated (module notes).
pub struct Centres {
    offsets: F16Matrix,
    /// `‖offset_i‖²`, for the nearest centre of a rotated vector.
    norms_sq: Vec<f32>,
}

impl Centres {
    /// One centre, the mean itself: every estimate as without centres.
    pub fn single(dim: usize) -> Centres {
        Centres::from_halves(vec![0; dim], dim)
    }

    /// From `k × dim` f16 offsets (row-major), as a file holds them.
    pub fn from_halves(halves: Vec<u16>, dim: usize) -> Centres {
        let bytes: Vec<u8> = halves.iter().flat_map(|h| h.to_le_bytes()).collect();
        let norms_sq = halves
            .chunks_exact(dim)
            .map(|row| row.iter().map(|&h| f16_to_f32(h).powi(2)).sum())
            .collect();
        Centres {
            offsets: F16Matrix::from_f16_bytes(bytes, dim),
            norms_sq,
        }
    }

    /// `k` centres of `data` by k-means on a strided sample, each kept as
    /// `rotate(c_i − mean)`; the mean alone for `k` ≤ 1.
    pub fn train(
        data: &[f32],
        dim: usize,
        k: usize,
        mean: &[f32],
        seed: u64,
        rotate: &dyn Fn(&[f32], &mut [f32]),
    ) -> Centres {
        let n = data.len() / dim;
        if k <= 1 || n <= 1 {
            return Centres::single(dim);
        }
        let want = (k * SAMPLE_PER_CENTRE).min(n);
        let step = n as f64 / want as f64;
        let sample: Vec<f32> = (0..want)
            .flat_map(|i| {
                let row = (i as f64 * step) as usize;
                data[row * dim..(row + 1) * dim].iter().copied()
            })
            .collect();
        let mut rng = Rng::new(seed ^ 0x4345_4e54);
        let centres = kmeans::train(&sample, dim, k.min(want), ITERS, &mut rng);
        let mut halves = Vec::with_capacity(centres.len());
        let (mut diff, mut rot) = (vec![0f32; dim], vec![0f32; dim]);
        for c in centres.chunks_exact(dim) {
            diff.iter_mut()
                .zip(c.iter().zip(mean))
                .for_each(|(d, (c, m))| *d = c - m);
            rotate(&diff, &mut rot);
            halves.extend(rot.iter().map(|&v| f32_to_f16(v)));
        }
        Centres::from_halves(halves, dim)
    }

    pub fn count(&self) -> usize {
        self.norms_sq.len()
    }

    /// The centre nearest a rotated, centred vector `rot` (`P(o − c)`).
    pub fn nearest(&self, rot: &[f32], scratch: &mut Vec<f32>) -> usize {
        if self.count() == 1 {
            return 0;
        }
        self.dots(rot, scratch);
        let far = |i: usize| self.norms_sq[i] - 2.0 * scratch[i];
        (0..self.count())
            .min_by(|&a, &b| far(a).total_cmp(&far(b)))
            .unwrap_or(0)
    }

    /// Centre `i`'s offset as held.
    pub fn offset(&self, i: usize, out: &mut Vec<f32>) {
        out.clear();
        out.extend(
            self.offsets
                .row(i)
                .chunks_exact(2)
                .map(|h| f16_to_f32(u16::from_le_bytes([h[0], h[1]]))),
        );
    }

    /// `‖offset_i‖²`.
    pub fn norm_sq(&self, i: usize) -> f32 {
        self.norms_sq[i]
    }

    /// `out_i = ⟨offset_i, q⟩` for every centre.
    pub fn dots(&self, q: &[f32], out: &mut Vec<f32>) {
        out.resize(self.count(), 0.0);
        self.offsets.apply(q, out);
    }

    /// How far [`Self::dots`]'s answer for centre `i` may be from the
    /// exact product with a unit `q`: the kernel's error on `Σ|m_j q_j|`,
    /// at most `‖offset_i‖`.
    pub fn slack(&self, i: usize) -> f32 {
        self.offsets.error_bound() * self.norms_sq[i].sqrt()
    }

    /// The offsets as f16 values, row-major (what a file holds).
    pub fn halves(&self) -> Vec<u16> {
        (0..self.count())
            .flat_map(|r| {
                self.offsets
                    .row(r)
                    .chunks_exact(2)
                    .map(|h| u16::from_le_bytes([h[0], h[1]]))
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    pub fn resident_bytes(&self) -> usize {
        self.offsets.resident_bytes() + self.norms_sq.len() * 4
    }
}

impl Clone for Centres {
    fn clone(&self) -> Self {
        Centres::from_halves(self.halves(), self.offsets.cols())
    }
}

impl PartialEq for Centres {
    fn eq(&self, o: &Self) -> bool {
        self.halves() == o.halves()
    }
}

impl std::fmt::Debug for Centres {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Centres({}x{}, f16)", self.count(), self.offsets.cols())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_count_is_a_power_of_two_near_one_in_400_rows() {
        assert_eq!(default_count(0), 1);
        assert_eq!(default_count(700), 1);
        assert_eq!(default_count(5_000), 8);
        assert_eq!(default_count(116_707), 256);
        assert_eq!(default_count(100_000_000), MAX_CENTRES);
    }

    /// Every rotated vector goes to an offset no farther than any other (a
    /// plain scan), and the residual is the vector less that offset as held.
    #[test]
    fn vectors_go_to_their_nearest_offset() {
        let mut rng = Rng::new(9);
        let (n, dim, k) = (600, 12, 16);
        let data: Vec<f32> = (0..n * dim).map(|_| rng.normal()).collect();
        let mean = crate::graph::medoid::centroid(&data, dim);
        let identity = |x: &[f32], out: &mut [f32]| out.copy_from_slice(x);
        let c = Centres::train(&data, dim, k, &mean, 1, &identity);
        assert_eq!(c.count(), k);
        let held: Vec<f32> = c.halves().into_iter().map(f16_to_f32).collect();
        let mut scratch = vec![];
        for x in data.chunks_exact(dim) {
            let rot: Vec<f32> = x.iter().zip(&mean).map(|(x, m)| x - m).collect();
            let d =
                |i: usize| stratavec_simd::scalar::l2_sq_f32(&rot, &held[i * dim..(i + 1) * dim]);
            let best = (0..k).map(d).fold(f32::MAX, f32::min);
            let got = c.nearest(&rot, &mut scratch);
            assert!(d(got) <= best + 1e-4 * (1.0 + best), "{} vs {best}", d(got));
            let mut off = vec![];
            c.offset(got, &mut off);
            assert_eq!(&off[..], &held[got * dim..(got + 1) * dim]);
            assert!((c.norm_sq(got) - stratavec_simd::norm_sq_f32(&off)).abs() < 1e-5);
            c.dots(&rot, &mut scratch);
            for i in 0..k {
                let exact: f32 = rot
                    .iter()
                    .zip(&held[i * dim..(i + 1) * dim])
                    .map(|(a, b)| a * b)
                    .sum();
                let norm_q = stratavec_simd::norm_sq_f32(&rot).sqrt();
                assert!(
                    (scratch[i] - exact).abs() <= c.slack(i) * norm_q + 1e-5,
                    "{i}"
                );
            }
        }
        let one = Centres::single(dim);
        assert_eq!(one.count(), 1);
        assert_eq!(one.nearest(&data[..dim], &mut scratch), 0);
        assert_eq!(Centres::train(&data, dim, 1, &mean, 1, &identity), one);
        assert_eq!(c.clone(), c);
    }
}
