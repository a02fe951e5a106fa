//! Where a query starts (the fourth of the five questions in
//! docs/architecture.md).

pub mod clusters;
pub mod nav_graph;

pub use clusters::ClusterEntries;
pub use nav_graph::NavGraph;

/// Chooses the start node(s) of one query's graph search.
pub trait EntryPoints: Send + Sync {
    fn name(&self) -> &'static str;
    /// Appends the start node ids for `query` to `out`. `complexity` is the
    /// search list size of strategies that search for their starts (the
    /// navigation graph); the others ignore it.
    fn starts(&self, query: &[f32], complexity: usize, out: &mut Vec<u32>);
    /// [`EntryPoints::starts`] with a distance for each start, for
    /// searches that have no codes in RAM to estimate it (laser): exact
    /// where the part holds the vectors, else `-inf` (expanded first).
    fn starts_near(&self, query: &[f32], complexity: usize, out: &mut Vec<(u32, f32)>) {
        let mut ids = Vec::new();
        self.starts(query, complexity, &mut ids);
        out.extend(ids.into_iter().map(|id| (id, f32::NEG_INFINITY)));
    }
    /// [`EntryPoints::starts_near`] for a group of queries (row-major, all
    /// the same width), appending query `i`'s starts to `outs[i]`: a part
    /// that scans a matrix per query scans it once for the group.
    fn starts_near_many(&self, queries: &[f32], complexity: usize, outs: &mut [Vec<(u32, f32)>]) {
        if outs.is_empty() || queries.is_empty() {
            return;
        }
        let dim = queries.len() / outs.len();
        for (q, out) in queries.chunks_exact(dim).zip(outs.iter_mut()) {
            self.starts_near(q, complexity, out);
        }
    }
    /// Bytes held in RAM.
    fn resident_bytes(&self) -> usize {
        0
    }
}

/// DiskANN: every query starts at the medoid.
pub struct Medoid(pub u32);

impl EntryPoints for Medoid {
    fn name(&self) -> &'static str {
        "medoid"
    }

    fn starts(&self, _query: &[f32], _complexity: usize, out: &mut Vec<u32>) {
        out.push(self.0);
    }
}
