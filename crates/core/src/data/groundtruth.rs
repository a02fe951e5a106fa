//! Ground-truth neighbor files.
//!
//! `.ibin` (big-ann-benchmarks): `u32 nq, u32 k`, then `nq*k` u32 ids, then
//! optionally `nq*k` f32 distances. Nothing in the header says whether the
//! distances are there, so the file size decides: `8 + 4*nq*k` is ids only,
//! `8 + 8*nq*k` has distances, anything else is an error naming both sizes.
//!
//! `.ivecs` (TEXMEX): every row is `i32 k` then `k` i32 ids; no distances.

use std::io::Write;
use std::path::Path;

use super::atomic::{put_f32s, put_u32s, write_atomic};
use super::mapped::{decode_f32, le_u32, map_file};
use super::vecs::parse_shape;
use super::DataError;

/// The true `k` nearest neighbors of `nq` queries, row-major: query `q`'s ids
/// are `ids[q*k..(q+1)*k]`, nearest first; `dists` (if known) likewise.
#[derive(Clone, Debug, PartialEq)]
pub struct GroundTruth {
    pub nq: usize,
    pub k: usize,
    pub ids: Vec<u32>,
    pub dists: Option<Vec<f32>>,
}

impl GroundTruth {
    /// Checks that `ids` (and `dists`) hold `nq * k` entries.
    pub fn new(
        nq: usize,
        k: usize,
        ids: Vec<u32>,
        dists: Option<Vec<f32>>,
    ) -> Result<Self, DataError> {
        let want = nq.checked_mul(k);
        if want != Some(ids.len()) {
            return Err(DataError::argument(
                "ground truth",
                "number of ids",
                format!("nq*k = {nq}*{k}"),
                ids.len(),
            ));
        }
        if let Some(d) = &dists {
            if want != Some(d.len()) {
                return Err(DataError::argument(
                    "ground truth",
                    "number of distances",
                    format!("nq*k = {nq}*{k}"),
                    d.len(),
                ));
            }
        }
        Ok(GroundTruth { nq, k, ids, dists })
    }

    /// Reads `.ivecs` by extension, anything else as `.ibin` (big-ann-benchmarks
    /// ships ground truth as `.bin` or with no extension at all; the size
    /// check rejects files that are not `.ibin`).
    pub fn read(path: impl AsRef<Path>) -> Result<Self, DataError> {
        let path = path.as_ref();
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        if ext.eq_ignore_ascii_case("ivecs") {
            read_ivecs(path)
        } else {
            read_ibin(path)
        }
    }

    /// Query `q`'s ids, nearest first.
    /// The first `nq` queries' truth (all of it when it has no more).
    pub fn first(&self, nq: usize) -> GroundTruth {
        let nq = nq.min(self.nq);
        GroundTruth {
            nq,
            k: self.k,
            ids: self.ids[..nq * self.k].to_vec(),
            dists: self.dists.as_ref().map(|d| d[..nq * self.k].to_vec()),
        }
    }

    pub fn ids_of(&self, q: usize) -> &[u32] {
        &self.ids[q * self.k..(q + 1) * self.k]
    }

    /// Query `q`'s distances, if the ground truth has them.
    pub fn dists_of(&self, q: usize) -> Option<&[f32]> {
        self.dists
            .as_ref()
            .map(|d| &d[q * self.k..(q + 1) * self.k])
    }

    /// Writes `.ibin` (with distances when present), atomically.
    pub fn write_ibin(&self, path: impl AsRef<Path>) -> Result<(), DataError> {
        write_ibin(path, self)
    }
}

fn read_ibin(path: &Path) -> Result<GroundTruth, DataError> {
    let bytes = map_file(path)?;
    if bytes.len() < 8 {
        return Err(DataError::invalid(
            path,
            "header",
            "8 bytes (u32 nq, u32 k)",
            format!("a file of {} bytes", bytes.len()),
        ));
    }
    let (nq, k) = (le_u32(&bytes, 0) as u64, le_u32(&bytes, 4) as u64);
    if nq == 0 {
        return Err(DataError::invalid(path, "nq", "at least 1 query", 0));
    }
    if k == 0 {
        return Err(DataError::invalid(path, "k", "at least 1 neighbor", 0));
    }
    // u128: 8 * nq * k can exceed u64 for a corrupt header.
    let (nqk, found) = (nq as u128 * k as u128, bytes.len() as u128);
    let (ids_only, with_dists) = (8 + 4 * nqk, 8 + 8 * nqk);
    if found != ids_only && found != with_dists {
        return Err(DataError::GroundTruthSize {
            path: path.to_path_buf(),
            nq,
            k,
            ids_only,
            with_dists,
            found: found as u64,
        });
    }
    let m = nqk as usize; // fits: the file holds 4*m bytes
    let ids = bytes[8..8 + 4 * m]
        .chunks_exact(4)
        .map(|c| le_u32(c, 0))
        .collect();
    let dists = (found == with_dists).then(|| decode_f32(&bytes[8 + 4 * m..]));
    Ok(GroundTruth {
        nq: nq as usize,
        k: k as usize,
        ids,
        dists,
    })
}

fn read_ivecs(path: &Path) -> Result<GroundTruth, DataError> {
    let bytes = map_file(path)?;
    let (nq, k) = parse_shape(path, &bytes, 4, "int32")?;
    let mut ids = Vec::with_capacity(nq * k);
    for q in 0..nq {
        let row = &bytes[q * (4 + 4 * k) + 4..(q + 1) * (4 + 4 * k)];
        // Negative ids (-1 padding) become u32::MAX, the padding id.
        ids.extend(row.chunks_exact(4).map(|c| le_u32(c, 0)));
    }
    Ok(GroundTruth {
        nq,
        k,
        ids,
        dists: None,
    })
}

/// Writes `gt` as `.ibin`: ids, then distances if `gt` has them (atomically:
/// `path.tmp`, fsync, rename).
pub fn write_ibin(path: impl AsRef<Path>, gt: &GroundTruth) -> Result<(), DataError> {
    let path = path.as_ref();
    check(path, gt)?;
    write_atomic(path, |w| {
        w.write_all(&(gt.nq as u32).to_le_bytes())?;
        w.write_all(&(gt.k as u32).to_le_bytes())?;
        put_u32s(w, &gt.ids)?;
        match &gt.dists {
            Some(d) => put_f32s(w, d),
            None => Ok(()),
        }
    })
}

/// Writes `gt`'s ids as `.ivecs` (distances are dropped: the format has none).
pub fn write_ivecs(path: impl AsRef<Path>, gt: &GroundTruth) -> Result<(), DataError> {
    let path = path.as_ref();
    check(path, gt)?;
    if gt.k > i32::MAX as usize {
        return Err(DataError::invalid(
            path,
            "k",
            "at most i32::MAX for .ivecs",
            gt.k,
        ));
    }
    write_atomic(path, |w| {
        for q in 0..gt.nq {
            w.write_all(&(gt.k as i32).to_le_bytes())?;
            put_u32s(w, gt.ids_of(q))?;
        }
        Ok(())
    })
}

/// The shape checks of [`GroundTruth::new`], for a struct built by hand.
fn check(path: &Path, gt: &GroundTruth) -> Result<(), DataError> {
    for (field, v) in [("nq", gt.nq), ("k", gt.k)] {
        if v == 0 || v > u32::MAX as usize {
            return Err(DataError::invalid(path, field, "1..=4294967295", v));
        }
    }
    let m = gt.nq * gt.k;
    if gt.ids.len() != m {
        return Err(DataError::invalid(
            path,
            "number of ids",
            format!("nq*k = {m}"),
            gt.ids.len(),
        ));
    }
    match &gt.dists {
        Some(d) if d.len() != m => Err(DataError::invalid(
            path,
            "number of distances",
            format!("nq*k = {m}"),
            d.len(),
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_queries_keep_their_rows() {
        let g = GroundTruth::new(
            3,
            2,
            vec![1, 2, 3, 4, 5, 6],
            Some(vec![0.1, 0.2, 0.3, 0.4, 0.5, 0.6]),
        )
        .unwrap();
        let f = g.first(2);
        assert_eq!((f.nq, f.k), (2, 2));
        assert_eq!(f.ids_of(1), &[3, 4]);
        assert_eq!(f.dists_of(1), Some(&[0.3f32, 0.4][..]));
        assert_eq!(g.first(9).nq, 3, "no more than it has");
    }
}
