//! Distance metrics. Every metric is expressed as a *distance*: smaller is
//! better, so one top-k routine serves all of them.
//!
//! Cosine: [`Metric::distance_f32`] computes `1 - dot / (|a| |b|)` from the raw
//! vectors, which is what ground truth and recall use. The engine does not pay
//! for the norms on every comparison: it normalizes cosine data (base and
//! queries) once with [`normalize_f32`] and then ranks by `-dot`, which orders
//! exactly like cosine distance on unit vectors.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use stratavec_simd::{dot_f32, l2_sq_f32, l2_sq_i8, l2_sq_u8};

use super::{DataError, Elems};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Metric {
    /// Squared Euclidean distance (the square root never changes the order).
    #[serde(rename = "l2")]
    L2,
    /// Maximum inner product search; distance is `-dot`.
    #[serde(rename = "ip", alias = "inner_product", alias = "mips")]
    InnerProduct,
    /// `1 - cos(a, b)`; a zero vector is at distance 1 from everything.
    #[serde(rename = "cosine")]
    Cosine,
}

impl Metric {
    pub const fn as_str(self) -> &'static str {
        match self {
            Metric::L2 => "l2",
            Metric::InnerProduct => "ip",
            Metric::Cosine => "cosine",
        }
    }

    /// Distance between two f32 vectors of equal length (see the module doc).
    pub fn distance_f32(self, a: &[f32], b: &[f32]) -> f32 {
        match self {
            Metric::L2 => l2_sq_f32(a, b),
            Metric::InnerProduct => -dot_f32(a, b),
            Metric::Cosine => cosine_distance(dot_f32(a, b), dot_f32(a, a), dot_f32(b, b)),
        }
    }

    /// Distance between two rows of any dtype. u8/i8 pairs are computed
    /// exactly in integers (as the f32 nearest to the exact value); rows of
    /// different dtypes are compared as f32.
    pub fn distance(self, a: Elems<'_>, b: Elems<'_>) -> f32 {
        let norms = if self == Metric::Cosine {
            (norm_sq(a), norm_sq(b))
        } else {
            (0.0, 0.0)
        };
        self.distance_with_norms(a, b, norms.0, norms.1)
    }

    /// [`Metric::distance`] with the squared norms supplied by the caller
    /// (only read for cosine), so brute force can compute each norm once and
    /// still produce bit-identical distances.
    pub(crate) fn distance_with_norms(
        self,
        a: Elems<'_>,
        b: Elems<'_>,
        norm_sq_a: f32,
        norm_sq_b: f32,
    ) -> f32 {
        match (self, a, b) {
            (Metric::L2, Elems::U8(x), Elems::U8(y)) => l2_sq_u8(x, y),
            (Metric::L2, Elems::I8(x), Elems::I8(y)) => l2_sq_i8(x, y),
            (Metric::L2, Elems::F32(x), Elems::F32(y)) => l2_sq_f32(x, y),
            (Metric::L2, _, _) => l2_sq_f32(&a.to_f32(), &b.to_f32()),
            (_, _, _) => {
                let d = dot(a, b);
                match self {
                    Metric::Cosine => cosine_distance(d, norm_sq_a, norm_sq_b),
                    _ => -d,
                }
            }
        }
    }
}

/// `1 - dot / (sqrt(na) sqrt(nb))`, with zero vectors at distance 1 (rather
/// than NaN) so that they sort deterministically.
#[inline]
fn cosine_distance(dot: f32, norm_sq_a: f32, norm_sq_b: f32) -> f32 {
    let denom = norm_sq_a.sqrt() * norm_sq_b.sqrt();
    if denom == 0.0 {
        1.0
    } else {
        1.0 - dot / denom
    }
}

/// Inner product of two rows (integer-exact for u8·u8 and i8·i8).
pub(crate) fn dot(a: Elems<'_>, b: Elems<'_>) -> f32 {
    match (a, b) {
        (Elems::F32(x), Elems::F32(y)) => dot_f32(x, y),
        (Elems::U8(x), Elems::U8(y)) => {
            assert_eq!(x.len(), y.len());
            x.iter()
                .zip(y)
                .map(|(&p, &q)| p as u64 * q as u64)
                .sum::<u64>() as f32
        }
        (Elems::I8(x), Elems::I8(y)) => {
            assert_eq!(x.len(), y.len());
            x.iter()
                .zip(y)
                .map(|(&p, &q)| p as i64 * q as i64)
                .sum::<i64>() as f32
        }
        _ => dot_f32(&a.to_f32(), &b.to_f32()),
    }
}

/// Squared norm, computed exactly as [`Metric::distance_f32`] does.
pub(crate) fn norm_sq(a: Elems<'_>) -> f32 {
    dot(a, a)
}

/// Scales `v` to unit length in place (zero vectors are left as they are).
/// Used once on cosine data so the engine can rank by `-dot`.
pub fn normalize_f32(v: &mut [f32]) {
    let n = dot_f32(v, v).sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Metric {
    type Err = DataError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "l2" | "euclidean" => Ok(Metric::L2),
            "ip" | "inner_product" | "mips" => Ok(Metric::InnerProduct),
            "cosine" | "angular" => Ok(Metric::Cosine),
            _ => Err(DataError::UnknownName {
                what: "metric",
                found: s.to_string(),
                expected: "l2, ip, inner_product, mips, cosine",
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_display_serde() {
        for (s, m) in [
            ("l2", Metric::L2),
            ("ip", Metric::InnerProduct),
            ("inner_product", Metric::InnerProduct),
            ("MIPS", Metric::InnerProduct),
            ("cosine", Metric::Cosine),
        ] {
            assert_eq!(s.parse::<Metric>().unwrap(), m);
        }
        for m in [Metric::L2, Metric::InnerProduct, Metric::Cosine] {
            assert_eq!(m.to_string().parse::<Metric>().unwrap(), m);
            let json = serde_json::to_string(&m).unwrap();
            assert_eq!(json, format!("\"{m}\""));
            assert_eq!(serde_json::from_str::<Metric>(&json).unwrap(), m);
        }
        assert_eq!(
            serde_json::from_str::<Metric>("\"mips\"").unwrap(),
            Metric::InnerProduct
        );
        let err = "hamming".parse::<Metric>().unwrap_err().to_string();
        assert!(err.contains("hamming") && err.contains("cosine"), "{err}");
    }

    #[test]
    fn distances() {
        let a = [1.0f32, 0.0];
        let b = [0.0f32, 2.0];
        assert_eq!(Metric::L2.distance_f32(&a, &b), 5.0);
        assert_eq!(Metric::InnerProduct.distance_f32(&a, &[3.0, 1.0]), -3.0);
        assert_eq!(Metric::Cosine.distance_f32(&a, &b), 1.0);
        assert!(Metric::Cosine.distance_f32(&a, &[2.0, 0.0]).abs() < 1e-7);
        assert_eq!(Metric::Cosine.distance_f32(&a, &[0.0, 0.0]), 1.0);
        // Integer rows agree with their f32 conversions.
        let (x, y) = ([1u8, 200, 3], [250u8, 0, 7]);
        let (fx, fy) = (Elems::U8(&x).to_f32(), Elems::U8(&y).to_f32());
        for m in [Metric::L2, Metric::InnerProduct, Metric::Cosine] {
            assert_eq!(
                m.distance(Elems::U8(&x), Elems::U8(&y)),
                m.distance_f32(&fx, &fy)
            );
        }
        let (x, y) = ([-128i8, 127, 3], [127i8, -128, -7]);
        assert_eq!(
            Metric::L2.distance(Elems::I8(&x), Elems::I8(&y)),
            2.0 * 255.0 * 255.0 + 100.0
        );
        assert_eq!(
            Metric::InnerProduct.distance(Elems::I8(&x), Elems::I8(&y)),
            2.0 * 128.0 * 127.0 + 21.0
        );
    }

    #[test]
    fn normalize() {
        let mut v = [3.0f32, 4.0];
        normalize_f32(&mut v);
        assert_eq!(v, [0.6, 0.8]);
        let mut z = [0.0f32; 3];
        normalize_f32(&mut z);
        assert_eq!(z, [0.0; 3]);
    }
}
