//! Everything a query's state machine may consult: the parts of one open
//! index, each behind its trait.

use crate::data::{DType, Metric};
use crate::entry::EntryPoints;
use crate::layout::Layout;
use crate::memory::{AdjacencyCache, NodeCache};
use crate::quant::Quantizer;

pub struct SearchContext<'a> {
    pub layout: &'a dyn Layout,
    pub quantizer: &'a dyn Quantizer,
    /// The per-index part of the codes laser records carry (AlayaLaser
    /// §3.2); `None` for indexes whose codes are all in RAM.
    pub record_codes: Option<&'a crate::quant::record_scorer::RecordScorer>,
    /// A cluster index built with codes: each cluster's member ids (the
    /// IVF-PQ search); `None` otherwise.
    pub members: Option<&'a crate::layout::ivf_members::ClusterMembers>,
    pub cache: &'a NodeCache,
    /// Adjacency lists held without their vectors (Gorgeous's graph cache).
    pub adjacency: &'a AdjacencyCache,
    pub entry: &'a dyn EntryPoints,
    /// The search list size `entry` may use (`SearchParams::nav_complexity`).
    pub entry_complexity: usize,
    pub metric: Metric,
    pub dtype: DType,
    /// Number of vectors: every neighbour id read must be below it.
    pub n: usize,
    /// For error messages.
    pub pages_path: &'a std::path::Path,
}

impl SearchContext<'_> {
    /// Appends `node`'s neighbours not yet in `visited` to `fresh`, marking
    /// them visited. A neighbour id that cannot exist (a corrupt page) is
    /// skipped and named in the returned message, which must fail the
    /// query rather than index out of bounds.
    pub fn collect_new(
        &self,
        id: u32,
        node: &crate::layout::NodeView<'_>,
        visited: &mut crate::util::visited::VisitedSet,
        fresh: &mut Vec<u32>,
    ) -> Option<String> {
        let mut corrupt = None;
        // The list is decoded whole first (a coded list in one loop), then
        // filtered in place, branch-free: every id is written, and kept
        // (the length advances) only if it was new. Whether a neighbour was
        // seen is a coin flip to the branch predictor, and a mispredict per
        // neighbour cost more than the store.
        let start = fresh.len();
        node.append_neighbors(fresh);
        let mut len = start;
        for j in start..fresh.len() {
            let nb = fresh[j];
            if nb as usize >= self.n {
                corrupt.get_or_insert_with(|| {
                    format!(
                        "{}: node {id}: neighbour id: expected < {}, found {nb} (corrupt index)",
                        self.pages_path.display(),
                        self.n
                    )
                });
                continue;
            }
            fresh[len] = nb;
            len += visited.insert(nb) as usize;
        }
        fresh.truncate(len);
        corrupt
    }

    /// A query's start: its estimator table prepared, and its entry points
    /// put in the candidate list at their estimates (marked visited).
    /// Returns the estimates made.
    pub fn seed(
        &self,
        query: &[f32],
        table: &mut crate::quant::QueryTable,
        visited: &mut crate::util::visited::VisitedSet,
        list: &mut crate::util::candidates::CandidateList,
    ) -> u64 {
        self.quantizer.prepare(query, table);
        let mut starts = Vec::new();
        self.entry.starts(query, self.entry_complexity, &mut starts);
        let mut estimated = 0;
        for id in starts {
            if visited.insert(id) {
                list.insert(id, self.quantizer.estimate(table, id));
                estimated += 1;
            }
        }
        estimated
    }
}
