//! The labels an index stores (issue #56): `labels.bin`, mapped and read
//! in place (outside the memory budget, like the OS's page cache: a
//! search touches only the posting lists its filter names), and, when the
//! labels have names, `label_names.tsv`.
//!
//! `labels.bin`, little-endian:
//!
//! | at | what |
//! |---|---|
//! | 0 | magic `SVLABEL1` |
//! | 8 | u32 labels, u32 0 |
//! | 16 | u64 rows |
//! | 24 | u64 nnz |
//! | 32 | u64 indptr[rows + 1]: row r's labels are indices[indptr[r]..indptr[r + 1]] |
//! | | u32 indices[nnz], each row's sorted; zero-padded to 8 bytes |
//! | | u64 count[labels]: the rows a label has |
//! | | u64 offset[labels + 1]: label l's posting list is postings[offset[l]..offset[l + 1]] |
//! | | postings: each label's rows as a serialized Roaring bitmap (the portable format) |
//!
//! `label_names.tsv`: a header `id\tname\tcount`, then a line a label.

use super::LabelSets;
use crate::error::{Error, FileContext, Result};
use roaring::RoaringBitmap;
use std::collections::HashMap;
use std::path::Path;

pub const LABELS_FILE: &str = "labels.bin";
pub const LABEL_NAMES_FILE: &str = "label_names.tsv";
const MAGIC: &[u8; 8] = b"SVLABEL1";
const HEADER: usize = 32;

enum Bytes {
    Map(memmap2::Mmap),
    Owned(Vec<u8>),
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Map(m) => m,
            Bytes::Owned(v) => v,
        }
    }
}

/// An index's labels, opened.
pub struct Labels {
    bytes: Bytes,
    rows: usize,
    n_labels: u32,
    indices_at: usize,
    counts_at: usize,
    offsets_at: usize,
    postings_at: usize,
    names: Vec<String>,
    by_name: HashMap<String, u32>,
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

/// `sets` in `labels.bin`'s layout, with labels 0..n_labels (at least
/// the sets' own).
pub fn encode(sets: &LabelSets, n_labels: u32) -> Vec<u8> {
    let postings = sets.postings_of(n_labels);
    let (rows, nnz, nl) = (sets.len(), sets.indices.len(), postings.len());
    let mut out = Vec::with_capacity(HEADER + 8 * (rows + 1) + 4 * nnz + 16 * nl + 8);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(nl as u32).to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&(rows as u64).to_le_bytes());
    out.extend_from_slice(&(nnz as u64).to_le_bytes());
    sets.indptr
        .iter()
        .for_each(|p| out.extend_from_slice(&p.to_le_bytes()));
    sets.indices
        .iter()
        .for_each(|c| out.extend_from_slice(&c.to_le_bytes()));
    out.resize(out.len().next_multiple_of(8), 0);
    postings
        .iter()
        .for_each(|p| out.extend_from_slice(&p.len().to_le_bytes()));
    let mut offset = 0u64;
    out.extend_from_slice(&offset.to_le_bytes());
    for p in &postings {
        offset += p.serialized_size() as u64;
        out.extend_from_slice(&offset.to_le_bytes());
    }
    for p in &postings {
        p.serialize_into(&mut out).expect("a Vec takes every byte");
    }
    out
}

/// `label_names.tsv`: the header, then `id\tname\tcount` a label.
pub fn names_tsv(names: &[String], sets: &LabelSets) -> String {
    let mut counts = vec![0u64; names.len().max(sets.n_labels as usize)];
    sets.indices.iter().for_each(|&l| counts[l as usize] += 1);
    let mut text = String::from("id\tname\tcount\n");
    for (i, name) in names.iter().enumerate() {
        text.push_str(&format!("{i}\t{name}\t{}\n", counts[i]));
    }
    text
}

/// Writes `sets` (and `names`, one a label, when given) into `dir`.
pub fn write(dir: &Path, sets: &LabelSets, names: Option<&[String]>) -> Result<()> {
    let n_labels = sets.n_labels.max(names.map_or(0, |n| n.len() as u32));
    let path = dir.join(LABELS_FILE);
    std::fs::write(&path, encode(sets, n_labels)).at("write the labels", &path)?;
    if let Some(names) = names {
        let path = dir.join(LABEL_NAMES_FILE);
        std::fs::write(&path, names_tsv(names, sets)).at("write the label names", &path)?;
    }
    Ok(())
}

impl Labels {
    /// The labels of the index in `dir`, which has `rows` rows.
    pub fn open(dir: &Path, rows: usize) -> Result<Labels> {
        let path = dir.join(LABELS_FILE);
        let file = std::fs::File::open(&path).at("open the labels", &path)?;
        // The index's files are not changed in place (a rebuild or merge
        // publishes a new directory): the io crate's read-only map.
        let map = stratavec_io::map_readonly(&file).at("map the labels", &path)?;
        let names = read_names(dir)?;
        Labels::from_bytes(Bytes::Map(map), &path, rows, names)
    }

    /// Labels held in memory (tests, and a filter over labels not yet
    /// written).
    pub fn from_sets(sets: &LabelSets, names: Option<Vec<String>>) -> Labels {
        let rows = sets.len();
        let n_labels = sets
            .n_labels
            .max(names.as_ref().map_or(0, |n| n.len() as u32));
        Labels::from_bytes(
            Bytes::Owned(encode(sets, n_labels)),
            Path::new("<memory>"),
            rows,
            names,
        )
        .expect("encode writes what from_bytes reads")
    }

    fn from_bytes(
        bytes: Bytes,
        path: &Path,
        rows: usize,
        names: Option<Vec<String>>,
    ) -> Result<Labels> {
        let bad = |field: &str, expected: String, found: String| {
            Error::index(path, field, expected, found)
        };
        let b: &[u8] = &bytes;
        if b.len() < HEADER || &b[..8] != MAGIC {
            return Err(bad(
                "magic",
                "SVLABEL1".into(),
                format!("{:?}", &b[..b.len().min(8)]),
            ));
        }
        let n_labels = u32_at(b, 8);
        let (n, nnz) = (u64_at(b, 16) as usize, u64_at(b, 24) as usize);
        if n != rows {
            return Err(bad(
                "rows",
                format!("{rows} (the index's vectors)"),
                n.to_string(),
            ));
        }
        let indices_at = HEADER + 8 * (n + 1);
        let counts_at = (indices_at + 4 * nnz).next_multiple_of(8);
        let offsets_at = counts_at + 8 * n_labels as usize;
        let postings_at = offsets_at + 8 * (n_labels as usize + 1);
        if b.len() < postings_at {
            return Err(bad(
                "file size",
                format!("at least {postings_at} bytes"),
                format!("{} bytes", b.len()),
            ));
        }
        let end = postings_at as u64 + u64_at(b, postings_at - 8);
        if b.len() as u64 != end {
            return Err(bad(
                "file size",
                format!("{end} bytes (its offsets say)"),
                format!("{} bytes", b.len()),
            ));
        }
        if u64_at(b, HEADER + 8 * n) != nnz as u64 {
            return Err(bad(
                &format!("indptr[{n}]"),
                format!("nnz ({nnz})"),
                u64_at(b, HEADER + 8 * n).to_string(),
            ));
        }
        let names = names.unwrap_or_default();
        if !names.is_empty() && names.len() != n_labels as usize {
            return Err(bad(
                LABEL_NAMES_FILE,
                format!("{n_labels} names (one a label)"),
                names.len().to_string(),
            ));
        }
        let by_name = names
            .iter()
            .enumerate()
            .map(|(i, s)| (s.clone(), i as u32))
            .collect();
        Ok(Labels {
            bytes,
            rows: n,
            n_labels,
            indices_at,
            counts_at,
            offsets_at,
            postings_at,
            names,
            by_name,
        })
    }

    /// Rows (vectors) labelled.
    pub fn len(&self) -> usize {
        self.rows
    }

    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Labels are 0..n_labels.
    pub fn n_labels(&self) -> u32 {
        self.n_labels
    }

    /// Row `r`'s labels, sorted.
    pub fn row(&self, r: usize) -> Vec<u32> {
        let (from, to) = (
            u64_at(&self.bytes, HEADER + 8 * r),
            u64_at(&self.bytes, HEADER + 8 * (r + 1)),
        );
        (from as usize..to as usize)
            .map(|j| u32_at(&self.bytes, self.indices_at + 4 * j))
            .collect()
    }

    /// The rows label `l` has (0 for a label out of range).
    pub fn count(&self, l: u32) -> u64 {
        match l < self.n_labels {
            true => u64_at(&self.bytes, self.counts_at + 8 * l as usize),
            false => 0,
        }
    }

    /// Label `l`'s rows (empty out of range).
    pub fn posting(&self, l: u32) -> RoaringBitmap {
        if l >= self.n_labels {
            return RoaringBitmap::new();
        }
        let at = self.offsets_at + 8 * l as usize;
        let (from, to) = (
            u64_at(&self.bytes, at) as usize,
            u64_at(&self.bytes, at + 8) as usize,
        );
        let b = &self.bytes[self.postings_at + from..self.postings_at + to];
        // Written by `encode` and covered by the manifest's sha256: a bad
        // list here is a damaged file, which `verify` names.
        RoaringBitmap::deserialize_from(b).unwrap_or_default()
    }

    pub fn id_of(&self, name: &str) -> Option<u32> {
        self.by_name.get(name).copied()
    }

    pub fn has_names(&self) -> bool {
        !self.names.is_empty()
    }

    pub fn name(&self, l: u32) -> Option<&str> {
        self.names.get(l as usize).map(String::as_str)
    }

    /// Every row's labels in memory (a merge's input).
    pub fn to_sets(&self) -> LabelSets {
        LabelSets::from_rows_owned((0..self.rows).map(|r| self.row(r)), self.n_labels)
    }

    /// The names, one a label (empty without names).
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Bytes held in RAM besides the mapped file: the name lookup.
    pub fn resident_bytes(&self) -> usize {
        self.names.iter().map(|s| 2 * s.len() + 64).sum()
    }
}

impl LabelSets {
    fn from_rows_owned(rows: impl IntoIterator<Item = Vec<u32>>, n_labels: u32) -> LabelSets {
        let mut out = LabelSets {
            n_labels,
            indptr: vec![0],
            indices: Vec::new(),
        };
        for r in rows {
            out.push(&r);
        }
        out.n_labels = n_labels.max(out.n_labels);
        out
    }
}

/// `label_names.tsv` of `dir`, if there is one.
pub fn read_names(dir: &Path) -> Result<Option<Vec<String>>> {
    let path = dir.join(LABEL_NAMES_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::file("read the label names", &path, e)),
    };
    parse_names(&text, &path).map(Some)
}

/// Names from a `id\tname\tcount` table (ours, or the data sets'
/// `labels.tsv`): line i + 1 must hold id i.
pub fn parse_names(text: &str, path: &Path) -> Result<Vec<String>> {
    let mut names = Vec::new();
    for (i, line) in text.lines().enumerate().skip(1) {
        if line.is_empty() {
            continue;
        }
        let mut f = line.split('\t');
        let (id, name) = (f.next().unwrap_or(""), f.next());
        let want = names.len();
        match (id.parse::<usize>(), name) {
            (Ok(got), Some(name)) if got == want && !name.is_empty() => {
                names.push(name.to_string())
            }
            _ => {
                return Err(Error::index(
                    path,
                    format!("line {}", i + 1),
                    format!("\"{want}\\t<name>\\t<count>\""),
                    format!("{line:?}"),
                ))
            }
        }
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Every row, count and posting list reads back as the plain
        /// reference (the rows) says, from a file and from memory.
        #[test]
        fn stored_labels_read_back(
            rows in prop::collection::vec(prop::collection::vec(0u32..30, 0..5), 1..60)
        ) {
            let sets = LabelSets::from_rows(rows.iter().map(|r| r.as_slice()), 30);
            let dir = tempfile::tempdir().unwrap();
            let names: Vec<String> = (0..30).map(|i| format!("l:{i}")).collect();
            write(dir.path(), &sets, Some(&names)).unwrap();
            let opened = Labels::open(dir.path(), rows.len()).unwrap();
            for labels in [opened, Labels::from_sets(&sets, None)] {
                prop_assert_eq!(labels.len(), rows.len());
                for (r, row) in rows.iter().enumerate() {
                    prop_assert_eq!(labels.row(r), sets.row(r).to_vec());
                    let _ = row;
                }
                for l in 0..30u32 {
                    let want: Vec<u32> = (0..rows.len() as u32).filter(|&r| rows[r as usize].contains(&l)).collect();
                    prop_assert_eq!(labels.posting(l).iter().collect::<Vec<_>>(), want.clone());
                    prop_assert_eq!(labels.count(l), want.len() as u64);
                }
                prop_assert_eq!(labels.to_sets(), sets.clone());
            }
            let named = Labels::open(dir.path(), rows.len()).unwrap();
            prop_assert_eq!(named.id_of("l:7"), Some(7));
            prop_assert_eq!(named.name(29), Some("l:29"));
        }
    }

    #[test]
    fn a_store_of_other_rows_or_names_is_refused() {
        let sets = LabelSets::from_rows([&[1u32][..], &[0, 2]], 3);
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), &sets, None).unwrap();
        let e = Labels::open(dir.path(), 5).err().unwrap().to_string();
        assert!(
            e.contains("labels.bin") && e.contains("rows") && e.contains('5') && e.contains('2'),
            "{e}"
        );
        std::fs::write(
            dir.path().join(LABEL_NAMES_FILE),
            "id\tname\tcount\n0\ta\t1\n2\tc\t1\n",
        )
        .unwrap();
        let e = Labels::open(dir.path(), 2).err().unwrap().to_string();
        assert!(e.contains("line 3") && e.contains("\"1\\t<name>"), "{e}");
    }
}
