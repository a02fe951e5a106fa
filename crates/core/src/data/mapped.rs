//! The only unsafe code of `data`: mapping a file and viewing mapped bytes as
//! typed elements without copying. Kept in this one small file so it can be
//! audited (or moved into `stratavec-io`) as a unit.

use std::fs::File;
use std::path::Path;

use memmap2::Mmap;

use super::DataError;

/// Maps `path` read-only. An empty file is an error (it cannot be a valid
/// vector or ground-truth file, and mapping 0 bytes is not portable).
pub(crate) fn map_file(path: &Path) -> Result<Mmap, DataError> {
    let file = File::open(path).map_err(|e| DataError::io(path, "open", e))?;
    let len = file
        .metadata()
        .map_err(|e| DataError::io(path, "stat", e))?
        .len();
    if len == 0 {
        return Err(DataError::Empty {
            path: path.to_path_buf(),
        });
    }
    // SAFETY: the map is read-only and private to this process. Like every
    // mmap-based reader, we rely on the file not being truncated or rewritten
    // while it is open; stratavec's own writers never do that (they write a
    // temporary sibling and rename it over the old file, which leaves this
    // mapping pointing at the old inode).
    unsafe { Mmap::map(&file) }.map_err(|e| DataError::io(path, "mmap", e))
}

/// Views little-endian f32 bytes as `&[f32]` without copying, or `None` when
/// that is impossible (misaligned start, length not a multiple of 4, or a
/// big-endian host); callers then fall back to [`decode_f32`].
pub(crate) fn cast_f32(bytes: &[u8]) -> Option<&[f32]> {
    if cfg!(target_endian = "big") {
        return None;
    }
    // SAFETY: every 4-byte pattern is a valid f32, and `align_to` only puts in
    // the middle slice the part of `bytes` that is correctly aligned for f32.
    let (head, body, tail) = unsafe { bytes.align_to::<f32>() };
    (head.is_empty() && tail.is_empty()).then_some(body)
}

/// Views bytes as `&[i8]` (same size and alignment as u8).
pub(crate) fn cast_i8(bytes: &[u8]) -> &[i8] {
    // SAFETY: i8 and u8 have the same size and alignment and every bit
    // pattern is valid for both; the lifetime is carried over unchanged.
    unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<i8>(), bytes.len()) }
}

/// Copies little-endian f32 bytes into a vector (the fallback of [`cast_f32`]).
pub(crate) fn decode_f32(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Reads the little-endian u32 at `offset`; the caller checked the length.
pub(crate) fn le_u32(bytes: &[u8], offset: usize) -> u32 {
    let b = &bytes[offset..offset + 4];
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_and_casts() {
        let v = [1.5f32, -2.0, 3.25];
        let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        assert_eq!(decode_f32(&bytes), v);
        // 3 bytes can never be a whole number of f32s, aligned or not.
        assert!(cast_f32(&bytes[..3]).is_none());
        assert_eq!(cast_i8(&[255u8, 1]), &[-1i8, 1]);
        assert_eq!(le_u32(&[0, 1, 0, 0, 0], 1), 1);
    }
}
