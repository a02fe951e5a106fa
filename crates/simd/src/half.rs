//! Half-precision (IEEE 754 binary16) stored vectors.
//!
//! An index may store its vectors as f16 (`--store f16`): half the bytes of
//! f32, so a 4 KB block holds more records (Starling §4.1: block search
//! gains with the records per block) and a node cache more nodes. The query
//! stays f32; each stored element is widened to f32 (exactly: every f16 is
//! an f32) before the same float arithmetic as the f32 kernels. The error is
//! the storage rounding alone, a relative 2^-11 per component.
//!
//! Stored bytes are little-endian u16 words, read unaligned.

/// `x` rounded to the nearest f16 (ties to even), as its bit pattern.
/// Overflow gives ±infinity, NaN stays NaN (quiet), values below half the
/// smallest subnormal give ±0: what `vcvtps2ph` does with round-to-nearest.
pub fn f32_to_f16(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xff) as i32;
    let man = b & 0x7f_ffff;
    if exp == 0xff {
        let nan = if man != 0 {
            0x200 | (man >> 13) as u16
        } else {
            0
        };
        return sign | 0x7c00 | nan;
    }
    // The f16 exponent field for this value if it is normal.
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e >= 1 {
        let half = ((e as u32) << 10) | (man >> 13);
        let rest = man & 0x1fff;
        // A carry out of the mantissa steps the exponent (up to infinity),
        // which is the correctly rounded result.
        let up = rest > 0x1000 || (rest == 0x1000 && half & 1 == 1);
        return sign | (half + u32::from(up)) as u16;
    }
    // Subnormal (or zero): the value in units of 2^-24 is
    // (1.man) * 2^(exp - 126) = (man | 2^23) >> (14 - e).
    let shift = (14 - e) as u32;
    if shift >= 25 {
        return sign;
    }
    let full = man | 0x80_0000;
    let q = full >> shift;
    let rest = full & ((1 << shift) - 1);
    let halfway = 1 << (shift - 1);
    let up = rest > halfway || (rest == halfway && q & 1 == 1);
    sign | (q + u32::from(up)) as u16
}

/// The f32 value of an f16 bit pattern (exact).
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h & 0x8000) << 16;
    let e = u32::from((h >> 10) & 0x1f);
    let m = u32::from(h & 0x3ff);
    let bits = match e {
        0 if m == 0 => sign,
        // Subnormal: m * 2^-24, exact in f32.
        0 => {
            let v = m as f32 * f32::from_bits(0x3380_0000);
            sign | v.to_bits()
        }
        0x1f => sign | 0x7f80_0000 | (m << 13),
        _ => sign | ((e + 112) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}

/// `src` as little-endian f16 words into `out` (2 bytes per element).
/// Panics unless `out.len() == 2 * src.len()`.
pub fn encode_f16(src: &[f32], out: &mut [u8]) {
    assert_eq!(out.len(), 2 * src.len(), "encode_f16: 2 bytes per element");
    for (o, &x) in out.chunks_exact_mut(2).zip(src) {
        o.copy_from_slice(&f32_to_f16(x).to_le_bytes());
    }
}

/// Every level's length check.
fn check(q: &[f32], x: &[u8]) {
    assert_eq!(
        x.len(),
        2 * q.len(),
        "f16 kernels: the stored vector must have 2 bytes per query element"
    );
}

/// Reference: squared L2 distance (`L2`) or inner product of the f32 query
/// `q` and the stored f16 vector `x` (`2 * q.len()` bytes).
pub fn sum_scalar<const L2: bool>(q: &[f32], x: &[u8]) -> f32 {
    check(q, x);
    q.iter()
        .zip(x.chunks_exact(2))
        .map(|(&a, h)| {
            let v = f16_to_f32(u16::from_le_bytes([h[0], h[1]]));
            if L2 {
                (a - v) * (a - v)
            } else {
                a * v
            }
        })
        .sum()
}

#[cfg(target_arch = "x86_64")]
pub(crate) use simd::{sum_avx2, sum_avx512};

#[cfg(target_arch = "x86_64")]
mod simd {
    use core::arch::x86_64::*;

    /// Squared L2 (`L2`) or inner product of the f32 query and 8 stored
    /// halves at a time (`vcvtph2ps`), two accumulators.
    ///
    /// # Safety
    /// The CPU must support avx2, fma and f16c.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(crate) unsafe fn sum_avx2<const L2: bool>(q: &[f32], x: &[u8]) -> f32 {
        super::check(q, x);
        let n = q.len();
        let (pq, px) = (q.as_ptr(), x.as_ptr());
        let mut acc = [_mm256_setzero_ps(); 2];
        let mut i = 0;
        // SAFETY: each step reads floats i..i+8 <= n of q and bytes
        // 2i..2i+16 <= 2n of x (length checked); the tail is scalar.
        unsafe {
            while i + 8 <= n {
                let v = _mm256_cvtph_ps(_mm_loadu_si128(px.add(2 * i).cast()));
                let a = _mm256_loadu_ps(pq.add(i));
                let k = (i / 8) & 1;
                acc[k] = crate::avx2::f32_term::<L2>(a, v, acc[k]);
                i += 8;
            }
        }
        let s = _mm256_add_ps(acc[0], acc[1]);
        let mut lanes = [0f32; 8];
        // SAFETY: `lanes` holds 8 floats.
        unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), s) };
        let rest = super::sum_scalar::<L2>(&q[i..], &x[2 * i..]);
        lanes.iter().sum::<f32>() + rest
    }

    /// As [`sum_avx2`], 16 halves at a time, with a masked tail.
    ///
    /// # Safety
    /// The CPU must support avx512f, avx512bw and avx512vl.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    pub(crate) unsafe fn sum_avx512<const L2: bool>(q: &[f32], x: &[u8]) -> f32 {
        super::check(q, x);
        let n = q.len();
        let (pq, px) = (q.as_ptr(), x.as_ptr());
        let mut acc = [_mm512_setzero_ps(); 2];
        let mut i = 0;
        // SAFETY: unmasked steps read floats i..i+16 <= n of q and bytes
        // 2i..2i+32 <= 2n of x (length checked); the masked tail touches
        // only lanes below n - i.
        unsafe {
            while i + 16 <= n {
                let v = _mm512_cvtph_ps(_mm256_loadu_si256(px.add(2 * i).cast()));
                let a = _mm512_loadu_ps(pq.add(i));
                let k = (i / 16) & 1;
                acc[k] = crate::avx512::f32_term::<L2>(a, v, acc[k]);
                i += 16;
            }
            if i < n {
                let k: __mmask16 = (1u32 << (n - i)) as u16 - 1;
                let v = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(k, px.add(2 * i).cast()));
                let a = _mm512_maskz_loadu_ps(k, pq.add(i));
                acc[0] = crate::avx512::f32_term::<L2>(a, v, acc[0]);
            }
        }
        _mm512_reduce_add_ps(_mm512_add_ps(acc[0], acc[1]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every f16 survives f16 -> f32 -> f16 (NaNs stay NaN).
    #[test]
    fn every_half_round_trips() {
        for h in 0..=u16::MAX {
            let x = f16_to_f32(h);
            if x.is_nan() {
                assert!(f16_to_f32(f32_to_f16(x)).is_nan(), "{h:#06x}");
            } else {
                assert_eq!(f32_to_f16(x), h, "{h:#06x} = {x}");
            }
        }
    }

    #[test]
    fn rounding_at_the_edges() {
        assert_eq!(f16_to_f32(f32_to_f16(65504.0)), 65504.0);
        assert_eq!(f32_to_f16(65520.0), 0x7c00, "rounds up to infinity");
        assert_eq!(f32_to_f16(65519.0), 0x7bff);
        assert_eq!(f32_to_f16(-0.0), 0x8000);
        // Smallest subnormal 2^-24; half of it ties to even (zero).
        assert_eq!(f32_to_f16(2f32.powi(-24)), 1);
        assert_eq!(f32_to_f16(2f32.powi(-25)), 0);
        assert_eq!(f32_to_f16(2f32.powi(-25) * 1.5), 1);
        // 1 + 2^-11 is halfway between 1 and the next half: ties to even.
        assert_eq!(f32_to_f16(1.0 + 2f32.powi(-11)), 0x3c00);
        assert_eq!(f32_to_f16(1.0 + 3.0 * 2f32.powi(-11)), 0x3c02);
    }

    /// The hand-written conversion equals the CPU's `vcvtps2ph` (round to
    /// nearest even) on a spread of f32 bit patterns.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn conversion_matches_the_cpu() {
        use core::arch::x86_64::*;
        if !std::arch::is_x86_feature_detected!("f16c") {
            return;
        }
        #[target_feature(enable = "f16c")]
        fn cpu(x: f32) -> u16 {
            let v = _mm_cvtps_ph::<{ _MM_FROUND_TO_NEAREST_INT }>(_mm_set1_ps(x));
            _mm_extract_epi16::<0>(v) as u16
        }
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for i in 0..2_000_000u64 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            // Half the samples in the f16 range's exponents, half anywhere.
            let bits = if i % 2 == 0 {
                let e = 100 + (state >> 40) % 50;
                ((state >> 8) as u32 & 0x807f_ffff) | ((e as u32) << 23)
            } else {
                state as u32
            };
            let x = f32::from_bits(bits);
            // SAFETY: f16c checked above.
            let want = unsafe { cpu(x) };
            let got = f32_to_f16(x);
            if x.is_nan() {
                assert!(f16_to_f32(got).is_nan());
            } else {
                assert_eq!(got, want, "{x:e} ({bits:#010x})");
            }
        }
    }
}
