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
