//! Eigen-decomposition of a symmetric matrix, for PCA (`quant::pca`): the
//! Rayleigh–Ritz step of its subspace iteration, and the whole covariance
//! where the codes keep most dimensions (AlayaLaser's 696 of 768).
//!
//! Householder reduction to tridiagonal form, then implicit symmetric QR
//! steps with Wilkinson shifts (Golub & Van Loan, Algorithms 8.3.1 and
//! 8.3.3). Both touch rows only, so every loop runs over contiguous memory;
//! the cyclic Jacobi rotations this replaces update a column per rotation,
//! a 6 KB stride at 768 dimensions, and took 19.5 s of a 36 s `auto` plan
//! on wordnet-mpnet (the laser trial's PCA) where this takes about one.

use rayon::prelude::*;

/// Eigenvalues of the symmetric `n x n` matrix `a` (row-major; destroyed)
/// in decreasing order and, when `want_vectors`, the matching unit
/// eigenvectors as the rows of an `n x n` matrix (empty otherwise).
pub(crate) fn sym_eigen(a: &mut [f64], n: usize, want_vectors: bool) -> (Vec<f64>, Vec<f64>) {
    assert_eq!(a.len(), n * n, "eigen: a must be n x n");
    // `et` accumulates Qᵀ, then Wᵀ Qᵀ: its rows end as A's eigenvectors.
    let mut et = match want_vectors {
        true => identity(n),
        false => Vec::new(),
    };
    tridiagonalize(a, n, &mut et);
    let (mut d, mut e) = (vec![0f64; n], vec![0f64; n]);
    for i in 0..n {
        d[i] = a[i * n + i];
        if i + 1 < n {
            e[i] = a[i * n + i + 1];
        }
    }
    diagonalize(&mut d, &mut e, &mut et, n);
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&i, &j| d[j].total_cmp(&d[i]).then(i.cmp(&j)));
    let vals = order.iter().map(|&i| d[i]).collect();
    let vecs = match want_vectors {
        true => order
            .iter()
            .flat_map(|&i| et[i * n..(i + 1) * n].iter().copied())
            .collect(),
        false => Vec::new(),
    };
    (vals, vecs)
}

fn identity(n: usize) -> Vec<f64> {
    let mut m = vec![0f64; n * n];
    (0..n).for_each(|i| m[i * n + i] = 1.0);
    m
}

/// `a ← Qᵀ a Q`, tridiagonal, with `Q = H_0 H_1 … H_{n−3}` Householder
/// reflections (`H_k` zeroes column k below its subdiagonal); `et ← Qᵀ et`
/// unless `et` is empty.
fn tridiagonalize(a: &mut [f64], n: usize, et: &mut [f64]) {
    let mut v = vec![0f64; n];
    let mut p = vec![0f64; n];
    for k in 0..n.saturating_sub(2) {
        // x = a[k+1.., k], which by symmetry is row k's tail (contiguous).
        let x = &a[k * n + k + 1..(k + 1) * n];
        let norm = x.iter().map(|x| x * x).sum::<f64>().sqrt();
        if norm == 0.0 {
            continue;
        }
        let alpha = if x[0] > 0.0 { -norm } else { norm };
        let m = n - k - 1;
        let v = &mut v[..m];
        v.copy_from_slice(x);
        v[0] -= alpha;
        let vn = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        if vn == 0.0 {
            continue;
        }
        v.iter_mut().for_each(|x| *x /= vn);
        let v: &[f64] = v;
        // H A' H = A' − 2 v qᵀ − 2 q vᵀ with p = A' v, q = p − (vᵀp) v.
        let p = &mut p[..m];
        let off = k + 1;
        p.par_iter_mut().enumerate().for_each(|(i, pi)| {
            let row = &a[(off + i) * n + off..(off + i + 1) * n];
            *pi = row.iter().zip(v).map(|(r, v)| r * v).sum();
        });
        let vp: f64 = v.iter().zip(p.iter()).map(|(v, p)| v * p).sum();
        p.iter_mut().zip(v).for_each(|(p, v)| *p -= vp * v);
        let q: &[f64] = p;
        a[off * n..]
            .par_chunks_mut(n)
            .enumerate()
            .for_each(|(i, row)| {
                let tail = &mut row[off..];
                let (vi, qi) = (v[i], q[i]);
                for ((r, &vj), &qj) in tail.iter_mut().zip(v).zip(q) {
                    *r -= 2.0 * (vi * qj + qi * vj);
                }
            });
        // Row and column k: alpha next to the diagonal, zeros beyond.
        for j in k + 1..n {
            let val = if j == k + 1 { alpha } else { 0.0 };
            a[k * n + j] = val;
            a[j * n + k] = val;
        }
        if !et.is_empty() {
            reflect_rows(et, n, off, v);
        }
    }
}

/// `m ← H m` for `H = I − 2 v vᵀ` acting on rows `off..` of the `n`-wide
/// row-major `m`.
fn reflect_rows(m: &mut [f64], n: usize, off: usize, v: &[f64]) {
    let mut w = vec![0f64; n];
    for (row, &vi) in m[off * n..].chunks_exact(n).zip(v) {
        if vi != 0.0 {
            w.iter_mut().zip(row).for_each(|(w, r)| *w += vi * r);
        }
    }
    m[off * n..]
        .par_chunks_mut(n)
        .zip(v.par_iter())
        .for_each(|(row, &vi)| {
            if vi != 0.0 {
                row.iter_mut().zip(&w).for_each(|(r, w)| *r -= 2.0 * vi * w);
            }
        });
}

/// Most QR steps a matrix gets, per eigenvalue (a shifted step usually
/// settles one in two or three).
const MAX_STEPS_PER_VALUE: usize = 60;

/// The symmetric tridiagonal matrix of diagonal `d` and off-diagonal `e`
/// (`e[i]` between `i` and `i + 1`) to diagonal `d`, by implicit QR steps
/// with Wilkinson shifts; each step's rotations applied to the rows of
/// `et` (unless empty).
fn diagonalize(d: &mut [f64], e: &mut [f64], et: &mut [f64], n: usize) {
    if n < 2 {
        return;
    }
    let mut hi = n - 1;
    let mut steps = 0;
    while hi > 0 {
        if negligible(e[hi - 1], d[hi - 1], d[hi]) {
            e[hi - 1] = 0.0;
            hi -= 1;
            continue;
        }
        let mut lo = hi - 1;
        while lo > 0 && !negligible(e[lo - 1], d[lo - 1], d[lo]) {
            lo -= 1;
        }
        if lo > 0 {
            e[lo - 1] = 0.0;
        }
        qr_step(d, e, et, n, lo, hi);
        steps += 1;
        if steps > MAX_STEPS_PER_VALUE * n {
            break;
        }
    }
}

fn negligible(e: f64, a: f64, b: f64) -> bool {
    e.abs() <= f64::EPSILON * (a.abs() + b.abs()) || e == 0.0
}

/// One implicit QR step on the unreduced block `lo..=hi` (Golub & Van
/// Loan, Algorithm 8.3.2): a Givens rotation from the shifted first
/// column, then rotations chasing the bulge it makes down the band.
fn qr_step(d: &mut [f64], e: &mut [f64], et: &mut [f64], n: usize, lo: usize, hi: usize) {
    // Wilkinson shift: the eigenvalue of the trailing 2 x 2 nearer d[hi].
    let (a, b, c) = (d[hi - 1], e[hi - 1], d[hi]);
    let h = (a - c) / 2.0;
    let mu = match h == 0.0 {
        true => c - b.abs(),
        false => c - b * b / (h + h.signum() * h.hypot(b)),
    };
    let mut x = d[lo] - mu;
    let mut z = e[lo];
    let mut bulge = 0.0;
    for k in lo..hi {
        let r = x.hypot(z);
        let (cs, sn) = match r == 0.0 {
            true => (1.0, 0.0),
            false => (x / r, -z / r),
        };
        // The entry above this rotation's pair takes the chased bulge.
        if k > lo {
            e[k - 1] = cs * e[k - 1] - sn * bulge;
        }
        // Gᵀ T G on the 2 x 2 block (k, k+1), G = [[c, s], [−s, c]].
        let (dk, dk1, ek) = (d[k], d[k + 1], e[k]);
        d[k] = cs * cs * dk - 2.0 * cs * sn * ek + sn * sn * dk1;
        d[k + 1] = sn * sn * dk + 2.0 * cs * sn * ek + cs * cs * dk1;
        e[k] = cs * sn * (dk - dk1) + (cs * cs - sn * sn) * ek;
        if k + 1 < hi {
            // The rotation spreads e[k+1] into a bulge at (k+2, k).
            bulge = -sn * e[k + 1];
            e[k + 1] *= cs;
            x = e[k];
            z = bulge;
        }
        if !et.is_empty() {
            rotate_rows(et, n, k, cs, sn);
        }
    }
}

/// Rows `k` and `k + 1` of `m` ← Gᵀ applied to them.
fn rotate_rows(m: &mut [f64], n: usize, k: usize, c: f64, s: f64) {
    let (top, bottom) = m.split_at_mut((k + 1) * n);
    let rk = &mut top[k * n..];
    let rk1 = &mut bottom[..n];
    for (p, q) in rk.iter_mut().zip(rk1.iter_mut()) {
        let (a, b) = (*p, *q);
        *p = c * a - s * b;
        *q = s * a + c * b;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::rng::Rng;
    use proptest::prelude::*;

    fn random_symmetric(n: usize, seed: u64, spread: f64) -> Vec<f64> {
        let mut rng = Rng::new(seed);
        let mut a = vec![0f64; n * n];
        for i in 0..n {
            for j in i..n {
                let x = rng.normal() as f64 * if i == j { spread } else { 1.0 };
                a[i * n + j] = x;
                a[j * n + i] = x;
            }
        }
        a
    }

    /// ‖A v − λ v‖ for each pair, and ‖V Vᵀ − I‖, the largest.
    fn residuals(a: &[f64], n: usize, vals: &[f64], vecs: &[f64]) -> (f64, f64) {
        let mut worst = 0f64;
        for (i, &l) in vals.iter().enumerate() {
            let v = &vecs[i * n..(i + 1) * n];
            for r in 0..n {
                let av: f64 = (0..n).map(|c| a[r * n + c] * v[c]).sum();
                worst = worst.max((av - l * v[r]).abs());
            }
        }
        let mut ortho = 0f64;
        for i in 0..n {
            for j in 0..n {
                let d: f64 = (0..n).map(|c| vecs[i * n + c] * vecs[j * n + c]).sum();
                ortho = ortho.max((d - f64::from(u8::from(i == j))).abs());
            }
        }
        (worst, ortho)
    }

    proptest! {
        /// Against the plain cyclic Jacobi method (`pca::jacobi_eigen`):
        /// the same eigenvalues, and eigenpairs that satisfy A v = λ v
        /// with orthonormal vectors.
        #[test]
        fn matches_jacobi_and_each_pair_holds(
            n in 1usize..40, seed in 0u64..10_000, spread in 0.0f64..20.0,
        ) {
            let a = random_symmetric(n, seed, spread);
            let (vals, vecs) = sym_eigen(&mut a.clone(), n, true);
            let (want, _) = crate::quant::pca::jacobi_eigen(&mut a.clone(), n, false);
            let scale = want.iter().fold(1.0f64, |m, v| m.max(v.abs()));
            for (x, y) in vals.iter().zip(&want) {
                prop_assert!((x - y).abs() <= 1e-9 * scale, "{vals:?} against {want:?}");
            }
            prop_assert!(vals.windows(2).all(|w| w[0] >= w[1]));
            let (res, ortho) = residuals(&a, n, &vals, &vecs);
            prop_assert!(res <= 1e-9 * scale, "residual {res}");
            prop_assert!(ortho <= 1e-9, "orthogonality {ortho}");
            let (only, none) = sym_eigen(&mut a.clone(), n, false);
            prop_assert_eq!(only, vals);
            prop_assert!(none.is_empty());
        }
    }

    /// Repeated eigenvalues, an already diagonal matrix, zeros, and a
    /// rank-one covariance: the cases that stall a shift or a reflection.
    #[test]
    fn degenerate_matrices() {
        for n in [1usize, 2, 3, 7, 16] {
            let cases: Vec<Vec<f64>> = vec![
                identity(n),
                vec![0.0; n * n],
                (0..n * n)
                    .map(|i| {
                        if i % (n + 1) == 0 {
                            (i % 3) as f64
                        } else {
                            0.0
                        }
                    })
                    .collect(),
                (0..n * n)
                    .map(|i| ((i / n + 1) * (i % n + 1)) as f64)
                    .collect(),
            ];
            for a in cases {
                let (vals, vecs) = sym_eigen(&mut a.clone(), n, true);
                let (want, _) = crate::quant::pca::jacobi_eigen(&mut a.clone(), n, false);
                let scale = want.iter().fold(1.0f64, |m, v| m.max(v.abs()));
                for (x, y) in vals.iter().zip(&want) {
                    assert!((x - y).abs() <= 1e-9 * scale, "{vals:?} against {want:?}");
                }
                let (res, ortho) = residuals(&a, n, &vals, &vecs);
                assert!(res <= 1e-9 * scale && ortho <= 1e-9, "{res} {ortho}");
            }
        }
    }
}
