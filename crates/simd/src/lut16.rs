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

/// How far ahead of the row being summed its successors' codes are asked
/// for. A search's rows are scattered over megabytes, so nearly every row
/// misses the cache. Asking for all of them before the first sum (as this
/// did) stalls the core once the misses outnumber its fill buffers, and
/// the sums then wait on the memory anyway; asking two quads of rows
/// ahead keeps a few misses in flight behind the sums. Scattered rows,
/// AVX2 on the EPYC (Zen 3) machine, two runs each of
/// `cargo run --release -p stratavec-simd --example rows_time`: m = 128
/// 187 and 196 ns a row before, 115 and 107 after; m = 48 61 and 65
/// before, 37 and 33 after (rows in cache: 71-117 and 25-39, the
/// machine's noise).
pub(crate) const ROWS_AHEAD: usize = 8;

/// Reference: `out[i] = sum_j table[j*256 + codes[ids[i]*m + j]]`.
pub fn rows_scalar(table: &[u16], codes: &[u8], m: usize, ids: &[u32], out: &mut [u32]) {
    check_rows(table.len(), codes.len(), m, ids, out.len());
    crate::prefetch_rows(codes, m, &ids[..ids.len().min(ROWS_AHEAD)]);
    for (i, (o, &id)) in out.iter_mut().zip(ids).enumerate() {
        if let Some(&next) = ids.get(i + ROWS_AHEAD) {
            crate::prefetch_rows(codes, m, &[next]);
        }
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

/// Whether the AVX-512 rows kernel may look up whole batches in registers
/// ([`simd::rows_in_registers`]): it needs VBMI (byte permutes) and DQ
/// (64-bit multiplies) besides the level's F/BW/VL.
#[cfg(target_arch = "x86_64")]
fn in_register_lookups() -> bool {
    std::arch::is_x86_feature_detected!("avx512vbmi")
        && std::arch::is_x86_feature_detected!("avx512dq")
}

/// Ids per in-register batch.
#[cfg(target_arch = "x86_64")]
const BATCH: usize = 32;

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

    /// The AVX2 level's rows: plain loads, four rows at a time. AVX2's
    /// gathers lose to plain loads on Zen 3: a 48-code row took 72 ns
    /// through `vpgatherdd` against 50 ns through the one-row scalar loop
    /// with the codes in cache. Four independent rows keep the load ports
    /// busy (several loads a cycle, no gather micro-code), and the rows two
    /// quads ahead are asked for before each quad is summed
    /// ([`super::ROWS_AHEAD`]). Measured as a diskann expansion calls it (56 random rows of 100k,
    /// prefetched first, 32 queries' tables in turn; best of 40): m = 48
    /// 38.5 ns a row against 47.4 for the gathers, m = 384 473 against 589.
    /// Sums are the same integers as [`super::rows_scalar`]'s.
    ///
    /// # Safety
    /// The CPU must support avx2 (the body is compiled for it); the bounds
    /// are checked.
    #[target_feature(enable = "avx2,fma")]
    pub(crate) unsafe fn rows_avx2(
        table: &[u16],
        codes: &[u8],
        m: usize,
        ids: &[u32],
        out: &mut [u32],
    ) {
        super::check_rows(table.len(), codes.len(), m, ids, out.len());
        let all = ids;
        crate::prefetch_rows(codes, m, &all[..all.len().min(super::ROWS_AHEAD)]);
        let mut quads = ids.chunks_exact(4);
        let mut sums = out.chunks_exact_mut(4);
        for (q, (ids, out)) in (&mut quads).zip(&mut sums).enumerate() {
            let ahead = 4 * q + super::ROWS_AHEAD;
            crate::prefetch_rows(
                codes,
                m,
                &all[ahead.min(all.len())..(ahead + 4).min(all.len())],
            );
            let rows: [&[u8]; 4] =
                core::array::from_fn(|r| &codes[ids[r] as usize * m..(ids[r] as usize + 1) * m]);
            let mut s = [0u32; 4];
            let mut j = 0;
            while j + 8 <= m {
                let words: [u64; 4] = core::array::from_fn(|r| {
                    u64::from_le_bytes(rows[r][j..j + 8].try_into().expect("8 bytes"))
                });
                let sub = &table[j * 256..(j + 8) * 256];
                for b in 0..8 {
                    for r in 0..4 {
                        let c = (words[r] >> (8 * b)) as u8 as usize;
                        // SAFETY: b * 256 + c < 8 * 256 = sub.len().
                        s[r] += u32::from(unsafe { *sub.get_unchecked(b * 256 + c) });
                    }
                }
                j += 8;
            }
            for (j, row) in (j..m).map(|j| (j, &table[j * 256..(j + 1) * 256])) {
                for r in 0..4 {
                    s[r] += u32::from(row[rows[r][j] as usize]);
                }
            }
            out.copy_from_slice(&s);
        }
        super::rows_scalar(table, codes, m, quads.remainder(), sums.into_remainder());
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
        // Every row at once, as before rows were asked for a few ahead on
        // AVX2 (`ROWS_AHEAD`): not measured on an AVX-512 machine since.
        crate::prefetch_rows(codes, m, ids);
        // Whole batches of 32 rows in registers when the CPU and m allow,
        // the rest (and every row otherwise) by gathers.
        let batched = if m >= 8 && m.is_multiple_of(8) && super::in_register_lookups() {
            ids.len() / super::BATCH * super::BATCH
        } else {
            0
        };
        if batched > 0 {
            // SAFETY: VBMI and DQ checked just above; F/BW/VL by the level;
            // the bounds by `check_rows`.
            unsafe { rows_in_registers(table, codes, m, &ids[..batched], &mut out[..batched]) };
        }
        let (ids, out) = (&ids[batched..], &mut out[batched..]);
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

    /// Byte permute of an 8 x 8 transpose: out byte 8k + i = in byte 8i + k
    /// (computed once, at compile time, not per call).
    const TRANSPOSE_8X8: [u8; 64] = {
        let mut t = [0u8; 64];
        let mut o = 0;
        while o < 64 {
            t[o] = ((o % 8) * 8 + o / 8) as u8;
            o += 1;
        }
        t
    };

    /// [`rows_avx512`] for whole batches of 32 rows, without gathers into
    /// the table: the batch's codes are transposed (one 8-byte gather per
    /// row and 8 sub-spaces, an 8 x 8 byte transpose per register, then
    /// 64-bit interleaves) so each sub-space's 32 codes fill one register
    /// of u16 indices, and its 256-entry table row, held in 8 registers, is
    /// looked up with 4 two-table word permutes (6 index bits each) and
    /// blends on index bits 6 and 7. Sums are the same integers. A
    /// micro-benchmark (48 sub-spaces, 117k random rows, the table rotating
    /// among 64 queries as a worker's does): ~25% less time per row than
    /// the gathers.
    ///
    /// # Safety
    /// The CPU must support avx512f, avx512bw, avx512vl, avx512dq and
    /// avx512vbmi; `ids.len()` must be a multiple of 32, `m` of 8, every
    /// row inside `codes` and `table.len() >= 256 * m`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vbmi")]
    pub(super) unsafe fn rows_in_registers(
        table: &[u16],
        codes: &[u8],
        m: usize,
        ids: &[u32],
        out: &mut [u32],
    ) {
        debug_assert!(ids.len().is_multiple_of(super::BATCH) && m.is_multiple_of(8));
        let t = table.as_ptr();
        // 8 rows x 8 codes -> 8 codes x 8 rows.
        // SAFETY: `TRANSPOSE_8X8` holds 64 bytes.
        let transpose = unsafe { _mm512_loadu_si512(TRANSPOSE_8X8.as_ptr().cast()) };
        // Interleave the qwords of two registers: lower four, upper four.
        let (pair_lo, pair_hi) = (
            _mm512_setr_epi64(0, 8, 1, 9, 2, 10, 3, 11),
            _mm512_setr_epi64(4, 12, 5, 13, 6, 14, 7, 15),
        );
        // Then pairs of qword pairs: two sub-spaces x 32 rows per register.
        let (quad_lo, quad_hi) = (
            _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11),
            _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15),
        );
        let low = _mm512_set1_epi32(0xffff);
        let (bit6, bit7) = (_mm512_set1_epi16(0x40), _mm512_set1_epi16(0x80));
        let row_bytes = _mm512_set1_epi64(m as i64);
        for (ids, out) in ids
            .chunks_exact(super::BATCH)
            .zip(out.chunks_exact_mut(super::BATCH))
        {
            // Byte offset of each row, 8 rows per register (64-bit: no
            // overflow for any index size).
            let offsets: [__m512i; 4] = core::array::from_fn(|g| {
                // SAFETY: reads ids 8g..8g+8 of this batch of 32.
                let v = unsafe { _mm256_loadu_si256(ids.as_ptr().add(8 * g).cast()) };
                _mm512_mullo_epi64(_mm512_cvtepu32_epi64(v), row_bytes)
            });
            let (mut even, mut odd) = (_mm512_setzero_si512(), _mm512_setzero_si512());
            for col in 0..m / 8 {
                // SAFETY: each gather reads bytes 8col..8col+8 < m of 8 rows
                // inside `codes` (checked by the caller).
                let base = unsafe { codes.as_ptr().add(8 * col) };
                let z: [__m512i; 4] = core::array::from_fn(|g| {
                    // SAFETY: as above.
                    let v = unsafe { _mm512_i64gather_epi64::<1>(offsets[g], base.cast()) };
                    _mm512_permutexvar_epi8(transpose, v)
                });
                let a = _mm512_permutex2var_epi64(z[0], pair_lo, z[1]);
                let b = _mm512_permutex2var_epi64(z[0], pair_hi, z[1]);
                let c = _mm512_permutex2var_epi64(z[2], pair_lo, z[3]);
                let d = _mm512_permutex2var_epi64(z[2], pair_hi, z[3]);
                let quads = [
                    _mm512_permutex2var_epi64(a, quad_lo, c),
                    _mm512_permutex2var_epi64(a, quad_hi, c),
                    _mm512_permutex2var_epi64(b, quad_lo, d),
                    _mm512_permutex2var_epi64(b, quad_hi, d),
                ];
                for (q, &quad) in quads.iter().enumerate() {
                    for half in 0..2 {
                        let j = 8 * col + 2 * q + half;
                        let codes32 = if half == 0 {
                            _mm512_castsi512_si256(quad)
                        } else {
                            _mm512_extracti64x4_epi64::<1>(quad)
                        };
                        let idx = _mm512_cvtepu8_epi16(codes32);
                        // SAFETY: row j's 256 entries are inside the table.
                        let r: [__m512i; 8] = core::array::from_fn(|k| unsafe {
                            _mm512_loadu_si512(t.add(j * 256 + 32 * k).cast())
                        });
                        let q01 = _mm512_permutex2var_epi16(r[0], idx, r[1]);
                        let q23 = _mm512_permutex2var_epi16(r[2], idx, r[3]);
                        let q45 = _mm512_permutex2var_epi16(r[4], idx, r[5]);
                        let q67 = _mm512_permutex2var_epi16(r[6], idx, r[7]);
                        let (m6, m7) = (
                            _mm512_test_epi16_mask(idx, bit6),
                            _mm512_test_epi16_mask(idx, bit7),
                        );
                        let lo = _mm512_mask_blend_epi16(m6, q01, q23);
                        let hi = _mm512_mask_blend_epi16(m6, q45, q67);
                        let v = _mm512_mask_blend_epi16(m7, lo, hi);
                        // Word lanes 2i and 2i+1 are rows 2i and 2i+1.
                        even = _mm512_add_epi32(even, _mm512_and_si512(v, low));
                        odd = _mm512_add_epi32(odd, _mm512_srli_epi32::<16>(v));
                    }
                }
            }
            // Back to row order: interleave even and odd rows per 128-bit
            // lane, then put the lanes in order.
            let lo = _mm512_unpacklo_epi32(even, odd);
            let hi = _mm512_unpackhi_epi32(even, odd);
            let a = _mm512_shuffle_i64x2::<0b01_00_01_00>(lo, hi);
            let b = _mm512_shuffle_i64x2::<0b11_10_11_10>(lo, hi);
            let first = _mm512_shuffle_i64x2::<0b11_01_10_00>(a, a);
            let second = _mm512_shuffle_i64x2::<0b11_01_10_00>(b, b);
            // SAFETY: `out` is this batch's 32 sums.
            unsafe {
                _mm512_storeu_si512(out.as_mut_ptr().cast(), first);
                _mm512_storeu_si512(out.as_mut_ptr().add(16).cast(), second);
            }
        }
    }
}
