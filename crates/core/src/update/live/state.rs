//! What a live index holds between two generations: the generation
//! itself, the delta of inserted vectors, the deleted rows, the maps from
//! the caller's ids to both, and the log records applied (`live.rs` keeps
//! it behind its lock). Records are checked here before they are logged,
//! and applied here once they are.

use super::*;

pub(super) struct State {
    pub(super) base: Index,
    pub(super) delta: Delta,
    pub(super) deleted: Tombstones,
    /// Generation rows by id, for an index built with ids (made at open).
    pub(super) base_rows: Option<HashMap<i64, u32>>,
    /// Live delta rows by id.
    pub(super) delta_rows: HashMap<i64, u32>,
    /// The id an insert without ids gives its first vector.
    pub(super) next_id: i64,
    /// The last log record applied.
    pub(super) seq: u64,
    /// Batch ids applied (since the generation, and the newest the
    /// generation carried over), with their results.
    pub(super) batches: HashMap<u64, Applied>,
}

impl State {
    /// The state of `base` with its log (in `dir`) replayed, and the log's
    /// offset past its last record.
    pub(super) fn replayed(base: Index, dir: &Path) -> Result<(State, u64)> {
        let mut state = State::new(base, crate::update::batches::read(dir)?);
        let scan = wal::read(&dir.join(WAL_FILE), state.base.dim())?;
        state.replay(&scan.records, dir)?;
        Ok((state, scan.end))
    }

    /// The state of `base` before its log: `batches` are those the
    /// generation carries over (`batches.rs`).
    pub(super) fn new(base: Index, batches: HashMap<u64, Applied>) -> State {
        let n = base.len();
        let base_rows = base.ids().map(|map| {
            (0..n as u32)
                .map(|r| (map.get(r), r))
                .collect::<HashMap<_, _>>()
        });
        let next_id = match &base_rows {
            Some(rows) => rows.keys().copied().max().map_or(0, |m| m + 1),
            None => n as i64,
        };
        State {
            delta: Delta::new(base.dim(), base.metric()),
            deleted: Tombstones::new(n),
            base_rows,
            delta_rows: HashMap::new(),
            next_id,
            seq: base.manifest.update_seq,
            batches,
            base,
        }
    }

    /// What the delta's share holds. The generation's id map (`base_rows`,
    /// ~24 bytes a row) is the generation's, made at open like its other
    /// parts, and not charged here.
    pub(super) fn update_bytes(&self) -> usize {
        self.delta.resident_bytes()
            + self.deleted.resident_bytes()
            + self.delta_rows.capacity() * 24
    }

    /// What the generation is asked for a search of `params` (k raised so
    /// that k live answers remain, see `base_k`, and the list with it, as
    /// every search needs L >= k: for a cluster index, the clusters
    /// probed), and the delta's list size: the search's L, or for a
    /// cluster index (whose L counts clusters) a list of its own.
    pub(super) fn base_params(&self, params: &SearchParams) -> (SearchParams, usize) {
        let kb = base_k(params.k, self.deleted.len(), self.base.len());
        let delta_l = match self.base.plan.graph() {
            true => params.complexity,
            false => DELTA_LIST_FOR_CLUSTERS.max(2 * params.k),
        };
        let p = SearchParams {
            k: kb,
            complexity: params.complexity.max(kb),
            ..params.clone()
        };
        (p, delta_l)
    }

    /// The generation row holding `id`, if it is live.
    pub(super) fn base_row(&self, id: i64) -> Option<u32> {
        let row = match &self.base_rows {
            Some(rows) => *rows.get(&id)?,
            None => u32::try_from(id)
                .ok()
                .filter(|&r| (r as usize) < self.base.len())?,
        };
        (!self.deleted.contains(row)).then_some(row)
    }

    pub(super) fn is_live(&self, id: i64) -> bool {
        self.delta_rows.contains_key(&id) || self.base_row(id).is_some()
    }

    /// Refuses labels that do not fit a batch of `n` vectors or this index.
    pub(super) fn check_labels(&self, n: usize, labels: &[Vec<u32>]) -> Result<()> {
        if labels.is_empty() {
            return Ok(());
        }
        let Some(known) = self.base.labels() else {
            return Err(Error::argument(
                "labels to insert",
                "an index built with labels (build --labels)",
                "an index without labels",
            ));
        };
        // An index with names names every label it holds (a merge writes
        // them with the labels): a new label needs a name first.
        let named = known.names().len() as u32;
        if named > 0 {
            let bad = labels
                .iter()
                .enumerate()
                .find_map(|(i, l)| l.iter().find(|&&x| x >= named).map(|&x| (i, x)));
            if let Some((i, x)) = bad {
                return Err(Error::argument(
                    format!("labels of row {i}"),
                    format!("label ids below {named} (the labels the index names)"),
                    x,
                ));
            }
        }
        if labels.len() != n {
            return Err(Error::argument(
                "labels to insert",
                format!("{n} sets (one a vector)"),
                labels.len(),
            ));
        }
        Ok(())
    }

    /// Refuses a batch that cannot be inserted as it is, naming the row and
    /// the value; returns the ids it gets.
    pub(super) fn check_insert(&self, vectors: &[f32], ids: Option<&[i64]>) -> Result<Vec<i64>> {
        let dim = self.base.dim();
        if vectors.is_empty() || !vectors.len().is_multiple_of(dim) {
            return Err(Error::argument(
                "vectors to insert",
                format!("rows of dimension {dim} (the index's)"),
                format!("{} values", vectors.len()),
            ));
        }
        let n = vectors.len() / dim;
        if let Some((i, x)) = vectors.iter().enumerate().find(|(_, x)| !x.is_finite()) {
            return Err(Error::argument(
                format!("vector to insert, row {} component {}", i / dim, i % dim),
                "a finite number",
                x,
            ));
        }
        let ids: Vec<i64> = match ids {
            Some(ids) if ids.len() != n => {
                return Err(Error::argument(
                    "ids to insert",
                    format!("{n} (one a vector)"),
                    ids.len(),
                ));
            }
            Some(ids) => ids.to_vec(),
            None => (0..n as i64).map(|i| self.next_id + i).collect(),
        };
        let mut seen = HashMap::with_capacity(n);
        for (i, &id) in ids.iter().enumerate() {
            if id == NO_ID {
                return Err(Error::argument(
                    format!("id of row {i}"),
                    "any id but -1 (which marks an empty result)",
                    id,
                ));
            }
            if let Some(j) = seen.insert(id, i) {
                return Err(Error::argument(
                    format!("id of row {i}"),
                    "ids unique within a batch",
                    format!("{id}, also the id of row {j}"),
                ));
            }
            if self.is_live(id) {
                return Err(Error::argument(
                    format!("id of row {i}"),
                    "an id not in the index (delete it first to replace it)",
                    format!("{id}, which is live"),
                ));
            }
        }
        Ok(ids)
    }

    /// Applies a logged record (it was checked before it was logged).
    pub(super) fn apply(&mut self, r: &Record) -> Applied {
        let mut applied = Applied {
            seq: r.seq,
            count: 0,
            missing: 0,
            repeated: false,
            first_id: NO_ID,
        };
        match &r.op {
            Op::Insert {
                ids,
                vectors,
                labels,
            } => {
                self.insert_rows(ids, vectors, labels);
                applied.count = ids.len();
                applied.first_id = ids.first().copied().unwrap_or(NO_ID);
            }
            Op::Delete { ids } => {
                for &id in ids {
                    if let Some(row) = self.delta_rows.remove(&id) {
                        self.delta.remove(row);
                    } else if let Some(row) = self.base_row(id) {
                        self.deleted.insert(row);
                    } else {
                        applied.missing += 1;
                        continue;
                    }
                    applied.count += 1;
                }
            }
        }
        self.seq = r.seq;
        if r.batch != 0 {
            self.batches.insert(r.batch, applied);
        }
        applied
    }

    /// Puts logged vectors into the delta under their ids, [`APPLY_CHUNK`]
    /// at a time: the writer applies a batch in the same chunks (each under
    /// its own hold of the lock), so a replay of the log makes the same
    /// delta graph, and a reopen answers as the writer did.
    pub(super) fn insert_rows(&mut self, ids: &[i64], vectors: &[f32], labels: &[Vec<u32>]) {
        let dim = self.base.dim();
        for (i, (c, v)) in ids
            .chunks(APPLY_CHUNK)
            .zip(vectors.chunks(APPLY_CHUNK * dim))
            .enumerate()
        {
            let l = match labels.is_empty() {
                true => &[][..],
                false => &labels[i * APPLY_CHUNK..i * APPLY_CHUNK + c.len()],
            };
            let first = self.delta.insert(c, v, l);
            for (i, &id) in c.iter().enumerate() {
                self.delta_rows.insert(id, first + i as u32);
                self.next_id = self.next_id.max(id.saturating_add(1));
            }
        }
    }

    /// Applies logged records in order (at open, or those another writer
    /// logged); an insert of a live id there means the log and the
    /// generation disagree.
    pub(super) fn replay(&mut self, records: &[Record], dir: &Path) -> Result<()> {
        for r in records {
            if r.seq <= self.seq {
                continue;
            }
            if let Op::Insert { ids, .. } = &r.op {
                if let Some(&id) = ids.iter().find(|&&id| self.is_live(id)) {
                    return Err(Error::index(
                        &dir.join(WAL_FILE),
                        format!("record {}", r.seq),
                        "inserts of ids not in the index",
                        format!("id {id}, already live"),
                    ));
                }
            }
            self.apply(r);
        }
        Ok(())
    }
}
