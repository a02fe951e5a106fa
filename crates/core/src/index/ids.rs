//! Ids given with the data (a table's id column, Python's `ids=`), kept in
//! the index as `ids.bin` and returned by search instead of row numbers, as
//! faiss's `IndexIDMap` does. The file is mapped, not read: only the `k`
//! ids of each result are touched, so it costs no memory budget.
//!
//! `ids.bin`: magic `STRVIDS1`, `u64 n`, then `n` little-endian `i64`, the
//! id of row `i` at `16 + 8 i`.

use std::io::Write;
use std::path::Path;

use memmap2::Mmap;

use crate::error::{Error, FileContext, Result};

/// The file's name in an index directory.
pub const IDS_FILE: &str = "ids.bin";
const MAGIC: &[u8; 8] = b"STRVIDS1";
const HEADER: usize = 16;

/// The id reported for a result slot with no neighbour (fewer than `k`
/// found, or a failed query), as for row numbers.
pub const NO_ID: i64 = -1;

/// Writes `ids` (one a row, in row order) as an `ids.bin`.
pub fn write(w: &mut impl Write, ids: &[i64]) -> std::io::Result<()> {
    w.write_all(MAGIC)?;
    w.write_all(&(ids.len() as u64).to_le_bytes())?;
    for chunk in ids.chunks(1 << 16) {
        let bytes: Vec<u8> = chunk.iter().flat_map(|x| x.to_le_bytes()).collect();
        w.write_all(&bytes)?;
    }
    Ok(())
}

/// A mapped `ids.bin`.
pub struct IdMap {
    map: Mmap,
    n: usize,
}

impl IdMap {
    /// Maps and checks `path` for an index of `n` rows.
    pub fn open(path: &Path, n: usize) -> Result<IdMap> {
        let file = std::fs::File::open(path).at("open", path)?;
        let map = stratavec_io::map_readonly(&file).at("mmap", path)?;
        if map.len() < HEADER || &map[..8] != MAGIC {
            return Err(Error::index(path, "magic", "STRVIDS1", "something else"));
        }
        let stored = u64::from_le_bytes(map[8..16].try_into().expect("8 bytes"));
        if stored != n as u64 {
            return Err(Error::index(
                path,
                "n",
                format!("{n} (the manifest's row count)"),
                stored,
            ));
        }
        // In u128: no `n` makes the size wrap.
        let want = HEADER as u128 + 8 * n as u128;
        if map.len() as u128 != want {
            return Err(Error::index(
                path,
                "size",
                format!("{want} bytes"),
                format!("{} bytes", map.len()),
            ));
        }
        Ok(IdMap { map, n })
    }

    pub fn len(&self) -> usize {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The id of `row`; [`NO_ID`] for `u32::MAX` (no result).
    pub fn get(&self, row: u32) -> i64 {
        if row == u32::MAX {
            return NO_ID;
        }
        let at = HEADER + 8 * row as usize;
        i64::from_le_bytes(self.map[at..at + 8].try_into().expect("8 bytes"))
    }

    /// [`IdMap::get`] of every row.
    pub fn translate(&self, rows: &[u32]) -> Vec<i64> {
        rows.iter().map(|&r| self.get(r)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_checks() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(IDS_FILE);
        let ids = [7i64, -3, i64::MAX, 0];
        let mut f = std::fs::File::create(&path).unwrap();
        write(&mut f, &ids).unwrap();
        drop(f);
        let m = IdMap::open(&path, 4).unwrap();
        assert_eq!(
            m.translate(&[3, 0, u32::MAX, 2, 1]),
            [0, 7, NO_ID, i64::MAX, -3]
        );
        let e = IdMap::open(&path, 5).err().unwrap().to_string();
        assert!(
            e.contains("ids.bin") && e.contains("n: expected 5") && e.contains("found 4"),
            "{e}"
        );
        std::fs::write(&path, b"STRVIDS1\x01\0\0\0\0\0\0\0").unwrap();
        let e = IdMap::open(&path, 1).err().unwrap().to_string();
        assert!(e.contains("24 bytes") && e.contains("16 bytes"), "{e}");
    }
}
