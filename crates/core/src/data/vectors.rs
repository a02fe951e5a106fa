//! Borrowed, typed views of vector data: one row ([`Elems`]), a contiguous
//! row-major set ([`Vectors`]), and the [`VectorRows`] trait that lets
//! algorithms (brute-force k-NN, builds) read rows from either an in-memory
//! slice or a memory-mapped file without copying.

use std::borrow::Cow;

use super::{DType, DataError};

/// Elements of one dtype: a single row, or many rows back to back.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Elems<'a> {
    F32(&'a [f32]),
    U8(&'a [u8]),
    I8(&'a [i8]),
}

impl<'a> Elems<'a> {
    pub fn dtype(&self) -> DType {
        match self {
            Elems::F32(_) => DType::F32,
            Elems::U8(_) => DType::U8,
            Elems::I8(_) => DType::I8,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Elems::F32(v) => v.len(),
            Elems::U8(v) => v.len(),
            Elems::I8(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The elements as f32: borrowed for f32 data, converted for u8/i8.
    pub fn to_f32(&self) -> Cow<'a, [f32]> {
        match *self {
            Elems::F32(v) => Cow::Borrowed(v),
            Elems::U8(v) => Cow::Owned(v.iter().map(|&x| x as f32).collect()),
            Elems::I8(v) => Cow::Owned(v.iter().map(|&x| x as f32).collect()),
        }
    }

    /// Elements `start..end` (same dtype).
    pub fn slice(&self, start: usize, end: usize) -> Elems<'a> {
        match *self {
            Elems::F32(v) => Elems::F32(&v[start..end]),
            Elems::U8(v) => Elems::U8(&v[start..end]),
            Elems::I8(v) => Elems::I8(&v[start..end]),
        }
    }
}

/// Anything that hands out rows of one dtype and dimension by index.
/// `row(i)` panics if `i >= n()`, like slice indexing.
pub trait VectorRows: Sync {
    fn n(&self) -> usize;
    fn dim(&self) -> usize;
    fn dtype(&self) -> DType;
    fn row(&self, i: usize) -> Elems<'_>;
}

/// A contiguous row-major set of `n` rows of `dim` elements, borrowed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Vectors<'a> {
    elems: Elems<'a>,
    dim: usize,
}

impl<'a> Vectors<'a> {
    /// Fails unless `dim > 0` and `elems.len()` is a positive multiple of `dim`.
    pub fn new(elems: Elems<'a>, dim: usize) -> Result<Self, DataError> {
        if dim == 0 {
            return Err(DataError::argument("vectors", "dim", "at least 1", 0));
        }
        let leftover = elems.len() % dim;
        if elems.is_empty() || leftover != 0 {
            return Err(DataError::argument(
                "vectors",
                "len",
                format!("a positive multiple of dim={dim}"),
                elems.len(),
            ));
        }
        Ok(Vectors { elems, dim })
    }

    pub fn f32(data: &'a [f32], dim: usize) -> Result<Self, DataError> {
        Self::new(Elems::F32(data), dim)
    }

    pub fn u8(data: &'a [u8], dim: usize) -> Result<Self, DataError> {
        Self::new(Elems::U8(data), dim)
    }

    pub fn i8(data: &'a [i8], dim: usize) -> Result<Self, DataError> {
        Self::new(Elems::I8(data), dim)
    }

    pub fn elems(&self) -> Elems<'a> {
        self.elems
    }
}

impl VectorRows for Vectors<'_> {
    fn n(&self) -> usize {
        self.elems.len() / self.dim
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn dtype(&self) -> DType {
        self.elems.dtype()
    }

    fn row(&self, i: usize) -> Elems<'_> {
        self.elems.slice(i * self.dim, (i + 1) * self.dim)
    }
}
