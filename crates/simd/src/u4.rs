//! Dot products of packed 4-bit levels with an i8 query: extended
//! RaBitQ's estimates at four bits a dimension (`stratavec::quant::exrabitq`).
//!
//! Byte `j` of a code holds level `2j` in its low nibble and `2j + 1` in its
//! high one. The query comes split the same way — its even elements, then
//! its odd ones — so a register of 32 code bytes meets two registers of
//! query bytes with no shuffle: `maddubs(low nibbles, even) +
//! maddubs(high nibbles, odd)`. Each i16 lane sums four products of at most
//! 15 · 127, so nothing saturates, and the sum is exact at every level.

/// `Σ_j low(code[j]) · even[j] + high(code[j]) · odd[j]`; `even` and `odd`
/// hold at least `code.len()` elements.
pub fn dot_u4_i8(code: &[u8], even: &[i8], odd: &[i8]) -> i32 {
    assert!(even.len() >= code.len() && odd.len() >= code.len());
    #[cfg(target_arch = "x86_64")]
    if crate::dispatch::active().level != crate::Level::Scalar {
        // SAFETY: the active level is AVX2 or wider only on CPUs with AVX2.
        return unsafe { avx2(code, even, odd) };
    }
    dot_u4_i8_scalar(code, even, odd)
}

/// The plain reference of [`dot_u4_i8`].
pub fn dot_u4_i8_scalar(code: &[u8], even: &[i8], odd: &[i8]) -> i32 {
    code.iter()
        .zip(even.iter().zip(odd))
        .map(|(&c, (&e, &o))| (c & 15) as i32 * e as i32 + (c >> 4) as i32 * o as i32)
        .sum()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn avx2(code: &[u8], even: &[i8], odd: &[i8]) -> i32 {
    use std::arch::x86_64::*;
    let n = code.len();
    let mask = _mm256_set1_epi8(0x0F);
    let ones = _mm256_set1_epi16(1);
    let mut acc = _mm256_setzero_si256();
    let mut j = 0;
    while j + 32 <= n {
        // SAFETY: j + 32 <= n <= every slice's length.
        let (c, qe, qo) = unsafe {
            (
                _mm256_loadu_si256(code.as_ptr().add(j) as *const __m256i),
                _mm256_loadu_si256(even.as_ptr().add(j) as *const __m256i),
                _mm256_loadu_si256(odd.as_ptr().add(j) as *const __m256i),
            )
        };
        let lo = _mm256_and_si256(c, mask);
        let hi = _mm256_and_si256(_mm256_srli_epi16(c, 4), mask);
        let pairs = _mm256_add_epi16(_mm256_maddubs_epi16(lo, qe), _mm256_maddubs_epi16(hi, qo));
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, ones));
        j += 32;
    }
    let mut lanes = [0i32; 8];
    // SAFETY: lanes holds 8 i32, one register.
    unsafe { _mm256_storeu_si256(lanes.as_mut_ptr() as *mut __m256i, acc) };
    lanes.iter().sum::<i32>() + dot_u4_i8_scalar(&code[j..], &even[j..], &odd[j..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn equals_the_plain_sum(
            code in proptest::collection::vec(any::<u8>(), 0..300),
            seed in any::<u64>(),
        ) {
            let mut s = seed | 1;
            let mut next = || { s ^= s << 13; s ^= s >> 7; s ^= s << 17; (s % 255) as i16 - 127 };
            let even: Vec<i8> = (0..code.len()).map(|_| next() as i8).collect();
            let odd: Vec<i8> = (0..code.len()).map(|_| next() as i8).collect();
            prop_assert_eq!(dot_u4_i8(&code, &even, &odd), dot_u4_i8_scalar(&code, &even, &odd));
            // The extremes: every level 15 against ±127.
            let full = vec![0xFFu8; code.len()];
            let top = vec![127i8; code.len()];
            let bottom = vec![-127i8; code.len()];
            prop_assert_eq!(dot_u4_i8(&full, &top, &bottom), 0);
            prop_assert_eq!(dot_u4_i8(&full, &top, &top), 2 * 15 * 127 * code.len() as i32);
        }
    }
}
