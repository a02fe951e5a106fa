//! An i8 matrix against several u8 vectors: `out_j = M·x_j` summed exactly
//! in i32, for [`crate::I8Matrix`] (the laser query's map on CPUs without
//! AMX tiles).
//!
//! Why: the laser search maps every query through a 696 × 768 matrix
//! before its first read; in f16 that was 28% of its search CPU through
//! RAM (perf, wordnet-mpnet, AMD EPYC), one conversion and one FMA per
//! element and 1.07 MB streamed a group. In bytes the matrix is half that,
//! and `vpmaddubsw` multiplies 32 pairs an instruction where an f16 FMA
//! takes 8 after a conversion.
//!
//! Exactness: `vpmaddubsw` multiplies u8 by i8 and adds neighbouring pairs
//! into i16 *with saturation*; with every `x ≤ 127` a pair is at most
//! 2·127·128 = 32512 in size, so it never saturates, and `vpmaddwd`
//! widens the pairs into i32 exactly. Every level therefore gives the same
//! integers as [`matmat_u8i8_scalar`], whatever the grouping.

/// Rows of the matrix; panics unless the shapes agree and every `x ≤ 127`
/// (the bound that keeps the SIMD pair sums exact).
fn check(m: &[i8], xs: &[u8], n: usize, out: &[i32]) -> usize {
    assert!(n > 0, "matmat_u8i8: vectors of n >= 1 values");
    let (vectors, rows) = (xs.len() / n, m.len() / n);
    assert_eq!(
        xs.len(),
        vectors * n,
        "matmat_u8i8: xs must hold whole vectors of n = {n} values"
    );
    assert_eq!(
        m.len(),
        rows * n,
        "matmat_u8i8: the matrix must hold whole rows of n = {n} values"
    );
    assert_eq!(
        out.len(),
        vectors * rows,
        "matmat_u8i8: out must hold one row of answers a vector"
    );
    assert!(
        xs.iter().all(|&x| x <= 127),
        "matmat_u8i8: vector values must be at most 127"
    );
    rows
}

/// Reference (and the scalar level).
pub fn matmat_u8i8_scalar(m: &[i8], xs: &[u8], n: usize, out: &mut [i32]) {
    let rows = check(m, xs, n, out);
    if rows == 0 {
        return;
    }
    for (x, o) in xs.chunks_exact(n).zip(out.chunks_exact_mut(rows)) {
        for (row, s) in m.chunks_exact(n).zip(o.iter_mut()) {
            *s = dot(row, x);
        }
    }
}

fn dot(row: &[i8], x: &[u8]) -> i32 {
    row.iter()
        .zip(x)
        .map(|(&a, &b)| i32::from(a) * i32::from(b))
        .sum()
}

/// Vectors a pass over a row: four keep their accumulators, the row's
/// step and the constant in registers with room to spare.
#[cfg(target_arch = "x86_64")]
const GROUP: usize = 4;

/// # Safety
/// The CPU must support avx2.
#[cfg(target_arch = "x86_64")]
pub(crate) unsafe fn matmat_u8i8_avx2(m: &[i8], xs: &[u8], n: usize, out: &mut [i32]) {
    let rows = check(m, xs, n, out);
    let vectors = xs.len() / n;
    let mut sums = [0i32; GROUP];
    for g in (0..vectors).step_by(GROUP) {
        let q = (vectors - g).min(GROUP);
        let group = &xs[g * n..(g + q) * n];
        for (r, row) in m.chunks_exact(n).enumerate() {
            // SAFETY (every arm): the caller's guarantee; lengths checked.
            unsafe {
                match q {
                    4 => simd::pairs::<4>(row, group, &mut sums[..4]),
                    3 => simd::pairs::<3>(row, group, &mut sums[..3]),
                    2 => simd::pairs::<2>(row, group, &mut sums[..2]),
                    _ => simd::pairs::<1>(row, group, &mut sums[..1]),
                }
            }
            for (j, &s) in sums[..q].iter().enumerate() {
                out[(g + j) * rows + r] = s;
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod simd {
    use core::arch::x86_64::*;

    /// `sums[j]` = `row` · vector j of `group` (`Q` vectors of
    /// `row.len()`), 32 bytes a step, the tail in scalar code.
    ///
    /// # Safety
    /// The CPU must support avx2; every group value is at most 127.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn pairs<const Q: usize>(row: &[i8], group: &[u8], sums: &mut [i32]) {
        let n = row.len();
        assert!(sums.len() == Q && group.len() == Q * n);
        let (pr, pg) = (row.as_ptr(), group.as_ptr());
        let ones = _mm256_set1_epi16(1);
        let mut acc = [_mm256_setzero_si256(); Q];
        let mut i = 0;
        // SAFETY: each step reads bytes i..i+32 <= n of the row and of each
        // of the Q vectors (lengths checked).
        unsafe {
            while i + 32 <= n {
                let mv = _mm256_loadu_si256(pr.add(i).cast());
                for (j, a) in acc.iter_mut().enumerate() {
                    let xv = _mm256_loadu_si256(pg.add(j * n + i).cast());
                    // u8 × i8, neighbouring pairs into i16 (exact: module
                    // notes), then pairs of those into i32.
                    let p = _mm256_madd_epi16(_mm256_maddubs_epi16(xv, mv), ones);
                    *a = _mm256_add_epi32(*a, p);
                }
                i += 32;
            }
        }
        for (j, (a, s)) in acc.iter().zip(sums.iter_mut()).enumerate() {
            let mut lanes = [0i32; 8];
            // SAFETY: `lanes` holds 8 i32.
            unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast(), *a) };
            *s = lanes.iter().sum::<i32>() + super::dot(&row[i..], &group[j * n + i..(j + 1) * n]);
        }
    }
}
