//! A collection that changes (issue #55): each segment is an index with
//! its own log, delta and merges (`update::live`); this routes a write to
//! the segments that take it.
//!
//! - An insert goes to one segment a vector: a k-means collection's
//!   nearest centroid (where its searches will look for it); a range
//!   collection, whose searches visit every segment, the id's remainder by
//!   the segment count, which keeps segments even and sends a retried
//!   batch where it went the first time.
//! - A delete goes to the segments holding its ids.
//! - Global ids stay unique: an insert of an id live in any segment is
//!   refused, naming it.
//!
//! A batch id makes a retry safe across segments: each segment applies its
//! part of a batch once, so a batch that failed half-way (one segment's
//! disk, say) is completed by its retry, and one that succeeded is
//! answered again. collection.json is not rewritten: its counts are the
//! build's, and `len` counts what is live.

use super::open::Collection;
use super::route::{route, Probe};
use super::Partition;
use crate::error::{Error, Result};
use crate::index::ids::NO_ID;
use crate::progress::Progress;
use crate::update::live::Applied;
use crate::update::merge::Merged;
use std::collections::HashMap;
use std::sync::Mutex;

/// One writer at a time inside a process (each segment's writer lock keeps
/// other processes out): ids given by the collection must not be given
/// twice, and a batch's parts go to the segments together.
static WRITER: Mutex<()> = Mutex::new(());

impl Collection {
    /// Inserts `vectors` (row-major) with global `ids`, or with the next
    /// unused ones (one past the largest any segment has held); returns once
    /// every segment that takes a part has logged and fsynced it.
    pub fn add(&self, vectors: &[f32], ids: Option<&[i64]>, batch: u64) -> Result<Applied> {
        self.add_labelled(vectors, ids, &[], batch)
    }

    /// [`Self::add`] with a label set a vector (`labels`, empty: none),
    /// each logged with its vector in the segment that takes it
    /// (`LiveIndex::add_labelled`): a filter matches it at once, and the
    /// segment's merge writes it. A collection built with label names
    /// takes only ids it names.
    pub fn add_labelled(
        &self,
        vectors: &[f32],
        ids: Option<&[i64]>,
        labels: &[Vec<u32>],
        batch: u64,
    ) -> Result<Applied> {
        let _one = WRITER.lock().unwrap_or_else(|e| e.into_inner());
        let dim = self.dim();
        if vectors.is_empty() || !vectors.len().is_multiple_of(dim) {
            return Err(Error::argument(
                "vectors to insert",
                format!("rows of dimension {dim} (the collection's)"),
                format!("{} values", vectors.len()),
            ));
        }
        let n = vectors.len() / dim;
        let ids: Vec<i64> = match ids {
            Some(ids) => ids.to_vec(),
            None => {
                let next = self.segments.iter().map(|s| s.next_id()).max().unwrap_or(0);
                (0..n as i64).map(|i| next + i).collect()
            }
        };
        if ids.len() != n {
            return Err(Error::argument(
                "ids to insert",
                format!("{n} (one a vector)"),
                ids.len(),
            ));
        }
        if !labels.is_empty() && labels.len() != n {
            return Err(Error::argument(
                "labels to insert",
                format!("{n} (one set a vector), or none"),
                labels.len(),
            ));
        }
        let target = self.insert_targets(vectors, &ids)?;
        let done: Vec<Option<Applied>> = self
            .segments
            .iter()
            .map(|s| s.batch_applied(batch))
            .collect();
        self.check_unique(&ids, &target, &done)?;
        let mut parts = Vec::new();
        for (s, seg) in self.segments.iter().enumerate() {
            let rows: Vec<usize> = (0..n).filter(|&i| target[i] == s).collect();
            if rows.is_empty() {
                continue;
            }
            if let Some(a) = done[s] {
                parts.push(Applied {
                    repeated: true,
                    ..a
                });
                continue;
            }
            let part_ids: Vec<i64> = rows.iter().map(|&i| ids[i]).collect();
            let mut part = Vec::with_capacity(rows.len() * dim);
            for &i in &rows {
                part.extend_from_slice(&vectors[i * dim..(i + 1) * dim]);
            }
            let part_labels: Vec<Vec<u32>> = match labels.is_empty() {
                true => Vec::new(),
                false => rows.iter().map(|&i| labels[i].clone()).collect(),
            };
            let a = seg
                .add_labelled(&part, Some(&part_ids), &part_labels, batch)
                .map_err(|e| self.segment_error(s, e))?;
            parts.push(a);
        }
        Ok(Applied {
            first_id: ids[0],
            ..combined(&parts)
        })
    }

    /// Deletes the global `ids`; those no segment holds are counted in
    /// `missing`.
    pub fn remove(&self, ids: &[i64], batch: u64) -> Result<Applied> {
        let _one = WRITER.lock().unwrap_or_else(|e| e.into_inner());
        let mut parts = Vec::new();
        for (s, seg) in self.segments.iter().enumerate() {
            if let Some(a) = seg.batch_applied(batch) {
                parts.push(Applied {
                    repeated: true,
                    ..a
                });
                continue;
            }
            let mine: Vec<i64> = ids.iter().copied().filter(|&id| seg.contains(id)).collect();
            if !mine.is_empty() {
                parts.push(
                    seg.remove(&mine, batch)
                        .map_err(|e| self.segment_error(s, e))?,
                );
            }
        }
        let mut out = combined(&parts);
        out.missing = ids.len() - out.count.min(ids.len());
        out.first_id = NO_ID;
        Ok(out)
    }

    /// Merges every segment that has updates into its next generation.
    pub fn merge(&self, threads: usize, progress: &dyn Progress) -> Result<Vec<Merged>> {
        let _one = WRITER.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = Vec::new();
        for (s, seg) in self.segments.iter().enumerate() {
            if seg.pending() != (0, 0) {
                out.push(
                    seg.merge(threads, progress)
                        .map_err(|e| self.segment_error(s, e))?,
                );
            }
        }
        Ok(out)
    }

    /// Vectors inserted and generation rows deleted since the segments'
    /// last merges, summed.
    pub fn pending(&self) -> (usize, usize) {
        self.segments.iter().fold((0, 0), |(a, d), s| {
            let (x, y) = s.pending();
            (a + x, d + y)
        })
    }

    /// The segment each vector goes to (see the module's doc).
    fn insert_targets(&self, vectors: &[f32], ids: &[i64]) -> Result<Vec<usize>> {
        let segments = self.segments.len();
        if self.manifest.partition == Partition::Range || segments == 1 {
            return Ok(ids
                .iter()
                .map(|&id| id.rem_euclid(segments as i64) as usize)
                .collect());
        }
        let routes = route(
            self.manifest.partition,
            self.centroids(),
            segments,
            self.metric(),
            vectors,
            self.dim(),
            &Probe::nearest(Some(1)),
        )?;
        let mut target = vec![0; ids.len()];
        for (s, rows) in routes.iter().enumerate() {
            for r in rows {
                target[r.row as usize] = s;
            }
        }
        Ok(target)
    }

    /// Refuses a batch whose ids repeat, or name a vector live in any
    /// segment (but those of segments that already applied this batch: a
    /// retry).
    fn check_unique(&self, ids: &[i64], target: &[usize], done: &[Option<Applied>]) -> Result<()> {
        let mut seen = HashMap::with_capacity(ids.len());
        for (i, &id) in ids.iter().enumerate() {
            if let Some(j) = seen.insert(id, i) {
                return Err(Error::argument(
                    format!("id of row {i}"),
                    "ids unique within a batch",
                    format!("{id}, also the id of row {j}"),
                ));
            }
            if done[target[i]].is_some() {
                continue;
            }
            if let Some(s) = self.segments.iter().position(|s| s.contains(id)) {
                return Err(Error::argument(
                    format!("id of row {i}"),
                    "an id not in the collection (delete it first to replace it)",
                    format!(
                        "{id}, which is live in segment {}",
                        self.manifest.segments[s].dir
                    ),
                ));
            }
        }
        Ok(())
    }

    /// A segment's failure, naming the segment (its message names its file).
    fn segment_error(&self, s: usize, e: Error) -> Error {
        match e {
            Error::Argument {
                what,
                expected,
                found,
            } => Error::Argument {
                what: format!("segment {}: {what}", self.manifest.segments[s].dir),
                expected,
                found,
            },
            other => other,
        }
    }
}

/// The parts of one batch as one answer: counts summed, the largest log
/// sequence number, repeated only if every part was.
fn combined(parts: &[Applied]) -> Applied {
    Applied {
        seq: parts.iter().map(|a| a.seq).max().unwrap_or(0),
        count: parts.iter().map(|a| a.count).sum(),
        missing: 0,
        repeated: !parts.is_empty() && parts.iter().all(|a| a.repeated),
        first_id: NO_ID,
    }
}
