//! The in-memory delta: vectors inserted since the index's generation was
//! built, held in full in a Vamana graph of their own and searched beside
//! the disk index until a merge writes them into the next generation. This
//! is FreshDiskANN's RW-TempIndex (Singh et al. 2021, §4.1–4.2): inserts go
//! into a small in-memory graph, never into the SSD-resident one, so a
//! write costs one greedy search and a prune over RAM; the delta stays
//! small because a merge empties it when it reaches its share of the
//! memory budget.
//!
//! Points are inserted with the build's own batch step
//! (`graph::vamana::insert_batch`), in batches of at most a tenth of the
//! graph as it stands (prefix doubling, as the build does: a point of a
//! batch cannot link to the others of its batch, so a young graph takes
//! small ones). A removed point stays in the graph as a waypoint and is
//! never returned (FreshDiskANN's deletes, §4.2); the merge drops it.

use crate::data::Metric;
use crate::graph::space::BuildSpace;
use crate::graph::vamana::{insert_batch, VamanaParams};
use crate::util::candidates::CandidateList;
use crate::util::visited::VisitedSet;

/// Out-degree of the delta's graph: it holds a few thousand to a few
/// hundred thousand points, so half the disk graph's usual R reaches the
/// same recall at L of the disk search.
pub const DELTA_DEGREE: usize = 32;
const DELTA_BUILD_L: usize = 64;

pub struct Delta {
    dim: usize,
    metric: Metric,
    params: VamanaParams,
    /// Row-major, normalised for cosine (as the disk index stores them).
    vectors: Vec<f32>,
    ids: Vec<i64>,
    removed: Vec<bool>,
    removed_count: usize,
    lists: Vec<Vec<u32>>,
    /// Each row's labels (issue #56; empty: none), sorted.
    labels: Vec<Vec<u32>>,
}

impl Delta {
    pub fn new(dim: usize, metric: Metric) -> Delta {
        Delta {
            dim,
            metric,
            params: VamanaParams {
                degree: DELTA_DEGREE,
                complexity: DELTA_BUILD_L,
                ..Default::default()
            },
            vectors: Vec::new(),
            ids: Vec::new(),
            removed: Vec::new(),
            removed_count: 0,
            lists: Vec::new(),
            labels: Vec::new(),
        }
    }

    /// Points inserted and not removed.
    pub fn len(&self) -> usize {
        self.ids.len() - self.removed_count
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Rows in the graph, removed ones included.
    pub fn rows(&self) -> usize {
        self.ids.len()
    }

    /// Inserts `ids` with their vectors (`ids.len()` rows, validated by the
    /// caller: finite, the right width) and their labels (one set a row,
    /// or none for all). Returns the first new row.
    pub fn insert(&mut self, ids: &[i64], vectors: &[f32], labels: &[Vec<u32>]) -> u32 {
        assert_eq!(vectors.len(), ids.len() * self.dim, "delta insert shape");
        assert!(
            labels.is_empty() || labels.len() == ids.len(),
            "delta labels shape"
        );
        let first = self.ids.len();
        let mut rows = vectors.to_vec();
        if self.metric == Metric::Cosine {
            rows.chunks_exact_mut(self.dim)
                .for_each(crate::data::normalize_f32);
        }
        // Grown to size, not doubled: the memory plan charges capacity, and
        // a doubled buffer would spend up to half the delta's share on
        // nothing (a batch's copy of the delta is cheap beside its inserts).
        let n = first + ids.len();
        self.vectors
            .reserve_exact(n * self.dim - self.vectors.len());
        self.ids.reserve_exact(ids.len());
        self.removed.reserve_exact(ids.len());
        self.lists.reserve_exact(ids.len());
        self.vectors.extend_from_slice(&rows);
        self.ids.extend_from_slice(ids);
        self.removed.resize(n, false);
        self.lists.resize(n, Vec::new());
        self.labels.reserve_exact(ids.len());
        match labels.is_empty() {
            true => self.labels.resize(n, Vec::new()),
            false => self.labels.extend(labels.iter().map(|l| {
                let mut l = l.clone();
                l.sort_unstable();
                l.dedup();
                l
            })),
        }
        let space = BuildSpace::new(&self.vectors, self.dim, self.metric);
        let mut done = first;
        while done < self.ids.len() {
            let size = (done / 10).max(1).min(self.ids.len() - done);
            let batch: Vec<u32> = (done as u32..(done + size) as u32).collect();
            let (alpha, r) = (self.params.alpha, self.params.degree);
            insert_batch(
                &space,
                &mut self.lists,
                0,
                &batch,
                &self.params,
                alpha,
                r,
                &crate::progress::never,
            );
            done += size;
        }
        first as u32
    }

    /// Marks `row` removed: it is still routed through, never returned.
    /// Whether it was live.
    pub fn remove(&mut self, row: u32) -> bool {
        let slot = &mut self.removed[row as usize];
        let was_live = !*slot;
        *slot = true;
        self.removed_count += usize::from(was_live);
        was_live
    }

    pub fn id(&self, row: u32) -> i64 {
        self.ids[row as usize]
    }

    /// The labels `row` was inserted with, sorted (empty: none).
    pub fn labels(&self, row: u32) -> &[u32] {
        &self.labels[row as usize]
    }

    pub fn is_removed(&self, row: u32) -> bool {
        self.removed[row as usize]
    }

    pub fn vector(&self, row: u32) -> &[f32] {
        &self.vectors[row as usize * self.dim..(row as usize + 1) * self.dim]
    }

    /// The internal distance (smaller is closer; the disk search's: squared
    /// L2, or -dot for inner product and for normalised cosine) from the
    /// prepared query `q` to `row`.
    pub fn distance(&self, q: &[f32], row: u32) -> f32 {
        let v = self.vector(row);
        match self.metric {
            Metric::L2 => stratavec_simd::l2_sq_f32(q, v),
            Metric::InnerProduct | Metric::Cosine => -stratavec_simd::dot_f32(q, v),
        }
    }

    /// The `k` nearest live points to `query` (already normalised for
    /// cosine) by a best-first search with list size `l`, as (internal
    /// distance, row), nearest first.
    pub fn search(
        &self,
        query: &[f32],
        k: usize,
        l: usize,
        scratch: &mut DeltaScratch,
    ) -> Vec<(f32, u32)> {
        if self.is_empty() {
            return Vec::new();
        }
        let DeltaScratch { list, visited } = scratch;
        // Removed rows take room in the list but are never results, so the
        // list is widened by as many as there are (bounded by the graph).
        let l = (l.max(k) + self.removed_count).min(self.rows());
        list.reset(l);
        visited.clear();
        visited.insert(0);
        list.insert(0, self.distance(query, 0));
        while let Some(c) = list.pop_closest_unexpanded() {
            for &nb in &self.lists[c.id as usize] {
                if visited.insert(nb) {
                    list.insert(nb, self.distance(query, nb));
                }
            }
        }
        list.as_slice()
            .iter()
            .filter(|c| !self.removed[c.id as usize])
            .take(k)
            .map(|c| (c.dist, c.id))
            .collect()
    }

    /// Bytes held: vectors, ids, flags, adjacency lists and labels.
    pub fn resident_bytes(&self) -> usize {
        let lists: usize = self.lists.iter().map(|l| l.capacity() * 4 + 24).sum();
        let labels: usize = self.labels.iter().map(|l| l.capacity() * 4 + 24).sum();
        self.vectors.capacity() * 4
            + self.ids.capacity() * 8
            + self.removed.capacity()
            + lists
            + labels
    }

    /// Bytes one more point costs, for the memory plan's share: its vector,
    /// id, flag, a full out-list and an empty label set (labels it carries
    /// are charged as they come, by `resident_bytes`).
    pub fn bytes_per_point(dim: usize) -> usize {
        dim * 4 + 8 + 1 + DELTA_DEGREE * 4 + 24 + 24
    }
}

/// Per-thread search state, reused across queries.
#[derive(Default)]
pub struct DeltaScratch {
    list: CandidateList,
    visited: VisitedSet,
}

#[cfg(test)]
#[path = "delta_tests.rs"]
mod tests;
