//! Matrix–vector products with an f16 matrix and an f32 vector: a query
//! mapped through a fixed linear map (the laser codes' fused PCA basis and
//! RaBitQ rotation, 696 × 768 at 768-d).
//!
//! Why not one [`crate::dot_f16`] a row: a row's dot product is one chain
//! of dependent FMAs, so a 768-wide row spends most of its time waiting on
//! FMA latency and the final horizontal sum. Here four rows go at once with
//! two accumulators each (eight independent chains), and the f32 vector is
//! loaded once for the four. Measured at 696 × 768 (the laser codes'
//! matrix), a row at a time: 58 µs a query; four rows at a time: 20 µs.

/// Reference: `out[r] = Σ_i x[i] · m[r][i]` with `m` row-major,
/// `out.len()` rows of `x.len()` f16 values (little-endian bytes).
pub fn matvec_f16_scalar(m: &[u8], x: &[f32], out: &mut [f32]) {
    check(m, x, out);
    if x.is_empty() {
        out.fill(0.0);
        return;
    }
    for (o, row) in out.iter_mut().zip(m.chunks_exact(2 * x.len())) {
        *o = crate::half::sum_scalar::<false>(x, row);
    }
}

fn check(m: &[u8], x: &[f32], out: &[f32]) {
    assert_eq!(
        m.len(),
        2 * x.len() * out.len(),
        "matvec_f16: the matrix must hold out.len() rows of x.len() f16 values"
    );
}

/// Rows a block: four rows share each load of `x`.
#[cfg(target_arch = "x86_64")]
const ROWS: usize = 4;

/// `out = M·x` with `block` giving the dot products of four rows at a time
/// (the level's kernel) and `row` those of the rows left over.
#[cfg(target_arch = "x86_64")]
fn by_blocks(
    m: &[u8],
    x: &[f32],
    out: &mut [f32],
    block: impl Fn(&[u8]) -> [f32; ROWS],
    row: impl Fn(&[u8]) -> f32,
) {
    check(m, x, out);
    if x.is_empty() {
        out.fill(0.0);
        return;
    }
    let stride = 2 * x.len();
    let mut outs = out.chunks_exact_mut(ROWS);
    let mut rows = m.chunks_exact(ROWS * stride);
    for (o, rows) in (&mut outs).zip(&mut rows) {
        o.copy_from_slice(&block(rows));
    }
    for (o, r) in outs
        .into_remainder()
        .iter_mut()
        .zip(rows.remainder().chunks_exact(stride))
    {
        *o = row(r);
    }
}

/// # Safety
/// The CPU must support avx2, fma and f16c.
#[cfg(target_arch = "x86_64")]
pub(crate) unsafe fn matvec_f16_avx2(m: &[u8], x: &[f32], out: &mut [f32]) {
    // SAFETY (both closures): the caller's guarantee; the kernels check
    // their own lengths.
    by_blocks(
        m,
        x,
        out,
        |rows| unsafe { simd::block_avx2(rows, x) },
        |r| unsafe { crate::half::sum_avx2::<false>(x, r) },
    )
}

/// # Safety
/// The CPU must support avx512f, avx512bw and avx512vl.
#[cfg(target_arch = "x86_64")]
pub(crate) unsafe fn matvec_f16_avx512(m: &[u8], x: &[f32], out: &mut [f32]) {
    // SAFETY (both closures): the caller's guarantee; the kernels check
    // their own lengths.
    by_blocks(
        m,
        x,
        out,
        |rows| unsafe { simd::block_avx512(rows, x) },
        |r| unsafe { crate::half::sum_avx512::<false>(x, r) },
    )
}

#[cfg(target_arch = "x86_64")]
mod simd {
    use super::ROWS;
    use core::arch::x86_64::*;

    /// The dot products of `x` with the four f16 rows in `rows`, two
    /// accumulators a row.
    ///
    /// # Safety
    /// The CPU must support avx2, fma and f16c.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn block_avx2(rows: &[u8], x: &[f32]) -> [f32; ROWS] {
        let (n, stride) = (x.len(), 2 * x.len());
        assert_eq!(rows.len(), ROWS * stride, "matvec: four rows of x.len()");
        let (px, base) = (x.as_ptr(), rows.as_ptr());
        let mut acc = [[_mm256_setzero_ps(); 2]; ROWS];
        let mut i = 0;
        // SAFETY: each step reads floats i..i+16 <= n of x and bytes
        // 2i..2i+32 <= 2n of each of the four rows (length checked).
        unsafe {
            while i + 16 <= n {
                let q0 = _mm256_loadu_ps(px.add(i));
                let q1 = _mm256_loadu_ps(px.add(i + 8));
                for (k, a) in acc.iter_mut().enumerate() {
                    let p = base.add(k * stride + 2 * i);
                    let v0 = _mm256_cvtph_ps(_mm_loadu_si128(p.cast()));
                    let v1 = _mm256_cvtph_ps(_mm_loadu_si128(p.add(16).cast()));
                    a[0] = _mm256_fmadd_ps(q0, v0, a[0]);
                    a[1] = _mm256_fmadd_ps(q1, v1, a[1]);
                }
                i += 16;
            }
        }
        let mut out = [0f32; ROWS];
        for (k, a) in acc.iter().enumerate() {
            let mut lanes = [0f32; 8];
            // SAFETY: `lanes` holds 8 floats.
            unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), _mm256_add_ps(a[0], a[1])) };
            let row = &rows[k * stride..(k + 1) * stride];
            let tail = crate::half::sum_scalar::<false>(&x[i..], &row[2 * i..]);
            out[k] = lanes.iter().sum::<f32>() + tail;
        }
        out
    }

    /// As [`block_avx2`], 32 lanes a step, with a masked tail.
    ///
    /// # Safety
    /// The CPU must support avx512f, avx512bw and avx512vl.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    pub(super) unsafe fn block_avx512(rows: &[u8], x: &[f32]) -> [f32; ROWS] {
        let (n, stride) = (x.len(), 2 * x.len());
        assert_eq!(rows.len(), ROWS * stride, "matvec: four rows of x.len()");
        let (px, base) = (x.as_ptr(), rows.as_ptr());
        let mut acc = [[_mm512_setzero_ps(); 2]; ROWS];
        let mut i = 0;
        // SAFETY: unmasked steps read floats i..i+32 <= n of x and bytes
        // 2i..2i+64 <= 2n of each row (length checked); masked ones touch
        // only lanes below n.
        unsafe {
            while i + 32 <= n {
                let q0 = _mm512_loadu_ps(px.add(i));
                let q1 = _mm512_loadu_ps(px.add(i + 16));
                for (k, a) in acc.iter_mut().enumerate() {
                    let p = base.add(k * stride + 2 * i);
                    let v0 = _mm512_cvtph_ps(_mm256_loadu_si256(p.cast()));
                    let v1 = _mm512_cvtph_ps(_mm256_loadu_si256(p.add(32).cast()));
                    a[0] = _mm512_fmadd_ps(q0, v0, a[0]);
                    a[1] = _mm512_fmadd_ps(q1, v1, a[1]);
                }
                i += 32;
            }
            while i < n {
                let left = (n - i).min(16);
                let mask: __mmask16 = ((1u32 << left) - 1) as u16;
                let q = _mm512_maskz_loadu_ps(mask, px.add(i));
                for (k, a) in acc.iter_mut().enumerate() {
                    let p = base.add(k * stride + 2 * i);
                    let v = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, p.cast()));
                    a[0] = _mm512_fmadd_ps(q, v, a[0]);
                }
                i += left;
            }
        }
        acc.map(|a| _mm512_reduce_add_ps(_mm512_add_ps(a[0], a[1])))
    }
}
