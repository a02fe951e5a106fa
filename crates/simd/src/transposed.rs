//! Squared distances from one short point to many centroids stored
//! transposed (`ct[j * k + c]` = component j of centroid c). This is the
//! inner loop of PQ training, encoding and query-table building: the point is
//! a few components long (a PQ sub-space), so one kernel call per (point,
//! centroid) pair would be mostly call overhead; looping over the k centroids
//! in the innermost position vectorises across centroids instead.
//!
//! The body is plain Rust; the per-level versions only compile it with wider
//! instructions enabled, and the property test compares them with the scalar.

#[inline(always)]
fn body(point: &[f32], ct: &[f32], out: &mut [f32]) {
    let k = out.len();
    assert_eq!(
        ct.len(),
        point.len() * k,
        "l2_sq_transposed: ct must be dim x k"
    );
    out.fill(0.0);
    for (j, &x) in point.iter().enumerate() {
        let row = &ct[j * k..(j + 1) * k];
        for (o, &c) in out.iter_mut().zip(row) {
            let t = x - c;
            *o += t * t;
        }
    }
}

/// Index of the smallest value (the first on ties), branch-free over 16
/// independent lanes so the compiler turns it into vector compares and
/// blends; a serial compare chain would cost more than the distances.
#[inline(always)]
fn argmin_body(d: &[f32]) -> usize {
    const LANES: usize = 16;
    let mut best = [f32::INFINITY; LANES];
    let mut at = [u32::MAX; LANES];
    let chunks = d.chunks_exact(LANES);
    let tail = chunks.remainder();
    for (ci, chunk) in chunks.enumerate() {
        let base = (ci * LANES) as u32;
        for l in 0..LANES {
            let better = chunk[l] < best[l];
            best[l] = if better { chunk[l] } else { best[l] };
            at[l] = if better { base + l as u32 } else { at[l] };
        }
    }
    let (mut bv, mut bi) = (f32::INFINITY, usize::MAX);
    for l in 0..LANES {
        if best[l] < bv || (best[l] == bv && (at[l] as usize) < bi) {
            bv = best[l];
            bi = at[l] as usize;
        }
    }
    let start = d.len() - tail.len();
    for (t, &x) in tail.iter().enumerate() {
        if x < bv {
            bv = x;
            bi = start + t;
        }
    }
    // All NaN (or empty): the first index, as a plain scan would give.
    if bi == usize::MAX {
        0
    } else {
        bi
    }
}

#[inline(always)]
fn nearest_body(point: &[f32], ct: &[f32], scratch: &mut [f32]) -> usize {
    body(point, ct, scratch);
    argmin_body(scratch)
}

pub(crate) fn scalar(point: &[f32], ct: &[f32], out: &mut [f32]) {
    body(point, ct, out)
}

pub(crate) fn nearest_scalar(point: &[f32], ct: &[f32], scratch: &mut [f32]) -> usize {
    nearest_body(point, ct, scratch)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn avx2(point: &[f32], ct: &[f32], out: &mut [f32]) {
    body(point, ct, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn nearest_avx2(point: &[f32], ct: &[f32], scratch: &mut [f32]) -> usize {
    nearest_body(point, ct, scratch)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma")]
pub(crate) fn nearest_avx512(point: &[f32], ct: &[f32], scratch: &mut [f32]) -> usize {
    nearest_body(point, ct, scratch)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma")]
pub(crate) fn avx512(point: &[f32], ct: &[f32], out: &mut [f32]) {
    body(point, ct, out)
}
