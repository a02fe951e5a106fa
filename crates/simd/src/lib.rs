//! Distance kernels for stratavec.
//!
//! Every public function dispatches at run time to the widest instruction set
//! the CPU has (AVX-512, AVX2+FMA, else scalar); the choice is made once per
//! process and cached, so the functions are cheap enough for inner loops.
//! `STRATAVEC_SIMD=scalar|avx2|avx512` (read once) forces a lower level; a
//! level the CPU lacks falls back to the best one, and `kernel_name` says so.
//!
//! `scalar` holds the plain reference implementations that the property
//! tests compare every accelerated kernel against; [`Level::kernels`] gives
//! any supported level's kernels directly, for tests and benchmarks.
//!
//! Float results of different levels differ in rounding (summation order);
//! integer kernels (u8, i8) are exact at every level.
//!
//! [`fastscan`] looks up 4-bit codes of 32 vectors at once from u8 tables
//! held in registers (neighbour codes in a node's record); its sums are exact.
//! [`matvec`] maps a query through an f16 matrix, several rows at a time;
//! [`F16Matrix`] holds such a matrix and, where the process has Intel AMX
//! ([`amx`], `STRATAVEC_AMX=off` declines it), runs its products on tiles;
//! [`I8Matrix`] holds one in i8 for products whose answers are quantized
//! further, summed exactly in integers ([`matmat_i8`]).

pub mod amx;
#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
pub mod cast;
mod dispatch;
mod f16_matrix;
pub mod fastscan;
pub mod half;
mod i8_matrix;
mod lut16;
pub mod matmat;
pub mod matmat_i8;
pub mod matvec;
pub mod scalar;
mod transposed;
pub mod u4;
pub mod u8i16;

pub use dispatch::{Kernels, Level};
pub use f16_matrix::F16Matrix;
pub use i8_matrix::I8Matrix;

/// Squared Euclidean distance between two f32 vectors.
/// Panics if the lengths differ.
#[inline]
pub fn l2_sq_f32(a: &[f32], b: &[f32]) -> f32 {
    (dispatch::active().l2_sq_f32)(a, b)
}

/// Inner product of two f32 vectors. Panics if the lengths differ.
#[inline]
pub fn dot_f32(a: &[f32], b: &[f32]) -> f32 {
    (dispatch::active().dot_f32)(a, b)
}

/// Squared Euclidean norm of an f32 vector.
#[inline]
pub fn norm_sq_f32(a: &[f32]) -> f32 {
    (dispatch::active().norm_sq_f32)(a)
}

/// Squared Euclidean distance between two u8 vectors, summed exactly in
/// integers and returned as f32. Panics if the lengths differ.
#[inline]
pub fn l2_sq_u8(a: &[u8], b: &[u8]) -> f32 {
    (dispatch::active().l2_sq_u8)(a, b)
}

/// Squared Euclidean distance between two i8 vectors, summed exactly in
/// integers and returned as f32. Panics if the lengths differ.
#[inline]
pub fn l2_sq_i8(a: &[i8], b: &[i8]) -> f32 {
    (dispatch::active().l2_sq_i8)(a, b)
}

/// Squared L2 distance from an f32 query to a stored f16 vector (`x`: 2
/// little-endian bytes per element, see [`half`]). Panics unless
/// `x.len() == 2 * q.len()`.
#[inline]
pub fn l2_sq_f16(q: &[f32], x: &[u8]) -> f32 {
    (dispatch::active().l2_sq_f16)(q, x)
}

/// Inner product of an f32 query and a stored f16 vector. Panics unless
/// `x.len() == 2 * q.len()`.
#[inline]
pub fn dot_f16(q: &[f32], x: &[u8]) -> f32 {
    (dispatch::active().dot_f16)(q, x)
}

/// `out = M·x`: `M` holds `out.len()` rows of `x.len()` f16 values
/// (little-endian bytes, row-major). Panics unless
/// `m.len() == 2 * x.len() * out.len()`.
#[inline]
pub fn matvec_f16(m: &[u8], x: &[f32], out: &mut [f32]) {
    (dispatch::active().matvec_f16)(m, x, out)
}

/// `out_j = M·x_j` for each vector `x_j` of `n` floats in `xs` (row-major),
/// `out` one row of `M`'s rows a vector: each row of answers exactly what
/// [`matvec_f16`] gives that vector, the matrix streamed once a group of
/// vectors (`matmat`). Panics unless `n >= 1` and the shapes agree.
#[inline]
pub fn matmat_f16(m: &[u8], xs: &[f32], n: usize, out: &mut [f32]) {
    (dispatch::active().matmat_f16)(m, xs, n, out)
}

/// `out_j = M·x_j` in exact i32 for an i8 matrix of rows of `n` and u8
/// vectors of `n` in `xs`, every vector value at most 127 (`matmat_i8`;
/// the integers [`I8Matrix`] sums). Panics unless `n >= 1`, the shapes
/// agree and the values are in range.
#[inline]
pub fn matmat_u8i8(m: &[i8], xs: &[u8], n: usize, out: &mut [i32]) {
    (dispatch::active().matmat_u8i8)(m, xs, n, out)
}

/// Asymmetric PQ distance of one code: `sum_m table[m*256 + code[m]]`.
/// `table` is the per-query lookup table, 256 floats per sub-space, row-major
/// by sub-space. Panics unless `table.len() == 256 * code.len()`.
#[inline]
pub fn pq_adc(table: &[f32], code: &[u8]) -> f32 {
    (dispatch::active().pq_adc)(table, code)
}

/// PQ distances of `out.len()` codes of `m` bytes each, stored back to back
/// in `codes`: `out[i] = pq_adc(table, &codes[i*m..(i+1)*m])`.
/// Panics unless `codes.len() == m * out.len()` and `table.len() == 256 * m`.
#[inline]
pub fn pq_adc_batch(table: &[f32], codes: &[u8], m: usize, out: &mut [f32]) {
    (dispatch::active().pq_adc_batch)(table, codes, m, out)
}

/// Quantizes a PQ lookup table to u16 (see [`pq_adc_rows_u16`]):
/// `out[i] = round((src[i] - offset) / scale)` with `offset` the minimum and
/// `scale` the range / 65535 (1 for a constant table); returns
/// `(offset, scale)`. Every level gives the same output. `src` must be
/// finite (a non-finite table gives an unspecified but valid result).
/// Panics unless `out.len() == src.len()`.
#[inline]
pub fn quantize_u16(src: &[f32], out: &mut [u16]) -> (f32, f32) {
    (dispatch::active().quantize_u16)(src, out)
}

/// PQ estimates from a u16 table (from [`quantize_u16`], plus one padding
/// entry): `out[i] = sum_j table[j*256 + codes[ids[i]*m + j]]`, an exact
/// integer sum, so the estimate is `m * offset + scale * out[i]`: half the
/// bytes of a float table, so the tables of the many queries a worker
/// interleaves stay nearer the core (96-d starling: ~3% less CPU per query
/// than float gathers). A search estimates the ~R neighbours of a node at
/// once, and their rows are scattered over megabytes of codes: each row is
/// asked for a few rows ahead of its sum (`lut16`), so the cache misses
/// overlap the sums instead of costing ~R memory latencies in a row. On
/// AVX-512 CPUs with VBMI,
/// whole batches of 32 rows (m a multiple of 8) are looked up in registers
/// instead of gathered, with the same sums. Panics unless
/// `table.len() > 256 * m`, every row is inside `codes` and
/// `out.len() == ids.len()`.
pub fn pq_adc_rows_u16(table: &[u16], codes: &[u8], m: usize, ids: &[u32], out: &mut [u32]) {
    (dispatch::active().pq_adc_rows_u16)(table, codes, m, ids, out)
}

/// Hints the CPU to bring rows `ids` of `codes` (`m` bytes each) into
/// cache; ids outside the codes are skipped. A search calls it for the rows
/// it expects to estimate next, so their misses overlap the work between.
pub fn prefetch_rows(codes: &[u8], m: usize, ids: &[u32]) {
    let rows = codes.len().checked_div(m).unwrap_or(0);
    for &id in ids {
        if (id as usize) < rows {
            prefetch(codes, id as usize * m, m);
        }
    }
}

/// Hints the CPU to bring the first line of each of items `ids` into
/// cache (per-vector factors kept beside codes held by [`prefetch_rows`]);
/// ids outside `items` are skipped.
pub fn prefetch_items<T>(items: &[T], ids: &[u32]) {
    #[cfg(target_arch = "x86_64")]
    for &id in ids {
        if let Some(item) = items.get(id as usize) {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            // SAFETY: prefetch never faults and reads nothing.
            unsafe { _mm_prefetch::<_MM_HINT_T0>((item as *const T).cast()) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (items, ids);
}

/// Hints the CPU to bring `bytes[start..start+len]` into cache (a no-op
/// where there is no prefetch instruction).
#[inline]
fn prefetch(bytes: &[u8], start: usize, len: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let mut off = start;
        while off < start + len {
            // SAFETY: prefetch never faults and reads nothing; the address
            // is inside `bytes` (the caller checked the row bounds).
            unsafe { _mm_prefetch::<_MM_HINT_T0>(bytes.as_ptr().add(off).cast()) };
            off += 64;
        }
        // The last byte's line, when the row straddles one more line.
        if len > 0 {
            // SAFETY: as above; start + len - 1 is inside `bytes`.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(bytes.as_ptr().add(start + len - 1).cast()) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (bytes, start, len);
}

/// Squared L2 distances from `point` (length d) to k centroids stored
/// transposed in `ct` (`ct[j * k + c]`), into `out` (length k). Panics unless
/// `ct.len() == d * out.len()`.
#[inline]
pub fn l2_sq_transposed(point: &[f32], ct: &[f32], out: &mut [f32]) {
    (dispatch::active().l2_sq_transposed)(point, ct, out)
}

/// Index of the centroid nearest to `point` among the k = `scratch.len()`
/// centroids stored transposed in `ct` (first index on ties); `scratch`
/// receives the squared distances. Panics unless `ct.len() == d * k`.
#[inline]
pub fn nearest_transposed(point: &[f32], ct: &[f32], scratch: &mut [f32]) -> usize {
    (dispatch::active().nearest_transposed)(point, ct, scratch)
}

/// Name of the kernel set in use: "avx512", "avx2+fma" or "scalar", followed
/// by a note in parentheses when `STRATAVEC_SIMD` asked for something else.
pub fn kernel_name() -> &'static str {
    dispatch::active_name()
}

/// Length checks shared by the accelerated PQ kernels; the gathers compute
/// `256 * m` in i32, so `m` is bounded too.
#[cfg(target_arch = "x86_64")]
fn check_adc(table_len: usize, codes_len: usize, m: usize, n: usize) {
    assert!(m <= (i32::MAX as usize) / 256, "pq_adc: m = {m} too large");
    assert_eq!(table_len, 256 * m, "pq_adc: table length must be 256 * m");
    assert_eq!(
        Some(codes_len),
        m.checked_mul(n),
        "pq_adc: codes length must be m * n"
    );
}

#[cfg(target_arch = "x86_64")]
fn as_bytes(a: &[i8]) -> &[u8] {
    // SAFETY: i8 and u8 have the same size, alignment and validity (every
    // bit pattern); the new slice borrows `a` for the same lifetime.
    unsafe { core::slice::from_raw_parts(a.as_ptr().cast::<u8>(), a.len()) }
}
