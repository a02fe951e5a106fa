//! The f16 matrix of [`crate::matvec`] applied to several vectors at once:
//! `out_j = M·x_j` for a group of queries, each answer bit for bit what
//! `matvec_f16` gives that query alone.
//!
//! Why: one query's product streams the whole matrix (1.07 MB at 696 ×
//! 768, the laser codes' fused map) from L2/L3 and converts every f16 of
//! it, one conversion per FMA; measured on wordnet-mpnet, preparing a query
//! cost ~32 µs of a laser search's ~108 µs through RAM. Here each matrix row
//! is loaded and converted once for up to 8 vectors, which stay in L1
//! (8 × 768 floats = 24 KB), so the conversions and the matrix's bytes are
//! shared by the group and the FMAs are what is left.
//!
//! Equality with `matvec_f16`: each (row, vector) pair is summed exactly as
//! the level's `matvec` sums it — the same two accumulators over the same
//! steps, the same tail, the same final reduction — and the rows `matvec`
//! leaves to its one-row kernel (rows beyond a multiple of four) go to that
//! kernel here too. Blocking rows or vectors differently changes only which
//! pairs share loads, never a pair's arithmetic.

/// Reference (and the scalar level): each vector through `matvec_f16_scalar`.
pub fn matmat_f16_scalar(m: &[u8], xs: &[f32], n: usize, out: &mut [f32]) {
    let rows = check(m, xs, n, out);
    if rows == 0 {
        return;
    }
    for (x, o) in xs.chunks_exact(n).zip(out.chunks_exact_mut(rows)) {
        crate::matvec::matvec_f16_scalar(m, x, o);
    }
}

/// Rows of the matrix; panics unless the shapes agree: `xs` holds whole
/// vectors of `n` ≥ 1 floats, `m` whole rows of `n` f16 values, `out` one
/// row of answers a vector.
fn check(m: &[u8], xs: &[f32], n: usize, out: &[f32]) -> usize {
    assert!(n > 0, "matmat_f16: vectors of n >= 1 floats");
    let (vectors, rows) = (xs.len() / n, m.len() / (2 * n));
    assert_eq!(
        xs.len(),
        vectors * n,
        "matmat_f16: xs must hold whole vectors of n = {n} floats"
    );
    assert_eq!(
        m.len(),
        2 * n * rows,
        "matmat_f16: the matrix must hold whole rows of n = {n} f16 values"
    );
    assert_eq!(
        out.len(),
        vectors * rows,
        "matmat_f16: out must hold one row of answers a vector"
    );
    rows
}

/// Rows `matvec` takes four at a time (`crate::matvec`'s block).
#[cfg(target_arch = "x86_64")]
const BLOCK_ROWS: usize = 4;

/// Vectors a pass over a row: eight keep 16 accumulators (two a vector) in
/// registers on AVX-512, and their floats in L1.
#[cfg(target_arch = "x86_64")]
const GROUP: usize = 8;

/// One matrix row (f16 bytes) against a group of vectors, a sum each.
#[cfg(target_arch = "x86_64")]
type RowGroup<'a> = &'a dyn Fn(&[u8], &[f32], &mut [f32]);

/// `out_j = M·x_j` for every vector, `pair` summing one row with a group of
/// `Q` vectors as the level's matvec block sums a (row, vector) pair and
/// `row` the rows past the last block of four, as the level's matvec does.
#[cfg(target_arch = "x86_64")]
fn by_rows(
    m: &[u8],
    xs: &[f32],
    n: usize,
    out: &mut [f32],
    pair: RowGroup<'_>,
    row: &dyn Fn(&[f32], &[u8]) -> f32,
) {
    let rows = check(m, xs, n, out);
    let vectors = xs.len() / n;
    let blocked = rows / BLOCK_ROWS * BLOCK_ROWS;
    let mut sums = [0f32; GROUP];
    for g in (0..vectors).step_by(GROUP) {
        let q = (vectors - g).min(GROUP);
        let group = &xs[g * n..(g + q) * n];
        for r in 0..rows {
            let mrow = &m[r * 2 * n..(r + 1) * 2 * n];
            if r < blocked {
                pair(mrow, group, &mut sums[..q]);
            } else {
                for (j, s) in sums[..q].iter_mut().enumerate() {
                    *s = row(&group[j * n..(j + 1) * n], mrow);
                }
            }
            for (j, &s) in sums[..q].iter().enumerate() {
                out[(g + j) * rows + r] = s;
            }
        }
    }
}

/// # Safety
/// The CPU must support avx2, fma and f16c.
#[cfg(target_arch = "x86_64")]
pub(crate) unsafe fn matmat_f16_avx2(m: &[u8], xs: &[f32], n: usize, out: &mut [f32]) {
    // SAFETY (both closures): the caller's guarantee; the kernels check
    // their own lengths.
    by_rows(
        m,
        xs,
        n,
        out,
        &|r, g, s| unsafe { simd::pairs_avx2(r, g, s) },
        &|x, r| unsafe { crate::half::sum_avx2::<false>(x, r) },
    )
}

/// # Safety
/// The CPU must support avx512f, avx512bw and avx512vl.
#[cfg(target_arch = "x86_64")]
pub(crate) unsafe fn matmat_f16_avx512(m: &[u8], xs: &[f32], n: usize, out: &mut [f32]) {
    // SAFETY (both closures): the caller's guarantee; the kernels check
    // their own lengths.
    by_rows(
        m,
        xs,
        n,
        out,
        &|r, g, s| unsafe { simd::pairs_avx512(r, g, s) },
        &|x, r| unsafe { crate::half::sum_avx512::<false>(x, r) },
    )
}

#[cfg(target_arch = "x86_64")]
mod simd {
    use super::GROUP;
    use core::arch::x86_64::*;

    /// Vectors a pass of [`pairs_avx2_q`] holds: two accumulators each,
    /// 8 of AVX2's 16 registers, with the row's two converted steps and
    /// room for the compiler; a group of 8 is two passes over a row that
    /// stays in L1.
    const AVX2_Q: usize = 4;

    /// `sums[j]` = the f16 `row` · vector j of `group` (`sums.len()`
    /// vectors of `row.len() / 2`), each summed as `matvec::block_avx2`
    /// sums a row: accumulators over floats 0..8 and 8..16 of each 16-float
    /// step, their lanes added in order, then the scalar tail.
    ///
    /// The vectors go [`AVX2_Q`] at a time with the count a constant, as
    /// [`pairs_avx512`] does: with a run-time count the accumulators lived
    /// on the stack (perf, wordnet-mpnet through RAM on an AMD EPYC: this
    /// kernel was a quarter of a laser query's search CPU).
    ///
    /// # Safety
    /// The CPU must support avx2, fma and f16c.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn pairs_avx2(row: &[u8], group: &[f32], sums: &mut [f32]) {
        let (n, q) = (row.len() / 2, sums.len());
        assert!(q <= GROUP && group.len() == q * n && row.len() == 2 * n);
        let mut j = 0;
        while j < q {
            let take = (q - j).min(AVX2_Q);
            let (g, s) = (&group[j * n..(j + take) * n], &mut sums[j..j + take]);
            // SAFETY (every arm): the caller's guarantee.
            unsafe {
                match take {
                    4 => pairs_avx2_q::<4>(row, g, s),
                    3 => pairs_avx2_q::<3>(row, g, s),
                    2 => pairs_avx2_q::<2>(row, g, s),
                    _ => pairs_avx2_q::<1>(row, g, s),
                }
            }
            j += take;
        }
    }

    /// [`pairs_avx2`] for exactly `Q` vectors.
    ///
    /// # Safety
    /// The CPU must support avx2, fma and f16c.
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn pairs_avx2_q<const Q: usize>(row: &[u8], group: &[f32], sums: &mut [f32]) {
        let n = row.len() / 2;
        assert!(Q <= AVX2_Q && sums.len() == Q && group.len() == Q * n && row.len() == 2 * n);
        let (pr, pg) = (row.as_ptr(), group.as_ptr());
        let mut acc = [[_mm256_setzero_ps(); 2]; Q];
        let mut i = 0;
        // SAFETY: each step reads bytes 2i..2i+32 <= 2n of the row and
        // floats i..i+16 <= n of each of the Q vectors (lengths checked).
        unsafe {
            while i + 16 <= n {
                let v0 = _mm256_cvtph_ps(_mm_loadu_si128(pr.add(2 * i).cast()));
                let v1 = _mm256_cvtph_ps(_mm_loadu_si128(pr.add(2 * i + 16).cast()));
                for (j, a) in acc.iter_mut().enumerate() {
                    let px = pg.add(j * n + i);
                    a[0] = _mm256_fmadd_ps(_mm256_loadu_ps(px), v0, a[0]);
                    a[1] = _mm256_fmadd_ps(_mm256_loadu_ps(px.add(8)), v1, a[1]);
                }
                i += 16;
            }
        }
        for (j, (a, s)) in acc.iter().zip(sums.iter_mut()).enumerate() {
            let mut lanes = [0f32; 8];
            // SAFETY: `lanes` holds 8 floats.
            unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), _mm256_add_ps(a[0], a[1])) };
            let x = &group[j * n..(j + 1) * n];
            let tail = crate::half::sum_scalar::<false>(&x[i..], &row[2 * i..]);
            *s = lanes.iter().sum::<f32>() + tail;
        }
    }

    /// As [`pairs_avx2`], summed as `matvec::block_avx512` sums a row: 32
    /// floats a step in two accumulators, a masked tail into the first,
    /// then the reduction of their sum.
    ///
    /// The group's size is made a constant ([`pairs_avx512_q`]): with a
    /// run-time count the 16 accumulators lived on the stack, each FMA a
    /// load and a store behind the last one's (perf, wordnet-mpnet: ~9
    /// multiply-adds a cycle); a constant keeps them in registers.
    ///
    /// # Safety
    /// The CPU must support avx512f, avx512bw and avx512vl.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    pub(super) unsafe fn pairs_avx512(row: &[u8], group: &[f32], sums: &mut [f32]) {
        // SAFETY (every arm): the caller's guarantee.
        unsafe {
            match sums.len() {
                8 => pairs_avx512_q::<8>(row, group, sums),
                7 => pairs_avx512_q::<7>(row, group, sums),
                6 => pairs_avx512_q::<6>(row, group, sums),
                5 => pairs_avx512_q::<5>(row, group, sums),
                4 => pairs_avx512_q::<4>(row, group, sums),
                3 => pairs_avx512_q::<3>(row, group, sums),
                2 => pairs_avx512_q::<2>(row, group, sums),
                1 => pairs_avx512_q::<1>(row, group, sums),
                q => panic!("matmat: a group of {q} vectors, expected 1..={GROUP}"),
            }
        }
    }

    /// [`pairs_avx512`] for a group of exactly `Q` vectors.
    ///
    /// # Safety
    /// The CPU must support avx512f, avx512bw and avx512vl.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    unsafe fn pairs_avx512_q<const Q: usize>(row: &[u8], group: &[f32], sums: &mut [f32]) {
        let n = row.len() / 2;
        assert!(Q <= GROUP && sums.len() == Q && group.len() == Q * n && row.len() == 2 * n);
        let (pr, pg) = (row.as_ptr(), group.as_ptr());
        let mut acc = [[_mm512_setzero_ps(); 2]; Q];
        let mut i = 0;
        // SAFETY: unmasked steps read bytes 2i..2i+64 <= 2n of the row and
        // floats i..i+32 <= n of each vector (lengths checked); masked ones
        // touch only lanes below n.
        unsafe {
            while i + 32 <= n {
                let v0 = _mm512_cvtph_ps(_mm256_loadu_si256(pr.add(2 * i).cast()));
                let v1 = _mm512_cvtph_ps(_mm256_loadu_si256(pr.add(2 * i + 32).cast()));
                for (j, a) in acc.iter_mut().enumerate() {
                    let px = pg.add(j * n + i);
                    a[0] = _mm512_fmadd_ps(_mm512_loadu_ps(px), v0, a[0]);
                    a[1] = _mm512_fmadd_ps(_mm512_loadu_ps(px.add(16)), v1, a[1]);
                }
                i += 32;
            }
            while i < n {
                let left = (n - i).min(16);
                let mask: __mmask16 = ((1u32 << left) - 1) as u16;
                let v = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, pr.add(2 * i).cast()));
                for (j, a) in acc.iter_mut().enumerate() {
                    let x = _mm512_maskz_loadu_ps(mask, pg.add(j * n + i));
                    a[0] = _mm512_fmadd_ps(x, v, a[0]);
                }
                i += left;
            }
        }
        for (a, s) in acc.iter().zip(sums.iter_mut()) {
            *s = _mm512_reduce_add_ps(_mm512_add_ps(a[0], a[1]));
        }
    }
}
