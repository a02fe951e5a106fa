//! Dot products of 8-bit levels with an i16 query: extended RaBitQ's
//! estimates at eight bits a dimension (`stratavec::quant::exrabitq`).
//!
//! Why i16 and not i8 as at four bits: an eight-bit code is 16x finer than
//! a four-bit one, so an i8 query's rounding (a step of 1/127 of its
//! largest element) would be the larger part of the estimate's error and
//! widen the bound the refinement settles with. At i16 the rounding is
//! ~100x smaller and the product is still exact in integers: the levels
//! widen to i16 and `madd` sums pairs into i32 lanes. The caller keeps
//! `255 · max|q_i| · len` below 2³¹ ([`max_query`]), so no lane overflows.
//!
//! The float loop this replaces converted every level to f32 and was the
//! largest part of a search's CPU at eight bits (35% of a 1-thread search
//! of wordnet-minilm at 40% memory).

/// The largest |element| a query of `len` elements may have so that
/// [`dot_u8_i16`] cannot overflow: `255 · max · len < 2³¹`, capped at
/// 2¹⁴ − 1.
pub fn max_query(len: usize) -> i16 {
    let bound = (i32::MAX as usize) / (255 * len.max(1));
    bound.min(16_383) as i16
}

/// `Σ_j code[j] · q[j]`; `q` holds at least `code.len()` elements whose
/// magnitudes are at most [`max_query`]`(code.len())`.
pub fn dot_u8_i16(code: &[u8], q: &[i16]) -> i32 {
    assert!(q.len() >= code.len());
    #[cfg(target_arch = "x86_64")]
    match crate::dispatch::active().level {
        // SAFETY: each level is active only on CPUs with its instructions.
        crate::Level::Avx512 => return unsafe { avx512(code, q) },
        crate::Level::Avx2 => return unsafe { avx2(code, q) },
        crate::Level::Scalar => {}
    }
    dot_u8_i16_scalar(code, q)
}

/// The plain reference of [`dot_u8_i16`].
pub fn dot_u8_i16_scalar(code: &[u8], q: &[i16]) -> i32 {
    code.iter().zip(q).map(|(&c, &v)| c as i32 * v as i32).sum()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn avx2(code: &[u8], q: &[i16]) -> i32 {
    use std::arch::x86_64::*;
    let n = code.len();
    let (mut a, mut b) = (_mm256_setzero_si256(), _mm256_setzero_si256());
    let mut j = 0;
    // Two independent sums, so one madd's latency hides behind the other.
    while j + 32 <= n {
        // SAFETY: j + 32 <= n <= both lengths.
        unsafe {
            let c0 = _mm256_cvtepu8_epi16(_mm_loadu_si128(code.as_ptr().add(j).cast()));
            let c1 = _mm256_cvtepu8_epi16(_mm_loadu_si128(code.as_ptr().add(j + 16).cast()));
            let q0 = _mm256_loadu_si256(q.as_ptr().add(j).cast());
            let q1 = _mm256_loadu_si256(q.as_ptr().add(j + 16).cast());
            a = _mm256_add_epi32(a, _mm256_madd_epi16(c0, q0));
            b = _mm256_add_epi32(b, _mm256_madd_epi16(c1, q1));
        }
        j += 32;
    }
    let mut lanes = [0i32; 8];
    // SAFETY: lanes holds 8 i32, one register.
    unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast(), _mm256_add_epi32(a, b)) };
    lanes.iter().sum::<i32>() + dot_u8_i16_scalar(&code[j..], &q[j..])
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn avx512(code: &[u8], q: &[i16]) -> i32 {
    use std::arch::x86_64::*;
    let n = code.len();
    let (mut a, mut b) = (_mm512_setzero_si512(), _mm512_setzero_si512());
    let mut j = 0;
    while j + 64 <= n {
        // SAFETY: j + 64 <= n <= both lengths.
        unsafe {
            let c0 = _mm512_cvtepu8_epi16(_mm256_loadu_si256(code.as_ptr().add(j).cast()));
            let c1 = _mm512_cvtepu8_epi16(_mm256_loadu_si256(code.as_ptr().add(j + 32).cast()));
            let q0 = _mm512_loadu_si512(q.as_ptr().add(j).cast());
            let q1 = _mm512_loadu_si512(q.as_ptr().add(j + 32).cast());
            a = _mm512_add_epi32(a, _mm512_madd_epi16(c0, q0));
            b = _mm512_add_epi32(b, _mm512_madd_epi16(c1, q1));
        }
        j += 64;
    }
    let sum = _mm512_reduce_add_epi32(_mm512_add_epi32(a, b));
    // SAFETY: AVX2 is implied by the AVX-512 level (dispatch checks it).
    sum + unsafe { avx2(&code[j..], &q[j..]) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn equals_the_plain_sum(
            code in proptest::collection::vec(any::<u8>(), 0..900),
            seed in any::<u64>(),
        ) {
            let top = max_query(code.len());
            let mut s = seed | 1;
            let mut next = || {
                s ^= s << 13; s ^= s >> 7; s ^= s << 17;
                (s % (2 * top as u64 + 1)) as i32 - top as i32
            };
            let q: Vec<i16> = (0..code.len()).map(|_| next() as i16).collect();
            prop_assert_eq!(dot_u8_i16(&code, &q), dot_u8_i16_scalar(&code, &q));
            // The extremes: every level 255 against ±max, exact and in range.
            let full = vec![255u8; code.len()];
            let high = vec![top; code.len()];
            let low = vec![-top; code.len()];
            let want = 255i64 * top as i64 * code.len() as i64;
            prop_assert_eq!(dot_u8_i16(&full, &high) as i64, want);
            prop_assert_eq!(dot_u8_i16(&full, &low) as i64, -want);
        }
    }

    #[test]
    fn every_level_computes_the_same_sum() {
        let code: Vec<u8> = (0..777).map(|i| (i * 37 % 256) as u8).collect();
        let q: Vec<i16> = (0..777).map(|i| ((i * 101) % 2001) as i16 - 1000).collect();
        let want = dot_u8_i16_scalar(&code, &q);
        #[cfg(target_arch = "x86_64")]
        {
            if crate::Level::Avx2.is_supported() {
                // SAFETY: checked just above.
                assert_eq!(unsafe { avx2(&code, &q) }, want);
            }
            if crate::Level::Avx512.is_supported() {
                // SAFETY: checked just above.
                assert_eq!(unsafe { avx512(&code, &q) }, want);
            }
        }
        assert_eq!(dot_u8_i16(&code, &q), want);
    }
}
