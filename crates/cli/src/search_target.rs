//! What `search` (and the bench) can search: an index, or a collection of
//! segment indexes (`stratavec build-collection`), behind one small
//! surface, so a collection is accepted wherever an index is.

use anyhow::Result;
use std::path::Path;
use stratavec::collection::{is_collection, Collection, Probe};
use stratavec::search::Switches;
use stratavec::{BatchResult, Index, OpenOptions, SearchParams};

pub enum Target {
    Index(Box<Index>),
    Collection(Collection),
}

impl Target {
    /// Opens the index or collection at `dir`; a `probe` (`--probe`,
    /// `--probe-shrink`) is refused for an index: it has no segments.
    pub fn open(dir: &Path, opts: &OpenOptions, probe: Option<&Probe>) -> Result<Target> {
        if is_collection(dir) {
            return Ok(Target::Collection(Collection::open(dir, opts)?));
        }
        if probe.is_some() {
            anyhow::bail!(
                "--probe / --probe-shrink: expected a collection directory (collection.json), \
                 found the index {}",
                dir.display()
            );
        }
        Ok(Target::Index(Box::new(Index::open(dir, opts)?)))
    }

    /// The index, for the searches only an index serves (range search; a
    /// collection refuses a radius in `check_search` first).
    pub fn single(&self) -> Result<&Index> {
        match self {
            Target::Index(i) => Ok(i),
            Target::Collection(c) => anyhow::bail!(
                "{}: expected an index, found a collection (range search is for indexes)",
                c.dir.display()
            ),
        }
    }

    pub fn dim(&self) -> usize {
        match self {
            Target::Index(i) => i.dim(),
            Target::Collection(c) => c.dim(),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Target::Index(i) => i.len(),
            Target::Collection(c) => c.len(),
        }
    }

    pub fn profile(&self) -> String {
        match self {
            Target::Index(i) => i.manifest.profile.clone(),
            Target::Collection(c) => format!(
                "{}, {} segments by {}",
                c.manifest.profile,
                c.segments().len(),
                c.manifest.partition
            ),
        }
    }

    /// RAM held, as a line for the header.
    pub fn memory(&self) -> String {
        match self {
            Target::Index(i) => i.memory().to_string(),
            Target::Collection(c) => {
                format!("{:.1} MB over its segments", c.memory_bytes() as f64 / 1e6)
            }
        }
    }

    pub fn memory_bytes(&self) -> usize {
        match self {
            Target::Index(i) => i.memory().total(),
            Target::Collection(c) => c.memory_bytes(),
        }
    }

    pub fn cached_nodes(&self) -> usize {
        match self {
            Target::Index(i) => i.cached_nodes(),
            Target::Collection(c) => c.cached_nodes(),
        }
    }

    /// A cluster index (reads whole clusters, not about L blocks).
    pub fn is_clusters(&self) -> bool {
        let layout = |i: &Index| !i.plan.graph();
        match self {
            Target::Index(i) => layout(i),
            Target::Collection(c) => c.segments().iter().any(layout),
        }
    }

    pub fn search_defaults(&self, switches: &Switches) -> SearchParams {
        match self {
            Target::Index(i) => i.search_defaults(switches),
            Target::Collection(c) => c.search_defaults(switches),
        }
    }

    pub fn check_search(&self, params: &SearchParams, nq: usize) -> Result<()> {
        match self {
            Target::Index(i) => i.check_search(params, nq)?,
            Target::Collection(c) => c.check_search(params, nq)?,
        }
        Ok(())
    }

    /// The batch's answer (a collection's global ids must be row numbers to
    /// be measured) and, for a collection, the merge's share of the time.
    pub fn search(
        &self,
        queries: &[f32],
        dim: usize,
        params: &SearchParams,
        probe: Option<&Probe>,
    ) -> Result<(BatchResult, Option<f64>)> {
        match self {
            Target::Index(i) => Ok((i.search_batch(queries, dim, params)?, None)),
            Target::Collection(c) => {
                let r =
                    c.search_batch(queries, dim, params, &probe.copied().unwrap_or_default())?;
                let share = r.merge_s / r.wall_s.max(1e-12);
                Ok((r.to_batch()?, Some(share)))
            }
        }
    }

    /// What results report for `rows` (ids the index was built with; a
    /// collection's are global ids already).
    pub fn result_ids(&self, rows: &[u32]) -> Vec<i64> {
        match self {
            Target::Index(i) => i.result_ids(rows),
            Target::Collection(_) => rows
                .iter()
                .map(|&r| if r == u32::MAX { -1 } else { r as i64 })
                .collect(),
        }
    }
}
