//! `map.bin`: the block of each node in a shuffled layout.
//! Magic "STRVMAP2", u64 n, u64 blocks, then n u32 block numbers. Loaded
//! whole at open and kept packed in ⌈log2 blocks⌉ bits a node (counted as
//! "map" in the memory report); the node's place inside its block is in the
//! block's own directory.

use crate::error::{Error, FileContext, Result};
use std::io::Write;
use std::path::Path;

/// The blocked layout's id → block map.
pub const MAP_FILE: &str = "map.bin";

const MAGIC: &[u8; 8] = b"STRVMAP2";
const HEADER: usize = 24;

pub fn write(out: &mut impl Write, blocks: usize, block_of: &[u32]) -> std::io::Result<()> {
    out.write_all(MAGIC)?;
    out.write_all(&(block_of.len() as u64).to_le_bytes())?;
    out.write_all(&(blocks as u64).to_le_bytes())?;
    for b in block_of {
        out.write_all(&b.to_le_bytes())?;
    }
    Ok(())
}

/// Reads and validates the map of an index of `n` nodes in `blocks` blocks:
/// every block number in range and every block used.
pub fn read(path: &Path, n: usize, blocks: usize) -> Result<Vec<u32>> {
    let bytes = std::fs::read(path).at("read", path)?;
    if bytes.len() < HEADER || &bytes[..8] != MAGIC {
        let found = match bytes.get(..8) {
            Some(b"STRVMAP1") => "\"STRVMAP1\" (fixed-slot blocks of an older version: rebuild or relayout the index)",
            _ => "other bytes",
        };
        return Err(Error::index(path, "magic", "\"STRVMAP2\"", found));
    }
    let u64_at =
        |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().expect("8 bytes")) as usize;
    let (fn_, fblocks) = (u64_at(8), u64_at(16));
    if fn_ != n {
        return Err(Error::index(path, "n", n, fn_));
    }
    if fblocks != blocks {
        return Err(Error::index(
            path,
            "blocks",
            format!("{blocks} (pages.bin)"),
            fblocks,
        ));
    }
    // In u128: `n` is the caller's, but a size must not wrap.
    let want = HEADER as u128 + 4 * n as u128;
    if bytes.len() as u128 != want {
        return Err(Error::index(path, "file size", want, bytes.len()));
    }
    let mut used = vec![false; blocks];
    let mut block_of = Vec::with_capacity(n);
    for (id, c) in bytes[HEADER..].chunks_exact(4).enumerate() {
        let b = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        if b as usize >= blocks {
            return Err(Error::index(
                path,
                format!("block of node {id}"),
                format!("< {blocks}"),
                b,
            ));
        }
        used[b as usize] = true;
        block_of.push(b);
    }
    if let Some(b) = used.iter().position(|&u| !u) {
        return Err(Error::index(
            path,
            format!("block {b}"),
            "at least one node",
            "none",
        ));
    }
    Ok(block_of)
}
