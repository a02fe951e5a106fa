//! 4-bit "fast-scan" lookups: exact distance estimates for a group of 32
//! vectors, looked up in registers rather than gathered from memory.
//!
//! Why: a search estimates the neighbours of every node it expands. When a
//! node's record carries its neighbours' 4-bit PQ codes (AlayaLaser §3.2),
//! the estimates need no further I/O, and with 16-entry u8 tables a
//! sub-quantizer's table fits in one 128-bit lane, so a single byte shuffle
//! (`vpshufb`) looks up that sub-quantizer for many neighbours at once
//! (André et al., "Quicker ADC"; faiss's fast-scan PQ). That shuffle is far
//! cheaper than gathering the codes one by one.
//!
//! # Layout
//! A group has [`GROUP`] = 32 vectors, each with `m` (even) sub-codes in
//! `0..=15`. It packs into [`packed_len`]`(m)` = `16 * m` bytes, 32 for each
//! pair of sub-quantizers `(2p, 2p + 1)`, where `c(v, k)` is vector `v`'s
//! sub-code `k`:
//!
//! ```text
//! byte 32p + j       (j < 16):  c(j, 2p)     | c(j + 16, 2p)     << 4
//! byte 32p + 16 + j  (j < 16):  c(j, 2p + 1) | c(j + 16, 2p + 1) << 4
//! ```
//!
//! Why this layout: `vpshufb` shuffles within 128-bit lanes. One 256-bit load
//! of a pair puts sub-quantizer `2p` in the low lane and `2p + 1` in the high
//! lane. The tables are stored back to back (16 bytes each), so
//! `luts[32p..32p + 32]` has the same split, and the table register is also
//! one plain load at the same offset. A mask and a 4-bit shift give the two
//! index registers (vectors 0..16 and 16..32), and all lane-crossing work is
//! left to the very end. AVX-512 loads two pairs at a time in the same way.
//!
//! # Exactness
//! Tables are u8 and sums are u16. With `m <= MAX_M` a sum is at most
//! `256 * 255 = 65280`, so every level returns the exact integer sum,
//! bit-identical to [`scan_group_scalar`].

/// Vectors per packed group: the 32 byte lanes of a 256-bit shuffle, each
/// carrying two vectors' nibbles, seen from one 128-bit table register.
pub const GROUP: usize = 32;

/// Largest `m` the lookups accept: `MAX_M * 255` sums still fit in u16.
pub const MAX_M: usize = 256;

/// `scan_group(packed, luts, m, out)` at one level (see [`scan_group`]).
pub type FastScanFn = fn(&[u8], &[u8], usize, &mut [u16; 32]);

/// Bytes in one packed group of `m` sub-quantizers: 32 vectors x 4 bits.
pub const fn packed_len(m: usize) -> usize {
    m * 16
}

/// Where vector `v`'s sub-code `k` is stored: (byte, shift of its nibble).
#[inline(always)]
fn slot(v: usize, k: usize) -> (usize, u32) {
    (32 * (k / 2) + 16 * (k % 2) + v % 16, 4 * (v / 16) as u32)
}

fn check_even(m: usize) {
    assert!(m.is_multiple_of(2), "fastscan: m = {m} must be even");
}

/// Packs `n <= 32` rows of `m` sub-codes (row-major in `codes`, each in
/// `0..=15`) into one group; rows `n..32` are padded with code 0. Panics if
/// `m` is odd, `n > 32`, `codes.len() != n * m`, `out.len() !=
/// packed_len(m)` or a code is above 15.
pub fn pack_group(codes: &[u8], n: usize, m: usize, out: &mut [u8]) {
    check_even(m);
    assert!(n <= GROUP, "pack_group: n = {n} rows, at most {GROUP}");
    assert_eq!(
        Some(codes.len()),
        n.checked_mul(m),
        "pack_group: codes length must be n * m"
    );
    assert_eq!(
        out.len(),
        packed_len(m),
        "pack_group: output must be 16 * m bytes"
    );
    out.fill(0);
    for (v, row) in codes.chunks_exact(m.max(1)).take(n).enumerate() {
        for (k, &c) in row.iter().enumerate() {
            assert!(c <= 15, "pack_group: code {c} of row {v} above 15");
            let (byte, shift) = slot(v, k);
            out[byte] |= c << shift;
        }
    }
}

/// The inverse of [`pack_group`]: all 32 rows of `m` sub-codes, row-major,
/// including the padded ones. Panics if `m` is odd, `packed.len() !=
/// packed_len(m)` or `out.len() != 32 * m`.
pub fn unpack_group(packed: &[u8], m: usize, out: &mut [u8]) {
    check_even(m);
    assert_eq!(
        packed.len(),
        packed_len(m),
        "unpack_group: packed group must be 16 * m bytes"
    );
    assert_eq!(
        out.len(),
        GROUP * m,
        "unpack_group: output must be 32 * m bytes"
    );
    for (v, row) in out.chunks_exact_mut(m.max(1)).enumerate() {
        for (k, c) in row.iter_mut().enumerate() {
            let (byte, shift) = slot(v, k);
            *c = (packed[byte] >> shift) & 0x0f;
        }
    }
}

/// Every level's checks, before any load.
fn check_scan(packed_len_: usize, luts_len: usize, m: usize) {
    check_even(m);
    assert!(
        m <= MAX_M,
        "scan_group: m = {m} above {MAX_M} could overflow u16 sums"
    );
    assert_eq!(
        packed_len_,
        packed_len(m),
        "scan_group: packed group must be 16 * m bytes"
    );
    assert_eq!(luts_len, 16 * m, "scan_group: luts must be 16 * m bytes");
}

/// Estimates of a packed group: `out[v] = sum_k luts[16k + c(v, k)]`, exact.
/// `luts` holds `m` tables of 16 u8 entries, back to back. Padded vectors
/// look up entry 0 of every table. Panics if `m` is odd or above
/// [`MAX_M`], `packed.len() != packed_len(m)` or `luts.len() != 16 * m`.
#[inline]
pub fn scan_group(packed: &[u8], luts: &[u8], m: usize, out: &mut [u16; 32]) {
    (crate::dispatch::active().fastscan_group)(packed, luts, m, out)
}

/// Reference for [`scan_group`]: one nibble and one table entry at a time.
pub fn scan_group_scalar(packed: &[u8], luts: &[u8], m: usize, out: &mut [u16; 32]) {
    check_scan(packed.len(), luts.len(), m);
    for (v, o) in out.iter_mut().enumerate() {
        *o = (0..m)
            .map(|k| {
                let (byte, shift) = slot(v, k);
                let c = (packed[byte] >> shift) & 0x0f;
                u16::from(luts[16 * k + c as usize])
            })
            .sum();
    }
}

/// `quantize_table(src, inv_step, out)` at one level (see
/// [`quantize_table`]).
pub type QuantizeFn = fn(&[f32], f32, &mut [u8]);

/// A query's fast-scan tables as bytes: `out[i] = ⌊src[i] · inv_step +
/// 0.5⌋` clamped to `0..=255`, a NaN to 0, where `src` holds each table's
/// entries less its smallest (so ≥ 0) and `inv_step` is 255 over the
/// widest table's range. The product and the sum are rounded separately
/// (no fused multiply-add), so every level gives the same bytes.
///
/// Why a kernel: a laser query's 174 tables at 696-d are 2,784 entries,
/// and the float-to-byte conversion compiled for the baseline CPU one
/// entry at a time was ~8% of the laser search's CPU through RAM (perf,
/// wordnet-mpnet). Panics unless `out` has one byte per value.
#[inline]
pub fn quantize_table(src: &[f32], inv_step: f32, out: &mut [u8]) {
    (crate::dispatch::active().fastscan_quantize)(src, inv_step, out)
}

/// Reference for [`quantize_table`]: one entry at a time.
pub fn quantize_table_scalar(src: &[f32], inv_step: f32, out: &mut [u8]) {
    check_quantize(src.len(), out.len());
    for (o, &t) in out.iter_mut().zip(src) {
        let x = t * inv_step + 0.5;
        // As the SIMD levels' max and min: a NaN becomes 0.
        let x = if x > 0.0 { x } else { 0.0 };
        let x = if x < 255.0 { x } else { 255.0 };
        *o = x as u8;
    }
}

fn check_quantize(src_len: usize, out_len: usize) {
    assert_eq!(src_len, out_len, "quantize_table: one byte per value");
}

#[cfg(target_arch = "x86_64")]
pub(crate) use simd::{quantize_avx2, quantize_avx512, scan_avx2, scan_avx512};

#[cfg(target_arch = "x86_64")]
mod simd {
    use core::arch::x86_64::*;

    /// Adds one shuffle result `r` (32 u8 sums) to a pair of u16
    /// accumulators. `all` adds `r` read as u16 words, i.e. `even byte +
    /// 256 * odd byte`, wrapping. `odd` adds only the odd bytes. [`finish`] then
    /// recovers the even sums as `all - 256 * odd`. This saves the mask of
    /// the even bytes on every shuffle (faiss does the same). It is exact
    /// because the true even sums are below 2^16 and u16 adds wrap mod 2^16.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn add256(r: __m256i, all: &mut __m256i, odd: &mut __m256i) {
        *all = _mm256_add_epi16(*all, r);
        *odd = _mm256_add_epi16(*odd, _mm256_srli_epi16::<8>(r));
    }

    /// [`add256`] for 64 u8 sums.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw")]
    fn add512(r: __m512i, all: &mut __m512i, odd: &mut __m512i) {
        *all = _mm512_add_epi16(*all, r);
        *odd = _mm512_add_epi16(*odd, _mm512_srli_epi16::<8>(r));
    }

    /// Sums of 16 vectors in vector order, from one half's accumulators:
    /// word `i` of each 128-bit lane belongs to vectors `2i` (even) and
    /// `2i + 1` (odd), and the lanes hold different sub-quantizers, so they
    /// are added together.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn sixteen(all: __m256i, odd: __m256i) -> __m256i {
        let even = _mm256_sub_epi16(all, _mm256_slli_epi16::<8>(odd));
        // Per lane: vectors 0..8, then 8..16.
        let a = _mm256_unpacklo_epi16(even, odd);
        let b = _mm256_unpackhi_epi16(even, odd);
        _mm256_add_epi16(
            _mm256_permute2x128_si256::<0x20>(a, b),
            _mm256_permute2x128_si256::<0x31>(a, b),
        )
    }

    /// Writes the 32 sums: low nibbles are vectors 0..16, high 16..32.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn finish(acc: [__m256i; 4], out: &mut [u16; 32]) {
        let (lo, hi) = (sixteen(acc[0], acc[1]), sixteen(acc[2], acc[3]));
        // SAFETY: `out` is 32 u16 = two 256-bit stores.
        unsafe {
            _mm256_storeu_si256(out.as_mut_ptr().cast(), lo);
            _mm256_storeu_si256(out.as_mut_ptr().add(16).cast(), hi);
        }
    }

    /// One pair of sub-quantizers per 256-bit load, two shuffles per load.
    ///
    /// # Safety
    /// The CPU must support avx2.
    #[target_feature(enable = "avx2")]
    pub(crate) unsafe fn scan_avx2(packed: &[u8], luts: &[u8], m: usize, out: &mut [u16; 32]) {
        super::check_scan(packed.len(), luts.len(), m);
        let nib = _mm256_set1_epi8(0x0f);
        // Low-nibble all/odd, high-nibble all/odd.
        let mut acc = [_mm256_setzero_si256(); 4];
        for (c, t) in packed.chunks_exact(32).zip(luts.chunks_exact(32)) {
            // SAFETY: both chunks are 32 bytes.
            let (c, t) = unsafe {
                (
                    _mm256_loadu_si256(c.as_ptr().cast()),
                    _mm256_loadu_si256(t.as_ptr().cast()),
                )
            };
            let lo = _mm256_shuffle_epi8(t, _mm256_and_si256(c, nib));
            let hi = _mm256_shuffle_epi8(t, _mm256_and_si256(_mm256_srli_epi16::<4>(c), nib));
            let [a0, a1, a2, a3] = &mut acc;
            add256(lo, a0, a1);
            add256(hi, a2, a3);
        }
        finish(acc, out)
    }

    /// Two pairs per 512-bit load; a last odd pair is zero-extended, so its
    /// upper half looks up all-zero tables and adds nothing. Half the
    /// instructions of [`scan_avx2`]; on an AMD EPYC (Zen 4, which splits
    /// 512-bit operations in two) a throwaway benchmark measured about the
    /// same time per group (m = 64, groups in L1: ~30 ns, scalar ~2 us).
    ///
    /// # Safety
    /// The CPU must support avx512f, avx512bw, avx512vl and avx2.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
    pub(crate) unsafe fn scan_avx512(packed: &[u8], luts: &[u8], m: usize, out: &mut [u16; 32]) {
        super::check_scan(packed.len(), luts.len(), m);
        let nib = _mm512_set1_epi8(0x0f);
        let mut acc = [_mm512_setzero_si512(); 4];
        let mut step = |c: __m512i, t: __m512i| {
            let lo = _mm512_shuffle_epi8(t, _mm512_and_si512(c, nib));
            let hi = _mm512_shuffle_epi8(t, _mm512_and_si512(_mm512_srli_epi16::<4>(c), nib));
            let [a0, a1, a2, a3] = &mut acc;
            add512(lo, a0, a1);
            add512(hi, a2, a3);
        };
        let (codes, tables) = (packed.chunks_exact(64), luts.chunks_exact(64));
        let (c_rest, t_rest) = (codes.remainder(), tables.remainder());
        for (c, t) in codes.zip(tables) {
            // SAFETY: both chunks are 64 bytes.
            let (c, t) = unsafe {
                (
                    _mm512_loadu_si512(c.as_ptr().cast()),
                    _mm512_loadu_si512(t.as_ptr().cast()),
                )
            };
            step(c, t);
        }
        if !c_rest.is_empty() {
            // Equal lengths (16 * m) leave equal remainders: 32 bytes, m / 2
            // being odd.
            debug_assert!(c_rest.len() == 32 && t_rest.len() == 32);
            // SAFETY: both remainders are 32 bytes (lengths checked above).
            let (c, t) = unsafe {
                (
                    _mm256_loadu_si256(c_rest.as_ptr().cast()),
                    _mm256_loadu_si256(t_rest.as_ptr().cast()),
                )
            };
            step(_mm512_zextsi256_si512(c), _mm512_zextsi256_si512(t));
        }
        // Fold the upper two lanes onto the lower two (wrapping, like the
        // accumulators), then finish as AVX2 does.
        let fold = |v: __m512i| {
            _mm256_add_epi16(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64::<1>(v))
        };
        finish(acc.map(fold), out)
    }

    /// [`super::quantize_table_scalar`]'s entries of 8 values, as i32
    /// lanes: `max(x, 0)` returns its second operand for a NaN, as the
    /// reference does.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn entries8(t: __m256, inv: __m256) -> __m256i {
        let x = _mm256_add_ps(_mm256_mul_ps(t, inv), _mm256_set1_ps(0.5));
        let x = _mm256_min_ps(_mm256_max_ps(x, _mm256_setzero_ps()), _mm256_set1_ps(255.0));
        _mm256_cvttps_epi32(x)
    }

    /// 32 values a step, packed to bytes; the tail one at a time.
    ///
    /// # Safety
    /// The CPU must support avx2.
    #[target_feature(enable = "avx2")]
    pub(crate) unsafe fn quantize_avx2(src: &[f32], inv_step: f32, out: &mut [u8]) {
        super::check_quantize(src.len(), out.len());
        let inv = _mm256_set1_ps(inv_step);
        let whole = src.len() / 32 * 32;
        // Packing interleaves 128-bit lanes; this puts the dwords back.
        let order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
        for (t, o) in src[..whole].chunks_exact(32).zip(out.chunks_exact_mut(32)) {
            // SAFETY: `t` is 32 floats, `o` 32 bytes.
            unsafe {
                let [a, b, c, d] =
                    [0, 8, 16, 24].map(|i| entries8(_mm256_loadu_ps(t.as_ptr().add(i)), inv));
                let ab = _mm256_packus_epi32(a, b);
                let cd = _mm256_packus_epi32(c, d);
                let bytes = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(ab, cd), order);
                _mm256_storeu_si256(o.as_mut_ptr().cast(), bytes);
            }
        }
        super::quantize_table_scalar(&src[whole..], inv_step, &mut out[whole..]);
    }

    /// 16 values a step; the tail under a mask.
    ///
    /// # Safety
    /// The CPU must support avx512f.
    #[target_feature(enable = "avx512f")]
    pub(crate) unsafe fn quantize_avx512(src: &[f32], inv_step: f32, out: &mut [u8]) {
        super::check_quantize(src.len(), out.len());
        let (inv, half) = (_mm512_set1_ps(inv_step), _mm512_set1_ps(0.5));
        let (zero, top) = (_mm512_setzero_ps(), _mm512_set1_ps(255.0));
        for i in (0..src.len()).step_by(16) {
            let mask: __mmask16 = match src.len() - i {
                n if n >= 16 => 0xffff,
                n => (1u16 << n) - 1,
            };
            // SAFETY: the mask covers only `src[i..]` and `out[i..]`.
            unsafe {
                let t = _mm512_maskz_loadu_ps(mask, src.as_ptr().add(i));
                let x = _mm512_add_ps(_mm512_mul_ps(t, inv), half);
                let x = _mm512_min_ps(_mm512_max_ps(x, zero), top);
                _mm512_mask_cvtepi32_storeu_epi8(
                    out.as_mut_ptr().add(i).cast(),
                    mask,
                    _mm512_cvttps_epi32(x),
                );
            }
        }
    }
}
