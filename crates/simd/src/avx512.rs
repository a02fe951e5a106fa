//! AVX-512 (F + BW + VL) kernels. Tails use masked loads, so no scalar
//! remainder loops and no reads past the end of a slice.

use core::arch::x86_64::*;

use crate::dispatch::{Kernels, Level};

/// Safe entry points.
///
/// SAFETY (every `unsafe` call below): this table is handed out only by
/// `Level::kernels`, which first checks `Level::Avx512.is_supported()`
/// (avx512f, avx512bw, avx512vl, avx2, fma, f16c); the kernels check their own
/// length preconditions.
pub(crate) static KERNELS: Kernels = Kernels {
    level: Level::Avx512,
    // SAFETY: see `KERNELS`.
    l2_sq_f32: |a, b| unsafe { f32_sum::<true>(a, b) },
    // SAFETY: see `KERNELS`.
    dot_f32: |a, b| unsafe { f32_sum::<false>(a, b) },
    // SAFETY: see `KERNELS`.
    norm_sq_f32: |a| unsafe { f32_sum::<false>(a, a) },
    // SAFETY: see `KERNELS`.
    l2_sq_u8: |a, b| unsafe { l2_sq_bytes::<false>(a, b) },
    // SAFETY: see `KERNELS`; i8 and u8 have the same size and alignment.
    l2_sq_i8: |a, b| unsafe { l2_sq_bytes::<true>(crate::as_bytes(a), crate::as_bytes(b)) },
    // SAFETY: see `KERNELS`.
    pq_adc: |t, c| unsafe { pq_adc(t, c) },
    // SAFETY: see `KERNELS`.
    pq_adc_batch: |t, c, m, o| unsafe { pq_adc_batch(t, c, m, o) },
    // SAFETY: see `KERNELS`.
    l2_sq_transposed: |p, ct, o| unsafe { crate::transposed::avx512(p, ct, o) },
    // SAFETY: see `KERNELS`.
    nearest_transposed: |p, ct, o| unsafe { crate::transposed::nearest_avx512(p, ct, o) },
    // SAFETY: see `KERNELS`.
    quantize_u16: |s, o| unsafe { crate::lut16::quantize_avx512(s, o) },
    // SAFETY: see `KERNELS`.
    pq_adc_rows_u16: |t, c, m, ids, o| unsafe { crate::lut16::rows_avx512(t, c, m, ids, o) },
    // SAFETY: see `KERNELS`.
    l2_sq_f16: |q, x| unsafe { crate::half::sum_avx512::<true>(q, x) },
    // SAFETY: see `KERNELS`.
    dot_f16: |q, x| unsafe { crate::half::sum_avx512::<false>(q, x) },
    // SAFETY: see `KERNELS`.
    matvec_f16: |m, x, o| unsafe { crate::matvec::matvec_f16_avx512(m, x, o) },
    // SAFETY: see `KERNELS`.
    matmat_f16: |m, x, n, o| unsafe { crate::matmat::matmat_f16_avx512(m, x, n, o) },
    // SAFETY: see `KERNELS` (the level implies AVX2). The AVX2 kernel: an
    // AVX-512 CPU has AMX or not; where it has, the laser map runs on the
    // tiles instead, and no AVX-512 machine here could test a wider one.
    matmat_u8i8: |m, x, n, o| unsafe { crate::matmat_i8::matmat_u8i8_avx2(m, x, n, o) },
    // SAFETY: see `KERNELS`.
    fastscan_group: |p, t, m, o| unsafe { crate::fastscan::scan_avx512(p, t, m, o) },
    // SAFETY: see `KERNELS`.
    fastscan_quantize: |s, i, o| unsafe { crate::fastscan::quantize_avx512(s, i, o) },
};

/// One FMA step: `acc + (x-y)^2` when `L2`, else `acc + x*y`.
#[inline]
#[target_feature(enable = "avx512f")]
pub(crate) fn f32_term<const L2: bool>(x: __m512, y: __m512, acc: __m512) -> __m512 {
    if L2 {
        let d = _mm512_sub_ps(x, y);
        _mm512_fmadd_ps(d, d, acc)
    } else {
        _mm512_fmadd_ps(x, y, acc)
    }
}

/// Squared L2 (`L2 = true`) or inner product of two f32 slices, with four
/// independent 16-lane accumulators to hide FMA latency.
///
/// # Safety
/// The CPU must support avx512f.
#[target_feature(enable = "avx512f")]
unsafe fn f32_sum<const L2: bool>(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    let n = a.len();
    let (pa, pb) = (a.as_ptr(), b.as_ptr());
    let mut acc = [_mm512_setzero_ps(); 4];
    let mut i = 0;
    // SAFETY: each unmasked load reads 16 floats at i..i+16 <= n of both
    // slices (equal lengths asserted above); the masked load touches only
    // lanes below n - i.
    unsafe {
        while i + 64 <= n {
            for (k, acc) in acc.iter_mut().enumerate() {
                let (x, y) = (pa.add(i + 16 * k), pb.add(i + 16 * k));
                *acc = f32_term::<L2>(_mm512_loadu_ps(x), _mm512_loadu_ps(y), *acc);
            }
            i += 64;
        }
        while i + 16 <= n {
            acc[0] = f32_term::<L2>(
                _mm512_loadu_ps(pa.add(i)),
                _mm512_loadu_ps(pb.add(i)),
                acc[0],
            );
            i += 16;
        }
        if i < n {
            let k: __mmask16 = (1u16 << (n - i)) - 1;
            let x = _mm512_maskz_loadu_ps(k, pa.add(i));
            let y = _mm512_maskz_loadu_ps(k, pb.add(i));
            acc[1] = f32_term::<L2>(x, y, acc[1]);
        }
    }
    let s = _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3]));
    _mm512_reduce_add_ps(s)
}

/// Bytes per integer block: 4 squares of at most 255^2 per i32 lane per 64
/// bytes keeps every lane, and the reduced sum, below 2^31.
const BLOCK: usize = 1 << 14;

/// Exact squared L2 of byte vectors, as f32. With `FLIP` the bytes are i8:
/// flipping the sign bit maps i8 to u8 by adding 128, which keeps differences.
///
/// # Safety
/// The CPU must support avx512f and avx512bw.
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn l2_sq_bytes<const FLIP: bool>(a: &[u8], b: &[u8]) -> f32 {
    assert_eq!(a.len(), b.len());
    let mut total = 0u64;
    for (x, y) in a.chunks(BLOCK).zip(b.chunks(BLOCK)) {
        // SAFETY: chunks of equal-length slices have equal lengths; avx512bw
        // is enabled here.
        total += unsafe { l2_sq_block::<FLIP>(x, y) };
    }
    total as f32
}

/// # Safety
/// The CPU must support avx512f and avx512bw; `a.len() == b.len() <= BLOCK`.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn l2_sq_block<const FLIP: bool>(a: &[u8], b: &[u8]) -> u64 {
    let n = a.len();
    let (pa, pb) = (a.as_ptr(), b.as_ptr());
    let zero = _mm512_setzero_si512();
    let (mut lo, mut hi) = (zero, zero);
    let mut step = |x: __m512i, y: __m512i| {
        let (x, y) = if FLIP {
            let s = _mm512_set1_epi8(i8::MIN);
            (_mm512_xor_si512(x, s), _mm512_xor_si512(y, s))
        } else {
            (x, y)
        };
        // |x - y| as u8, then widened to i16 and squared-and-paired by madd.
        let d = _mm512_or_si512(_mm512_subs_epu8(x, y), _mm512_subs_epu8(y, x));
        let (dl, dh) = (_mm512_unpacklo_epi8(d, zero), _mm512_unpackhi_epi8(d, zero));
        lo = _mm512_add_epi32(lo, _mm512_madd_epi16(dl, dl));
        hi = _mm512_add_epi32(hi, _mm512_madd_epi16(dh, dh));
    };
    let mut i = 0;
    // SAFETY: unmasked loads read 64 bytes at i..i+64 <= n of both slices;
    // the masked load touches only bytes below n - i. Masked-off bytes are 0
    // in both vectors (also after FLIP), so they add nothing.
    unsafe {
        while i + 64 <= n {
            step(
                _mm512_loadu_si512(pa.add(i).cast()),
                _mm512_loadu_si512(pb.add(i).cast()),
            );
            i += 64;
        }
        if i < n {
            let k: __mmask64 = u64::MAX >> (64 - (n - i));
            step(
                _mm512_maskz_loadu_epi8(k, pa.add(i).cast()),
                _mm512_maskz_loadu_epi8(k, pb.add(i).cast()),
            );
        }
    }
    _mm512_reduce_add_epi32(_mm512_add_epi32(lo, hi)) as u32 as u64
}

/// # Safety
/// The CPU must support avx512f, avx512bw and avx512vl.
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
unsafe fn pq_adc(table: &[f32], code: &[u8]) -> f32 {
    crate::check_adc(table.len(), code.len(), code.len(), 1);
    // SAFETY: the table holds 256 floats per code byte (checked above).
    unsafe { adc_one(table.as_ptr(), code.as_ptr(), code.len()) }
}

/// # Safety
/// The CPU must support avx512f, avx512bw and avx512vl.
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
unsafe fn pq_adc_batch(table: &[f32], codes: &[u8], m: usize, out: &mut [f32]) {
    crate::check_adc(table.len(), codes.len(), m, out.len());
    for (i, o) in out.iter_mut().enumerate() {
        // SAFETY: codes holds m bytes per output and the table 256 floats per
        // sub-space (checked above).
        *o = unsafe { adc_one(table.as_ptr(), codes.as_ptr().add(i * m), m) };
    }
}

/// Sum of `t[j*256 + c[j]]` for j < m, 16 sub-spaces per gather.
///
/// # Safety
/// avx512f/bw/vl; `c` has m readable bytes and `t` 256*m floats, and
/// 256*m fits in i32.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
unsafe fn adc_one(t: *const f32, c: *const u8, m: usize) -> f32 {
    let step = _mm512_set1_epi32(16 * 256);
    let mut base = _mm512_mullo_epi32(
        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
        _mm512_set1_epi32(256),
    );
    let mut acc = _mm512_setzero_ps();
    let mut i = 0;
    // SAFETY: code loads read bytes i..i+16 <= m (masked below m in the
    // tail); every gathered index j*256 + c[j] < 256*m for j < m, and
    // masked-off lanes are not read.
    unsafe {
        while i + 16 <= m {
            let codes = _mm512_cvtepu8_epi32(_mm_loadu_si128(c.add(i).cast()));
            let g = _mm512_i32gather_ps::<4>(_mm512_add_epi32(base, codes), t);
            acc = _mm512_add_ps(acc, g);
            base = _mm512_add_epi32(base, step);
            i += 16;
        }
        if i < m {
            let k: __mmask16 = (1u16 << (m - i)) - 1;
            let codes = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(k, c.add(i).cast()));
            let idx = _mm512_add_epi32(base, codes);
            let g = _mm512_mask_i32gather_ps::<4>(_mm512_setzero_ps(), k, idx, t);
            acc = _mm512_add_ps(acc, g);
        }
    }
    _mm512_reduce_add_ps(acc)
}
