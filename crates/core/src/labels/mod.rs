//! Labels on vectors and the filters over them (issue #56).
//!
//! Every vector of an index may carry a sparse set of u32 labels (a
//! tenant, a language, a category ...). A build takes them as a
//! big-ann-benchmarks `.spmat` matrix (`spmat.rs`), or from a table's
//! column, or from Python lists; the index stores them as per-row lists
//! and one compressed posting list a label (`store.rs`: the `roaring`
//! crate's bitmaps), mapped and outside the memory budget. A search's
//! filter is an expression over them (`filter.rs`) whose matching rows
//! are a bitmap: its size is the filter's selectivity, which decides how
//! the query is searched.

pub mod filter;
pub mod spmat;
pub mod store;

pub use filter::Expr;
pub use store::{Labels, LABELS_FILE, LABEL_NAMES_FILE};

use crate::error::{Error, Result};
use roaring::RoaringBitmap;

/// The labels a build writes: one set a row, and, when known, the
/// labels' names (one a label id, in order; a filter may use either).
#[derive(Clone, Copy, Debug)]
pub struct LabelInput<'a> {
    pub sets: &'a LabelSets,
    pub names: Option<&'a [String]>,
}

impl LabelInput<'_> {
    /// Label ids are 0..this: every label a row has, and every name.
    pub fn n_labels(&self) -> u32 {
        self.sets
            .n_labels
            .max(self.names.map_or(0, |n| n.len() as u32))
    }

    /// One set a vector of the `n`, names (if any) one a label and unique;
    /// `source` names the labels in the error.
    pub fn check(&self, n: usize, source: &str) -> Result<()> {
        if self.sets.len() != n {
            return Err(Error::argument(
                format!("labels ({source})"),
                format!("one label set a vector ({n})"),
                format!("{} sets", self.sets.len()),
            ));
        }
        if let Some(names) = self.names {
            if (names.len() as u32) < self.sets.n_labels {
                let used = self.sets.indices.iter().copied().max().unwrap_or(0);
                return Err(Error::argument(
                    format!("label names ({source})"),
                    format!("a name for every label used (label {used} is)"),
                    format!("{} names", names.len()),
                ));
            }
            let mut seen = std::collections::HashMap::with_capacity(names.len());
            for (i, name) in names.iter().enumerate() {
                let bad = name.is_empty() || name.contains(['\t', '\n', '\r']);
                if bad {
                    return Err(Error::argument(
                        format!("label name {i} ({source})"),
                        "a non-empty name without tabs or line breaks",
                        format!("{name:?}"),
                    ));
                }
                if let Some(j) = seen.insert(name.as_str(), i) {
                    return Err(Error::argument(
                        format!("label name {i} ({source})"),
                        "names unique",
                        format!("{name:?}, also the name of label {j}"),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Label sets of rows in memory (what a build writes, a merge carries):
/// CSR, each row's labels sorted and without repeats.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSets {
    /// Labels are 0..n_labels.
    pub n_labels: u32,
    /// Row r's labels are `indices[indptr[r]..indptr[r + 1]]`.
    pub indptr: Vec<u64>,
    pub indices: Vec<u32>,
}

impl LabelSets {
    /// Rows given as lists of label ids (sorted and deduplicated here).
    pub fn from_rows<'a>(rows: impl IntoIterator<Item = &'a [u32]>, n_labels: u32) -> LabelSets {
        let mut out = LabelSets {
            n_labels,
            indptr: vec![0],
            indices: Vec::new(),
        };
        for r in rows {
            out.push(r);
        }
        out
    }

    /// Appends a row (sorted and deduplicated here); labels past
    /// `n_labels` raise it.
    pub fn push(&mut self, row: &[u32]) {
        let start = self.indices.len();
        self.indices.extend_from_slice(row);
        self.indices[start..].sort_unstable();
        let mut keep = start;
        for i in start..self.indices.len() {
            if i == start || self.indices[i] != self.indices[keep - 1] {
                self.indices[keep] = self.indices[i];
                keep += 1;
            }
        }
        self.indices.truncate(keep);
        if let Some(&max) = self.indices[start..].last() {
            self.n_labels = self.n_labels.max(max + 1);
        }
        self.indptr.push(self.indices.len() as u64);
    }

    /// Rows held.
    pub fn len(&self) -> usize {
        self.indptr.len().saturating_sub(1)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Row `r`'s labels, sorted.
    pub fn row(&self, r: usize) -> &[u32] {
        &self.indices[self.indptr[r] as usize..self.indptr[r + 1] as usize]
    }

    /// The rows of each label.
    pub fn postings(&self) -> Vec<RoaringBitmap> {
        self.postings_of(self.n_labels)
    }

    /// The rows of each label of 0..n_labels (at least `self.n_labels`).
    pub fn postings_of(&self, n_labels: u32) -> Vec<RoaringBitmap> {
        let mut out = vec![RoaringBitmap::new(); n_labels.max(self.n_labels) as usize];
        for r in 0..self.len() {
            for &l in self.row(r) {
                out[l as usize].insert(r as u32);
            }
        }
        out
    }

    /// The rows `keep` (in that order), for a merge that drops rows.
    pub fn select(&self, keep: impl IntoIterator<Item = usize>) -> LabelSets {
        let mut out = LabelSets {
            n_labels: self.n_labels,
            indptr: vec![0],
            indices: Vec::new(),
        };
        for r in keep {
            out.indices.extend_from_slice(self.row(r));
            out.indptr.push(out.indices.len() as u64);
        }
        out
    }
}
