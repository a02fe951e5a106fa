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
