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

pub(crate) fn scalar(point: &[f32], ct: &[f32], out: &mut [f32]) {
    body(point, ct, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn avx2(point: &[f32], ct: &[f32], out: &mut [f32]) {
    body(point, ct, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma")]
pub(crate) fn avx512(point: &[f32], ct: &[f32], out: &mut [f32]) {
    body(point, ct, out)
}
