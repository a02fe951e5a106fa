//! Block shuffling (Starling §4.1): choose which node records share a disk
//! block so that a block read for one node also brings its graph neighbours.
//! The quality measure is the overlap ratio OR(G) (Starling eq. 5); the three
//! heuristics are BNP (Algorithm I), BNF (Algorithm 1) and BNS (Appendix E,
//! Algorithm 3). They only look at the graph, never at vectors, so they run
//! in seconds where the graph build takes minutes.

pub mod assignment;
pub mod bnf;
pub mod bnp;
pub mod bns;
pub mod overlap;

pub use assignment::{BlockAssignment, Capacity};
pub use overlap::overlap_ratio;

use serde::{Deserialize, Serialize};

/// Which shuffle to run (`--shuffle`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Shuffle {
    /// Id order, as DiskANN lays records out.
    None,
    Bnp,
    Bnf,
    Bns,
}

impl std::fmt::Display for Shuffle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Shuffle::None => "none",
            Shuffle::Bnp => "bnp",
            Shuffle::Bnf => "bnf",
            Shuffle::Bns => "bns",
        })
    }
}

impl std::str::FromStr for Shuffle {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "none" | "id" => Ok(Shuffle::None),
            "bnp" => Ok(Shuffle::Bnp),
            "bnf" => Ok(Shuffle::Bnf),
            "bns" => Ok(Shuffle::Bns),
            other => Err(format!(
                "shuffle: expected none, bnp, bnf or bns, found {other:?}"
            )),
        }
    }
}

/// Parameters of the iterative shuffles (Starling Appendix C: β = 8, τ = 0.01).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShuffleParams {
    pub method: Shuffle,
    /// Maximum iterations β.
    pub iterations: usize,
    /// Stop when an iteration gains less than τ in OR(G).
    pub gain_threshold: f64,
    /// Place nodes by the undirected graph: a node's in-neighbours count as
    /// its neighbours too. The paper uses out-neighbours only; but a block
    /// read for v also serves a search that reached v from u (u → v), so u
    /// belongs beside v as much as v's own neighbours do, when there is room
    /// for both. `None` (auto): undirected when blocks hold at least
    /// `search::UNDIRECTED_BLOCK` records on average. Measured at recall
    /// 0.95: at 7.75 records per block (wordnet-minilm-pca96) 1.4% fewer
    /// reads (13.46 vs 13.65), at 4 (384-d f16) 1.9% fewer; at 2 (the 384-d
    /// set), where the one other record should be an out-neighbour, 8% more. OR(G) is always reported on the
    /// directed graph (eq. 5). Costs a second copy of the edges while the
    /// shuffle runs.
    #[serde(default)]
    pub undirected: Option<bool>,
    /// Place each node beside its k nearest nodes within two hops of it in
    /// the search graph ([`crate::graph::two_hop`]) instead of beside its
    /// graph neighbours; `Some(0)`: by the graph (then `undirected` says
    /// which). `None` (auto): [`NEAREST_K`] when blocks hold at least
    /// [`crate::search::UNDIRECTED_BLOCK`] records on average, else 0.
    /// Measured at recall 0.95 against the undirected graph: 7.75 records a
    /// block (wordnet-minilm-pca96) 12.69 → 11.67 reads with the exact 24
    /// nearest; 2 records (384-d) 27.80 → 28.05, where the one other record
    /// is best an out-neighbour.
    #[serde(default)]
    pub nearest: Option<usize>,
}

/// Nearest nodes a node is placed by, when it is placed by proximity. On
/// wordnet-minilm-pca96 (exact nearest, reads at recall 0.95): 8 → 12.38,
/// 16 → 11.99, 24 → 11.67, 32 → 11.79.
pub const NEAREST_K: usize = 24;

impl ShuffleParams {
    /// The k of the placement by nearest nodes (0: by the search graph),
    /// auto resolved for `n` records in blocks of `capacity`.
    pub fn nearest_k(&self, capacity: &Capacity, n: usize) -> usize {
        if self.method == Shuffle::None {
            return 0;
        }
        self.nearest.unwrap_or(if many_per_block(capacity, n) {
            NEAREST_K
        } else {
            0
        })
    }
}

/// Whether blocks hold enough records on average
/// ([`crate::search::UNDIRECTED_BLOCK`]) for the auto placements: by the
/// nearest nodes, else by the undirected graph.
fn many_per_block(capacity: &Capacity, n: usize) -> bool {
    capacity.mean_per_block(n) >= crate::search::UNDIRECTED_BLOCK
}

impl Default for ShuffleParams {
    fn default() -> Self {
        ShuffleParams {
            method: Shuffle::Bnf,
            iterations: 8,
            gain_threshold: 0.01,
            undirected: None,
            nearest: None,
        }
    }
}

/// Each node's out- and in-neighbours (sorted, no duplicates, no self).
/// Every list is allocated at its final size, so the copy costs about the
/// edges once more, not the doubling slack of growing vectors.
pub fn undirected(lists: &[Vec<u32>]) -> Vec<Vec<u32>> {
    let mut degree: Vec<usize> = lists.iter().map(Vec::len).collect();
    for l in lists {
        for &v in l {
            degree[v as usize] += 1;
        }
    }
    let mut out: Vec<Vec<u32>> = degree.iter().map(|&d| Vec::with_capacity(d)).collect();
    drop(degree);
    for (u, l) in lists.iter().enumerate() {
        out[u].extend_from_slice(l);
        for &v in l {
            out[v as usize].push(u as u32);
        }
    }
    for (u, l) in out.iter_mut().enumerate() {
        l.sort_unstable();
        l.dedup();
        l.retain(|&v| v as usize != u);
    }
    out
}

/// OR(G) after each stage, for reports.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ShuffleReport {
    pub id_order: f64,
    /// Whether nodes were placed by the undirected graph (the resolved
    /// `ShuffleParams::undirected`).
    #[serde(default)]
    pub undirected: bool,
    /// Nodes were placed by their this many nearest ones (0: by the graph).
    #[serde(default)]
    pub nearest: usize,
    /// (stage name, OR(G) after it, seconds).
    pub stages: Vec<(String, f64, f64)>,
}

impl ShuffleReport {
    /// What nodes were placed by, for reports.
    pub fn placed_by(&self) -> String {
        match (self.nearest, self.undirected) {
            (0, true) => "the undirected graph".into(),
            (0, false) => "the directed graph".into(),
            (k, _) => format!("the {k} nearest within two hops"),
        }
    }
}

/// Runs the chosen shuffle on `lists` for blocks of `capacity`. BNF and BNS
/// start from BNP, as in the paper. `nearest`: each node's nearest nodes
/// (`ShuffleParams::nearest`), to place by instead of the graph; OR(G) is
/// still that of the graph (`lists`).
pub fn shuffle(
    lists: &[Vec<u32>],
    capacity: &Capacity,
    p: &ShuffleParams,
    nearest: Option<&[Vec<u32>]>,
) -> (BlockAssignment, ShuffleReport) {
    shuffle_until(lists, capacity, p, nearest, &crate::progress::never).expect("never stopped")
}

/// [`shuffle`] that polls `stop` between stages and inside the BNF/BNS
/// passes, and returns `None` when it says so.
pub fn shuffle_until(
    lists: &[Vec<u32>],
    capacity: &Capacity,
    p: &ShuffleParams,
    nearest: Option<&[Vec<u32>]>,
    stop: &crate::progress::Stop,
) -> Option<(BlockAssignment, ShuffleReport)> {
    let both;
    let large = many_per_block(capacity, lists.len());
    let undirected_placement =
        nearest.is_none() && p.undirected.unwrap_or(large) && p.method != Shuffle::None;
    let place: &[Vec<u32>] = match nearest {
        Some(near) => near,
        None if undirected_placement => {
            both = undirected(lists);
            &both
        }
        None => lists,
    };
    let id_order = BlockAssignment::id_order(lists.len(), capacity.clone());
    let mut report = ShuffleReport {
        id_order: overlap_ratio(lists, &id_order),
        undirected: undirected_placement,
        nearest: nearest.map_or(0, |near| near.iter().map(Vec::len).max().unwrap_or(0)),
        ..Default::default()
    };
    if p.method == Shuffle::None {
        return Some((id_order, report));
    }
    if stop() {
        return None;
    }
    let t = std::time::Instant::now();
    let mut a = bnp::bnp(place, capacity.clone());
    report.stages.push((
        "bnp".into(),
        overlap_ratio(lists, &a),
        t.elapsed().as_secs_f64(),
    ));
    match p.method {
        Shuffle::Bnf => {
            let t = std::time::Instant::now();
            a = bnf::bnf(place, a, p.iterations, p.gain_threshold, stop);
            report.stages.push((
                "bnf".into(),
                overlap_ratio(lists, &a),
                t.elapsed().as_secs_f64(),
            ));
        }
        Shuffle::Bns => {
            let t = std::time::Instant::now();
            a = bns::bns(place, a, p.iterations, p.gain_threshold, stop);
            report.stages.push((
                "bns".into(),
                overlap_ratio(lists, &a),
                t.elapsed().as_secs_f64(),
            ));
        }
        Shuffle::None | Shuffle::Bnp => {}
    }
    (!stop()).then_some((a, report))
}

/// A random graph of `n` nodes with up to `deg` out-neighbours each (no
/// self loops, no repeats), for the layout tests.
#[cfg(test)]
pub(crate) fn random_graph(n: usize, deg: usize, rng: &mut crate::util::rng::Rng) -> Vec<Vec<u32>> {
    (0..n)
        .map(|u| {
            let mut l: Vec<u32> = (0..deg)
                .map(|_| rng.below(n) as u32)
                .filter(|&v| v != u as u32)
                .collect();
            l.sort_unstable();
            l.dedup();
            l
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::rng::Rng;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        /// Every method yields a valid layout (each node in exactly one block,
        /// no block over capacity) and BNF/BNS never score below BNP.
        #[test]
        fn every_method_yields_a_valid_layout(n in 1usize..300, per_block in 1usize..13, deg in 0usize..10, seed in 0u64..1000) {
            let mut rng = Rng::new(seed);
            let lists = random_graph(n, deg, &mut rng);
            let cap = Capacity::slots(per_block);
            let bnp_or = overlap_ratio(&lists, &bnp::bnp(&lists, cap.clone()));
            for method in [Shuffle::None, Shuffle::Bnp, Shuffle::Bnf, Shuffle::Bns] {
                let p = ShuffleParams { method, iterations: 2, gain_threshold: 0.0, undirected: Some(false), nearest: Some(0) };
                let (a, report) = shuffle(&lists, &cap, &p, None);
                prop_assert!(a.validate().is_ok(), "{:?}: {:?}", method, a.validate());
                prop_assert_eq!(a.members.len(), n.div_ceil(per_block));
                if matches!(method, Shuffle::Bnf | Shuffle::Bns) {
                    prop_assert!(overlap_ratio(&lists, &a) >= bnp_or - 1e-12);
                    prop_assert_eq!(report.stages.len(), 2);
                }
            }
        }

        /// Records of different sizes in blocks of bytes: every method
        /// yields a valid layout (each node in one block, no block over its
        /// bytes, none empty), no worse than BNP for BNF/BNS, and never more
        /// than twice the blocks the bytes need (a block is only closed when
        /// the next record does not fit).
        #[test]
        fn every_method_packs_records_of_different_sizes(n in 1usize..300, deg in 0usize..10,
                                                         seed in 0u64..1000, block in 100usize..400) {
            let mut rng = Rng::new(seed);
            let lists = random_graph(n, deg, &mut rng);
            let cost: Vec<u16> = (0..n).map(|_| 20 + rng.below(80) as u16).collect();
            let cap = Capacity::bytes(block, cost);
            let bnp_or = overlap_ratio(&lists, &bnp::bnp(&lists, cap.clone()));
            for method in [Shuffle::None, Shuffle::Bnp, Shuffle::Bnf, Shuffle::Bns] {
                let p = ShuffleParams { method, iterations: 2, gain_threshold: 0.0, undirected: Some(false), nearest: Some(0) };
                let (a, _) = shuffle(&lists, &cap, &p, None);
                prop_assert!(a.validate().is_ok(), "{:?}: {:?}", method, a.validate());
                prop_assert!(a.blocks() <= 2 * cap.min_blocks(n).max(1), "{:?}: {} blocks", method, a.blocks());
                if matches!(method, Shuffle::Bnf | Shuffle::Bns) {
                    prop_assert!(overlap_ratio(&lists, &a) >= bnp_or - 1e-12);
                }
            }
        }
    }
}
