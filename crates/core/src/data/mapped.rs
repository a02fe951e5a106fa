//! Mapping a file and viewing mapped bytes as typed elements without copying.
//! The unsafe parts are `stratavec_io::map_readonly` and
//! `stratavec_simd::cast` (unsafe code lives only in those two crates).

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
    stratavec_io::map_readonly(&file).map_err(|e| DataError::io(path, "mmap", e))
}

/// Views little-endian f32 bytes as `&[f32]` without copying, or `None` when
/// that is impossible (misaligned start, length not a multiple of 4, or a
/// big-endian host); callers then fall back to [`decode_f32`].
pub(crate) fn cast_f32(bytes: &[u8]) -> Option<&[f32]> {
    stratavec_simd::cast::as_f32(bytes)
}

/// Views bytes as `&[i8]` (same size and alignment as u8).
pub(crate) fn cast_i8(bytes: &[u8]) -> &[i8] {
    stratavec_simd::cast::as_i8(bytes)
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
