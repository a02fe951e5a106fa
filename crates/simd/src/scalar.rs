//! Plain reference kernels: the ground truth for every accelerated kernel,
//! and the kernel set used when the CPU has no AVX2.

use crate::dispatch::{Kernels, Level};

pub(crate) static KERNELS: Kernels = Kernels {
    level: Level::Scalar,
    l2_sq_f32,
    dot_f32,
    norm_sq_f32,
    l2_sq_u8,
    l2_sq_i8,
    pq_adc,
    pq_adc_batch,
    l2_sq_transposed: crate::transposed::scalar,
    nearest_transposed: crate::transposed::nearest_scalar,
    quantize_u16: crate::lut16::quantize_scalar,
    pq_adc_rows_u16: crate::lut16::rows_scalar,
    l2_sq_f16: crate::half::sum_scalar::<true>,
    dot_f16: crate::half::sum_scalar::<false>,
    matvec_f16: crate::matvec::matvec_f16_scalar,
    matmat_f16: crate::matmat::matmat_f16_scalar,
    matmat_u8i8: crate::matmat_i8::matmat_u8i8_scalar,
    fastscan_group: crate::fastscan::scan_group_scalar,
    fastscan_quantize: crate::fastscan::quantize_table_scalar,
};

/// Squared Euclidean distance. Panics if the lengths differ.
pub fn l2_sq_f32(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

/// Inner product. Panics if the lengths differ.
pub fn dot_f32(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Squared Euclidean norm.
pub fn norm_sq_f32(a: &[f32]) -> f32 {
    a.iter().map(|x| x * x).sum()
}

/// Squared Euclidean distance of u8 vectors, summed exactly in u64.
pub fn l2_sq_u8(a: &[u8], b: &[u8]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(&x, &y)| {
            let d = x as i32 - y as i32;
            (d * d) as u64
        })
        .sum::<u64>() as f32
}

/// Squared Euclidean distance of i8 vectors, summed exactly in u64.
pub fn l2_sq_i8(a: &[i8], b: &[i8]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(&x, &y)| {
            let d = x as i32 - y as i32;
            (d * d) as u64
        })
        .sum::<u64>() as f32
}

/// PQ asymmetric distance: `sum_m table[m*256 + code[m]]`.
/// Panics unless `table.len() == 256 * code.len()`.
pub fn pq_adc(table: &[f32], code: &[u8]) -> f32 {
    assert_eq!(table.len(), 256 * code.len());
    code.iter()
        .enumerate()
        .map(|(m, &c)| table[m * 256 + c as usize])
        .sum()
}

/// `out[i] = pq_adc(table, &codes[i*m..(i+1)*m])`.
/// Panics unless `codes.len() == m * out.len()` and `table.len() == 256 * m`.
pub fn pq_adc_batch(table: &[f32], codes: &[u8], m: usize, out: &mut [f32]) {
    assert_eq!(table.len(), 256 * m);
    assert_eq!(Some(codes.len()), m.checked_mul(out.len()));
    if m == 0 {
        out.fill(0.0);
        return;
    }
    for (o, code) in out.iter_mut().zip(codes.chunks_exact(m)) {
        *o = pq_adc(table, code);
    }
}
