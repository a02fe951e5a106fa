//! TEXMEX `.fvecs` / `.bvecs` / `.ivecs` files (the SIFT/GIST/BIGANN
//! distributions): every row is `i32 d` followed by `d` elements (f32, u8 or
//! i32), little-endian. Because the row headers are interleaved with the data
//! the rows are not one contiguous slice, but each row still is: a `.fvecs`
//! row starts at `4 + i * (4 + 4d)`, so it is f32-aligned in a page-aligned map.

use std::io::Write;
use std::path::Path;

use rayon::prelude::*;

use super::atomic::{check_shape, put_f32s, write_atomic};
use super::mapped::le_u32;
use super::open::Layout;
use super::{DType, DataError};

/// Checks that the file is a whole number of rows and that every row has the
/// dimension of row 0; returns `(n, d)`. `elem_name` is for messages.
pub(crate) fn parse_shape(
    path: &Path,
    bytes: &[u8],
    elem_size: usize,
    elem_name: &'static str,
) -> Result<(usize, usize), DataError> {
    if bytes.len() < 4 {
        return Err(DataError::invalid(
            path,
            "dimension of row 0",
            "a 4-byte i32",
            format!("a file of {} bytes", bytes.len()),
        ));
    }
    let d = le_u32(bytes, 0) as i32;
    if d <= 0 {
        return Err(DataError::invalid(
            path,
            "dimension of row 0",
            "at least 1",
            d,
        ));
    }
    let d = d as usize;
    let row_bytes = 4 + d * elem_size;
    let leftover = bytes.len() % row_bytes;
    if leftover != 0 {
        return Err(DataError::RaggedRows {
            path: path.to_path_buf(),
            dim: d as u64,
            dtype: elem_name,
            row_bytes: row_bytes as u64,
            found: bytes.len() as u64,
        });
    }
    let n = bytes.len() / row_bytes;
    // Every row header is checked: a file concatenated from sets of different
    // dimensions can still have a size that divides evenly. Parallel because
    // this touches every page of what may be a large file.
    let bad = (1..n)
        .into_par_iter()
        .find_first(|&i| le_u32(bytes, i * row_bytes) as usize != d);
    if let Some(row) = bad {
        return Err(DataError::RowDimension {
            path: path.to_path_buf(),
            row: row as u64,
            expected: d as i64,
            found: le_u32(bytes, row * row_bytes) as i32 as i64,
        });
    }
    Ok((n, d))
}

pub(crate) fn parse(path: &Path, bytes: &[u8], dtype: DType) -> Result<Layout, DataError> {
    let (n, d) = parse_shape(path, bytes, dtype.size(), dtype.long_name())?;
    Ok(Layout {
        dtype,
        n,
        dim: d,
        data_offset: 4,
        row_stride: 4 + d * dtype.size(),
    })
}

/// Writes rows of `d` elements, each preceded by `i32 d`.
pub(crate) fn write_rows<T>(
    path: &Path,
    n: usize,
    d: usize,
    data: &[T],
    put: impl Fn(&mut dyn Write, &[T]) -> std::io::Result<()>,
) -> Result<(), DataError> {
    check_shape(path, n, d, data.len())?;
    if d > i32::MAX as usize {
        return Err(DataError::invalid(
            path,
            "d",
            "at most i32::MAX for a *vecs file",
            d,
        ));
    }
    write_atomic(path, |w| {
        for row in data.chunks_exact(d) {
            w.write_all(&(d as i32).to_le_bytes())?;
            put(w, row)?;
        }
        Ok(())
    })
}

/// Writes an `.fvecs` file (atomically: `path.tmp`, fsync, rename).
pub fn write_fvecs(
    path: impl AsRef<Path>,
    n: usize,
    d: usize,
    data: &[f32],
) -> Result<(), DataError> {
    write_rows(path.as_ref(), n, d, data, |w, row| put_f32s(w, row))
}

/// Writes a `.bvecs` file (atomically).
pub fn write_bvecs(
    path: impl AsRef<Path>,
    n: usize,
    d: usize,
    data: &[u8],
) -> Result<(), DataError> {
    write_rows(path.as_ref(), n, d, data, |w, row| w.write_all(row))
}
