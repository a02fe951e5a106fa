//! Element types of vector files.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::DataError;

/// The element type of a vector data set, or of the vectors an index
/// stores. Distances are always `f32`. `F16` is a storage type only (an
/// index built with `--store f16` from float data); no input format reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    F32,
    U8,
    I8,
    F16,
}

impl DType {
    /// Bytes per element.
    pub const fn size(self) -> usize {
        match self {
            DType::F32 => 4,
            DType::F16 => 2,
            DType::U8 | DType::I8 => 1,
        }
    }

    /// The serde / CLI name: "f32", "u8", "i8", "f16".
    pub const fn as_str(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::U8 => "u8",
            DType::I8 => "i8",
            DType::F16 => "f16",
        }
    }

    /// The numpy-style name used in error messages ("float32", ...), because
    /// that is how users of the big-ann-benchmarks files know them.
    pub const fn long_name(self) -> &'static str {
        match self {
            DType::F32 => "float32",
            DType::U8 => "uint8",
            DType::I8 => "int8",
            DType::F16 => "float16",
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for DType {
    type Err = DataError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "f32" | "float32" | "float" => Ok(DType::F32),
            "u8" | "uint8" => Ok(DType::U8),
            "i8" | "int8" => Ok(DType::I8),
            "f16" | "float16" | "half" => Ok(DType::F16),
            _ => Err(DataError::UnknownName {
                what: "dtype",
                found: s.to_string(),
                expected: "f32, float32, u8, uint8, i8, int8, f16, float16",
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for t in [DType::F32, DType::U8, DType::I8, DType::F16] {
            assert_eq!(t.as_str().parse::<DType>().unwrap(), t);
            assert_eq!(t.long_name().parse::<DType>().unwrap(), t);
            let json = serde_json::to_string(&t).unwrap();
            assert_eq!(json, format!("\"{}\"", t.as_str()));
            assert_eq!(serde_json::from_str::<DType>(&json).unwrap(), t);
        }
        assert!("f64"
            .parse::<DType>()
            .unwrap_err()
            .to_string()
            .contains("f64"));
    }
}
