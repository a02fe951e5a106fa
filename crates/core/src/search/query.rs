//! A query prepared once for exact distance computation against stored
//! vectors of the index's element type.

use crate::data::{DType, Metric};
use stratavec_simd::cast;

pub struct PreparedQuery {
    /// The query as f32 (normalised for cosine): what quantizers and entry
    /// points see.
    pub f32: Vec<f32>,
    /// The query in the stored element type (u8/i8 indexes).
    ints: Vec<u8>,
    dtype: DType,
    metric: Metric,
    scratch: Vec<f32>,
    /// The rows a filtered query may return (issue #56); `None`: any row.
    pub allowed: Option<std::sync::Arc<roaring::RoaringBitmap>>,
    /// The search lists only allowed rows (and the routes to them): the
    /// in-graph filter (`search::acorn`). Else `allowed` filters only the
    /// result.
    pub in_graph: bool,
}

impl PreparedQuery {
    /// `query` must already be validated (finite, right dimension, integral
    /// and in range for u8/i8 indexes).
    pub fn new(query: &[f32], dtype: DType, metric: Metric) -> Self {
        let mut f = query.to_vec();
        if metric == Metric::Cosine {
            crate::data::normalize_f32(&mut f);
        }
        let ints = match dtype {
            DType::F32 | DType::F16 => vec![],
            DType::U8 => f.iter().map(|&x| x as u8).collect(),
            DType::I8 => f.iter().map(|&x| x as i8 as u8).collect(),
        };
        PreparedQuery {
            f32: f,
            ints,
            dtype,
            metric,
            scratch: vec![],
            allowed: None,
            in_graph: false,
        }
    }

    /// The rows the search itself may list (the in-graph filter's).
    #[inline]
    pub fn narrows(&self) -> Option<&roaring::RoaringBitmap> {
        self.allowed.as_deref().filter(|_| self.in_graph)
    }

    /// Exact distance (smaller is closer) to a stored vector. Cosine indexes
    /// store normalised vectors, so `-dot` ranks them.
    #[inline]
    pub fn distance(&mut self, stored: &[u8]) -> f32 {
        match self.dtype {
            DType::F32 => {
                let v = match cast::as_f32(stored) {
                    Some(v) => v,
                    None => {
                        cast::decode_f32(stored, &mut self.scratch);
                        &self.scratch
                    }
                };
                match self.metric {
                    Metric::L2 => stratavec_simd::l2_sq_f32(&self.f32, v),
                    Metric::InnerProduct | Metric::Cosine => -stratavec_simd::dot_f32(&self.f32, v),
                }
            }
            // Stored halves are widened in the kernel (`--store f16`).
            DType::F16 => match self.metric {
                Metric::L2 => stratavec_simd::l2_sq_f16(&self.f32, stored),
                Metric::InnerProduct | Metric::Cosine => {
                    -stratavec_simd::dot_f16(&self.f32, stored)
                }
            },
            DType::U8 => stratavec_simd::l2_sq_u8(&self.ints, stored),
            DType::I8 => stratavec_simd::l2_sq_i8(cast::as_i8(&self.ints), cast::as_i8(stored)),
        }
    }
}

/// Converts a reported distance back to the internal one (for radii).
pub fn internal_distance(metric: Metric, reported: f32) -> f32 {
    match metric {
        Metric::Cosine => reported - 1.0,
        Metric::L2 | Metric::InnerProduct => reported,
    }
}

/// Converts an internal distance (smaller is closer) to the one reported to
/// users: squared L2; negated inner product for `ip` (so smaller is still
/// closer, as in DiskANN); `1 - cos` for cosine.
pub fn reported_distance(metric: Metric, internal: f32) -> f32 {
    match metric {
        Metric::Cosine => 1.0 + internal,
        Metric::L2 | Metric::InnerProduct => internal,
    }
}
