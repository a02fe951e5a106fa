//! `codes.bin`: a PQ codebook followed by the codes of every vector.
//!
//! Layout (little-endian): magic "STRVPQ01", u32 dim, u32 m, u64 n,
//! (m+1) x u32 sub-space offsets, dim x f32 centre, 256*dim x f32 centroids,
//! n*m code bytes.

use super::pq::{PqCodebook, KSUB};
use crate::error::{Error, FileContext, Result};
use std::io::Write;
use std::path::Path;

const MAGIC: &[u8; 8] = b"STRVPQ01";

pub fn write(out: &mut impl Write, cb: &PqCodebook, codes: &[u8]) -> std::io::Result<()> {
    out.write_all(MAGIC)?;
    out.write_all(&(cb.dim as u32).to_le_bytes())?;
    out.write_all(&(cb.m as u32).to_le_bytes())?;
    out.write_all(&((codes.len() / cb.m) as u64).to_le_bytes())?;
    for &o in &cb.offsets {
        out.write_all(&(o as u32).to_le_bytes())?;
    }
    for &x in cb.center.iter().chain(&cb.centroids) {
        out.write_all(&x.to_le_bytes())?;
    }
    out.write_all(codes)
}

/// The quantizer of an index: `codes.bin` in `dir`, for the index that
/// `manifest` describes.
pub fn load(dir: &Path, manifest: &crate::index::Manifest) -> Result<super::PqQuantizer> {
    let (codebook, codes) = read(
        &dir.join(crate::plan::codes::PQ_FILE),
        manifest.n,
        manifest.dim,
    )?;
    Ok(super::PqQuantizer::new(codebook, codes, manifest.metric))
}

/// Reads and validates `codes.bin` for an index of `n` vectors of `dim`.
pub fn read(path: &Path, n: usize, dim: usize) -> Result<(PqCodebook, Vec<u8>)> {
    let bytes = std::fs::read(path).at("read", path)?;
    let bad = |field: &str, expected: &dyn ToString, found: &dyn ToString| {
        Error::index(path, field, expected.to_string(), found.to_string())
    };
    if bytes.len() < 24 || &bytes[..8] != MAGIC {
        return Err(bad("magic", &"\"STRVPQ01\"", &"other bytes"));
    }
    let u32_at = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().unwrap()) as usize;
    let (fdim, m) = (u32_at(8), u32_at(12));
    let fn_ = u64::from_le_bytes(bytes[16..24].try_into().unwrap()) as usize;
    if fdim != dim {
        return Err(bad("dim", &dim, &fdim));
    }
    if fn_ != n {
        return Err(bad("n", &n, &fn_));
    }
    if m == 0 || m > dim {
        return Err(bad("m", &format!("1..={dim}"), &m));
    }
    let floats = dim + KSUB * dim;
    // In u128: `n` and `m` are checked against the index, but a size must
    // not wrap whatever they are.
    let expected = 24 + 4 * (m as u128 + 1) + 4 * floats as u128 + n as u128 * m as u128;
    if bytes.len() as u128 != expected {
        return Err(bad("file size", &expected, &bytes.len()));
    }
    let offsets: Vec<usize> = (0..=m).map(|j| u32_at(24 + 4 * j)).collect();
    if offsets[0] != 0 || offsets[m] != dim || offsets.windows(2).any(|w| w[1] <= w[0]) {
        return Err(bad(
            "sub-space offsets",
            &format!("increasing from 0 to {dim}"),
            &format!("{offsets:?}"),
        ));
    }
    let f0 = 24 + 4 * (m + 1);
    let fl: Vec<f32> = bytes[f0..f0 + 4 * floats]
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let codes = bytes[f0 + 4 * floats..].to_vec();
    let cb = PqCodebook {
        dim,
        m,
        offsets,
        center: fl[..dim].to_vec(),
        centroids: fl[dim..].to_vec(),
    };
    Ok((cb, codes))
}
