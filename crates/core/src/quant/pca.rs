//! Principal component analysis: the split of every vector into a principal
//! part and a residual (AlayaLaser §3.2, "SIMD-friendly layout").
//!
//! Why: a node record can hold a compact code of each neighbour only if the
//! code is small, and a quantizer that spends the same bits on every
//! dimension wastes most of them on dimensions with little variance. PCA
//! moves the variance into the first `main_dim` coordinates; those are
//! quantized (RaBitQ, [`super::rabitq`]) and the rest is kept only as a
//! norm. Because the components are orthonormal the split is exact:
//! `‖x − mean‖² = ‖project(x)‖² + residual_norm_sq(x)` (Bishop 2006, §12.1),
//! so a distance is `‖P(q − x)‖²` plus the residuals' share.
//!
//! The fit is written here (no linear-algebra dependency) and is small: the
//! covariance of a seeded sample in f64, then the top eigenvectors by
//! orthogonal (subspace) iteration with Rayleigh–Ritz, also in f64. It is
//! deterministic for a seed whatever the number of threads: the parallel
//! covariance sums fixed blocks of rows and adds the blocks in order.

use super::eigen::sym_eigen;
use crate::util::rng::Rng;
use rayon::prelude::*;
use std::io::{self, Read, Write};

const MAGIC: &[u8; 8] = b"STRVPCA1";

/// Largest dimension [`Pca::read`] accepts (a corrupt header must not make
/// it allocate gigabytes).
const MAX_DIM: usize = 1 << 16;

/// Subspace-iteration limits: stop when the top `main_dim` Ritz values
/// change by less than this (relative) between two checks...
const RITZ_TOL: f64 = 1e-9;
/// ... or after this many iterations.
const MAX_ITERS: usize = 200;
/// Iterations between two Rayleigh–Ritz checks (a check costs an
/// eigen-decomposition of the small projected matrix).
const CHECK_EVERY: usize = 5;

/// A fitted PCA: `project(x) = components · (x − mean)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Pca {
    /// Input dimension.
    pub dim: usize,
    /// Number of principal components kept.
    pub main_dim: usize,
    /// Mean of the fitted sample (`dim` values).
    pub mean: Vec<f32>,
    /// `main_dim x dim`, row-major: orthonormal rows, by decreasing variance.
    pub components: Vec<f32>,
    /// Variance along each component (the covariance eigenvalues, `main_dim`
    /// values, decreasing).
    pub variances: Vec<f32>,
    /// Total variance of the sample (trace of the covariance), for
    /// [`Pca::explained`].
    pub total_variance: f32,
}

impl Pca {
    /// Fits `main_dim` components on a seeded sample of at most `sample`
    /// rows of `data` (row-major, `dim` wide). The covariance is
    /// `(1/m) Σ (x − mean)(x − mean)ᵀ` over the `m` sampled rows, in f64.
    /// Panics unless `1 <= main_dim <= dim` and `data` holds at least one
    /// whole row.
    pub fn fit(data: &[f32], dim: usize, main_dim: usize, sample: usize, seed: u64) -> Pca {
        assert!(dim > 0, "pca: dim must be positive");
        assert!(
            (1..=dim).contains(&main_dim),
            "pca: main_dim = {main_dim} must be in 1..={dim}"
        );
        assert!(
            data.len().is_multiple_of(dim) && !data.is_empty(),
            "pca: data must hold whole rows of {dim}"
        );
        let n = data.len() / dim;
        let rng = Rng::new(seed);
        let mut ids = rng.fork(0).sample(n, sample.clamp(1, n));
        ids.sort_unstable();
        let mean = sample_mean(data, dim, &ids);
        let cov = covariance(data, dim, &ids, &mean);
        let total: f64 = (0..dim).map(|i| cov[i * dim + i]).sum();
        let (vecs, vals) = top_eigen(&cov, dim, main_dim, &mut rng.fork(1));
        let mut components = Vec::with_capacity(main_dim * dim);
        for v in vecs.chunks_exact(dim) {
            // Sign convention: the largest entry is positive, so a fit does
            // not flip a component for no reason.
            let big = v
                .iter()
                .fold(0f64, |b, &x| if x.abs() > b.abs() { x } else { b });
            let s = if big < 0.0 { -1.0 } else { 1.0 };
            components.extend(v.iter().map(|&x| (s * x) as f32));
        }
        Pca {
            dim,
            main_dim,
            mean: mean.iter().map(|&m| m as f32).collect(),
            components,
            variances: vals.iter().map(|&v| v.max(0.0) as f32).collect(),
            total_variance: total as f32,
        }
    }

    /// `out = components · (x − mean)` (`main_dim` values).
    pub fn project(&self, x: &[f32], out: &mut [f32]) {
        assert_eq!(x.len(), self.dim, "pca: x must be dim wide");
        assert_eq!(out.len(), self.main_dim, "pca: out must be main_dim wide");
        thread_local! {
            static CENTRED: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        CENTRED.with_borrow_mut(|c| {
            c.clear();
            c.extend(x.iter().zip(&self.mean).map(|(x, m)| x - m));
            for (o, row) in out.iter_mut().zip(self.components.chunks_exact(self.dim)) {
                *o = stratavec_simd::dot_f32(row, c);
            }
        });
    }

    /// Squared norm of the residual `x − mean − componentsᵀ · projected`:
    /// `‖x − mean‖² − ‖projected‖²` (the rows are orthonormal), clamped at
    /// 0 against rounding. `projected` is [`Pca::project`]'s output for `x`.
    pub fn residual_norm_sq(&self, x: &[f32], projected: &[f32]) -> f32 {
        let total = stratavec_simd::l2_sq_f32(x, &self.mean);
        (total - stratavec_simd::norm_sq_f32(projected)).max(0.0)
    }

    /// Share of the sample's total variance the kept components explain
    /// (1 for a sample without variance).
    pub fn explained(&self) -> f32 {
        if self.total_variance > 0.0 {
            let kept: f64 = self.variances.iter().map(|&v| v as f64).sum();
            (kept / self.total_variance as f64).min(1.0) as f32
        } else {
            1.0
        }
    }

    /// Writes the fit (little-endian): magic "STRVPCA1", u32 dim, u32
    /// main_dim, f32 total variance, dim x f32 mean, main_dim x f32
    /// variances, main_dim*dim x f32 components.
    pub fn write(&self, w: &mut impl Write) -> io::Result<()> {
        w.write_all(MAGIC)?;
        w.write_all(&(self.dim as u32).to_le_bytes())?;
        w.write_all(&(self.main_dim as u32).to_le_bytes())?;
        w.write_all(&self.total_variance.to_le_bytes())?;
        write_f32s(w, &self.mean)?;
        write_f32s(w, &self.variances)?;
        write_f32s(w, &self.components)
    }

    /// Reads what [`Pca::write`] wrote; a wrong magic, impossible sizes or a
    /// short stream give an error naming what was wrong.
    pub fn read(r: &mut impl Read) -> io::Result<Pca> {
        let mut magic = [0u8; 8];
        read_field(r, &mut magic, "magic")?;
        if &magic != MAGIC {
            return Err(invalid(format!(
                "pca: magic is {magic:?}, expected \"STRVPCA1\""
            )));
        }
        let dim = read_u32(r, "dim")? as usize;
        let main_dim = read_u32(r, "main_dim")? as usize;
        if !(1..=MAX_DIM).contains(&dim) {
            return Err(invalid(format!("pca: dim = {dim}, expected 1..={MAX_DIM}")));
        }
        if !(1..=dim).contains(&main_dim) {
            return Err(invalid(format!(
                "pca: main_dim = {main_dim}, expected 1..={dim}"
            )));
        }
        let mut tv = [0u8; 4];
        read_field(r, &mut tv, "total variance")?;
        Ok(Pca {
            dim,
            main_dim,
            total_variance: f32::from_le_bytes(tv),
            mean: read_f32s(r, dim, "pca: mean")?,
            variances: read_f32s(r, main_dim, "pca: variances")?,
            components: read_f32s(r, main_dim * dim, "pca: components")?,
        })
    }
}

/// Mean of the rows `ids`, in f64.
fn sample_mean(data: &[f32], dim: usize, ids: &[usize]) -> Vec<f64> {
    let mut sum = vec![0f64; dim];
    for &i in ids {
        for (s, &x) in sum.iter_mut().zip(&data[i * dim..(i + 1) * dim]) {
            *s += x as f64;
        }
    }
    let m = ids.len().max(1) as f64;
    sum.iter_mut().for_each(|s| *s /= m);
    sum
}

/// Number of fixed row blocks the covariance is split into: each is summed
/// by one task, and the blocks are added in order, so the result does not
/// depend on the thread count.
const COV_BLOCKS: usize = 8;
/// Rows centred at once: the rank-`COV_ROWS` update of one covariance row
/// stays in L1.
const COV_ROWS: usize = 16;

/// `(1/m) Σ (x − mean)(x − mean)ᵀ` over the rows `ids`, full symmetric
/// `dim x dim`, in f64.
fn covariance(data: &[f32], dim: usize, ids: &[usize], mean: &[f64]) -> Vec<f64> {
    let per = ids.len().div_ceil(COV_BLOCKS).max(1);
    let partials: Vec<Vec<f64>> = ids
        .par_chunks(per)
        .map(|block| {
            let mut acc = vec![0f64; dim * dim];
            let mut rows = vec![0f64; COV_ROWS * dim];
            for chunk in block.chunks(COV_ROWS) {
                for (r, &i) in rows.chunks_exact_mut(dim).zip(chunk) {
                    for ((d, &x), &m) in r.iter_mut().zip(&data[i * dim..(i + 1) * dim]).zip(mean) {
                        *d = x as f64 - m;
                    }
                }
                let rows = &rows[..chunk.len() * dim];
                // Upper triangle only: row i gets Σ_b r_b[i] · r_b[i..].
                for i in 0..dim {
                    let out = &mut acc[i * dim + i..(i + 1) * dim];
                    for r in rows.chunks_exact(dim) {
                        let s = r[i];
                        for (a, &x) in out.iter_mut().zip(&r[i..]) {
                            *a += s * x;
                        }
                    }
                }
            }
            acc
        })
        .collect();
    let mut cov = vec![0f64; dim * dim];
    for p in &partials {
        for (c, &x) in cov.iter_mut().zip(p) {
            *c += x;
        }
    }
    let m = ids.len().max(1) as f64;
    for i in 0..dim {
        for j in i..dim {
            let v = cov[i * dim + j] / m;
            cov[i * dim + j] = v;
            cov[j * dim + i] = v;
        }
    }
    cov
}

/// Inner product in f64 with independent partial sums (so it pipelines).
pub(crate) fn dot64(a: &[f64], b: &[f64]) -> f64 {
    let mut acc = [0f64; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f64 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for l in 0..8 {
            acc[l] += x[l] * y[l];
        }
    }
    acc.iter().sum::<f64>() + tail
}

/// Makes the rows of `v` (`k x dim`, row-major) orthonormal in place by
/// modified Gram–Schmidt applied twice ("twice is enough": the second pass
/// removes what rounding left of the earlier directions). A row that is
/// (numerically) in the span of the rows before it is replaced by a random
/// one from `rng`, so the result always has `k` orthonormal rows.
pub(crate) fn orthonormalize_rows(v: &mut [f64], dim: usize, rng: &mut Rng) {
    let k = v.len() / dim;
    for a in 0..k {
        let (done, rest) = v.split_at_mut(a * dim);
        let row = &mut rest[..dim];
        for attempt in 0..8 {
            let before = dot64(row, row).sqrt();
            for _ in 0..2 {
                for prev in done.chunks_exact(dim) {
                    let r = dot64(row, prev);
                    for (x, &p) in row.iter_mut().zip(prev) {
                        *x -= r * p;
                    }
                }
            }
            let norm = dot64(row, row).sqrt();
            if norm > 1e-10 * before && norm > 0.0 && norm.is_finite() {
                row.iter_mut().for_each(|x| *x /= norm);
                break;
            }
            assert!(attempt < 7, "pca: cannot complete an orthonormal basis");
            row.iter_mut().for_each(|x| *x = rng.normal() as f64);
        }
    }
}

/// `out[j] = a · v[j]` for the rows `v[j]` of `v` (`a` symmetric `dim x
/// dim`), four rows per pass over `a`, groups in parallel.
fn sym_times_rows(a: &[f64], dim: usize, v: &[f64], out: &mut [f64]) {
    const G: usize = 4;
    out.par_chunks_mut(G * dim)
        .zip(v.par_chunks(G * dim))
        .for_each(|(out, v)| {
            for (i, arow) in a.chunks_exact(dim).enumerate() {
                for (o, x) in out.chunks_exact_mut(dim).zip(v.chunks_exact(dim)) {
                    o[i] = dot64(arow, x);
                }
            }
        });
}

/// Eigen-decomposition of the symmetric `n x n` matrix `a` (row-major; it
/// is destroyed) by cyclic Jacobi rotations: the plain reference
/// `quant::eigen`'s tests hold the decomposition to. Returns the
/// eigenvalues in decreasing order and, when `want_vectors`, the matching
/// eigenvectors as the rows of an `n x n` matrix (empty otherwise).
#[cfg(test)]
pub(crate) fn jacobi_eigen(a: &mut [f64], n: usize, want_vectors: bool) -> (Vec<f64>, Vec<f64>) {
    let mut v = if want_vectors {
        let mut v = vec![0f64; n * n];
        (0..n).for_each(|i| v[i * n + i] = 1.0);
        v
    } else {
        Vec::new()
    };
    let scale: f64 = a.iter().map(|x| x * x).sum::<f64>();
    for sweep in 0..64 {
        let mut off = 0f64;
        for p in 0..n {
            for q in p + 1..n {
                off += a[p * n + q] * a[p * n + q];
            }
        }
        if off <= 1e-30 * scale || off == 0.0 {
            break;
        }
        let mut rotated = false;
        for p in 0..n {
            for q in p + 1..n {
                let apq = a[p * n + q];
                let (app, aqq) = (a[p * n + p], a[q * n + q]);
                // An element too small to change either diagonal entry is
                // set to zero instead of rotated (after a few sweeps, once
                // the diagonal has formed): rounding would otherwise keep
                // recreating elements at the 1e-16 level forever.
                let tiny = 100.0 * apq.abs();
                if apq == 0.0
                    || (sweep > 3 && app.abs() + tiny == app.abs() && aqq.abs() + tiny == aqq.abs())
                {
                    a[p * n + q] = 0.0;
                    a[q * n + p] = 0.0;
                    continue;
                }
                rotated = true;
                // Rotation J (J_pp = J_qq = c, J_pq = s, J_qp = −s) with
                // t = tan θ chosen so that (Jᵀ A J)_pq = 0, the smaller root.
                let theta = (aqq - app) / (2.0 * apq);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                // A ← A J (columns p, q), then A ← Jᵀ A (rows p, q).
                for k in 0..n {
                    let (akp, akq) = (a[k * n + p], a[k * n + q]);
                    a[k * n + p] = c * akp - s * akq;
                    a[k * n + q] = s * akp + c * akq;
                }
                for k in 0..n {
                    let (apk, aqk) = (a[p * n + k], a[q * n + k]);
                    a[p * n + k] = c * apk - s * aqk;
                    a[q * n + k] = s * apk + c * aqk;
                }
                a[p * n + q] = 0.0;
                a[q * n + p] = 0.0;
                if want_vectors {
                    // V ← V J, V stored transposed (eigenvectors as rows).
                    let (vp, vq) = v.split_at_mut(q * n);
                    let vp = &mut vp[p * n..(p + 1) * n];
                    let vq = &mut vq[..n];
                    for (x, y) in vp.iter_mut().zip(vq.iter_mut()) {
                        let (xp, xq) = (*x, *y);
                        *x = c * xp - s * xq;
                        *y = s * xp + c * xq;
                    }
                }
            }
        }
        if !rotated {
            break;
        }
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&i, &j| a[j * n + j].total_cmp(&a[i * n + i]).then(i.cmp(&j)));
    let vals = order.iter().map(|&i| a[i * n + i]).collect();
    let vecs = if want_vectors {
        order
            .iter()
            .flat_map(|&i| v[i * n..(i + 1) * n].iter().copied())
            .collect()
    } else {
        Vec::new()
    };
    (vals, vecs)
}

/// `rows ← y · rows`: the new row i is `Σ_j y[i][j] rows[j]` (`y` is
/// `k x k`, `rows` is `k x dim`).
fn combine_rows(y: &[f64], rows: &mut [f64], dim: usize) {
    let k = rows.len() / dim;
    let mut out = vec![0f64; rows.len()];
    out.par_chunks_mut(dim).enumerate().for_each(|(i, o)| {
        for (j, r) in rows.chunks_exact(dim).enumerate() {
            let c = y[i * k + j];
            if c != 0.0 {
                for (o, &x) in o.iter_mut().zip(r) {
                    *o += c * x;
                }
            }
        }
    });
    rows.copy_from_slice(&out);
}

/// The top `k` eigenpairs of the symmetric positive semi-definite `dim x
/// dim` matrix `cov`: eigenvectors as the rows of a `k x dim` matrix, and
/// the eigenvalues, both by decreasing eigenvalue.
///
/// Orthogonal (subspace) iteration (Golub & Van Loan, §8.2.4) on a block of
/// `k + p` vectors: `V ← orth(cov · V)` from a seeded Gaussian start. The
/// `p` guard vectors make the top `k` converge at the rate
/// `(λ_{k+p+1} / λ_k)^t` instead of `(λ_{k+1} / λ_k)^t`, which matters for
/// embedding spectra, where eigenvalue `k` and `k + 1` are close. Every
/// [`CHECK_EVERY`] iterations a Rayleigh–Ritz step (eigen-decomposition of
/// `Vᵀ cov V`) rotates the block to its Ritz vectors, sorted; the iteration
/// stops once the top `k` Ritz values change by less than [`RITZ_TOL`]
/// (relative) or after [`MAX_ITERS`]. The last Rayleigh–Ritz step gives the
/// result, sorted by variance.
fn top_eigen(cov: &[f64], dim: usize, k: usize, rng: &mut Rng) -> (Vec<f64>, Vec<f64>) {
    let kb = dim.min(k + (k / 4).max(8));
    let mut v: Vec<f64> = (0..kb * dim).map(|_| rng.normal() as f64).collect();
    orthonormalize_rows(&mut v, dim, rng);
    let mut w = vec![0f64; kb * dim];
    let mut prev: Option<Vec<f64>> = None;
    let mut it = 0;
    loop {
        sym_times_rows(cov, dim, &v, &mut w);
        it += 1;
        let last = it >= MAX_ITERS || kb == dim;
        if last || it % CHECK_EVERY == 0 {
            // Rayleigh–Ritz: H = V cov Vᵀ (V has orthonormal rows).
            let mut h = vec![0f64; kb * kb];
            h.par_chunks_mut(kb).enumerate().for_each(|(i, row)| {
                for (j, x) in row.iter_mut().enumerate() {
                    *x = dot64(&v[i * dim..(i + 1) * dim], &w[j * dim..(j + 1) * dim]);
                }
            });
            for i in 0..kb {
                for j in i + 1..kb {
                    let s = 0.5 * (h[i * kb + j] + h[j * kb + i]);
                    h[i * kb + j] = s;
                    h[j * kb + i] = s;
                }
            }
            let (vals, y) = sym_eigen(&mut h, kb, true);
            // V ← Yᵀ-rotated block (Ritz vectors, sorted), W likewise:
            // cov · (Y V) = Y (cov V).
            combine_rows(&y, &mut v, dim);
            combine_rows(&y, &mut w, dim);
            // Values at the level of f64 rounding of the largest one (a
            // rank-deficient sample's zero eigenvalues) only need to stay
            // there.
            let floor = 1e-13 * vals[0].abs();
            let converged = prev.as_ref().is_some_and(|p| {
                vals[..k]
                    .iter()
                    .zip(&p[..k])
                    .all(|(a, b)| (a - b).abs() <= (RITZ_TOL * a.abs()).max(floor))
            });
            if converged || last {
                v.truncate(k * dim);
                return (v, vals[..k].to_vec());
            }
            prev = Some(vals);
        }
        std::mem::swap(&mut v, &mut w);
        orthonormalize_rows(&mut v, dim, rng);
    }
}

pub(crate) fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

/// `read_exact` whose end-of-stream error names the field being read.
pub(crate) fn read_field(r: &mut impl Read, buf: &mut [u8], what: &str) -> io::Result<()> {
    r.read_exact(buf).map_err(|e| {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("truncated while reading {what} ({} bytes)", buf.len()),
            )
        } else {
            io::Error::new(e.kind(), format!("reading {what}: {e}"))
        }
    })
}

pub(crate) fn read_u32(r: &mut impl Read, what: &str) -> io::Result<u32> {
    let mut b = [0u8; 4];
    read_field(r, &mut b, what)?;
    Ok(u32::from_le_bytes(b))
}

pub(crate) fn write_f32s(w: &mut impl Write, xs: &[f32]) -> io::Result<()> {
    let bytes: Vec<u8> = xs.iter().flat_map(|x| x.to_le_bytes()).collect();
    w.write_all(&bytes)
}

/// `n` little-endian f32; `what` names them in a truncation error.
pub(crate) fn read_f32s(r: &mut impl Read, n: usize, what: &str) -> io::Result<Vec<f32>> {
    let mut bytes = vec![0u8; n * 4];
    read_field(r, &mut bytes, &format!("{what} ({n} f32)"))?;
    Ok(bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A random orthonormal basis of R^dim (rows).
    fn basis(dim: usize, seed: u64) -> Vec<f64> {
        let mut rng = Rng::new(seed);
        let mut b: Vec<f64> = (0..dim * dim).map(|_| rng.normal() as f64).collect();
        orthonormalize_rows(&mut b, dim, &mut rng);
        b
    }

    /// `n` rows whose sample covariance (1/n) is exactly
    /// `Σ_j var[j] b_j b_jᵀ` (up to f32 rounding of the data) and whose mean
    /// is `mean`: Gaussian scores, centred and orthonormalised column by
    /// column, scaled by `sqrt(n var_j)`, along the basis rows `b`.
    fn exact_data(n: usize, dim: usize, var: &[f64], b: &[f64], mean: &[f64]) -> Vec<f32> {
        let mut rng = Rng::new(99);
        let mut cols: Vec<f64> = (0..dim * n).map(|_| rng.normal() as f64).collect();
        for c in cols.chunks_exact_mut(n) {
            let m = c.iter().sum::<f64>() / n as f64;
            c.iter_mut().for_each(|x| *x -= m);
        }
        orthonormalize_rows(&mut cols, n, &mut rng);
        let mut out = vec![0f32; n * dim];
        for (r, row) in out.chunks_exact_mut(dim).enumerate() {
            for (i, o) in row.iter_mut().enumerate() {
                let mut x = mean[i];
                for j in 0..dim {
                    x += cols[j * n + r] * (n as f64 * var[j]).sqrt() * b[j * dim + i];
                }
                *o = x as f32;
            }
        }
        out
    }

    fn variances(dim: usize) -> Vec<f64> {
        let mut v = vec![100.0, 50.0, 20.0, 10.0, 1.0];
        while v.len() < dim {
            v.push(v[v.len() - 1] * 0.8);
        }
        v
    }

    struct Fixture {
        dim: usize,
        var: Vec<f64>,
        b: Vec<f64>,
        data: Vec<f32>,
        mean: Vec<f64>,
    }

    fn fixture() -> Fixture {
        let (n, dim) = (3000, 24);
        let var = variances(dim);
        let b = basis(dim, 5);
        let mean: Vec<f64> = (0..dim).map(|i| 3.0 - 0.25 * i as f64).collect();
        let data = exact_data(n, dim, &var, &b, &mean);
        Fixture {
            dim,
            var,
            b,
            data,
            mean,
        }
    }

    #[test]
    fn jacobi_diagonalises() {
        let n = 12;
        let mut rng = Rng::new(3);
        let mut a = vec![0f64; n * n];
        for i in 0..n {
            for j in i..n {
                let x = rng.normal() as f64;
                a[i * n + j] = x;
                a[j * n + i] = x;
            }
        }
        let orig = a.clone();
        let (vals, vecs) = jacobi_eigen(&mut a, n, true);
        assert!(vals.windows(2).all(|w| w[0] >= w[1]));
        for (l, v) in vals.iter().zip(vecs.chunks_exact(n)) {
            for i in 0..n {
                let av = dot64(&orig[i * n..(i + 1) * n], v);
                assert!((av - l * v[i]).abs() < 1e-10, "{av} vs {}", l * v[i]);
            }
        }
    }

    /// Components match the true basis up to sign, variances and the mean
    /// are recovered, rows are orthonormal, `explained` is the kept share.
    #[test]
    fn recovers_known_components() {
        let f = fixture();
        let (dim, k) = (f.dim, 6);
        let pca = Pca::fit(&f.data, dim, k, 100_000, 7);
        assert_eq!((pca.dim, pca.main_dim), (dim, k));
        for j in 0..k {
            let c = &pca.components[j * dim..(j + 1) * dim];
            let cos: f64 = c
                .iter()
                .zip(&f.b[j * dim..(j + 1) * dim])
                .map(|(&x, &y)| x as f64 * y)
                .sum();
            assert!(cos.abs() > 0.999, "component {j}: |cos| = {}", cos.abs());
            let v = pca.variances[j] as f64;
            assert!(
                (v - f.var[j]).abs() <= 0.01 * f.var[j],
                "variance {j}: {v} vs {}",
                f.var[j]
            );
        }
        for i in 0..k {
            for j in 0..k {
                let d = stratavec_simd::scalar::dot_f32(
                    &pca.components[i * dim..(i + 1) * dim],
                    &pca.components[j * dim..(j + 1) * dim],
                );
                let want = if i == j { 1.0 } else { 0.0 };
                assert!((d - want).abs() < 1e-5, "<c{i}, c{j}> = {d}");
            }
        }
        for (m, &t) in pca.mean.iter().zip(&f.mean) {
            assert!((*m as f64 - t).abs() < 1e-4, "mean {m} vs {t}");
        }
        let want = f.var[..k].iter().sum::<f64>() / f.var.iter().sum::<f64>();
        assert!(
            (pca.explained() as f64 - want).abs() < 1e-4,
            "{} vs {want}",
            pca.explained()
        );
    }

    /// With a sample of a tenth of the rows, the well-separated components
    /// are still found.
    #[test]
    fn a_sample_is_enough_for_separated_components() {
        let f = fixture();
        let pca = Pca::fit(&f.data, f.dim, 4, 600, 1);
        for j in 0..4 {
            let c = &pca.components[j * f.dim..(j + 1) * f.dim];
            let cos: f64 = c
                .iter()
                .zip(&f.b[j * f.dim..])
                .map(|(&x, &y)| x as f64 * y)
                .sum();
            assert!(cos.abs() > 0.98, "component {j}: |cos| = {}", cos.abs());
        }
    }

    /// `project` and `residual_norm_sq` split ‖x − mean‖² exactly, and the
    /// residual is the norm of the actual residual vector.
    #[test]
    fn projection_and_residual_split_the_norm() {
        let f = fixture();
        let dim = f.dim;
        let pca = Pca::fit(&f.data, dim, 5, 100_000, 3);
        let mut p = vec![0f32; 5];
        let mut rng = Rng::new(4);
        for _ in 0..50 {
            let x: Vec<f32> = (0..dim).map(|_| 4.0 * rng.normal()).collect();
            pca.project(&x, &mut p);
            let res = pca.residual_norm_sq(&x, &p);
            let total: f64 = x
                .iter()
                .zip(&pca.mean)
                .map(|(&a, &m)| ((a - m) as f64).powi(2))
                .sum();
            let split = res as f64 + p.iter().map(|&v| (v as f64).powi(2)).sum::<f64>();
            assert!((split - total).abs() <= 1e-5 * total, "{split} vs {total}");
            let mut r: Vec<f64> = x
                .iter()
                .zip(&pca.mean)
                .map(|(&a, &m)| (a - m) as f64)
                .collect();
            for (j, &pj) in p.iter().enumerate() {
                for (ri, &c) in r.iter_mut().zip(&pca.components[j * dim..(j + 1) * dim]) {
                    *ri -= pj as f64 * c as f64;
                }
            }
            let explicit: f64 = r.iter().map(|v| v * v).sum();
            assert!(
                (res as f64 - explicit).abs() <= 1e-4 * total,
                "{res} vs {explicit}"
            );
        }
    }

    #[test]
    fn round_trip_is_bit_identical_and_fit_is_deterministic() {
        let f = fixture();
        let pca = Pca::fit(&f.data, f.dim, 6, 2000, 11);
        assert_eq!(pca, Pca::fit(&f.data, f.dim, 6, 2000, 11));
        // The same bits whatever the number of threads.
        for threads in [1, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            assert_eq!(pca, pool.install(|| Pca::fit(&f.data, f.dim, 6, 2000, 11)));
        }
        assert_ne!(pca, Pca::fit(&f.data, f.dim, 6, 2000, 12));
        let mut bytes = Vec::new();
        pca.write(&mut bytes).unwrap();
        assert_eq!(bytes.len(), 8 + 12 + 4 * (f.dim + 6 + 6 * f.dim));
        let back = Pca::read(&mut bytes.as_slice()).unwrap();
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!((back.dim, back.main_dim), (pca.dim, pca.main_dim));
        assert_eq!(bits(&back.mean), bits(&pca.mean));
        assert_eq!(bits(&back.components), bits(&pca.components));
        assert_eq!(bits(&back.variances), bits(&pca.variances));
        assert_eq!(back.total_variance.to_bits(), pca.total_variance.to_bits());

        let err = Pca::read(&mut &bytes[..bytes.len() - 3]).unwrap_err();
        assert!(err.to_string().contains("components"), "{err}");
        let mut bad = bytes.clone();
        bad[0] = b'X';
        assert!(Pca::read(&mut bad.as_slice())
            .unwrap_err()
            .to_string()
            .contains("magic"));
        let mut bad = bytes.clone();
        bad[12..16].copy_from_slice(&(f.dim as u32 + 1).to_le_bytes());
        let err = Pca::read(&mut bad.as_slice()).unwrap_err();
        assert!(err.to_string().contains("main_dim"), "{err}");
    }

    /// On a slowly decaying spectrum (the hard case for subspace
    /// iteration), the top eigenpairs equal those of a full Jacobi
    /// decomposition of the same covariance.
    #[test]
    fn subspace_iteration_matches_full_decomposition() {
        let (dim, k) = (96, 32);
        let b = basis(dim, 12);
        let var: Vec<f64> = (0..dim).map(|i| 1.0 / (1.0 + i as f64).sqrt()).collect();
        let mut cov = vec![0f64; dim * dim];
        for (j, &v) in var.iter().enumerate() {
            let bj = &b[j * dim..(j + 1) * dim];
            for r in 0..dim {
                for c in 0..dim {
                    cov[r * dim + c] += v * bj[r] * bj[c];
                }
            }
        }
        let (vecs, vals) = top_eigen(&cov, dim, k, &mut Rng::new(1));
        let (all_vals, all_vecs) = sym_eigen(&mut cov.clone(), dim, true);
        for j in 0..k {
            assert!(
                (vals[j] - all_vals[j]).abs() <= 1e-9 * all_vals[j],
                "{j}: {} vs {}",
                vals[j],
                all_vals[j]
            );
            let cos = dot64(
                &vecs[j * dim..(j + 1) * dim],
                &all_vecs[j * dim..(j + 1) * dim],
            );
            assert!(cos.abs() > 1.0 - 1e-6, "{j}: |cos| = {}", cos.abs());
            assert!(
                (vals[j] - var[j]).abs() <= 1e-9,
                "{j}: {} vs {}",
                vals[j],
                var[j]
            );
        }
    }

    /// Data of lower rank than the block: the iteration completes the basis
    /// with random directions instead of dividing by zero.
    #[test]
    fn rank_deficient_data() {
        let dim = 40;
        let mut rng = Rng::new(8);
        let mut data = Vec::new();
        for _ in 0..200 {
            let (a, b) = (rng.normal(), rng.normal());
            data.extend((0..dim).map(|i| a * (i as f32) + b));
        }
        let pca = Pca::fit(&data, dim, 4, 1000, 2);
        assert!(pca.components.iter().all(|x| x.is_finite()));
        assert!(
            pca.variances[2] < 1e-4 * pca.variances[0],
            "{:?}",
            pca.variances
        );
        assert!((pca.explained() - 1.0).abs() < 1e-5);
    }
}
