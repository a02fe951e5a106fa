//! Zero-copy views of little-endian byte buffers as typed slices. Records read
//! from disk hold vectors as little-endian bytes; on a little-endian CPU with
//! a suitably aligned buffer they can be used in place, which saves a copy of
//! every vector a search touches.

/// `bytes` as f32s, when the length is a multiple of 4, the address is
/// 4-aligned and the target is little-endian; `None` otherwise (the caller
/// then decodes into a scratch buffer with [`decode_f32`]).
pub fn as_f32(bytes: &[u8]) -> Option<&[f32]> {
    if cfg!(target_endian = "big")
        || !bytes.len().is_multiple_of(4)
        || !(bytes.as_ptr() as usize).is_multiple_of(std::mem::align_of::<f32>())
    {
        return None;
    }
    // SAFETY: the pointer is non-null, 4-aligned (checked), covers
    // `len / 4` f32s within the borrowed slice, every bit pattern is a valid
    // f32, and the lifetime is tied to `bytes`.
    Some(unsafe { std::slice::from_raw_parts(bytes.as_ptr() as *const f32, bytes.len() / 4) })
}

/// `bytes` as i8s (always possible).
pub fn as_i8(bytes: &[u8]) -> &[i8] {
    // SAFETY: u8 and i8 have the same size and alignment and every bit
    // pattern is valid for both; the lifetime is tied to `bytes`.
    unsafe { std::slice::from_raw_parts(bytes.as_ptr() as *const i8, bytes.len()) }
}

/// Decodes little-endian f32s into `out` (cleared first).
pub fn decode_f32(bytes: &[u8], out: &mut Vec<f32>) {
    out.clear();
    out.extend(
        bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn view_equals_decode() {
        let v: Vec<f32> = (0..37).map(|i| i as f32 * 0.5 - 3.0).collect();
        let mut bytes = vec![0u8; 4 + v.len() * 4];
        for (i, x) in v.iter().enumerate() {
            bytes[4 + 4 * i..8 + 4 * i].copy_from_slice(&x.to_le_bytes());
        }
        // Find a 4-aligned start inside the buffer.
        let start = (4 - bytes.as_ptr() as usize % 4) % 4;
        let aligned = &bytes[start..start + 4 * 30];
        let mut decoded = vec![];
        decode_f32(aligned, &mut decoded);
        assert_eq!(as_f32(aligned).unwrap(), &decoded[..]);
        assert!(as_f32(&bytes[start + 1..start + 9]).is_none());
        assert_eq!(as_i8(&[255u8, 1]), &[-1i8, 1]);
    }
}
