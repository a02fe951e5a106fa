//! `members.bin`: every cluster's member ids, for the IVF-PQ search of a
//! cluster index built with codes (`ivf_codes`).
//!
//! The decoupled layout (`layout/ivf.rs`) reads a cluster's vectors: one
//! large read of its group, one small read per member stored elsewhere
//! (paper 002 §6). On an SSD a cluster read is megabytes a query, so an
//! index built with codes keeps, in RAM, each cluster's members and their
//! PQ codes (`codes.bin`), scores the probed clusters' members on the codes
//! and reads only the best few vectors to re-rank — the IVF-PQ with
//! refinement of faiss's `IndexIVFPQ` + `IndexRefine` and of LanceDB's
//! `IVF_PQ` with `refine_factor`, over the same stored-once vectors.
//!
//! Layout (little-endian): magic `STRVMEM1`, u32 k, u64 n, u64 total
//! memberships, (k + 1) u64 offsets (cluster j's ids are
//! `ids[offsets[j]..offsets[j + 1]]`), then `total` u32 ids, each below n,
//! ascending within a cluster.

use crate::error::{Error, FileContext, Result};
use std::io::Write;
use std::path::Path;

pub const MEMBERS_FILE: &str = "members.bin";
const MAGIC: &[u8; 8] = b"STRVMEM1";

/// Each cluster's member ids, held in RAM.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterMembers {
    offsets: Vec<u64>,
    ids: Vec<u32>,
}

impl ClusterMembers {
    /// From each cluster's members (ids ascending, as
    /// `ivf_assign::Assignment::members` holds them).
    pub fn new(members: &[Vec<u32>]) -> Self {
        let mut offsets = Vec::with_capacity(members.len() + 1);
        offsets.push(0u64);
        let mut ids = Vec::with_capacity(members.iter().map(Vec::len).sum());
        for m in members {
            ids.extend_from_slice(m);
            offsets.push(ids.len() as u64);
        }
        ClusterMembers { offsets, ids }
    }

    pub fn clusters(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Cluster j's member ids.
    pub fn of(&self, j: usize) -> &[u32] {
        &self.ids[self.offsets[j] as usize..self.offsets[j + 1] as usize]
    }

    pub fn resident_bytes(&self) -> usize {
        8 * self.offsets.len() + 4 * self.ids.len()
    }

    pub fn write(&self, out: &mut impl Write, n: usize) -> std::io::Result<()> {
        out.write_all(MAGIC)?;
        out.write_all(&(self.clusters() as u32).to_le_bytes())?;
        out.write_all(&(n as u64).to_le_bytes())?;
        out.write_all(&(self.ids.len() as u64).to_le_bytes())?;
        for &o in &self.offsets {
            out.write_all(&o.to_le_bytes())?;
        }
        for &id in &self.ids {
            out.write_all(&id.to_le_bytes())?;
        }
        Ok(())
    }

    /// Reads `path` for an index of `n` vectors in `k` clusters, checking
    /// every field: a bad file is an error naming the field, never a panic
    /// or an out-of-range id later.
    pub fn read(path: &Path, n: usize, k: usize) -> Result<Self> {
        let bytes = std::fs::read(path).at("read", path)?;
        let bad = |field: &str, expected: String, found: String| {
            Error::index(path, field, expected, found)
        };
        if bytes.len() < 28 || &bytes[..8] != MAGIC {
            return Err(bad("magic", "\"STRVMEM1\"".into(), "other bytes".into()));
        }
        let u64_at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().expect("8 bytes"));
        let fk = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes")) as usize;
        let (fn_, total) = (u64_at(12) as usize, u64_at(20) as usize);
        if fk != k {
            return Err(bad(
                "clusters",
                format!("{k} (clusters.bin)"),
                fk.to_string(),
            ));
        }
        if fn_ != n {
            return Err(bad("n", format!("{n} (manifest)"), fn_.to_string()));
        }
        // In u128: a damaged membership count must not wrap the size.
        let want = 28 + 8 * (k as u128 + 1) + 4 * total as u128;
        if bytes.len() as u128 != want {
            return Err(bad(
                "file size",
                format!("{want} bytes ({k} clusters, {total} memberships)"),
                bytes.len().to_string(),
            ));
        }
        let offsets: Vec<u64> = (0..=k).map(|j| u64_at(28 + 8 * j)).collect();
        for j in 0..k {
            if offsets[j] > offsets[j + 1] || offsets[j + 1] > total as u64 {
                return Err(bad(
                    &format!("offset of cluster {}", j + 1),
                    format!("within {}..={total}", offsets[j]),
                    offsets[j + 1].to_string(),
                ));
            }
        }
        if offsets[0] != 0 || offsets[k] != total as u64 {
            return Err(bad(
                "offsets",
                format!("from 0 to {total}"),
                format!("from {} to {}", offsets[0], offsets[k]),
            ));
        }
        let at = 28 + 8 * (k + 1);
        let ids: Vec<u32> = bytes[at..]
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect();
        if let Some((i, &id)) = ids.iter().enumerate().find(|(_, &id)| id as usize >= n) {
            return Err(bad(
                &format!("member {i}"),
                format!("an id below {n}"),
                id.to_string(),
            ));
        }
        Ok(ClusterMembers { offsets, ids })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(30))]
        /// Written and read back, every cluster gives its members exactly.
        #[test]
        fn members_read_back(lists in proptest::collection::vec(
            proptest::collection::btree_set(0u32..500, 0..40), 1..30)) {
            let members: Vec<Vec<u32>> = lists.into_iter().map(|s| s.into_iter().collect()).collect();
            let m = ClusterMembers::new(&members);
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join(MEMBERS_FILE);
            let mut bytes = vec![];
            m.write(&mut bytes, 500).unwrap();
            std::fs::write(&path, &bytes).unwrap();
            let back = ClusterMembers::read(&path, 500, members.len()).unwrap();
            prop_assert_eq!(&back, &m);
            for (j, want) in members.iter().enumerate() {
                prop_assert_eq!(back.of(j), &want[..]);
            }
        }
    }

    #[test]
    fn a_bad_file_names_its_field() {
        let m = ClusterMembers::new(&[vec![0, 3], vec![1, 2, 4]]);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(MEMBERS_FILE);
        let mut bytes = vec![];
        m.write(&mut bytes, 5).unwrap();
        std::fs::write(&path, &bytes).unwrap();
        let e = |n, k| ClusterMembers::read(&path, n, k).unwrap_err().to_string();
        assert!(e(5, 3).contains("clusters") && e(5, 3).contains("3 (clusters.bin)"));
        assert!(e(6, 2).contains("6 (manifest)"), "{}", e(6, 2));
        let mut wrong = bytes.clone();
        let last = wrong.len() - 4;
        wrong[last..].copy_from_slice(&9u32.to_le_bytes());
        std::fs::write(&path, &wrong).unwrap();
        let got = ClusterMembers::read(&path, 5, 2).unwrap_err().to_string();
        assert!(got.contains("member 4") && got.contains('9'), "{got}");
        std::fs::write(&path, &bytes[..bytes.len() - 2]).unwrap();
        let got = ClusterMembers::read(&path, 5, 2).unwrap_err().to_string();
        assert!(got.contains("file size"), "{got}");
    }
}
