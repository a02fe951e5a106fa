//! AVX2 + FMA kernels. Float tails use `maskload`; byte tails are copied to
//! a zeroed stack buffer, so no load reads past the end of a slice.

use core::arch::x86_64::*;

use crate::dispatch::{Kernels, Level};

/// Safe entry points.
///
/// SAFETY (every `unsafe` call below): this table is handed out only by
/// `Level::kernels`, which first checks `Level::Avx2.is_supported()`
/// (avx2, fma, f16c); the kernels check their own length preconditions.
pub(crate) static KERNELS: Kernels = Kernels {
    level: Level::Avx2,
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
    l2_sq_transposed: |p, ct, o| unsafe { crate::transposed::avx2(p, ct, o) },
    // SAFETY: see `KERNELS`.
    nearest_transposed: |p, ct, o| unsafe { crate::transposed::nearest_avx2(p, ct, o) },
    // SAFETY: see `KERNELS`.
    quantize_u16: |s, o| unsafe { crate::lut16::quantize_avx2(s, o) },
    // SAFETY: see `KERNELS`.
    pq_adc_rows_u16: |t, c, m, ids, o| unsafe { crate::lut16::rows_avx2(t, c, m, ids, o) },
    // SAFETY: see `KERNELS`.
    l2_sq_f16: |q, x| unsafe { crate::half::sum_avx2::<true>(q, x) },
    // SAFETY: see `KERNELS`.
    dot_f16: |q, x| unsafe { crate::half::sum_avx2::<false>(q, x) },
    // SAFETY: see `KERNELS`.
    matvec_f16: |m, x, o| unsafe { crate::matvec::matvec_f16_avx2(m, x, o) },
    // SAFETY: see `KERNELS`.
    matmat_f16: |m, x, n, o| unsafe { crate::matmat::matmat_f16_avx2(m, x, n, o) },
    // SAFETY: see `KERNELS`.
    matmat_u8i8: |m, x, n, o| unsafe { crate::matmat_i8::matmat_u8i8_avx2(m, x, n, o) },
    // SAFETY: see `KERNELS`.
    fastscan_group: |p, t, m, o| unsafe { crate::fastscan::scan_avx2(p, t, m, o) },
    // SAFETY: see `KERNELS`.
    fastscan_quantize: |s, i, o| unsafe { crate::fastscan::quantize_avx2(s, i, o) },
};

/// One FMA step: `acc + (x-y)^2` when `L2`, else `acc + x*y`.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn f32_term<const L2: bool>(x: __m256, y: __m256, acc: __m256) -> __m256 {
    if L2 {
        let d = _mm256_sub_ps(x, y);
        _mm256_fmadd_ps(d, d, acc)
    } else {
        _mm256_fmadd_ps(x, y, acc)
    }
}

#[inline]
#[target_feature(enable = "avx2,fma")]
fn hsum_ps(v: __m256) -> f32 {
    let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
    let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    let s = _mm_add_ss(s, _mm_movehdup_ps(s));
    _mm_cvtss_f32(s)
}

/// `TAIL_MASK[8 - r..16 - r]` has its first `r` lanes set.
static TAIL_MASK: [i32; 16] = [-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0];

/// Squared L2 (`L2 = true`) or inner product of two f32 slices, with four
/// independent 8-lane accumulators to hide FMA latency.
///
/// # Safety
/// The CPU must support avx2 and fma.
#[target_feature(enable = "avx2,fma")]
unsafe fn f32_sum<const L2: bool>(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    let n = a.len();
    let (pa, pb) = (a.as_ptr(), b.as_ptr());
    let mut acc = [_mm256_setzero_ps(); 4];
    let mut i = 0;
    // SAFETY: each unmasked load reads 8 floats at i..i+8 <= n of both
    // slices (equal lengths asserted above); maskload touches only lanes
    // below n - i, and the mask is read from TAIL_MASK[8-r..16-r], r in 1..8.
    unsafe {
        while i + 32 <= n {
            for (k, acc) in acc.iter_mut().enumerate() {
                let (x, y) = (pa.add(i + 8 * k), pb.add(i + 8 * k));
                *acc = f32_term::<L2>(_mm256_loadu_ps(x), _mm256_loadu_ps(y), *acc);
            }
            i += 32;
        }
        while i + 8 <= n {
            acc[0] = f32_term::<L2>(
                _mm256_loadu_ps(pa.add(i)),
                _mm256_loadu_ps(pb.add(i)),
                acc[0],
            );
            i += 8;
        }
        if i < n {
            let mask = _mm256_loadu_si256(TAIL_MASK.as_ptr().add(8 - (n - i)).cast());
            let x = _mm256_maskload_ps(pa.add(i), mask);
            let y = _mm256_maskload_ps(pb.add(i), mask);
            acc[1] = f32_term::<L2>(x, y, acc[1]);
        }
    }
    let s = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
    hsum_ps(s)
}

/// Bytes per integer block: 4 squares of at most 255^2 per i32 lane per 32
/// bytes keeps every lane, and the reduced sum, below 2^31.
const BLOCK: usize = 1 << 14;

/// Exact squared L2 of byte vectors, as f32. With `FLIP` the bytes are i8:
/// flipping the sign bit maps i8 to u8 by adding 128, which keeps differences.
///
/// # Safety
/// The CPU must support avx2.
#[target_feature(enable = "avx2,fma")]
unsafe fn l2_sq_bytes<const FLIP: bool>(a: &[u8], b: &[u8]) -> f32 {
    assert_eq!(a.len(), b.len());
    let mut total = 0u64;
    for (x, y) in a.chunks(BLOCK).zip(b.chunks(BLOCK)) {
        total += l2_sq_block::<FLIP>(x, y);
    }
    total as f32
}

/// Requires `a.len() == b.len() <= BLOCK`.
#[inline]
#[target_feature(enable = "avx2,fma")]
fn l2_sq_block<const FLIP: bool>(a: &[u8], b: &[u8]) -> u64 {
    let n = a.len();
    let zero = _mm256_setzero_si256();
    let (mut lo, mut hi) = (zero, zero);
    let mut step = |x: __m256i, y: __m256i| {
        let (x, y) = if FLIP {
            let s = _mm256_set1_epi8(i8::MIN);
            (_mm256_xor_si256(x, s), _mm256_xor_si256(y, s))
        } else {
            (x, y)
        };
        // |x - y| as u8, then widened to i16 and squared-and-paired by madd.
        let d = _mm256_or_si256(_mm256_subs_epu8(x, y), _mm256_subs_epu8(y, x));
        let (dl, dh) = (_mm256_unpacklo_epi8(d, zero), _mm256_unpackhi_epi8(d, zero));
        lo = _mm256_add_epi32(lo, _mm256_madd_epi16(dl, dl));
        hi = _mm256_add_epi32(hi, _mm256_madd_epi16(dh, dh));
    };
    let mut i = 0;
    while i + 32 <= n {
        // SAFETY: reads bytes i..i+32 <= n of both slices.
        let (x, y) = unsafe {
            (
                _mm256_loadu_si256(a.as_ptr().add(i).cast()),
                _mm256_loadu_si256(b.as_ptr().add(i).cast()),
            )
        };
        step(x, y);
        i += 32;
    }
    if i < n {
        // Zero padding is equal in both buffers (also after FLIP): adds 0.
        let (mut x, mut y) = ([0u8; 32], [0u8; 32]);
        x[..n - i].copy_from_slice(&a[i..]);
        y[..n - i].copy_from_slice(&b[i..]);
        // SAFETY: both buffers are 32 bytes.
        let (x, y) = unsafe {
            (
                _mm256_loadu_si256(x.as_ptr().cast()),
                _mm256_loadu_si256(y.as_ptr().cast()),
            )
        };
        step(x, y);
    }
    let s = _mm256_add_epi32(lo, hi);
    let s = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256::<1>(s));
    let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b01_00_11_10>(s));
    let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b10_11_00_01>(s));
    _mm_cvtsi128_si32(s) as u32 as u64
}

/// # Safety
/// The CPU must support avx2 and fma.
#[target_feature(enable = "avx2,fma")]
unsafe fn pq_adc(table: &[f32], code: &[u8]) -> f32 {
    crate::check_adc(table.len(), code.len(), code.len(), 1);
    // SAFETY: the table holds 256 floats per code byte (checked above).
    unsafe { adc_one(table.as_ptr(), code.as_ptr(), code.len()) }
}

/// # Safety
/// The CPU must support avx2 and fma.
#[target_feature(enable = "avx2,fma")]
unsafe fn pq_adc_batch(table: &[f32], codes: &[u8], m: usize, out: &mut [f32]) {
    crate::check_adc(table.len(), codes.len(), m, out.len());
    for (i, o) in out.iter_mut().enumerate() {
        // SAFETY: codes holds m bytes per output and the table 256 floats per
        // sub-space (checked above).
        *o = unsafe { adc_one(table.as_ptr(), codes.as_ptr().add(i * m), m) };
    }
}

/// Sum of `t[j*256 + c[j]]` for j < m, 8 sub-spaces per gather.
///
/// # Safety
/// avx2; `c` has m readable bytes and `t` 256*m floats, and 256*m fits in i32.
#[inline]
#[target_feature(enable = "avx2,fma")]
unsafe fn adc_one(t: *const f32, c: *const u8, m: usize) -> f32 {
    let step = _mm256_set1_epi32(8 * 256);
    let mut base = _mm256_setr_epi32(0, 256, 512, 768, 1024, 1280, 1536, 1792);
    let mut acc = _mm256_setzero_ps();
    let mut i = 0;
    // SAFETY: code loads read bytes i..i+8 <= m; every gathered index
    // j*256 + c[j] < 256*m for j < m; the scalar tail reads j < m.
    unsafe {
        while i + 8 <= m {
            let codes = _mm256_cvtepu8_epi32(_mm_loadl_epi64(c.add(i).cast()));
            let g = _mm256_i32gather_ps::<4>(t, _mm256_add_epi32(base, codes));
            acc = _mm256_add_ps(acc, g);
            base = _mm256_add_epi32(base, step);
            i += 8;
        }
        let mut tail = 0.0;
        while i < m {
            tail += *t.add(i * 256 + *c.add(i) as usize);
            i += 1;
        }
        hsum_ps(acc) + tail
    }
}
