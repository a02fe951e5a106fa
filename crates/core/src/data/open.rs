//! Opening vector files: format detection, validation, and zero-copy access
//! to the rows of a memory-mapped file.

use std::borrow::Cow;
use std::fmt;
use std::path::{Path, PathBuf};

use memmap2::Mmap;
use rayon::prelude::*;

use super::mapped::{cast_f32, cast_i8, decode_f32, map_file};
use super::{bin, npy, vecs, DType, DataError, Elems, VectorRows, Vectors};

/// A vector file format, chosen by extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// big-ann-benchmarks `u32 n, u32 d`, then `n*d` elements.
    Fbin,
    U8bin,
    I8bin,
    /// TEXMEX: every row is `i32 d` then `d` elements.
    Fvecs,
    Bvecs,
    /// NumPy 2-D array.
    Npy,
}

const EXTENSIONS: &str =
    ".fbin, .u8bin, .i8bin, .fvecs, .bvecs, .npy (.ibin and .ivecs hold ground truth, not vectors: pass them as --gt; \
     .parquet and .arrow tables are read by build only)";

impl Format {
    pub fn from_path(path: &Path) -> Result<Format, DataError> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or("")
            .to_ascii_lowercase();
        Ok(match ext.as_str() {
            "fbin" => Format::Fbin,
            "u8bin" => Format::U8bin,
            "i8bin" => Format::I8bin,
            "fvecs" => Format::Fvecs,
            "bvecs" => Format::Bvecs,
            "npy" => Format::Npy,
            _ => {
                return Err(DataError::UnknownFormat {
                    path: path.to_path_buf(),
                    found: ext,
                    expected: EXTENSIONS,
                })
            }
        })
    }

    pub const fn extension(self) -> &'static str {
        match self {
            Format::Fbin => "fbin",
            Format::U8bin => "u8bin",
            Format::I8bin => "i8bin",
            Format::Fvecs => "fvecs",
            Format::Bvecs => "bvecs",
            Format::Npy => "npy",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.extension())
    }
}

/// Where the rows of a validated file are: row `i` starts at byte
/// `data_offset + i * row_stride` and holds `dim` elements of `dtype`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    pub dtype: DType,
    pub n: usize,
    pub dim: usize,
    pub data_offset: usize,
    pub row_stride: usize,
}

impl Layout {
    pub fn contiguous(dtype: DType, n: usize, dim: usize, data_offset: usize) -> Layout {
        Layout {
            dtype,
            n,
            dim,
            data_offset,
            row_stride: dim * dtype.size(),
        }
    }

    fn is_contiguous(&self) -> bool {
        self.row_stride == self.dim * self.dtype.size()
    }
}

enum Store {
    /// Rows are read in place from the map.
    Mapped(Mmap),
    /// f32 rows that could not be viewed in place (a misaligned npy header, a
    /// big-endian host), decoded once into a contiguous row-major copy.
    Copied(Vec<f32>),
}

/// A validated, memory-mapped vector file. Rows are borrowed from the map
/// wherever alignment allows (always for `.fbin`, `.fvecs`, `.u8bin`,
/// `.i8bin`, `.bvecs`; for `.npy` whenever the header keeps the data 4-byte
/// aligned, which numpy's writers always do).
pub struct VectorFile {
    path: PathBuf,
    format: Format,
    layout: Layout,
    store: Store,
}

impl fmt::Debug for VectorFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VectorFile")
            .field("path", &self.path)
            .field("format", &self.format)
            .field("dtype", &self.layout.dtype)
            .field("n", &self.layout.n)
            .field("dim", &self.layout.dim)
            .field("zero_copy", &self.is_zero_copy())
            .finish()
    }
}

/// Opens a vector file, detecting the format by extension.
pub fn open(path: impl AsRef<Path>) -> Result<VectorFile, DataError> {
    VectorFile::open(path)
}

impl VectorFile {
    /// Opens and validates `path`, detecting the format by its extension.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, DataError> {
        let path = path.as_ref();
        Self::open_as(path, Format::from_path(path)?)
    }

    /// Opens `path` as `format` whatever its extension.
    pub fn open_as(path: impl AsRef<Path>, format: Format) -> Result<Self, DataError> {
        let path = path.as_ref();
        let map = map_file(path)?;
        let layout = match format {
            Format::Fbin => bin::parse(path, &map, DType::F32)?,
            Format::U8bin => bin::parse(path, &map, DType::U8)?,
            Format::I8bin => bin::parse(path, &map, DType::I8)?,
            Format::Fvecs => vecs::parse(path, &map, DType::F32)?,
            Format::Bvecs => vecs::parse(path, &map, DType::U8)?,
            Format::Npy => npy::parse(path, &map)?,
        };
        let mut file = VectorFile {
            path: path.to_path_buf(),
            format,
            layout,
            store: Store::Mapped(map),
        };
        // Row starts differ by whole multiples of 4 bytes for every f32 layout,
        // so if row 0 can be viewed in place, every row can.
        if layout.dtype == DType::F32 && cast_f32(file.raw_row(0)).is_none() {
            let copy: Vec<f32> = (0..layout.n)
                .flat_map(|i| decode_f32(file.raw_row(i)))
                .collect();
            file.layout = Layout::contiguous(DType::F32, layout.n, layout.dim, 0);
            file.store = Store::Copied(copy);
        }
        Ok(file)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn format(&self) -> Format {
        self.format
    }

    pub fn n(&self) -> usize {
        self.layout.n
    }

    pub fn dim(&self) -> usize {
        self.layout.dim
    }

    pub fn dtype(&self) -> DType {
        self.layout.dtype
    }

    /// True when rows are read straight from the map (no decoded copy).
    pub fn is_zero_copy(&self) -> bool {
        matches!(self.store, Store::Mapped(_))
    }

    /// Bytes of row `i` in the map (only called while the store is mapped).
    fn raw_row(&self, i: usize) -> &[u8] {
        let Store::Mapped(map) = &self.store else {
            unreachable!("raw_row on a copied store")
        };
        let start = self.layout.data_offset + i * self.layout.row_stride;
        &map[start..start + self.layout.dim * self.layout.dtype.size()]
    }

    /// Row `i`, borrowed. Panics if `i >= n()`.
    pub fn row(&self, i: usize) -> Elems<'_> {
        assert!(
            i < self.layout.n,
            "{}: row {i} out of range (n = {})",
            self.path.display(),
            self.n()
        );
        let d = self.layout.dim;
        match &self.store {
            Store::Copied(v) => Elems::F32(&v[i * d..(i + 1) * d]),
            Store::Mapped(_) => bytes_as(self.layout.dtype, self.raw_row(i)),
        }
    }

    /// Row `i` as f32 (borrowed for f32 files, converted for u8/i8).
    pub fn row_f32(&self, i: usize) -> Cow<'_, [f32]> {
        self.row(i).to_f32()
    }

    /// All rows as one contiguous row-major slice, or `None` when the rows
    /// are interleaved with per-row headers (`.fvecs`, `.bvecs`).
    pub fn contiguous(&self) -> Option<Elems<'_>> {
        match &self.store {
            Store::Copied(v) => Some(Elems::F32(v)),
            Store::Mapped(map) if self.layout.is_contiguous() => {
                let start = self.layout.data_offset;
                let len = self.layout.n * self.layout.row_stride;
                Some(bytes_as(self.layout.dtype, &map[start..start + len]))
            }
            Store::Mapped(_) => None,
        }
    }

    /// [`VectorFile::contiguous`] with its dimension.
    pub fn vectors(&self) -> Option<Vectors<'_>> {
        self.contiguous()
            .and_then(|e| Vectors::new(e, self.dim()).ok())
    }

    /// All f32 data, zero-copy; `None` for other dtypes and interleaved rows.
    pub fn as_f32(&self) -> Option<&[f32]> {
        match self.contiguous()? {
            Elems::F32(v) => Some(v),
            _ => None,
        }
    }

    pub fn as_u8(&self) -> Option<&[u8]> {
        match self.contiguous()? {
            Elems::U8(v) => Some(v),
            _ => None,
        }
    }

    pub fn as_i8(&self) -> Option<&[i8]> {
        match self.contiguous()? {
            Elems::I8(v) => Some(v),
            _ => None,
        }
    }

    /// Every element converted to f32, row-major (a copy).
    pub fn to_f32_vec(&self) -> Vec<f32> {
        let mut out = Vec::with_capacity(self.n() * self.dim());
        for i in 0..self.n() {
            out.extend_from_slice(&self.row_f32(i));
        }
        out
    }

    /// Fails with the first (lowest row, then lowest component) NaN or
    /// infinity. Integer data always passes. Rows are scanned in parallel.
    pub fn check_finite(&self) -> Result<(), DataError> {
        if self.dtype() != DType::F32 {
            return Ok(());
        }
        let first_bad = |i: usize| match self.row(i) {
            Elems::F32(r) => r.iter().position(|x| !x.is_finite()).map(|c| (i, c, r[c])),
            _ => None,
        };
        let Some((row, component, x)) = (0..self.n()).into_par_iter().find_map_first(first_bad)
        else {
            return Ok(());
        };
        let value = if x.is_nan() {
            "NaN"
        } else if x > 0.0 {
            "inf"
        } else {
            "-inf"
        };
        Err(DataError::NonFinite {
            path: self.path.clone(),
            row,
            component,
            value,
        })
    }

    /// Fails unless this file's dimension is `expected`; `what` names the
    /// other side ("index", "base"), e.g. "query.fbin: dimension 96 does not
    /// match the index dimension 128".
    pub fn check_dim(&self, expected: usize, what: &'static str) -> Result<(), DataError> {
        if self.dim() == expected {
            return Ok(());
        }
        Err(DataError::DimensionMismatch {
            path: self.path.clone(),
            what,
            expected,
            found: self.dim(),
        })
    }
}

/// Views raw little-endian bytes as elements of `dtype`. For f32 the caller
/// has established (at open) that the cast succeeds.
fn bytes_as(dtype: DType, bytes: &[u8]) -> Elems<'_> {
    match dtype {
        DType::F32 => Elems::F32(cast_f32(bytes).expect("alignment checked at open")),
        DType::U8 => Elems::U8(bytes),
        DType::I8 => Elems::I8(cast_i8(bytes)),
        // No parser yields f16 (a storage type only, `DType::F16`).
        DType::F16 => unreachable!("vector files are never read as f16"),
    }
}

impl VectorRows for VectorFile {
    fn n(&self) -> usize {
        self.layout.n
    }

    fn dim(&self) -> usize {
        self.layout.dim
    }

    fn dtype(&self) -> DType {
        self.layout.dtype
    }

    fn row(&self, i: usize) -> Elems<'_> {
        VectorFile::row(self, i)
    }
}
