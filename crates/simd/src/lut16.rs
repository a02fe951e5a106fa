//! PQ distance estimation from a 16-bit lookup table.
//!
//! A query's f32 ADC table (256 entries per sub-space) is as large as the
//! L1 data cache at 48 sub-spaces (48 KB), and a worker thread interleaves
//! 16-32 queries, each with its own table: the gathers of a search then wait
//! on L2. Quantized to u16 the table is half the size and its sums are exact
//! integers: `value ≈ offset + scale * q` per entry, so an estimate is
//! `m * offset + scale * sum(q)`, off from the f32 sum by at most
//! `m * scale / 2` (`scale` = the table's range / 65535: about 1e-5 of it).
//!
//! Every level computes each code with the same float operations in the same
//! order (sub, mul, round half to even, cap: [`code`]), so their tables are
//! bit-identical; `rows` gathers per level and sums integers, so every level
//! gives identical sums.

/// Step and its inverse for a table spanning `lo..=hi` (shared by every
/// level, so they all divide by the same number).
#[inline(always)]
fn step(lo: f32, hi: f32) -> (f32, f32) {
    let scale = if hi > lo { (hi - lo) / 65535.0 } else { 1.0 };
    (scale, 1.0 / scale)
}

/// One value's code: what every level computes, in this order (sub, mul,
/// round half to even, cap), so their tables are bit-identical.
#[inline(always)]
fn code(x: f32, lo: f32, inv: f32) -> u16 {
    let q = ((x - lo) * inv).round_ties_even();
    let q = if q < 65535.0 { q } else { 65535.0 };
    q as i32 as u16
}

/// Every level's length check; the first value (None for an empty table,
/// which quantizes to offset 0, step 1).
fn first(src: &[f32], out: &[u16]) -> Option<f32> {
    assert_eq!(src.len(), out.len(), "quantize_u16: one output per input");
    src.first().copied()
}

/// Reference: `out[i] = round((src[i] - offset) / scale)`, with `offset` the
/// minimum and `scale` the range / 65535 (1 for a constant table); returns
/// `(offset, scale)`. `src` must be finite.
pub fn quantize_scalar(src: &[f32], out: &mut [u16]) -> (f32, f32) {
    let Some(first) = first(src, out) else {
        return (0.0, 1.0);
    };
    let (mut lo, mut hi) = (first, first);
    for &x in src {
        lo = if x < lo { x } else { lo };
        hi = if x > hi { x } else { hi };
    }
    let (scale, inv) = step(lo, hi);
    for (o, &x) in out.iter_mut().zip(src) {
        *o = code(x, lo, inv);
    }
    (lo, scale)
}

/// Bounds every level checks: the table holds 256 entries per sub-space and
/// one of padding (the SIMD gathers read 4 bytes at an entry), every row is
/// inside `codes`, and `256 * m` fits the gathers' i32 indices.
fn check_rows(table_len: usize, codes_len: usize, m: usize, ids: &[u32], out_len: usize) {
    assert!(
        m <= (i32::MAX as usize) / 256,
        "pq_adc_rows_u16: m = {m} too large"
    );
    assert!(
        table_len > 256 * m,
        "pq_adc_rows_u16: table length must be at least 256 * m + 1, found {table_len}"
    );
    assert_eq!(ids.len(), out_len, "pq_adc_rows_u16: one output per id");
    let rows = codes_len.checked_div(m).unwrap_or(usize::MAX);
    for &id in ids {
        assert!(
            (id as usize) < rows,
            "pq_adc_rows_u16: row {id} outside the codes ({rows} rows)"
        );
    }
}

/// Reference: `out[i] = sum_j table[j*256 + codes[ids[i]*m + j]]`.
pub fn rows_scalar(table: &[u16], codes: &[u8], m: usize, ids: &[u32], out: &mut [u32]) {
    check_rows(table.len(), codes.len(), m, ids, out.len());
    for (o, &id) in out.iter_mut().zip(ids) {
        let code = &codes[id as usize * m..(id as usize + 1) * m];
        *o = code
            .iter()
            .enumerate()
            .map(|(j, &c)| u32::from(table[j * 256 + c as usize]))
            .sum();
    }
}

#[cfg(target_arch = "x86_64")]
pub(crate) use simd::{quantize_avx2, quantize_avx512, rows_avx2, rows_avx512};

#[cfg(target_arch = "x86_64")]
mod simd {
    use super::{code, step};
    use core::arch::x86_64::*;

    const NEAREST: i32 = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

    /// [`code`] of 8 values, as i32 lanes.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn codes8(v: __m256, lo: __m256, inv: __m256) -> __m256i {
        let r = _mm256_round_ps::<NEAREST>(_mm256_mul_ps(_mm256_sub_ps(v, lo), inv));
        _mm256_cvtps_epi32(_mm256_min_ps(r, _mm256_set1_ps(65535.0)))
    }

    /// [`code`] of 16 values, as i32 lanes.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    fn codes16(v: __m512, lo: __m512, inv: __m512) -> __m512i {
        let r = _mm512_roundscale_ps::<NEAREST>(_mm512_mul_ps(_mm512_sub_ps(v, lo), inv));
        _mm512_cvtps_epi32(_mm512_min_ps(r, _mm512_set1_ps(65535.0)))
    }

    /// # Safety
    /// The CPU must support avx2 and fma.
    #[target_feature(enable = "avx2,fma")]
    pub(crate) unsafe fn quantize_avx2(src: &[f32], out: &mut [u16]) -> (f32, f32) {
        let Some(first) = super::first(src, out) else {
            return (0.0, 1.0);
        };
        let n = src.len();
        let (p, q) = (src.as_ptr(), out.as_mut_ptr());
        let (mut vlo, mut vhi) = (_mm256_set1_ps(first), _mm256_set1_ps(first));
        let mut i = 0;
        // SAFETY: every load reads 8 floats at i..i+8 <= n, every store
        // writes 16 u16 at i..i+16 <= n; the tails are scalar.
        unsafe {
            while i + 8 <= n {
                let v = _mm256_loadu_ps(p.add(i));
                vlo = _mm256_min_ps(vlo, v);
                vhi = _mm256_max_ps(vhi, v);
                i += 8;
            }
        }
        let (mut l, mut h) = ([0f32; 8], [0f32; 8]);
        // SAFETY: both arrays hold 8 floats.
        unsafe {
            _mm256_storeu_ps(l.as_mut_ptr(), vlo);
            _mm256_storeu_ps(h.as_mut_ptr(), vhi);
        }
        let (mut lo, mut hi) = (first, first);
        for x in l.into_iter().chain(src[i..].iter().copied()) {
            lo = if x < lo { x } else { lo };
        }
        for x in h.into_iter().chain(src[i..].iter().copied()) {
            hi = if x > hi { x } else { hi };
        }
        let (scale, inv) = step(lo, hi);
        let (vl, vi) = (_mm256_set1_ps(lo), _mm256_set1_ps(inv));
        let mut i = 0;
        // SAFETY: as above.
        unsafe {
            while i + 16 <= n {
                let a = codes8(_mm256_loadu_ps(p.add(i)), vl, vi);
                let b = codes8(_mm256_loadu_ps(p.add(i + 8)), vl, vi);
                // packus interleaves 128-bit lanes; the permute restores order.
                let w = _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_packus_epi32(a, b));
                _mm256_storeu_si256(q.add(i).cast(), w);
                i += 16;
            }
        }
        for (o, &x) in out[i..].iter_mut().zip(&src[i..]) {
            *o = code(x, lo, inv);
        }
        (lo, scale)
    }

    /// # Safety
    /// The CPU must support avx512f, avx512bw and avx512vl.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    pub(crate) unsafe fn quantize_avx512(src: &[f32], out: &mut [u16]) -> (f32, f32) {
        let Some(first) = super::first(src, out) else {
            return (0.0, 1.0);
        };
        let n = src.len();
        let (p, q) = (src.as_ptr(), out.as_mut_ptr());
        let (mut vlo, mut vhi) = (_mm512_set1_ps(first), _mm512_set1_ps(first));
        let mut i = 0;
        // SAFETY: unmasked loads read 16 floats at i..i+16 <= n; the masked
        // tail loads and stores touch only lanes below n - i.
        unsafe {
            while i + 16 <= n {
                let v = _mm512_loadu_ps(p.add(i));
                vlo = _mm512_min_ps(vlo, v);
                vhi = _mm512_max_ps(vhi, v);
                i += 16;
            }
            if i < n {
                let k: __mmask16 = (1u32 << (n - i)) as u16 - 1;
                let v = _mm512_maskz_loadu_ps(k, p.add(i));
                vlo = _mm512_mask_min_ps(vlo, k, vlo, v);
                vhi = _mm512_mask_max_ps(vhi, k, vhi, v);
            }
        }
        let (lo, hi) = (_mm512_reduce_min_ps(vlo), _mm512_reduce_max_ps(vhi));
        let (scale, inv) = step(lo, hi);
        let (vl, vi) = (_mm512_set1_ps(lo), _mm512_set1_ps(inv));
        let mut i = 0;
        // SAFETY: as above.
        unsafe {
            while i + 16 <= n {
                let w = _mm512_cvtepi32_epi16(codes16(_mm512_loadu_ps(p.add(i)), vl, vi));
                _mm256_storeu_si256(q.add(i).cast(), w);
                i += 16;
            }
            if i < n {
                let k: __mmask16 = (1u32 << (n - i)) as u16 - 1;
                let v = codes16(_mm512_maskz_loadu_ps(k, p.add(i)), vl, vi);
                _mm512_mask_cvtepi32_storeu_epi16(q.add(i).cast(), k, v);
            }
        }
        (lo, scale)
    }

    /// # Safety
    /// The CPU must support avx2.
    #[target_feature(enable = "avx2,fma")]
    pub(crate) unsafe fn rows_avx2(
        table: &[u16],
        codes: &[u8],
        m: usize,
        ids: &[u32],
        out: &mut [u32],
    ) {
        super::check_rows(table.len(), codes.len(), m, ids, out.len());
        let t = table.as_ptr().cast::<i32>();
        let low = _mm256_set1_epi32(0xffff);
        for (o, &id) in out.iter_mut().zip(ids) {
            let c = codes[id as usize * m..(id as usize + 1) * m].as_ptr();
            let mut base = _mm256_setr_epi32(0, 256, 512, 768, 1024, 1280, 1536, 1792);
            let step = _mm256_set1_epi32(8 * 256);
            let mut acc = _mm256_setzero_si256();
            let mut j = 0;
            // SAFETY: code loads read bytes j..j+8 <= m of this row; a gather
            // at entry e < 256*m reads bytes 2e..2e+4 <= 2*(256*m + 1), inside
            // the table (checked); the scalar tail reads entries < 256*m.
            unsafe {
                while j + 8 <= m {
                    let cc = _mm256_cvtepu8_epi32(_mm_loadl_epi64(c.add(j).cast()));
                    let g = _mm256_i32gather_epi32::<2>(t, _mm256_add_epi32(base, cc));
                    acc = _mm256_add_epi32(acc, _mm256_and_si256(g, low));
                    base = _mm256_add_epi32(base, step);
                    j += 8;
                }
                let s = _mm256_add_epi32(acc, _mm256_permute2x128_si256::<1>(acc, acc));
                let s = _mm256_add_epi32(s, _mm256_shuffle_epi32::<0b01_00_11_10>(s));
                let s = _mm256_add_epi32(s, _mm256_shuffle_epi32::<0b10_11_00_01>(s));
                let mut sum = _mm256_cvtsi256_si32(s) as u32;
                while j < m {
                    sum += u32::from(*table.get_unchecked(j * 256 + *c.add(j) as usize));
                    j += 1;
                }
                *o = sum;
            }
        }
    }

    /// # Safety
    /// The CPU must support avx512f, avx512bw and avx512vl.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    pub(crate) unsafe fn rows_avx512(
        table: &[u16],
        codes: &[u8],
        m: usize,
        ids: &[u32],
        out: &mut [u32],
    ) {
        super::check_rows(table.len(), codes.len(), m, ids, out.len());
        let t = table.as_ptr().cast::<i32>();
        let low = _mm512_set1_epi32(0xffff);
        let first = _mm512_mullo_epi32(
            _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
            _mm512_set1_epi32(256),
        );
        let step = _mm512_set1_epi32(16 * 256);
        for (o, &id) in out.iter_mut().zip(ids) {
            let c = codes[id as usize * m..(id as usize + 1) * m].as_ptr();
            let mut base = first;
            let mut acc = _mm512_setzero_si512();
            let mut j = 0;
            // SAFETY: code loads read bytes j..j+16 <= m of this row (masked
            // below m in the tail); a gather at entry e < 256*m reads bytes
            // 2e..2e+4 <= 2*(256*m + 1), inside the table (checked), and
            // masked-off lanes read nothing.
            unsafe {
                while j + 16 <= m {
                    let cc = _mm512_cvtepu8_epi32(_mm_loadu_si128(c.add(j).cast()));
                    let g = _mm512_i32gather_epi32::<2>(_mm512_add_epi32(base, cc), t);
                    acc = _mm512_add_epi32(acc, _mm512_and_si512(g, low));
                    base = _mm512_add_epi32(base, step);
                    j += 16;
                }
                if j < m {
                    let k: __mmask16 = (1u16 << (m - j)) - 1;
                    let cc = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(k, c.add(j).cast()));
                    let idx = _mm512_add_epi32(base, cc);
                    let g = _mm512_mask_i32gather_epi32::<2>(_mm512_setzero_si512(), k, idx, t);
                    acc = _mm512_add_epi32(acc, _mm512_and_si512(g, low));
                }
            }
            *o = _mm512_reduce_add_epi32(acc) as u32;
        }
    }
}
