//! Per-query counters, summed over a batch for reports.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct QueryStats {
    /// Reads issued to the device.
    pub reads: u64,
    /// Bytes read from the device.
    pub bytes: u64,
    /// Nodes expanded (reads + cache hits).
    pub hops: u64,
    /// Expansions served from the node cache.
    pub cache_hits: u64,
    /// Exact distance computations (full vectors).
    pub exact: u64,
    /// Estimated distance computations (codes).
    pub estimated: u64,
    /// Wall time a caller waits for the query, microseconds: its share of
    /// its start (query preparation, tables, entry search) plus the time
    /// from admission to completion.
    pub latency_us: f64,
    /// Range search: times the candidate window was doubled.
    #[serde(default)]
    pub widenings: u64,
    /// Beam candidates stored in a page another candidate of the same hop
    /// was read for: served by that read.
    #[serde(default)]
    pub shared_reads: u64,
    /// CPU time in exact distances, nanoseconds (strategies that time it:
    /// laser, for AlayaLaser §2's roofline split).
    #[serde(default)]
    pub exact_ns: u64,
    /// CPU time preparing the query and estimating neighbours, nanoseconds.
    #[serde(default)]
    pub estimate_ns: u64,
    /// Reads whose node no longer ranked within the candidate list when
    /// they arrived (the pipelined search's speculation that lost;
    /// OctopusANN §4.3.1's "read but unexplored").
    #[serde(default)]
    pub wasted: u64,
    /// Single-vector reads of a cluster search: members stored outside the
    /// probed clusters' groups (paper 002 §6.2's small I/Os).
    #[serde(default)]
    pub small_reads: u64,
    /// A filtered search (issue #56): 1 in the field of the way the query
    /// went — ranked its matching rows' codes and read the best
    /// (`filter_pre`), searched admitting only matches into its result
    /// with a list grown by the filter's selectivity (`filter_graph`), or
    /// searched unfiltered and dropped what does not match
    /// (`filter_post`) — and the rows its filter matched. Summed over a
    /// batch: the strategy mix.
    #[serde(default)]
    pub filter_pre: u64,
    #[serde(default)]
    pub filter_graph: u64,
    #[serde(default)]
    pub filter_post: u64,
    #[serde(default)]
    pub filter_matches: u64,
    /// Candidates a settled refinement put in the top k unread, their
    /// estimates' bounds deciding it (issue #57, `search::settle`).
    #[serde(default)]
    pub settled: u64,
}

impl std::ops::AddAssign for QueryStats {
    fn add_assign(&mut self, o: Self) {
        self.reads += o.reads;
        self.bytes += o.bytes;
        self.hops += o.hops;
        self.cache_hits += o.cache_hits;
        self.exact += o.exact;
        self.estimated += o.estimated;
        self.latency_us += o.latency_us;
        self.widenings += o.widenings;
        self.shared_reads += o.shared_reads;
        self.exact_ns += o.exact_ns;
        self.estimate_ns += o.estimate_ns;
        self.wasted += o.wasted;
        self.small_reads += o.small_reads;
        self.filter_pre += o.filter_pre;
        self.filter_graph += o.filter_graph;
        self.filter_post += o.filter_post;
        self.filter_matches += o.filter_matches;
        self.settled += o.settled;
    }
}
