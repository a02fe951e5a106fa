//! `map.bin`: where each node's record is in a shuffled layout.
//! Magic "STRVMAP1", u64 n, u32 records per block, then n u32 positions
//! (block * per_block + slot). Loaded whole at open (4 bytes per node, counted
//! in the memory report).

use crate::error::{Error, FileContext, Result};
use std::io::Write;
use std::path::Path;

const MAGIC: &[u8; 8] = b"STRVMAP1";

pub fn write(out: &mut impl Write, per_block: usize, positions: &[u32]) -> std::io::Result<()> {
    out.write_all(MAGIC)?;
    out.write_all(&(positions.len() as u64).to_le_bytes())?;
    out.write_all(&(per_block as u32).to_le_bytes())?;
    for p in positions {
        out.write_all(&p.to_le_bytes())?;
    }
    Ok(())
}

/// Reads and validates the map of an index of `n` nodes: every position in
/// range and used once.
pub fn read(path: &Path, n: usize) -> Result<(usize, Vec<u32>)> {
    let bytes = std::fs::read(path).at("read", path)?;
    if bytes.len() < 20 || &bytes[..8] != MAGIC {
        return Err(Error::index(path, "magic", "\"STRVMAP1\"", "other bytes"));
    }
    let fn_ = u64::from_le_bytes(bytes[8..16].try_into().expect("8 bytes")) as usize;
    let per_block = u32::from_le_bytes(bytes[16..20].try_into().expect("4 bytes")) as usize;
    if fn_ != n {
        return Err(Error::index(path, "n", n, fn_));
    }
    if bytes.len() != 20 + 4 * n {
        return Err(Error::index(path, "file size", 20 + 4 * n, bytes.len()));
    }
    if per_block == 0 {
        return Err(Error::index(path, "records per block", "at least 1", 0));
    }
    let slots = n.div_ceil(per_block) * per_block;
    let mut used = vec![false; slots];
    let mut positions = Vec::with_capacity(n);
    for (id, c) in bytes[20..].chunks_exact(4).enumerate() {
        let p = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        if p as usize >= slots || std::mem::replace(&mut used[p as usize], true) {
            return Err(Error::index(
                path,
                format!("position of node {id}"),
                format!("a free slot < {slots}"),
                p,
            ));
        }
        positions.push(p);
    }
    Ok((per_block, positions))
}
