//! big-ann-benchmarks binary vector files (`.fbin`, `.u8bin`, `.i8bin`):
//! `u32 n`, `u32 d`, then `n * d` elements, all little-endian, row-major.
//! The 8-byte header keeps f32 data 4-byte aligned in a page-aligned map, so
//! `.fbin` data is always readable in place.

use std::io::Write;
use std::path::Path;

use super::atomic::{check_shape, put_f32s, put_i8s, write_atomic};
use super::mapped::le_u32;
use super::open::Layout;
use super::{DType, DataError};

pub(crate) const HEADER_BYTES: usize = 8;

/// Validates the header against the file size and returns where the rows are.
pub(crate) fn parse(path: &Path, bytes: &[u8], dtype: DType) -> Result<Layout, DataError> {
    if bytes.len() < HEADER_BYTES {
        return Err(DataError::invalid(
            path,
            "header",
            "8 bytes (u32 n, u32 d)",
            format!("a file of {} bytes", bytes.len()),
        ));
    }
    let n = le_u32(bytes, 0) as u64;
    let d = le_u32(bytes, 4) as u64;
    if n == 0 {
        return Err(DataError::invalid(path, "n", "at least 1 row", 0));
    }
    if d == 0 {
        return Err(DataError::invalid(
            path,
            "d",
            "a dimension of at least 1",
            0,
        ));
    }
    // u128: n * d * 4 can exceed u64 for a corrupt header.
    let expected = HEADER_BYTES as u128 + n as u128 * d as u128 * dtype.size() as u128;
    if expected != bytes.len() as u128 {
        return Err(DataError::SizeMismatch {
            path: path.to_path_buf(),
            n,
            dim: d,
            dtype: dtype.long_name(),
            expected,
            found: bytes.len() as u64,
        });
    }
    Ok(Layout::contiguous(
        dtype,
        n as usize,
        d as usize,
        HEADER_BYTES,
    ))
}

fn write_bin(
    path: &Path,
    n: usize,
    d: usize,
    len: usize,
    body: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), DataError> {
    check_shape(path, n, d, len)?;
    write_atomic(path, |w| {
        w.write_all(&(n as u32).to_le_bytes())?;
        w.write_all(&(d as u32).to_le_bytes())?;
        body(w)
    })
}

/// Writes an `.fbin` file (atomically: `path.tmp`, fsync, rename).
pub fn write_fbin(
    path: impl AsRef<Path>,
    n: usize,
    d: usize,
    data: &[f32],
) -> Result<(), DataError> {
    write_bin(path.as_ref(), n, d, data.len(), |w| put_f32s(w, data))
}

/// Writes a `.u8bin` file (atomically).
pub fn write_u8bin(
    path: impl AsRef<Path>,
    n: usize,
    d: usize,
    data: &[u8],
) -> Result<(), DataError> {
    write_bin(path.as_ref(), n, d, data.len(), |w| w.write_all(data))
}

/// Writes an `.i8bin` file (atomically).
pub fn write_i8bin(
    path: impl AsRef<Path>,
    n: usize,
    d: usize,
    data: &[i8],
) -> Result<(), DataError> {
    write_bin(path.as_ref(), n, d, data.len(), |w| put_i8s(w, data))
}
