//! Extended RaBitQ (Gao, Gou, Xu, Yang, Long and Wong, SIGMOD 2025,
//! "Practical and asymptotically optimal quantization of high-dimensional
//! vectors in Euclidean space"): B bits a dimension, every vector's code in
//! RAM, and an estimate whose error has a bound — so the refinement stage
//! can settle candidates without reading them (issue #57 item 2).
//!
//! Why not PQ: at the same bytes PQ ranks about as well (REFERENCE.md's
//! floor), but its error has no usable bound (a residual-norm bound on
//! wordnet-minilm saved one read in fifteen). Here a candidate whose upper
//! bound lies below the k-th lower bound of the others is in the top k
//! whatever its exact distance, and one whose lower bound lies above the
//! k-th upper bound is out; only the rest need a read
//! (`search::settle`).
//!
//! # Encoding (§3.1–3.2)
//! As 1-bit RaBitQ ([`super::rabitq`]), against the nearest of K cluster
//! centres ([`super::exrabitq_centres`]; K = 1 is the data's mean `c`):
//! `r = P(o − c) − P(c_i − c)` with `P` a random orthogonal matrix, and
//! `r' = r/‖r‖`. The code is a vector of levels `k_i ∈ [0, 2^B)`, standing
//! for `ō_i = k_i − (2^B−1)/2` (B = 1 is the sign code), chosen as
//! `round(t·r'_i)` for the rescaling `t` that maximises `⟨ō/‖ō‖, r'⟩`
//! (§3.2 enumerates every critical `t`; a grid of [`SCALES`] values comes
//! within 1e-4 of it in the tests). Kept a vector ([`Factors`], 10 bytes):
//! an additive term, `‖r‖`, `‖r‖/(‖ō‖·⟨ō_n, r'⟩)` and
//! `sqrt(1 − ⟨ō_n,r'⟩²)/⟨ō_n,r'⟩` (f16), and its centre (u16).
//!
//! # Estimation (§3.3; RaBitQ Theorem 3.2)
//! For any `y`, `⟨r, y⟩ ≈ ‖r‖⟨ō_n, y⟩/⟨ō_n, r'⟩`, unbiased, with error at
//! most `‖r‖‖y‖ · sqrt(1 − ⟨ō_n,r'⟩²)/⟨ō_n,r'⟩ · ε₀/sqrt(D − 1)` except
//! with probability about `P(|N(0,1)| > ε₀)`. For L2 it is taken at
//! `y = P(q − c_i)`: `‖q − o‖² = ‖q − c_i‖² + ‖r‖² − 2⟨q − c_i, r⟩`, where
//! `‖q − c_i‖²` comes once a query for every centre and
//! `⟨P(q − c_i), r⟩ = ‖q − c‖⟨q', r⟩ − ⟨P(c_i − c), r⟩`: the query's
//! one rotation `q' = P(q − c)/‖q − c‖` meets the code, and the second
//! term, estimated from the code at encode, is in the additive term
//! `‖r‖² + 2·est⟨P(c_i − c), r⟩`. The error scales with `‖q − c_i‖·‖r‖`
//! instead of `‖q − c‖·‖o − c‖`: on wordnet-minilm real queries' 100
//! nearest get a bound 0.87x as wide at 1,024 centres, at the ε₀ each
//! measures (the bound at ε₀ = 1 is 0.76x, the measured ε₀ 1.16x). For
//! inner product `⟨q, o⟩ = ⟨q, c⟩ + ⟨q, c_i − c⟩ + ⟨q, r⟩`,
//! the last estimated at `q' = P q/‖q‖`. The bound's ε₀ is measured on
//! the data at train (`exrabitq_eps`); [`EPSILON0`] stands where it
//! cannot be.
//!
//! At four bits the query is also rounded to i8 (step `Δ = max|q'_i|/127`)
//! and the levels meet it in an exact integer kernel
//! (`stratavec_simd::u4`), several times faster than floats. The rounding
//! moves `⟨ō_n, q'⟩` by `⟨ō_n, e⟩` with `|e_i| ≤ Δ/2` spread evenly: a
//! sum of standard deviation `Δ/√12`, which the bound adds at the same ε₀
//! (its worst case, `‖ō_n‖₁·Δ/2`, is 5x wider and never near). At eight
//! bits it is rounded to i16 instead (`stratavec_simd::u8i16`, step
//! `max|q'_i|/16383` at 384-d), the same term ~100x smaller.

use super::exrabitq_centres::{self as centres, Centres};
use super::pca::{invalid, orthonormalize_rows, read_f32s, read_field, read_u32, write_f32s};
use super::{Quantizer, QueryTable};
use crate::data::Metric;
use crate::util::rng::Rng;
use rayon::prelude::*;
use std::io::{self, Read, Write};

/// The file's magic: version 3 codes vectors against cluster centres
/// ([`super::exrabitq_centres`]); version 2 against the mean alone, with
/// the measured ε₀ after `n`; a version 1 file (no ε₀) reads with
/// [`EPSILON0`]. Versions 1 and 2 read as one centre.
const MAGIC: &[u8; 8] = b"STRVXRQ3";
const MAGIC_V2: &[u8; 8] = b"STRVXRQ2";
const MAGIC_V1: &[u8; 8] = b"STRVXRQ1";

/// The confidence parameter of the bounds when none was measured (too
/// little data, or a version 1 file): 3.5 standard deviations of the
/// estimator's error (about 0.05% of nearly orthogonal pairs fail it, fewer
/// of the correlated ones that matter). A trained quantizer measures its
/// own on its data's near pairs ([`super::exrabitq_eps`]).
pub const EPSILON0: f32 = 3.5;

/// Rescaling factors tried per vector (module notes).
pub const SCALES: usize = 48;

/// Bits a dimension the codes may have.
pub const BITS: std::ops::RangeInclusive<usize> = 1..=8;

/// A trained extended-RaBitQ quantizer with every vector's code.
#[derive(Clone, Debug, PartialEq)]
pub struct ExRabitQ {
    pub dim: usize,
    pub bits: usize,
    pub metric: Metric,
    centre: Vec<f32>,
    /// P, `dim x dim`.
    rotation: Rotation,
    /// The cluster centres vectors are coded against, as rotated offsets
    /// from `centre` (one, zero, where there are none).
    centres: Centres,
    /// `n x code_bytes`, levels bit-packed little-endian.
    pub codes: Vec<u8>,
    /// Per vector: `‖o − c‖`, `‖r‖`, `1/(‖ō‖·⟨ō_n,r'⟩)`, the error's
    /// unit, its centre.
    pub factors: Vec<Factors>,
    /// The ε₀ the search's bounds are taken at: measured on the training
    /// data's near pairs (`exrabitq_eps`), or [`EPSILON0`].
    pub eps: f32,
}

/// The rotation P, its values rounded to f16: held as an f16 matrix whose
/// product runs four rows at a time (`stratavec_simd::matvec`; a row at a
/// time, the f32 product was 11.6% of a wordnet-mpnet search's CPU), and
/// as f32 for the file. Data and queries go through the same rounded P;
/// its rows are then orthonormal to ~2⁻¹¹, which moves an estimate's
/// inner product by ~1e-4 against a bound of ~1e-2 (the tests' bound
/// checks include it).
pub struct Rotation {
    values: Vec<f32>,
    matrix: stratavec_simd::F16Matrix,
}

impl Rotation {
    fn new(values: &[f32], dim: usize) -> Rotation {
        use stratavec_simd::half::{f16_to_f32, f32_to_f16};
        let halves: Vec<u16> = values.iter().map(|&v| f32_to_f16(v)).collect();
        let bytes = halves.iter().flat_map(|h| h.to_le_bytes()).collect();
        Rotation {
            values: halves.into_iter().map(f16_to_f32).collect(),
            matrix: stratavec_simd::F16Matrix::from_f16_bytes(bytes, dim),
        }
    }

    /// `out = P x`.
    fn apply(&self, x: &[f32], out: &mut [f32]) {
        self.matrix.apply(x, out);
    }

    #[cfg(test)]
    fn rows(&self) -> std::slice::ChunksExact<'_, f32> {
        self.values.chunks_exact(self.matrix.cols())
    }
}

impl Clone for Rotation {
    fn clone(&self) -> Self {
        Rotation::new(&self.values, self.matrix.cols())
    }
}

impl PartialEq for Rotation {
    fn eq(&self, o: &Self) -> bool {
        self.values == o.values
    }
}

impl std::fmt::Debug for Rotation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Rotation({0}x{0}, f16)", self.matrix.cols())
    }
}

/// A vector's factors as held, in f16: the estimate's additive term (L2:
/// `‖r‖² + 2·est⟨offset, r⟩`; 0 for inner product), the residual's norm,
/// the multiplier (times that norm: one product an estimate) and the
/// error's unit (the term's and the multiplier's rounding, ≤ 2⁻¹¹ of each,
/// join the bound; the norm and the unit are rounded up, so the bound only
/// widens); and the centre the residual is taken from. Ten bytes: at 20%
/// of wordnet-minilm each byte a vector is 1% of the graph's lists.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Factors {
    add: u16,
    rnorm: u16,
    scale: u16,
    err: u16,
    centre: u16,
}

/// What a quantizer is trained for, besides its data and centres.
#[derive(Clone, Copy)]
struct Spec {
    dim: usize,
    bits: usize,
    metric: Metric,
    seed: u64,
}

/// The relative rounding of an f16.
const F16_REL: f32 = 1.0 / 2048.0;

impl Factors {
    fn new([add, rnorm, mult, err]: [f32; 4], centre: u16) -> Factors {
        use stratavec_simd::half::f32_to_f16;
        Factors {
            add: f32_to_f16(add),
            rnorm: f32_to_f16(rnorm * (1.0 + 2.0 * F16_REL)),
            scale: f32_to_f16(mult * rnorm),
            err: f32_to_f16(err * (1.0 + 2.0 * F16_REL)),
            centre,
        }
    }

    /// Factors as written ([`Factors::get`]'s): already f16 values, so
    /// nothing rounds again.
    fn read([add, rnorm, scale, err]: [f32; 4], centre: u16) -> Factors {
        use stratavec_simd::half::f32_to_f16;
        Factors {
            add: f32_to_f16(add),
            rnorm: f32_to_f16(rnorm),
            scale: f32_to_f16(scale),
            err: f32_to_f16(err),
            centre,
        }
    }

    /// `[additive term, ‖r‖, ‖r‖ × multiplier, error's unit]`.
    pub fn get(&self) -> [f32; 4] {
        use stratavec_simd::half::f16_to_f32;
        [
            f16_to_f32(self.add),
            f16_to_f32(self.rnorm),
            f16_to_f32(self.scale),
            f16_to_f32(self.err),
        ]
    }

    /// The centre the residual was taken from.
    pub fn centre(&self) -> usize {
        self.centre as usize
    }
}

/// Bytes of one vector's levels.
pub fn code_bytes(dim: usize, bits: usize) -> usize {
    (dim * bits).div_ceil(8)
}

/// Bytes one vector holds in RAM: its levels and its [`Factors`].
pub fn bytes_per_vector(dim: usize, bits: usize) -> usize {
    code_bytes(dim, bits) + std::mem::size_of::<Factors>()
}

/// The largest bits a dimension whose codes take at most `bytes` a vector.
pub fn bits_within(dim: usize, bytes: usize) -> Option<usize> {
    BITS.rev().find(|&b| bytes_per_vector(dim, b) <= bytes)
}

fn half(bits: usize) -> f32 {
    ((1u32 << bits) - 1) as f32 / 2.0
}

/// Level `i` of a packed code.
fn level(code: &[u8], bits: usize, i: usize) -> u32 {
    let bit = i * bits;
    let (byte, shift) = (bit / 8, bit % 8);
    let lo = code[byte] as u32;
    let hi = code.get(byte + 1).map_or(0, |&b| b as u32);
    ((lo | hi << 8) >> shift) & ((1 << bits) - 1)
}

fn set_level(code: &mut [u8], bits: usize, i: usize, k: u32) {
    let bit = i * bits;
    let (byte, shift) = (bit / 8, bit % 8);
    let v = k << shift;
    code[byte] |= v as u8;
    if shift + bits > 8 {
        code[byte + 1] |= (v >> 8) as u8;
    }
}

/// `Σ_i k_i q_i`, the levels read from `code`. Four and eight bits a
/// level have loops the compiler vectorises; other widths unpack one level
/// at a time.
pub fn dot_levels(code: &[u8], bits: usize, q: &[f32]) -> f32 {
    match bits {
        4 => dot4(code, q),
        8 => {
            let mut acc = [0f32; 8];
            for (c, q) in code.chunks_exact(8).zip(q.chunks_exact(8)) {
                for j in 0..8 {
                    acc[j] += c[j] as f32 * q[j];
                }
            }
            let done = q.len() / 8 * 8;
            let tail: f32 = (done..q.len()).map(|i| code[i] as f32 * q[i]).sum();
            acc.iter().sum::<f32>() + tail
        }
        _ => (0..q.len())
            .map(|i| level(code, bits, i) as f32 * q[i])
            .sum(),
    }
}

fn dot4(code: &[u8], q: &[f32]) -> f32 {
    let mut acc = [0f32; 16];
    for (c, q) in code.chunks_exact(8).zip(q.chunks_exact(16)) {
        for j in 0..8 {
            acc[2 * j] += (c[j] & 15) as f32 * q[2 * j];
            acc[2 * j + 1] += (c[j] >> 4) as f32 * q[2 * j + 1];
        }
    }
    let done = q.len() / 16 * 16;
    let tail: f32 = (done..q.len())
        .map(|i| level(code, 4, i) as f32 * q[i])
        .sum();
    acc.iter().sum::<f32>() + tail
}

/// The levels of unit vector `u` at `bits`, written into `code` (zeroed
/// first), and `⟨ō_n, u⟩` with `‖ō‖` (module notes: the best of
/// [`SCALES`] rescalings).
pub fn quantize_unit(u: &[f32], bits: usize, code: &mut [u8]) -> (f32, f32) {
    let h = half(bits);
    let top = ((1u32 << bits) - 1) as f32;
    let max = u.iter().fold(0f32, |m, v| m.max(v.abs()));
    code.fill(0);
    if max == 0.0 {
        // o = c: every estimate is exact whatever the code.
        return (1.0, (u.len() as f32 * 0.25).sqrt().max(f32::MIN_POSITIVE));
    }
    let t_max = h / max;
    let levels = |t: f32| u.iter().map(move |&v| (v * t + h).round().clamp(0.0, top));
    let mut best = (f32::MIN, t_max);
    for s in 0..SCALES {
        // Factors from 0.5 to 4 of the scale that puts the largest
        // coordinate on the top level (larger ones clip it).
        let t = t_max * (0.5 + 3.5 * s as f32 / (SCALES - 1) as f32);
        let (mut dot, mut norm) = (0f32, 0f32);
        for (k, &v) in levels(t).zip(u) {
            let o = k - h;
            dot += o * v;
            norm += o * o;
        }
        let cos = dot / norm.sqrt().max(f32::MIN_POSITIVE);
        if cos > best.0 {
            best = (cos, t);
        }
    }
    let mut norm = 0f32;
    for (i, k) in levels(best.1).enumerate() {
        set_level(code, bits, i, k as u32);
        norm += (k - h) * (k - h);
    }
    (best.0.clamp(f32::MIN_POSITIVE, 1.0), norm.sqrt())
}

impl ExRabitQ {
    /// Trains the centre, rotation and cluster centres on `data` and
    /// encodes every row at `bits` a dimension; the bound's ε₀ is measured
    /// with rows standing in for queries (`exrabitq_eps`). The centres are
    /// [`centres::default_count`]'s, or the mean alone where that gives the
    /// rows' near pairs narrower bounds: the centres' gain depends on the
    /// data (at ~600 rows a centre the bounds were 4.5% and 7.5% narrower
    /// on 40k rows of wordnet-minilm and wordnet-mpnet, 6.5% wider on a
    /// 20k-row cut of wordnet-minilm).
    pub fn train(data: &[f32], dim: usize, bits: usize, metric: Metric, seed: u64) -> ExRabitQ {
        Self::train_choosing(data, dim, bits, metric, seed).0
    }

    /// [`Self::train`], and why it kept the centres it did (for the build
    /// report; empty when the data had too few rows for more than one).
    pub fn train_choosing(
        data: &[f32],
        dim: usize,
        bits: usize,
        metric: Metric,
        seed: u64,
    ) -> (ExRabitQ, String) {
        let spec = Spec {
            dim,
            bits,
            metric,
            seed,
        };
        let one = Self::measured(data, spec, 1);
        let k = centres::default_count(data.len() / dim.max(1));
        if k == 1 {
            return (one.0, String::new());
        }
        let many = Self::measured(data, spec, k);
        let (Some(a), Some(b)) = (many.1, one.1) else {
            return (
                one.0,
                format!("1: too few rows to measure {k} centres against"),
            );
        };
        let why = |q: &ExRabitQ, other: f32| {
            format!(
                "the rows' near pairs' bounds {:.3}x as wide at {k} centres as at the mean \
                 alone (ε₀ {:.2} against {other:.2})",
                a / b,
                q.eps
            )
        };
        match a < b {
            true => {
                let w = format!("{k}: {}", why(&many.0, one.0.eps));
                (many.0, w)
            }
            false => {
                let w = format!("1: {}", why(&many.0, one.0.eps));
                (one.0, w)
            }
        }
    }

    /// [`Self::train`] with `clusters` centres (1: the mean alone).
    pub fn train_with(
        data: &[f32],
        dim: usize,
        bits: usize,
        metric: Metric,
        seed: u64,
        clusters: usize,
    ) -> ExRabitQ {
        let spec = Spec {
            dim,
            bits,
            metric,
            seed,
        };
        Self::measured(data, spec, clusters).0
    }

    /// The quantizer with every row of `data` encoded against `clusters`
    /// centres and its ε₀ measured, and the mean width of the rows' near
    /// pairs' bounds at that ε₀ (`exrabitq_eps::measure`).
    fn measured(data: &[f32], s: Spec, clusters: usize) -> (ExRabitQ, Option<f64>) {
        let dim = s.dim;
        assert!(BITS.contains(&s.bits), "exrabitq: bits must be 1..=8");
        assert!(dim > 1 && data.len().is_multiple_of(dim));
        assert!((1..=centres::LIMIT).contains(&clusters));
        let centre = crate::graph::medoid::centroid(data, dim);
        let mut rng = Rng::new(s.seed ^ 0x5852_5130);
        let mut p: Vec<f64> = (0..dim * dim).map(|_| rng.normal() as f64).collect();
        orthonormalize_rows(&mut p, dim, &mut rng);
        let rotation = Rotation::new(&p.iter().map(|&x| x as f32).collect::<Vec<_>>(), dim);
        let centres = Centres::train(data, dim, clusters, &centre, s.seed, &|x, out| {
            rotation.apply(x, out)
        });
        let mut q = ExRabitQ {
            dim,
            bits: s.bits,
            metric: s.metric,
            centre,
            rotation,
            centres,
            codes: Vec::new(),
            factors: Vec::new(),
            eps: EPSILON0,
        };
        q.encode_all(data);
        let (eps, width) = super::exrabitq_eps::measure(&q, data);
        q.eps = eps;
        (q, width)
    }

    /// The cluster centres vectors are coded against.
    pub fn centre_count(&self) -> usize {
        self.centres.count()
    }

    /// Replaces the codes with those of `data`'s rows.
    pub fn encode_all(&mut self, data: &[f32]) {
        let cb = code_bytes(self.dim, self.bits);
        let n = data.len() / self.dim;
        let mut codes = vec![0u8; n * cb];
        let mut factors = vec![Factors::new([0.0; 4], 0); n];
        codes
            .par_chunks_mut(cb)
            .zip(factors.par_iter_mut())
            .zip(data.par_chunks(self.dim))
            .for_each_init(
                || (Vec::new(), Vec::new()),
                |(centred, rot), ((code, f), x)| *f = self.encode_into(x, code, centred, rot),
            );
        back_with_huge_pages(&codes, &factors);
        self.codes = codes;
        self.factors = factors;
    }

    /// Appends the code of `x` (an insert).
    pub fn push(&mut self, x: &[f32]) {
        let cb = code_bytes(self.dim, self.bits);
        let mut code = vec![0u8; cb];
        let f = self.encode_into(x, &mut code, &mut Vec::new(), &mut Vec::new());
        self.codes.extend_from_slice(&code);
        self.factors.push(f);
    }

    /// The code of `x` against its nearest centre: the residual
    /// `P(x − c) − offset_i`, taken in the rotated space
    /// ([`super::exrabitq_centres`]).
    fn encode_into(
        &self,
        x: &[f32],
        code: &mut [u8],
        scratch: &mut Vec<f32>,
        rot: &mut Vec<f32>,
    ) -> Factors {
        rot.resize(self.dim, 0.0);
        self.rotate(x, true, scratch, rot);
        let centre = self.centres.nearest(rot, scratch);
        self.centres.offset(centre, scratch);
        rot.iter_mut().zip(&*scratch).for_each(|(r, o)| *r -= o);
        let rnorm = stratavec_simd::norm_sq_f32(rot).sqrt();
        if rnorm > 0.0 {
            rot.iter_mut().for_each(|v| *v /= rnorm);
        }
        let (cos, onorm) = quantize_unit(rot, self.bits, code);
        let f = Factors::new(
            [
                0.0,
                rnorm,
                1.0 / (onorm * cos),
                (1.0 - cos * cos).max(0.0).sqrt() / cos,
            ],
            centre as u16,
        );
        // est⟨offset, r⟩ from the code and the scale as held, so a query's
        // estimate of ⟨q − c_i, r⟩ is the code's estimate at `q − c_i`.
        let [_, _, scale, _] = f.get();
        let sum: f32 = scratch.iter().sum();
        let along = scale * (dot_levels(code, self.bits, scratch) - half(self.bits) * sum);
        let add = match self.metric {
            Metric::InnerProduct => 0.0,
            _ => rnorm * rnorm + 2.0 * along,
        };
        Factors {
            add: stratavec_simd::half::f32_to_f16(add),
            ..f
        }
    }

    /// `out = P(x − c)` (or `P x` with `centre` false); returns `‖·‖²` of
    /// what was rotated.
    fn rotate(&self, x: &[f32], centre: bool, scratch: &mut Vec<f32>, out: &mut [f32]) -> f32 {
        scratch.clear();
        match centre {
            true => scratch.extend(x.iter().zip(&self.centre).map(|(x, c)| x - c)),
            false => scratch.extend_from_slice(x),
        }
        self.rotation.apply(scratch, out);
        stratavec_simd::norm_sq_f32(scratch)
    }

    pub fn len(&self) -> usize {
        self.factors.len()
    }

    pub fn is_empty(&self) -> bool {
        self.factors.is_empty()
    }

    /// `1/sqrt(D − 1)`, the scale of the bound.
    fn unit(&self) -> f32 {
        1.0 / ((self.dim - 1) as f32).sqrt()
    }

    /// Estimate and error bound at `eps` of vector `id` for the prepared
    /// query (module notes).
    pub fn estimate_bound(&self, t: &QueryTable, id: u32, eps: f32) -> (f32, f32) {
        let (est, scaled, fixed) = self.estimate_parts(t, id);
        (est, eps * scaled + fixed)
    }

    /// The estimate of vector `id`, and its bound's two parts: the one ε₀
    /// scales (the estimator's spread, and the i8 query's rounding taken
    /// at the same ε₀), and the one it does not (f16 roundings of the
    /// factors, the centres' product), so that `exrabitq_eps` measures ε₀
    /// against the first alone.
    pub fn estimate_parts(&self, t: &QueryTable, id: u32) -> (f32, f32, f32) {
        let f = &self.factors[id as usize];
        let (add, off, est) = self.inner(t, id as usize);
        let [_, rnorm, _, err] = f.get();
        // The i8 query's rounding spread over ⟨ō_n, r'⟩ (1/cos from err).
        let rounding = match self.bits {
            4 | 8 => t.floats[self.dim + 1] * ROUNDING_SD * (1.0 + err * err).sqrt(),
            _ => 0.0,
        };
        let slack = t.bias * self.centres.slack(f.centre());
        let unit = err * self.unit();
        let (scaled, fixed) = match self.metric {
            Metric::InnerProduct => {
                // ⟨q, r⟩ estimated at the query itself; the scale's f16
                // rounding (twice for a file of version 2 or before).
                let held = 2.0 * F16_REL * t.bias * est.abs();
                (t.bias * rnorm * (unit + rounding), held + slack)
            }
            _ => {
                // ⟨q − c_i, r⟩ estimated at `q − c_i` (‖·‖² is `off`), less
                // est⟨offset, r⟩ (in `add`); the query's rounding is of `q'`.
                let along = (add - rnorm * rnorm) / 2.0;
                let held = 2.0 * F16_REL * (t.bias * est - along).abs();
                let at = off.max(0.0).sqrt() * unit + t.bias * rounding;
                (2.0 * rnorm * at, 2.0 * (held + slack) + F16_REL * add.abs())
            }
        };
        (self.distance(t, add, off, est), scaled, fixed)
    }

    /// The additive term, the centre's query term (`prepare`) and the
    /// code's estimate of `⟨q', r⟩` of vector `i` — what an estimate
    /// needs, without the bound's terms (the search stage's estimates
    /// take no bound).
    #[inline]
    fn inner(&self, t: &QueryTable, i: usize) -> (f32, f32, f32) {
        let cb = code_bytes(self.dim, self.bits);
        let f = &self.factors[i];
        let code = &self.codes[i * cb..(i + 1) * cb];
        // ⟨ō, q'⟩ = Σ k_i q'_i − half · Σ q'_i (of the integer query at
        // four and eight bits: `prepare_ints`, `prepare_shorts`).
        let (dot, sum) = match self.bits {
            4 => {
                let (even, odd) = t.ints.split_at(cb);
                let dot = stratavec_simd::u4::dot_u4_i8(code, even, odd) as f32;
                (dot * t.floats[self.dim + 1], t.floats[self.dim + 2])
            }
            8 => {
                let dot = stratavec_simd::u8i16::dot_u8_i16(code, &t.shorts) as f32;
                (dot * t.floats[self.dim + 1], t.floats[self.dim + 2])
            }
            _ => (dot_levels(code, self.bits, &t.floats[..self.dim]), t.scale),
        };
        use stratavec_simd::half::f16_to_f32;
        let est = (dot - half(self.bits) * sum) * f16_to_f32(f.scale);
        (f16_to_f32(f.add), t.offsets[f.centre()], est)
    }

    /// The estimated distance from [`Self::inner`]'s terms. L2:
    /// `‖q − c_i‖² + ‖r‖² − 2⟨q − c_i, r⟩`; inner product:
    /// `−(⟨q, c⟩ + ⟨q, c_i − c⟩ + ⟨q, r⟩)`.
    #[inline]
    fn distance(&self, t: &QueryTable, add: f32, off: f32, est: f32) -> f32 {
        match self.metric {
            Metric::InnerProduct => -(t.floats[self.dim] + t.bias * (off + est)),
            _ => add + off - 2.0 * t.bias * est,
        }
    }

    /// Writes the quantizer and its codes (little-endian): magic
    /// "STRVXRQ3", u32 dim, bits, metric (0 L2, 1 inner product), n, f32
    /// ε₀, u32 centres K; the mean, the rotation, K x dim f16 offsets,
    /// n x 4 f32 factors ([`Factors::get`]), n u16 centres, then the codes.
    pub fn write(&self, w: &mut impl Write) -> io::Result<()> {
        w.write_all(MAGIC)?;
        let metric = u32::from(self.metric == Metric::InnerProduct);
        for v in [self.dim, self.bits, metric as usize, self.len()] {
            w.write_all(&(v as u32).to_le_bytes())?;
        }
        w.write_all(&self.eps.to_le_bytes())?;
        w.write_all(&(self.centres.count() as u32).to_le_bytes())?;
        write_f32s(w, &self.centre)?;
        write_f32s(w, &self.rotation.values)?;
        let halves: Vec<u8> = self
            .centres
            .halves()
            .iter()
            .flat_map(|h| h.to_le_bytes())
            .collect();
        w.write_all(&halves)?;
        let flat: Vec<f32> = self.factors.iter().flat_map(|f| f.get()).collect();
        write_f32s(w, &flat)?;
        let ids: Vec<u8> = self
            .factors
            .iter()
            .flat_map(|f| f.centre.to_le_bytes())
            .collect();
        w.write_all(&ids)?;
        w.write_all(&self.codes)
    }

    /// Reads what [`ExRabitQ::write`] wrote (or a version 1 or 2 file, as
    /// one centre), checking it holds `n` codes of `dim` (the manifest's);
    /// every mismatch names the field, the expected and the found value.
    pub fn read(r: &mut impl Read, n: usize, dim: usize, metric: Metric) -> io::Result<ExRabitQ> {
        let mut magic = [0u8; 8];
        read_field(r, &mut magic, "magic")?;
        let version = match &magic {
            m if m == MAGIC => 3,
            m if m == MAGIC_V2 => 2,
            m if m == MAGIC_V1 => 1,
            _ => {
                return Err(invalid(format!(
                    "exrabitq: magic is {magic:?}, expected \"STRVXRQ3\" (or \"STRVXRQ2\", \"STRVXRQ1\")"
                )))
            }
        };
        let expect = |field: &str, want: usize, got: u32| match got as usize == want {
            true => Ok(()),
            false => Err(invalid(format!(
                "exrabitq: {field} is {got}, expected {want}"
            ))),
        };
        expect("dim", dim, read_u32(r, "dim")?)?;
        let bits = read_u32(r, "bits")? as usize;
        if !BITS.contains(&bits) {
            return Err(invalid(format!(
                "exrabitq: bits is {bits}, expected 1 to 8"
            )));
        }
        let ip = u32::from(metric == Metric::InnerProduct);
        expect("metric", ip as usize, read_u32(r, "metric")?)?;
        expect("n", n, read_u32(r, "n")?)?;
        let eps = match version {
            1 => EPSILON0,
            _ => read_eps(r)?,
        };
        let k = match version {
            3 => read_centre_count(r)?,
            _ => 1,
        };
        let centre = read_f32s(r, dim, "exrabitq: centre")?;
        let rotation = read_f32s(r, dim * dim, "exrabitq: rotation")?;
        let (centres, factors) = match version {
            3 => read_centres_and_factors(r, n, dim, k)?,
            _ => {
                // One centre, the mean: the residual is `o − c`, and the
                // additive term its norm squared (L2).
                let flat = read_f32s(r, n * 3, "exrabitq: factors")?;
                let add = |norm: f32| match metric {
                    Metric::InnerProduct => 0.0,
                    _ => norm * norm,
                };
                let factors = flat
                    .chunks_exact(3)
                    .map(|f| Factors::read([add(f[0]), f[0], f[1] * f[0], f[2]], 0))
                    .collect();
                (Centres::single(dim), factors)
            }
        };
        let mut codes = vec![0u8; n * code_bytes(dim, bits)];
        read_field(r, &mut codes, "exrabitq: codes")?;
        back_with_huge_pages(&codes, &factors);
        Ok(ExRabitQ {
            dim,
            bits,
            metric,
            centre,
            rotation: Rotation::new(&rotation, dim),
            centres,
            codes,
            factors,
            eps,
        })
    }
}

/// A version 3 file's centre count: 1 to [`centres::LIMIT`].
fn read_centre_count(r: &mut impl Read) -> io::Result<usize> {
    let k = read_u32(r, "exrabitq: centres")? as usize;
    match (1..=centres::LIMIT).contains(&k) {
        true => Ok(k),
        false => Err(invalid(format!(
            "exrabitq: centres is {k}, expected 1 to {}",
            centres::LIMIT
        ))),
    }
}

/// A version 3 file's offsets, factors and each vector's centre (below
/// `k`, or the file is refused).
fn read_centres_and_factors(
    r: &mut impl Read,
    n: usize,
    dim: usize,
    k: usize,
) -> io::Result<(Centres, Vec<Factors>)> {
    let mut bytes = vec![0u8; k * dim * 2];
    read_field(r, &mut bytes, "exrabitq: offsets")?;
    let halves = bytes
        .chunks_exact(2)
        .map(|h| u16::from_le_bytes([h[0], h[1]]))
        .collect();
    let flat = read_f32s(r, n * 4, "exrabitq: factors")?;
    let mut ids = vec![0u8; n * 2];
    read_field(r, &mut ids, "exrabitq: centre ids")?;
    let mut factors = Vec::with_capacity(n);
    for (i, (f, id)) in flat.chunks_exact(4).zip(ids.chunks_exact(2)).enumerate() {
        let c = u16::from_le_bytes([id[0], id[1]]);
        if c as usize >= k {
            return Err(invalid(format!(
                "exrabitq: centre of vector {i} is {c}, expected below {k}"
            )));
        }
        factors.push(Factors::read([f[0], f[1], f[2], f[3]], c));
    }
    Ok((Centres::from_halves(halves, dim), factors))
}

/// A version 2 file's ε₀: positive and finite, or the file is refused.
fn read_eps(r: &mut impl Read) -> io::Result<f32> {
    let mut b = [0u8; 4];
    read_field(r, &mut b, "exrabitq: eps")?;
    let eps = f32::from_le_bytes(b);
    match eps.is_finite() && eps > 0.0 {
        true => Ok(eps),
        false => Err(invalid(format!(
            "exrabitq: eps is {eps}, expected a positive finite ε₀"
        ))),
    }
}

/// The codes and factors every estimate reads at random, on 2 MB pages
/// (`stratavec_io::huge_pages`: a TLB miss a row otherwise).
fn back_with_huge_pages(codes: &[u8], factors: &[Factors]) {
    stratavec_io::huge_pages::back(codes);
    stratavec_io::huge_pages::back(factors);
}

/// How far ahead of the row it scores `estimate_many` fetches one: 1×1 at
/// 20% of wordnet-minilm, L 20 (no reads), 10,000 queries' task-clock was
/// 1.65–1.88 s without, 1.22–1.27 s at 4, 1.50 at 6 (three interleaved
/// rounds on a noisy machine); 2 and 8 were worse than 4 too. Four rows
/// of four lines each are about what the core's outstanding misses hold.
const AHEAD: usize = 4;

/// The standard deviation of a rounding error uniform over one step.
const ROUNDING_SD: f32 = 0.288_675_13; // 1/√12

impl ExRabitQ {
    /// Rounds the prepared unit query to i8 for the four-bit kernel: even
    /// elements then odd ones into `ints`, and after the floats the step
    /// and the rounded query's sum.
    fn prepare_ints(&self, t: &mut QueryTable) {
        let cb = code_bytes(self.dim, 4);
        t.ints.clear();
        t.ints.resize(2 * cb, 0);
        let ints = &mut t.ints;
        let (step, sum) = round_query(&t.floats[..self.dim], 127, |i, r| {
            ints[(i % 2) * cb + i / 2] = r as i8;
        });
        t.floats.truncate(self.dim + 1);
        t.floats.extend([step, sum as f32 * step]);
    }

    /// Rounds the prepared unit query to i16 for the eight-bit kernel
    /// (`stratavec_simd::u8i16`, which says why not i8), with the step and
    /// the rounded query's sum after the floats, as at four bits.
    fn prepare_shorts(&self, t: &mut QueryTable) {
        t.shorts.clear();
        t.shorts.resize(self.dim, 0);
        let shorts = &mut t.shorts;
        let top = stratavec_simd::u8i16::max_query(self.dim);
        let (step, sum) = round_query(&t.floats[..self.dim], top, |i, r| shorts[i] = r);
        t.floats.truncate(self.dim + 1);
        t.floats.extend([step, sum as f32 * step]);
    }
}

/// Rounds `q` to integers of magnitude at most `top` (step `max|q_i|/top`),
/// handing each to `put`; returns the step and the rounded sum.
fn round_query(q: &[f32], top: i16, mut put: impl FnMut(usize, i16)) -> (f32, i64) {
    let max = q.iter().fold(0f32, |m, v| m.max(v.abs()));
    let step = if max > 0.0 { max / top as f32 } else { 1.0 };
    let mut sum = 0i64;
    for (i, &v) in q.iter().enumerate() {
        let r = (v / step).round().clamp(-(top as f32), top as f32) as i16;
        sum += r as i64;
        put(i, r);
    }
    (step, sum)
}

impl Quantizer for ExRabitQ {
    fn name(&self) -> String {
        format!("exrabitq{}", self.bits)
    }

    fn bytes_per_vector(&self) -> usize {
        bytes_per_vector(self.dim, self.bits)
    }

    fn resident_bytes(&self) -> usize {
        self.codes.len()
            + self.factors.len() * std::mem::size_of::<Factors>()
            + self.centre.len() * 4
            + self.rotation.matrix.resident_bytes()
            + self.centres.resident_bytes()
    }

    /// `q' = P(q − c)/‖q − c‖` (inner product: `P q/‖q‖`, and `⟨q, c⟩`
    /// after it) into `floats`; `bias` the norm, `scale` `Σ q'_i`; `q'`'s
    /// product with every centre's offset into `offsets`.
    fn prepare(&self, query: &[f32], table: &mut QueryTable) {
        let ip = self.metric == Metric::InnerProduct;
        table.floats.resize(self.dim + 1, 0.0);
        let mut scratch = Vec::with_capacity(self.dim);
        let norm = self
            .rotate(query, !ip, &mut scratch, &mut table.floats[..self.dim])
            .sqrt();
        if norm > 0.0 {
            table.floats[..self.dim].iter_mut().for_each(|v| *v /= norm);
        }
        table.floats[self.dim] = match ip {
            true => stratavec_simd::dot_f32(query, &self.centre),
            false => 0.0,
        };
        table.bias = norm;
        table.scale = table.floats[..self.dim].iter().sum();
        // Each centre's term: ‖q − c_i‖² for L2, ⟨q, c_i − c⟩ / ‖q‖ for
        // inner product (`distance`).
        self.centres
            .dots(&table.floats[..self.dim], &mut table.offsets);
        if !ip {
            for (i, o) in table.offsets.iter_mut().enumerate() {
                *o = (norm * norm - 2.0 * norm * *o + self.centres.norm_sq(i)).max(0.0);
            }
        }
        match self.bits {
            4 => self.prepare_ints(table),
            8 => self.prepare_shorts(table),
            _ => {}
        }
    }

    fn estimate_many(&self, table: &QueryTable, ids: &[u32], out: &mut [f32]) {
        let cb = code_bytes(self.dim, self.bits);
        for (i, (o, &id)) in out.iter_mut().zip(ids).enumerate() {
            // The row AHEAD places on is fetched while this one is scored:
            // rows lie at random in the codes, and each estimate otherwise
            // waits on its own misses (`prefetch` covers the first rows of
            // the next expansion).
            if let Some(next) = ids.get(i + AHEAD..i + AHEAD + 1) {
                stratavec_simd::prefetch_rows(&self.codes, cb, next);
                stratavec_simd::prefetch_items(&self.factors, next);
            }
            let (add, off, est) = self.inner(table, id as usize);
            *o = self.distance(table, add, off, est);
        }
    }

    fn prefetch(&self, ids: &[u32]) {
        stratavec_simd::prefetch_rows(&self.codes, code_bytes(self.dim, self.bits), ids);
        // An estimate reads the factors too; unfetched, their miss was a
        // quarter of an eight-bit search's CPU (wordnet-minilm, 40%).
        stratavec_simd::prefetch_items(&self.factors, ids);
    }

    fn bounds_many(
        &self,
        table: &QueryTable,
        ids: &[u32],
        est: &mut [f32],
        err: &mut [f32],
    ) -> bool {
        for ((e, b), &id) in est.iter_mut().zip(err.iter_mut()).zip(ids) {
            (*e, *b) = self.estimate_bound(table, id, self.eps);
        }
        true
    }
}

#[cfg(test)]
#[path = "exrabitq_tests.rs"]
mod tests;
