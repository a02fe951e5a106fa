//! The order a node cache is filled in when a profile ranks it at build
//! time (laser: by in-degree, AlayaLaser §3.3 — the most linked nodes are
//! the most visited, Figure 7). Kept as `order.bin` so an open takes the
//! longest prefix its share of the budget holds without ranking anything.
//!
//! `order.bin`: magic `STRVORD1`, u64 count, then count u32 node ids, best
//! first.

use crate::error::{Error, FileContext, Result};
use std::io::Write;
use std::path::Path;

pub const ORDER_FILE: &str = "order.bin";
const MAGIC: &[u8; 8] = b"STRVORD1";

pub fn write(w: &mut impl Write, order: &[u32]) -> std::io::Result<()> {
    w.write_all(MAGIC)?;
    w.write_all(&(order.len() as u64).to_le_bytes())?;
    let bytes: Vec<u8> = order.iter().flat_map(|x| x.to_le_bytes()).collect();
    w.write_all(&bytes)
}

/// Reads the order for an index of `n` nodes: every id below `n`, none
/// twice.
pub fn read(path: &Path, n: usize) -> Result<Vec<u32>> {
    let b = std::fs::read(path).at("read", path)?;
    if b.len() < 16 || &b[..8] != MAGIC {
        return Err(Error::index(path, "magic", "STRVORD1", "other bytes"));
    }
    let count = u64::from_le_bytes(b[8..16].try_into().expect("8 bytes"));
    // In u128: a damaged count must not wrap the size it implies.
    if count > n as u64 || b.len() as u128 != 16 + 4 * count as u128 {
        return Err(Error::index(
            path,
            "size",
            format!("16 + 4 x count bytes, count <= {n}"),
            format!("count {count}, {} bytes", b.len()),
        ));
    }
    let order: Vec<u32> = b[16..]
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let mut seen = crate::util::visited::VisitedSet::for_ids_below(n, count as usize);
    for &id in &order {
        if id as usize >= n || !seen.insert(id) {
            return Err(Error::index(
                path,
                "node id",
                format!("distinct ids below {n}"),
                id,
            ));
        }
    }
    Ok(order)
}

/// Nodes by in-degree, most linked first (ties by id).
pub fn by_indegree(lists: &[Vec<u32>]) -> Vec<u32> {
    let mut indegree = vec![0u32; lists.len()];
    for l in lists {
        for &v in l {
            indegree[v as usize] += 1;
        }
    }
    let mut order: Vec<u32> = (0..lists.len() as u32).collect();
    order.sort_unstable_by(|&a, &b| {
        indegree[b as usize]
            .cmp(&indegree[a as usize])
            .then(a.cmp(&b))
    });
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indegree_order_round_trips_and_bad_files_are_refused() {
        let lists = vec![vec![1, 2], vec![2], vec![1, 3], vec![2]];
        let order = by_indegree(&lists);
        assert_eq!(order, [2, 1, 3, 0]);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(ORDER_FILE);
        let mut f = std::fs::File::create(&p).unwrap();
        write(&mut f, &order).unwrap();
        drop(f);
        assert_eq!(read(&p, 4).unwrap(), order);
        let e = read(&p, 3).err().unwrap().to_string();
        assert!(e.contains("order.bin") && e.contains("count <= 3"), "{e}");
        let mut f = std::fs::File::create(&p).unwrap();
        write(&mut f, &[1, 1]).unwrap();
        drop(f);
        let e = read(&p, 4).err().unwrap().to_string();
        assert!(
            e.contains("distinct ids below 4") && e.contains("found 1"),
            "{e}"
        );
    }

    /// A count whose size would wrap is refused, not multiplied.
    #[test]
    fn a_count_past_n_is_refused_before_its_size_is_computed() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(ORDER_FILE);
        let mut bytes = MAGIC.to_vec();
        bytes.extend((1u64 << 62).to_le_bytes());
        std::fs::write(&p, &bytes).unwrap();
        let e = read(&p, 4).unwrap_err().to_string();
        assert!(
            e.contains("order.bin") && e.contains("count 4611686018427387904"),
            "{e}"
        );
    }
}
