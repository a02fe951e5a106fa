//! RaBitQ (Gao & Long, SIGMOD 2024) codes of principal components, laid out
//! for 4-bit fast-scan lookups (AlayaLaser §3.2).
//!
//! Why: AlayaLaser keeps, in each node's disk record, a compact code of
//! every neighbour's principal part ([`super::pca`]), so expanding a node
//! estimates all its neighbours without further reads and without a PQ
//! table in RAM. Its default quantizer is RaBitQ on the PCA output
//! ("PCA+RaBitQ(48)", which beat PCA+PQ of the same size: §5.3, "Effect of
//! quantization method", Fig. 17): 1 bit per dimension, an estimator that
//! is unbiased, and an error bound that tells the search how far to trust
//! each estimate.
//!
//! # Encoding (RaBitQ §3.1)
//! A vector `o` is centred on the training mean `c` and rotated by a random
//! orthogonal `P` (RaBitQ's randomized codebook; AlayaLaser §3.2
//! applies the rotation to spread the principal components' very unequal
//! variances evenly over the bits). With `o' = P(o − c) / ‖o − c‖`, the
//! code is the signs of `o'`: `ō = sign(o') / √D`, and two factors are
//! kept: `‖o − c‖` and `⟨ō, o'⟩ = ‖o'‖₁ / √D` (in `[1/√D, 1]`). Bit `b` of
//! nibble `k` is 1 iff rotated component `4k + b` is positive, so the `D`
//! bits form `D/4` sub-codes of 4 bits for the fast-scan kernel.
//!
//! # Estimation (RaBitQ §3.2, Theorem 3.2)
//! With `q' = P(q − c) / ‖q − c‖`, the unbiased estimator of `⟨o', q'⟩` is
//! `⟨ō, q'⟩ / ⟨ō, o'⟩`, and with probability at least `1 − 2e^{−c₀ε₀²}`
//! over the rotation its error is at most
//! `sqrt(1 − ⟨ō,o'⟩²) / ⟨ō,o'⟩ · ε₀ / sqrt(D − 1)`.
//! `⟨ō, q'⟩ = (2 Σ_{bit i set} q'_i − Σ_i q'_i) / √D`, and the sum over the
//! set bits is a sum of `D/4` table entries: for nibble position `k`, the
//! 16 sums of the subsets of `q'_{4k..4k+4}`. Those tables are quantized to
//! u8 with one shared step `Δ` (the widest table's range / 255) and
//! per-table offsets, so that the SIMD kernel's exact integer sum `S` maps
//! back affinely: `⟨ō, q'⟩ ≈ a + b·S` (RaBitQ §3.3 also quantizes the
//! query to small integers for its fast-scan path; it rounds randomly to
//! stay unbiased, here entries round to nearest and the worst case goes
//! into the bound instead). Rounding every entry to the nearest step moves
//! the set-bit sum by at most `(D/4)·Δ/2`, i.e. `⟨ō, q'⟩` by at most
//! `(D/4)·Δ/√D`; the bound adds that worst case. In the tests the tables
//! change no ranking figure measurably (the float query ranks the same).
//!
//! The squared distance follows from the inner product of the unit
//! vectors: `‖q − o‖² = ‖o − c‖² + ‖q − c‖² − 2‖o − c‖‖q − c‖⟨o', q'⟩`,
//! so its error is `2‖o − c‖‖q − c‖` times the inner product's.
//!
//! # How sure the bound is
//! The error of the estimator is `sqrt(1 − ⟨o',q'⟩²) · sqrt(1 − ⟨ō,o'⟩²) /
//! ⟨ō,o'⟩ · z` with `z` one coordinate of a random unit vector in `D − 1`
//! dimensions (≈ `N(0, 1/(D − 1))`; RaBitQ §3.2's proof). The bound with
//! `ε₀` therefore fails on about `P(|N(0,1)| > ε₀)` of nearly orthogonal
//! pairs: the paper's `ε₀ = 1.9` ([`EPSILON0`], what [`RabitQ::estimate`]
//! uses) covers about 95% of pairs (95.4–95.7% in this module's tests, on
//! Gaussian data and on real embeddings), not 99.9%: the paper chose 1.9
//! for re-ranking recall, where only the few near neighbours matter.
//! [`EPSILON0_STRICT`] = 3.5 failed on 0.017–0.023% of the same pairs;
//! [`RabitQ::estimate_with`] takes any ε₀.

use super::pca::{invalid, orthonormalize_rows, read_f32s, read_field, read_u32, write_f32s};
use crate::util::rng::Rng;
use std::io::{self, Read, Write};

const MAGIC: &[u8; 8] = b"STRVRBQ1";

/// The paper's confidence parameter ε₀ (RaBitQ §3.2; its default, 1.9).
/// The bound holds on about 95% of pairs with it (module notes).
pub const EPSILON0: f32 = 1.9;

/// An ε₀ whose bound held on ≥ 99.9% of pairs in the tests below (3.5
/// standard deviations of the estimator's error: ~0.05% two-sided for
/// orthogonal pairs, less for correlated ones).
pub const EPSILON0_STRICT: f32 = 3.5;

/// Largest dimension: `D/4` u8 table entries must sum within a u16 (the
/// fast-scan kernel's accumulator), and its tables hold at most 256
/// sub-codes.
pub const MAX_DIM: usize = 1024;

/// A trained RaBitQ quantizer for `dim`-wide (principal-component) vectors.
#[derive(Clone, Debug, PartialEq)]
pub struct RabitQ {
    /// Code dimension D, a multiple of 4 (callers pad).
    pub dim: usize,
    /// `dim x dim` random orthogonal matrix P (row-major, orthonormal rows).
    rotation: Vec<f32>,
    /// Mean of the training vectors, c.
    pub centre: Vec<f32>,
    /// `1 / sqrt(D − 1)`, the bound's dimension factor.
    inv_sqrt_dm1: f32,
}

/// One vector's code: what a node record keeps per neighbour.
#[derive(Clone, Debug, PartialEq)]
pub struct Code {
    /// `dim/4` values in `0..=15`: bit b of nibble k is 1 iff rotated
    /// dimension `4k + b` of `o − c` is positive.
    pub nibbles: Vec<u8>,
    /// `‖o − c‖`.
    pub norm: f32,
    /// `⟨ō, o'⟩`, the RaBitQ correction factor, in `(0, 1]` (at least
    /// `1/√D`; 1 for `o = c`).
    pub dot: f32,
}

/// One query's prepared state ([`RabitQ::prepare`]); reusing it across
/// queries allocates nothing.
#[derive(Clone, Debug, Default)]
pub struct QueryLut {
    /// `dim/4 x 16` u8 entries: entry `16k + j` is
    /// `round((T_k[j] − min_j T_k) / scale)` where `T_k[j]` sums the rotated
    /// unit query's components `4k + b` over the set bits b of j.
    pub lut: Vec<u8>,
    /// The rotated unit query `q' = P(q − c) / ‖q − c‖` (zero when q = c).
    pub rotated: Vec<f32>,
    /// `‖q − c‖`.
    pub norm: f32,
    /// The shared table step Δ (the largest table's range / 255).
    pub scale: f32,
    /// `⟨ō, q'⟩ ≈ ip_offset + ip_step · S` for a code's integer sum S:
    /// `ip_offset = (2 Σ_k min_j T_k − Σ_i q'_i) / √D`.
    pub ip_offset: f32,
    /// `2Δ / √D`.
    pub ip_step: f32,
    /// Largest error the u8 tables add to that `⟨ō, q'⟩`:
    /// `(D/4) · Δ / √D` (each of the D/4 entries is off by at most Δ/2 and
    /// the set-bit sum enters `⟨ō, q'⟩` as `2/√D` times itself).
    pub ip_rounding: f32,
    /// `Σ_i q'_i`.
    pub sum_q: f32,
    /// Scratch: `q − c`.
    centred: Vec<f32>,
    /// Scratch: the float tables, each less its smallest entry.
    tables: Vec<f32>,
}

/// ‖q − o‖² from the estimated ⟨ō, q′⟩ (`ip_bar`): `norm² + ‖q − c‖² −
/// 2·norm·‖q − c‖·ip_bar/dot`, `dot` already clamped. One function, so the
/// estimate with a bound and the one without are the same number.
#[inline]
fn estimate_of(lut: &QueryLut, ip_bar: f32, norm: f32, dot: f32) -> f32 {
    let nq = lut.norm;
    let cross = 2.0 * norm * nq;
    norm * norm + nq * nq - cross * ip_bar * (1.0 / dot)
}

impl QueryLut {
    /// Builds the tables from `rotated`, which holds `P(q − c)` (not yet
    /// normalised): sets `norm` to its length and normalises it, builds the
    /// 16-entry subset-sum table of every nibble position, quantizes all
    /// tables to u8 with one shared step and per-table offsets, and keeps
    /// the affine map from an integer sum back to `⟨ō, q'⟩`. Whoever
    /// rotates the query (here [`RabitQ::prepare`]; the laser search's
    /// fused projection, `record_scorer`) hands over to this.
    pub fn build(&mut self) {
        let d = self.rotated.len();
        assert!(
            d >= 4 && d.is_multiple_of(4),
            "rabitq: the rotated query must be a positive multiple of 4 wide"
        );
        let m = d / 4;
        let rnorm = stratavec_simd::norm_sq_f32(&self.rotated).sqrt();
        self.norm = rnorm;
        let inv = if rnorm > 0.0 { 1.0 / rnorm } else { 0.0 };
        self.rotated.iter_mut().for_each(|v| *v *= inv);
        self.sum_q = self.rotated.iter().sum();

        // Every table once (15 additions each), keeping each one's
        // smallest entry; the largest range sets the shared step.
        self.tables.resize(m * 16, 0.0);
        let mut widest = 0f32;
        let mut offsets = 0f32;
        for (part, table) in self
            .rotated
            .chunks_exact(4)
            .zip(self.tables.chunks_exact_mut(16))
        {
            let table: &mut [f32; 16] = table.try_into().expect("16 entries");
            let (lo, hi) = subset_sums(part, table);
            widest = widest.max(hi - lo);
            offsets += lo;
            // Entries relative to their table's smallest: ≥ 0.
            table.iter_mut().for_each(|t| *t -= lo);
        }
        let (step, inv_step) = if widest > 0.0 {
            (widest / 255.0, 255.0 / widest)
        } else {
            (0.0, 0.0)
        };
        self.lut.resize(m * 16, 0);
        // Round half up (t ≥ 0, so this is `round`), a NaN to 0.
        stratavec_simd::fastscan::quantize_table(&self.tables, inv_step, &mut self.lut);
        let sqrt_d = (d as f32).sqrt();
        self.scale = step;
        self.ip_offset = (2.0 * offsets - self.sum_q) / sqrt_d;
        self.ip_step = 2.0 * step / sqrt_d;
        self.ip_rounding = m as f32 * step / sqrt_d;
    }

    /// The estimate of `‖q − o‖²` (principal parts) from a code's integer
    /// table sum and its factors, without a bound: what a search ranks by,
    /// per neighbour, on its hot path.
    #[inline]
    pub fn distance(&self, sum: u32, norm: f32, dot: f32) -> f32 {
        let ip_bar = self.ip_offset + self.ip_step * sum as f32;
        estimate_of(self, ip_bar, norm, dot.clamp(f32::MIN_POSITIVE, 1.0))
    }
}

impl RabitQ {
    /// Trains on `data` (row-major, `dim` wide: already-projected principal
    /// components): the centre is their mean, the rotation the Q factor of a
    /// seeded Gaussian matrix (Gram–Schmidt in f64), which is uniformly
    /// (Haar) distributed, as RaBitQ's analysis assumes. Panics unless `dim`
    /// is a positive multiple of 4 up to [`MAX_DIM`].
    pub fn train(data: &[f32], dim: usize, seed: u64) -> RabitQ {
        check_dim(dim).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            data.len().is_multiple_of(dim),
            "rabitq: data must hold whole rows of {dim}"
        );
        let centre = crate::graph::medoid::centroid(data, dim);
        let mut rng = Rng::new(seed);
        let mut p: Vec<f64> = (0..dim * dim).map(|_| rng.normal() as f64).collect();
        orthonormalize_rows(&mut p, dim, &mut rng);
        RabitQ {
            dim,
            rotation: p.iter().map(|&x| x as f32).collect(),
            centre,
            inv_sqrt_dm1: inv_sqrt_dm1(dim),
        }
    }

    /// The rotation P, `dim x dim` row-major.
    pub fn rotation(&self) -> &[f32] {
        &self.rotation
    }

    /// `out = P (x − c)` with `centred` as scratch; returns `‖x − c‖²`.
    fn rotate(&self, x: &[f32], centred: &mut Vec<f32>, out: &mut [f32]) -> f32 {
        assert_eq!(x.len(), self.dim, "rabitq: vector must be dim wide");
        centred.clear();
        centred.extend(x.iter().zip(&self.centre).map(|(x, c)| x - c));
        for (o, row) in out.iter_mut().zip(self.rotation.chunks_exact(self.dim)) {
            *o = stratavec_simd::dot_f32(row, centred);
        }
        stratavec_simd::norm_sq_f32(centred)
    }

    /// The code of `x`.
    pub fn encode(&self, x: &[f32]) -> Code {
        let mut nibbles = vec![0u8; self.dim / 4];
        let (norm, dot) = self.encode_into(x, &mut nibbles);
        Code { nibbles, norm, dot }
    }

    /// Writes the `dim/4` nibbles of `x` into `nibbles` and returns
    /// `(‖x − c‖, ⟨ō, o'⟩)` ([`Code`]'s factors), allocating nothing after
    /// a thread's first call.
    pub fn encode_into(&self, x: &[f32], nibbles: &mut [u8]) -> (f32, f32) {
        assert_eq!(nibbles.len(), self.dim / 4, "rabitq: dim/4 nibbles");
        thread_local! {
            static SCRATCH: std::cell::RefCell<(Vec<f32>, Vec<f32>)> =
                const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
        }
        SCRATCH.with_borrow_mut(|(centred, rot)| {
            rot.resize(self.dim, 0.0);
            let norm = self.rotate(x, centred, rot).sqrt();
            for (n, r) in nibbles.iter_mut().zip(rot.chunks_exact(4)) {
                *n = r
                    .iter()
                    .enumerate()
                    .fold(0u8, |n, (b, &v)| n | (u8::from(v > 0.0) << b));
            }
            // ⟨ō, o'⟩ = Σ|o'_i| / √D with o' = rot / ‖rot‖ (‖rot‖ rather
            // than ‖x − c‖, so that rounding cannot push it above 1).
            let rnorm = stratavec_simd::norm_sq_f32(rot).sqrt();
            let dot = if rnorm > 0.0 {
                let l1: f32 = rot.iter().map(|v| v.abs()).sum();
                (l1 / (rnorm * (self.dim as f32).sqrt())).clamp(f32::MIN_POSITIVE, 1.0)
            } else {
                // o = c: every estimate is exact whatever the factor.
                1.0
            };
            (norm, dot)
        })
    }

    /// Prepares query `q` into `out`: rotate `q − c`, then build its tables
    /// ([`QueryLut::build`]). Allocates nothing when `out` was prepared for
    /// the same `dim` before.
    pub fn prepare(&self, q: &[f32], out: &mut QueryLut) {
        out.rotated.resize(self.dim, 0.0);
        let norm_sq = self.rotate(q, &mut out.centred, &mut out.rotated);
        out.build();
        // ‖q − c‖ itself rather than ‖P(q − c)‖: equal up to rounding.
        out.norm = norm_sq.sqrt();
    }

    /// Estimated `‖q − o‖²` of the principal parts and its error bound at
    /// the paper's ε₀ = 1.9 (see the module notes on how sure that is), from
    /// a code's integer table sum (`sum`, what [`sum_scalar`] or the SIMD
    /// kernel computes) and its factors. The estimate is unbiased up to the
    /// tables' rounding and may be slightly negative for near-identical
    /// vectors.
    #[inline]
    pub fn estimate(&self, lut: &QueryLut, sum: u32, norm: f32, dot: f32) -> (f32, f32) {
        self.estimate_with(lut, sum, norm, dot, EPSILON0)
    }

    /// [`RabitQ::estimate`] with confidence parameter `eps0`:
    /// `ip = (ip_offset + ip_step·S) / dot`,
    /// `estimate = norm² + ‖q − c‖² − 2·norm·‖q − c‖·ip`,
    /// `bound = 2·norm·‖q − c‖·(sqrt(1 − dot²)·eps0/sqrt(D − 1) + ip_rounding) / dot`.
    #[inline]
    pub fn estimate_with(
        &self,
        lut: &QueryLut,
        sum: u32,
        norm: f32,
        dot: f32,
        eps0: f32,
    ) -> (f32, f32) {
        let ip_bar = lut.ip_offset + lut.ip_step * sum as f32;
        self.finish(lut, ip_bar, lut.ip_rounding, norm, dot, eps0)
    }

    /// The estimate and bound (ε₀ = 1.9) from the float query itself,
    /// without the u8 tables (no rounding term): the reference the table
    /// path approximates, and the unbiased estimator of RaBitQ §3.2 proper.
    pub fn estimate_unquantised(
        &self,
        lut: &QueryLut,
        nibbles: &[u8],
        norm: f32,
        dot: f32,
    ) -> (f32, f32) {
        assert_eq!(
            nibbles.len() * 4,
            lut.rotated.len(),
            "rabitq: dim/4 nibbles"
        );
        let mut set = 0f32;
        for (&n, q) in nibbles.iter().zip(lut.rotated.chunks_exact(4)) {
            for (b, &v) in q.iter().enumerate() {
                if n >> b & 1 == 1 {
                    set += v;
                }
            }
        }
        let ip_bar = (2.0 * set - lut.sum_q) / (self.dim as f32).sqrt();
        self.finish(lut, ip_bar, 0.0, norm, dot, EPSILON0)
    }

    #[inline]
    fn finish(
        &self,
        lut: &QueryLut,
        ip_bar: f32,
        rounding: f32,
        norm: f32,
        dot: f32,
        eps0: f32,
    ) -> (f32, f32) {
        let dot = dot.clamp(f32::MIN_POSITIVE, 1.0);
        let inv_dot = 1.0 / dot;
        let cross = 2.0 * norm * lut.norm;
        let est = estimate_of(lut, ip_bar, norm, dot);
        let stat = (1.0 - dot * dot).max(0.0).sqrt() * eps0 * self.inv_sqrt_dm1;
        (est, cross * (stat + rounding) * inv_dot)
    }

    /// Writes the quantizer (little-endian): magic "STRVRBQ1", u32 dim,
    /// dim x f32 centre, dim*dim x f32 rotation.
    pub fn write(&self, w: &mut impl Write) -> io::Result<()> {
        w.write_all(MAGIC)?;
        w.write_all(&(self.dim as u32).to_le_bytes())?;
        write_f32s(w, &self.centre)?;
        write_f32s(w, &self.rotation)
    }

    /// Reads what [`RabitQ::write`] wrote; a wrong magic, an impossible
    /// dimension or a short stream give an error naming what was wrong.
    pub fn read(r: &mut impl Read) -> io::Result<RabitQ> {
        let mut magic = [0u8; 8];
        read_field(r, &mut magic, "magic")?;
        if &magic != MAGIC {
            return Err(invalid(format!(
                "rabitq: magic is {magic:?}, expected \"STRVRBQ1\""
            )));
        }
        let dim = read_u32(r, "dim")? as usize;
        check_dim(dim).map_err(invalid)?;
        Ok(RabitQ {
            dim,
            centre: read_f32s(r, dim, "rabitq: centre")?,
            rotation: read_f32s(r, dim * dim, "rabitq: rotation")?,
            inv_sqrt_dm1: inv_sqrt_dm1(dim),
        })
    }
}

/// The plain integer sum `Σ_k lut[16k + nibbles[k]]`: the reference the
/// SIMD fast-scan kernel must equal.
pub fn sum_scalar(lut: &QueryLut, nibbles: &[u8]) -> u32 {
    assert_eq!(lut.lut.len(), nibbles.len() * 16, "rabitq: dim/4 nibbles");
    nibbles
        .iter()
        .zip(lut.lut.chunks_exact(16))
        .map(|(&n, t)| t[n as usize] as u32)
        .sum()
}

fn check_dim(dim: usize) -> Result<(), String> {
    if dim < 4 || !dim.is_multiple_of(4) || dim > MAX_DIM {
        return Err(format!(
            "rabitq: dim = {dim}, expected a multiple of 4 in 4..={MAX_DIM}"
        ));
    }
    Ok(())
}

fn inv_sqrt_dm1(dim: usize) -> f32 {
    1.0 / ((dim - 1) as f32).sqrt()
}

/// `SUBSET_BITS[b][j]`: bit `b` of `j`, as 0.0 or 1.0.
const SUBSET_BITS: [[f32; 16]; 4] = {
    let mut bits = [[0f32; 16]; 4];
    let mut b = 0;
    while b < 4 {
        let mut j = 0;
        while j < 16 {
            if (j >> b) & 1 == 1 {
                bits[b][j] = 1.0;
            }
            j += 1;
        }
        b += 1;
    }
    bits
};

/// `table[j] = Σ_{bit b of j set} part[b]` (4 components, 16 subsets);
/// returns the smallest and largest entries.
///
/// Why not the recurrence `table[j] = table[j & (j − 1)] + part[lowest bit
/// of j]` (kept as the tests' reference): its 15 dependent additions
/// and the running min/max are scalar code, and building a laser query's
/// 174 tables that way was ~10% of its search CPU (perf, wordnet-mpnet).
/// Here each component is broadcast over all 16 entries and added where
/// its bit is set, highest bit first — the recurrence's order of additions,
/// so every entry is the same float, and adding `p · 0 = ±0` to a sum
/// leaves it unchanged — and the extremes come from a halving tree; all of
/// it 16 lanes wide, which the compiler vectorises.
#[inline]
fn subset_sums(part: &[f32], table: &mut [f32; 16]) -> (f32, f32) {
    let mut t = [0f32; 16];
    for b in (0..4).rev() {
        let p = part[b];
        for (t, &bit) in t.iter_mut().zip(&SUBSET_BITS[b]) {
            *t += p * bit;
        }
    }
    *table = t;
    let (mut lo, mut hi) = (t, t);
    let mut half = 8;
    while half > 0 {
        for i in 0..half {
            if lo[i + half] < lo[i] {
                lo[i] = lo[i + half];
            }
            if hi[i + half] > hi[i] {
                hi[i] = hi[i + half];
            }
        }
        half /= 2;
    }
    (lo[0], hi[0])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quant::pca::Pca;
    use std::sync::OnceLock;

    /// The plain reference for [`subset_sums`]: each entry from the one
    /// without its lowest set bit.
    fn subset_sums_recurrence(part: &[f32], table: &mut [f32; 16]) -> (f32, f32) {
        table[0] = 0.0;
        let (mut lo, mut hi) = (0f32, 0f32);
        for j in 1..16usize {
            let v = table[j & (j - 1)] + part[j.trailing_zeros() as usize];
            table[j] = v;
            lo = lo.min(v);
            hi = hi.max(v);
        }
        (lo, hi)
    }

    proptest::proptest! {
        /// The vectorised tables are the recurrence's, bit for bit.
        #[test]
        fn subset_sums_equal_the_recurrence(part in proptest::array::uniform4(-2.0f32..2.0)) {
            let (mut a, mut b) = ([0f32; 16], [0f32; 16]);
            let (lo_a, hi_a) = subset_sums(&part, &mut a);
            let (lo_b, hi_b) = subset_sums_recurrence(&part, &mut b);
            proptest::prop_assert_eq!(a.map(f32::to_bits), b.map(f32::to_bits));
            proptest::prop_assert_eq!((lo_a.to_bits(), hi_a.to_bits()), (lo_b.to_bits(), hi_b.to_bits()));
        }
    }

    #[test]
    fn subset_sums_equal_the_recurrence_at_zeros_and_ties() {
        for part in [
            [0.0, -0.0, 0.0, -0.0],
            [1.0, -1.0, 1.0, -1.0],
            [-0.0, 3.0e-8, -3.0e-8, 1.0],
            [f32::MIN_POSITIVE, -f32::MIN_POSITIVE, 0.5, -0.5],
        ] {
            let (mut a, mut b) = ([0f32; 16], [0f32; 16]);
            let ends_a = subset_sums(&part, &mut a);
            let ends_b = subset_sums_recurrence(&part, &mut b);
            assert_eq!(a.map(f32::to_bits), b.map(f32::to_bits), "{part:?}");
            assert_eq!(ends_a.0.to_bits(), ends_b.0.to_bits(), "{part:?}");
            assert_eq!(ends_a.1.to_bits(), ends_b.1.to_bits(), "{part:?}");
        }
    }

    /// Gaussian rows with decaying variances (`σ_i² = 4 / (1 + i/8)`, like
    /// principal components) around an offset mean.
    fn gaussian(n: usize, dim: usize, seed: u64) -> Vec<f32> {
        let mut rng = Rng::new(seed);
        let sd: Vec<f32> = (0..dim)
            .map(|i| (4.0 / (1.0 + i as f32 / 8.0)).sqrt())
            .collect();
        (0..n * dim)
            .map(|k| 0.3 + sd[k % dim] * rng.normal())
            .collect()
    }

    fn l2(a: &[f32], b: &[f32]) -> f32 {
        a.iter()
            .zip(b)
            .map(|(x, y)| ((x - y) as f64).powi(2))
            .sum::<f64>() as f32
    }

    /// Violation rates of the bound at ε₀ = 1.9 and at [`EPSILON0_STRICT`]
    /// over all (query, base) pairs, and the largest |error| / bound at
    /// 1.9.
    fn violations(rq: &RabitQ, queries: &[f32], base: &[f32]) -> (f64, f64, f64) {
        let d = rq.dim;
        let codes: Vec<Code> = base.chunks_exact(d).map(|x| rq.encode(x)).collect();
        let mut lut = QueryLut::default();
        let (mut paper, mut strict, mut total, mut worst) = (0usize, 0usize, 0usize, 0f64);
        for q in queries.chunks_exact(d) {
            rq.prepare(q, &mut lut);
            for (x, c) in base.chunks_exact(d).zip(&codes) {
                let s = sum_scalar(&lut, &c.nibbles);
                let truth = l2(q, x);
                let (est, bound) = rq.estimate(&lut, s, c.norm, c.dot);
                let (est2, bound2) = rq.estimate_with(&lut, s, c.norm, c.dot, EPSILON0_STRICT);
                assert_eq!(est, est2);
                let err = (est - truth).abs() as f64;
                // f32 slack for the distance arithmetic itself.
                let slack = 1e-5 * (c.norm * c.norm + lut.norm * lut.norm) as f64;
                paper += usize::from(err > bound as f64 + slack);
                strict += usize::from(err > bound2 as f64 + slack);
                worst = worst.max(err / (bound as f64 + slack));
                total += 1;
            }
        }
        (
            paper as f64 / total as f64,
            strict as f64 / total as f64,
            worst,
        )
    }

    #[test]
    fn rotation_is_orthonormal() {
        for dim in [4, 64, 128] {
            let rq = RabitQ::train(&gaussian(10, dim, 1), dim, 3);
            let p = rq.rotation();
            for i in 0..dim {
                for j in 0..dim {
                    let d = stratavec_simd::scalar::dot_f32(
                        &p[i * dim..(i + 1) * dim],
                        &p[j * dim..(j + 1) * dim],
                    );
                    let want = if i == j { 1.0 } else { 0.0 };
                    assert!((d - want).abs() < 1e-5, "dim {dim}: <p{i}, p{j}> = {d}");
                }
            }
        }
    }

    /// The code's bits are the signs of the rotated vector and its factors
    /// are ‖o − c‖ and ‖o'‖₁/√D; `encode_into` agrees with `encode`.
    #[test]
    fn codes_hold_signs_and_factors() {
        let dim = 32;
        let data = gaussian(500, dim, 2);
        let rq = RabitQ::train(&data, dim, 4);
        for x in data.chunks_exact(dim).take(20) {
            let code = rq.encode(x);
            let r: Vec<f64> = x
                .iter()
                .zip(&rq.centre)
                .map(|(a, c)| (a - c) as f64)
                .collect();
            let rot: Vec<f64> = rq
                .rotation()
                .chunks_exact(dim)
                .map(|p| p.iter().zip(&r).map(|(&a, b)| a as f64 * b).sum())
                .collect();
            for (i, v) in rot.iter().enumerate() {
                let bit = code.nibbles[i / 4] >> (i % 4) & 1;
                assert_eq!(bit == 1, *v > 0.0, "dim {i}: {v}");
            }
            let norm = r.iter().map(|v| v * v).sum::<f64>().sqrt();
            let dot = rot.iter().map(|v| v.abs()).sum::<f64>() / (norm * (dim as f64).sqrt());
            assert!((code.norm as f64 - norm).abs() < 1e-5 * norm);
            assert!(
                (code.dot as f64 - dot).abs() < 1e-5,
                "{} vs {dot}",
                code.dot
            );
            assert!(code.dot > 0.0 && code.dot <= 1.0);
            let mut nib = vec![0u8; dim / 4];
            assert_eq!(rq.encode_into(x, &mut nib), (code.norm, code.dot));
            assert_eq!(nib, code.nibbles);
        }
        // o = c and q = c: exact estimates, zero bounds.
        let c = rq.encode(&rq.centre);
        assert_eq!((c.norm, c.dot), (0.0, 1.0));
        let mut lut = QueryLut::default();
        let x = &data[..dim];
        rq.prepare(x, &mut lut);
        let (est, bound) = rq.estimate(&lut, sum_scalar(&lut, &c.nibbles), c.norm, c.dot);
        assert!((est - l2(x, &rq.centre)).abs() < 1e-4 && bound == 0.0);
        rq.prepare(&rq.centre, &mut lut);
        let o = rq.encode(x);
        let (est, bound) = rq.estimate(&lut, sum_scalar(&lut, &o.nibbles), o.norm, o.dot);
        assert!((est - o.norm * o.norm).abs() < 1e-4 && bound == 0.0);
    }

    /// With the float query (no table rounding) the estimator is unbiased:
    /// the mean signed error over many independent pairs is within 4
    /// standard errors of 0, at dim 64 and 128.
    #[test]
    fn unquantised_estimator_is_unbiased() {
        for dim in [64, 128] {
            let rq = RabitQ::train(&gaussian(4000, dim, 10), dim, 11);
            let (nq, nb) = (400, 100);
            let queries = gaussian(nq, dim, 12);
            let base = gaussian(nq * nb, dim, 13);
            let mut lut = QueryLut::default();
            let (mut sum, mut sum_sq, mut n) = (0f64, 0f64, 0f64);
            let mut spread = 0f64;
            for (qi, q) in queries.chunks_exact(dim).enumerate() {
                rq.prepare(q, &mut lut);
                // Every query gets its own base rows: independent pairs.
                for x in base[qi * nb * dim..(qi + 1) * nb * dim].chunks_exact(dim) {
                    let c = rq.encode(x);
                    let truth = l2(q, x) as f64;
                    let (est, _) = rq.estimate_unquantised(&lut, &c.nibbles, c.norm, c.dot);
                    let e = est as f64 - truth;
                    sum += e;
                    sum_sq += e * e;
                    spread += truth;
                    n += 1.0;
                }
            }
            let mean = sum / n;
            let sd = (sum_sq / n - mean * mean).sqrt();
            println!(
                "dim {dim}: mean error {mean:.4}, sd {sd:.3}, mean distance {:.1}, {n} pairs",
                spread / n
            );
            assert!(
                mean.abs() <= 4.0 * sd / n.sqrt(),
                "dim {dim}: mean {mean}, sd {sd}"
            );
        }
    }

    /// The bound (with the tables' rounding) on Gaussian data: the strict
    /// ε₀ covers ≥ 99.9% of 200 x 2000 pairs; the paper's 1.9 covers what
    /// the theory predicts (~94–97%).
    #[test]
    fn bound_holds_on_gaussian_data() {
        for dim in [64, 128] {
            let base = gaussian(2000, dim, 20);
            let rq = RabitQ::train(&base, dim, 21);
            let queries = gaussian(200, dim, 22);
            let (paper, strict, worst) = violations(&rq, &queries, &base);
            println!(
                "gaussian dim {dim}: bound violated on {:.3}% of pairs at eps0 1.9, {:.4}% at {EPSILON0_STRICT}; worst |err|/bound(1.9) {worst:.2}",
                100.0 * paper,
                100.0 * strict
            );
            assert!(strict <= 0.001, "dim {dim}: {strict}");
            assert!(paper <= 0.08, "dim {dim}: {paper}");
        }
    }

    /// The real-data fixture: PCA (main_dim 128) fitted on the 384-d
    /// WordNet MiniLM embeddings, RaBitQ trained on the projected base;
    /// base and query rows, full and projected. `None` without the data.
    struct Real {
        rq: RabitQ,
        dim_full: usize,
        base_full: Vec<f32>,
        queries_full: Vec<f32>,
        base: Vec<f32>,
        queries: Vec<f32>,
    }

    fn real() -> Option<&'static Real> {
        static REAL: OnceLock<Option<Real>> = OnceLock::new();
        REAL.get_or_init(|| {
            let dir = std::path::PathBuf::from(std::env::var_os("STRATAVEC_WORDNET_DIR")?);
            let base_path = dir.join("base.fbin");
            if !base_path.exists() {
                return None;
            }
            let file = crate::data::open(&base_path).expect("open base.fbin");
            let dim = file.dim();
            let all = file.as_f32().expect("f32 base");
            let main = 128;
            let pca = Pca::fit(all, dim, main, 20_000, 1);
            println!(
                "wordnet: {} x {dim}, pca main_dim {main} explains {:.3}",
                file.n(),
                pca.explained()
            );
            let project = |rows: &[f32]| {
                let mut out = vec![0f32; rows.len() / dim * main];
                for (x, o) in rows.chunks_exact(dim).zip(out.chunks_exact_mut(main)) {
                    pca.project(x, o);
                }
                out
            };
            // Queries: the query file when there is one, else the last 1000
            // base rows (which the pairs below then do not use).
            let qfile = crate::data::open(dir.join("query.fbin")).ok();
            let (base_full, queries_full) = match qfile.as_ref().and_then(|f| f.as_f32()) {
                Some(q) if q.len() >= 200 * dim => (all.to_vec(), q.to_vec()),
                _ => {
                    let split = all.len() - 1000 * dim;
                    (all[..split].to_vec(), all[split..].to_vec())
                }
            };
            let base = project(&base_full);
            let rq = RabitQ::train(&base, main, 2);
            Some(Real {
                rq,
                dim_full: dim,
                queries: project(&queries_full),
                base,
                base_full,
                queries_full,
            })
        })
        .as_ref()
    }

    use stratavec_testkit::Need;
    const SKIP: &str = "no STRATAVEC_WORDNET_DIR (scripts/wordnet.sh 20k makes it)";

    #[test]
    fn bound_holds_on_real_embeddings() {
        let Some(r) = real() else {
            stratavec_testkit::skipped("bound_holds_on_real_embeddings", Need::Wordnet, SKIP);
            return;
        };
        let d = r.rq.dim;
        let (paper, strict, worst) = violations(&r.rq, &r.queries[..200 * d], &r.base[..2000 * d]);
        println!(
            "wordnet 384->128: bound violated on {:.3}% of 200 x 2000 pairs at eps0 1.9, {:.4}% at {EPSILON0_STRICT}; worst |err|/bound(1.9) {worst:.2}",
            100.0 * paper,
            100.0 * strict
        );
        assert!(strict <= 0.001, "{strict}");
        assert!(paper <= 0.08, "{paper}");
    }

    /// `sum_scalar` equals the sum recomputed bit by bit from an unpacked
    /// code, and maps back (affinely) to the float set-bit sum within the
    /// documented rounding.
    #[test]
    fn table_sums_are_exact_integers_within_the_rounding() {
        let dim = 64;
        let data = gaussian(300, dim, 30);
        let rq = RabitQ::train(&data, dim, 31);
        let mut lut = QueryLut::default();
        let mut rng = Rng::new(32);
        for q in data.chunks_exact(dim).take(10) {
            rq.prepare(q, &mut lut);
            assert_eq!(lut.lut.len(), dim / 4 * 16);
            assert!(lut.lut.contains(&255));
            for _ in 0..50 {
                let bits: Vec<bool> = (0..dim).map(|_| rng.below(2) == 1).collect();
                let nibbles: Vec<u8> = bits
                    .chunks_exact(4)
                    .map(|b| (0..4).map(|i| u8::from(b[i]) << i).sum())
                    .collect();
                let mut naive = 0u32;
                for k in 0..dim / 4 {
                    let mut idx = 0usize;
                    for b in 0..4 {
                        if bits[4 * k + b] {
                            idx += 1 << b;
                        }
                    }
                    naive += u32::from(lut.lut[16 * k + idx]);
                }
                let s = sum_scalar(&lut, &nibbles);
                assert_eq!(s, naive);
                let set: f32 = (0..dim).filter(|&i| bits[i]).map(|i| lut.rotated[i]).sum();
                let float_ip = (2.0 * set - lut.sum_q) / (dim as f32).sqrt();
                let table_ip = lut.ip_offset + lut.ip_step * s as f32;
                assert!(
                    (float_ip - table_ip).abs() <= lut.ip_rounding * 1.001 + 1e-5,
                    "{float_ip} vs {table_ip} (rounding {})",
                    lut.ip_rounding
                );
            }
        }
    }

    /// Whether candidate `truth` (an index into `codes`) is among the 8
    /// smallest table estimates of the prepared query.
    fn in_top8(rq: &RabitQ, lut: &QueryLut, codes: &[&Code], truth: usize) -> bool {
        let mut est: Vec<(f32, usize)> = codes
            .iter()
            .enumerate()
            .map(|(i, c)| {
                (
                    rq.estimate(lut, sum_scalar(lut, &c.nibbles), c.norm, c.dot)
                        .0,
                    i,
                )
            })
            .collect();
        est.sort_by(|a, b| a.0.total_cmp(&b.0));
        est[..8].iter().any(|&(_, i)| i == truth)
    }

    /// Index of the row of `rows` nearest to `q`.
    fn nearest(q: &[f32], rows: &[&[f32]]) -> usize {
        (0..rows.len())
            .min_by(|&a, &b| l2(q, rows[a]).total_cmp(&l2(q, rows[b])))
            .unwrap()
    }

    /// Ranking on Gaussian data: the true nearest of 64 random candidates
    /// is among the 8 best estimates in 93.7% of 1000 trials at dim 64 and
    /// 95.3% at dim 128 (top 16: 99.0% and 99.8%). The float query gives
    /// the same figures, so the shortfall at 64 is the 1-bit code's
    /// variance at small D, not the u8 tables.
    #[test]
    fn true_nearest_is_in_the_estimated_top_8() {
        for (dim, floor) in [(64, 0.92), (128, 0.95)] {
            let rq = RabitQ::train(&gaussian(2000, dim, 40), dim, 41);
            let queries = gaussian(1000, dim, 42);
            let pool = gaussian(1000 * 64, dim, 43);
            let mut lut = QueryLut::default();
            let mut hits = 0;
            for (q, cands) in queries.chunks_exact(dim).zip(pool.chunks_exact(64 * dim)) {
                rq.prepare(q, &mut lut);
                let rows: Vec<&[f32]> = cands.chunks_exact(dim).collect();
                let codes: Vec<Code> = rows.iter().map(|x| rq.encode(x)).collect();
                let codes: Vec<&Code> = codes.iter().collect();
                hits += usize::from(in_top8(&rq, &lut, &codes, nearest(q, &rows)));
            }
            let rate = hits as f64 / 1000.0;
            println!(
                "gaussian dim {dim}: true nearest of 64 random candidates in the estimated top 8: {:.1}% of 1000",
                100.0 * rate
            );
            assert!(rate >= floor, "dim {dim}: {rate}");
        }
    }

    /// Ranking on the real embeddings (main_dim 128 of 384), two candidate
    /// sets per query: 64 random base rows, and 64 random rows of the
    /// query's 640 nearest (a graph neighbourhood); the
    /// truth is the nearest by principal parts (what the codes estimate)
    /// and by full vectors (which also needs the residuals AlayaLaser
    /// re-ranks with). Measured over 1000 queries: random 97.1% / 91.1%,
    /// neighbourhood 91.9% / 84.2%.
    #[test]
    fn ranking_on_real_embeddings() {
        let Some(r) = real() else {
            stratavec_testkit::skipped("ranking_on_real_embeddings", Need::Wordnet, SKIP);
            return;
        };
        let (d, df) = (r.rq.dim, r.dim_full);
        let nb = r.base.len() / d;
        let row = |i: usize| &r.base[i * d..(i + 1) * d];
        let row_full = |i: usize| &r.base_full[i * df..(i + 1) * df];
        let codes: Vec<Code> = r.base.chunks_exact(d).map(|x| r.rq.encode(x)).collect();
        let mut rng = Rng::new(50);
        let mut lut = QueryLut::default();
        // [random, neighbourhood] x [principal truth, full truth]
        let mut hits = [[0usize; 2]; 2];
        let mut trials = [0usize; 2];
        let mut pca_only = [0usize; 2];
        for (q, qf) in r
            .queries
            .chunks_exact(d)
            .zip(r.queries_full.chunks_exact(df))
        {
            r.rq.prepare(q, &mut lut);
            let random = rng.sample(nb, 64);
            let mut all: Vec<(f32, usize)> = (0..nb)
                .map(|i| (stratavec_simd::l2_sq_f32(qf, row_full(i)), i))
                .collect();
            all.select_nth_unstable_by(640, |a, b| a.0.total_cmp(&b.0));
            all[..640].sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            let near: Vec<usize> = rng.sample(640, 64).into_iter().map(|j| all[j].1).collect();
            let sets = [random, near];
            for (s, set) in sets.iter().enumerate() {
                let set_codes: Vec<&Code> = set.iter().map(|&i| &codes[i]).collect();
                let rows: Vec<&[f32]> = set.iter().map(|&i| row(i)).collect();
                let rows_full: Vec<&[f32]> = set.iter().map(|&i| row_full(i)).collect();
                trials[s] += 1;
                hits[s][0] += usize::from(in_top8(&r.rq, &lut, &set_codes, nearest(q, &rows)));
                let full = nearest(qf, &rows_full);
                hits[s][1] += usize::from(in_top8(&r.rq, &lut, &set_codes, full));
                // The PCA's own share: exact principal distances.
                let mut exact: Vec<(f32, usize)> = rows
                    .iter()
                    .enumerate()
                    .map(|(i, x)| (l2(q, x), i))
                    .collect();
                exact.sort_by(|a, b| a.0.total_cmp(&b.0));
                pca_only[s] += usize::from(exact[..8].iter().any(|&(_, i)| i == full));
            }
        }
        let rate = |s: usize, t: usize| hits[s][t] as f64 / trials[s] as f64;
        println!(
            "wordnet: true nearest in the estimated top 8 of 64: random candidates {:.1}% (principal) {:.1}% (full), {} trials; neighbourhood candidates {:.1}% (principal) {:.1}% (full), {} trials",
            100.0 * rate(0, 0),
            100.0 * rate(0, 1),
            trials[0],
            100.0 * rate(1, 0),
            100.0 * rate(1, 1),
            trials[1]
        );
        println!(
            "wordnet: exact principal distances put the full-vector nearest in their top 8 in {:.1}% (random) and {:.1}% (neighbourhood)",
            100.0 * pca_only[0] as f64 / trials[0] as f64,
            100.0 * pca_only[1] as f64 / trials[1] as f64
        );
        assert!(rate(0, 0) >= 0.95, "{}", rate(0, 0));
        assert!(rate(0, 1) >= 0.88 && rate(1, 0) >= 0.89 && rate(1, 1) >= 0.81);
    }

    #[test]
    fn round_trip_and_determinism() {
        let dim = 48;
        let data = gaussian(400, dim, 60);
        let rq = RabitQ::train(&data, dim, 61);
        assert_eq!(rq, RabitQ::train(&data, dim, 61));
        assert_ne!(rq.rotation(), RabitQ::train(&data, dim, 62).rotation());
        let mut bytes = Vec::new();
        rq.write(&mut bytes).unwrap();
        assert_eq!(bytes.len(), 12 + 4 * (dim + dim * dim));
        let back = RabitQ::read(&mut bytes.as_slice()).unwrap();
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(back.dim, dim);
        assert_eq!(bits(&back.centre), bits(&rq.centre));
        assert_eq!(bits(back.rotation()), bits(rq.rotation()));
        assert_eq!(back, rq);
        let x = &data[dim..2 * dim];
        assert_eq!(back.encode(x), rq.encode(x));

        let err = RabitQ::read(&mut &bytes[..bytes.len() - 1]).unwrap_err();
        assert!(err.to_string().contains("rotation"), "{err}");
        let mut bad = bytes.clone();
        bad[3] = 0;
        assert!(RabitQ::read(&mut bad.as_slice())
            .unwrap_err()
            .to_string()
            .contains("magic"));
        let mut bad = bytes.clone();
        bad[8..12].copy_from_slice(&50u32.to_le_bytes());
        let err = RabitQ::read(&mut bad.as_slice()).unwrap_err();
        assert!(err.to_string().contains("dim = 50"), "{err}");
    }
}
