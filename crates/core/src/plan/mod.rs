//! The plan of an index: which part answers each of the five questions
//! (docs/architecture.md), as values. `profile.rs` turns a profile name and
//! the caller's overrides into a [`Plan`]; the build writes what the plan
//! names and records the plan as built in the manifest; the open reads the
//! plan back and opens each part from it. Neither asks which optional files
//! exist or compares a layout kind: the plan says which parts there are,
//! and each part knows its own files (`codes.rs`, `entry.rs`, `resident.rs`,
//! `search.rs` here; the layouts in `layout/kind.rs`).
//!
//! A part's parameters are still the build parameters it reads
//! (`BuildParams`, recorded beside the plan in the manifest).

pub mod codes;
pub mod entry;
pub mod files;
pub mod legacy;
pub mod resident;
pub mod search;

pub use codes::CodesPart;
pub use entry::EntryPart;
pub use files::IndexFiles;
pub use legacy::plan_of;
pub use search::SearchPart;

use crate::layout::LayoutKind;
use crate::memory::cache_rank::CacheRank;
use crate::memory::planner::Part;
use serde::{Deserialize, Serialize};

/// Bumped when the plan record's meaning changes; a manifest whose plan is
/// newer is refused (`Manifest::read`), one without a plan was built before
/// plans were recorded and gets its plan from `legacy`.
pub const PLAN_VERSION: u32 = 1;

/// One composition of parts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub version: u32,
    /// How records are laid on disk (its parameters: page size, shuffle,
    /// replicas, ... in the build parameters).
    pub layout: LayoutKind,
    /// How distances are estimated before a record is read.
    pub codes: CodesPart,
    /// Where a query starts.
    pub entry: EntryPart,
    /// What the memory planner fills, in this order, once the codes, I/O
    /// buffers and the layout's map are in (Gorgeous §4.1 ②–④). Only parts
    /// the index has: the navigation graph only with that entry, the
    /// adjacency lists only when the build wrote them.
    pub resident: Vec<Part>,
    /// The order the node cache takes records in: `bfs` is filled
    /// breadth-first from the medoid at open (DiskANN), any other rank was
    /// computed at build (`order.bin`).
    pub node_cache: CacheRank,
    /// The order the graph cache takes adjacency lists in (`graph.bin`),
    /// when `resident` holds them.
    pub graph_cache: CacheRank,
    /// The search that runs by default, with its switches.
    pub search: SearchPart,
    /// The index keeps the caller's ids (`ids.bin`, `index::ids`), which
    /// searches return instead of row numbers.
    pub ids: bool,
    /// The index keeps labels on its vectors (`labels.bin`, and
    /// `label_names.tsv` when they have names: `crate::labels`), which
    /// searches filter by. Absent in plans written before labels.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub labels: bool,
}

impl Plan {
    /// Whether the memory planner may fill `part`.
    pub fn holds(&self, part: Part) -> bool {
        self.resident.contains(&part)
    }

    /// This plan for an index that keeps the caller's ids, or not.
    pub fn with_ids(mut self, ids: bool) -> Plan {
        self.ids = ids;
        self
    }

    pub fn with_labels(mut self, labels: bool) -> Plan {
        self.labels = labels;
        self
    }

    /// Whether the index is a graph: every layout but the cluster index's
    /// (paper 002 §6), which is built and searched without one.
    pub fn graph(&self) -> bool {
        self.layout != LayoutKind::Ivf
    }

    /// The node cache's order was ranked at build (`order.bin`).
    pub fn ranks_node_cache(&self) -> bool {
        self.holds(Part::Nodes) && self.node_cache != CacheRank::Bfs
    }
}

impl Plan {
    /// This plan as the build carried it out: a navigation graph the
    /// memory planner did not keep (Gorgeous §4.1 ②, `memory::nav_plan`)
    /// leaves the queries to start at the medoid, and a node cache ranked
    /// by distance to it falls back to breadth-first.
    pub fn as_built(mut self, nav_kept: bool) -> Plan {
        if self.entry == EntryPart::NavGraph && !nav_kept {
            self.entry = EntryPart::Medoid;
            self.resident.retain(|&p| p != Part::Nav);
        }
        if self.node_cache == CacheRank::Nav && !nav_kept {
            self.node_cache = CacheRank::Bfs;
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::BuildParams;
    use crate::layout::shuffle::Shuffle;
    use crate::profile::PROFILES;
    use proptest::prelude::*;

    /// The build parameters the CLI accepts for `profile`, with a choice
    /// of the overrides that change the plan.
    fn params(profile: &str, over: (u8, u8, u8, u8, bool, bool)) -> BuildParams {
        let (layout, shuffle, rank, cache_rank, nav, ivf_codes) = over;
        let mut p = BuildParams::for_profile(profile);
        let ranks = [
            CacheRank::Bfs,
            CacheRank::Nav,
            CacheRank::Indegree,
            CacheRank::Visits,
        ];
        if layout > 0 && !matches!(p.layout, Some(LayoutKind::Laser | LayoutKind::Ivf)) {
            p.layout = [
                None,
                Some(LayoutKind::Coupled),
                Some(LayoutKind::Replicated),
                Some(LayoutKind::Separated),
                Some(LayoutKind::Csr),
            ][layout as usize % 5];
            p.shuffle = Shuffle::None;
        }
        if shuffle > 0 && p.layout.is_none() {
            p.shuffle = [Shuffle::Bnp, Shuffle::Bnf, Shuffle::Bns][shuffle as usize % 3];
        }
        if rank > 0 {
            p.node_cache_rank = Some(ranks[rank as usize % 4]);
        }
        p.cache_rank = ranks[cache_rank as usize % 4];
        if nav {
            p.nav_sample = 0.01;
        }
        p.ivf_codes = ivf_codes;
        p
    }

    proptest! {
        /// Every plan the CLI can ask for reads back from the manifest as
        /// it was written, as planned and as built.
        #[test]
        fn a_plan_round_trips_through_the_manifest(
            i in 0..PROFILES.len(),
            over in (0u8..5, 0u8..4, 0u8..5, 0u8..4, any::<bool>(), any::<bool>()),
            kept in any::<bool>(),
            ids in any::<bool>(),
        ) {
            let p = params(PROFILES[i].name, over);
            let plan = crate::profile::plan(&p).unwrap();
            for plan in [plan.clone(), plan.as_built(kept).with_ids(ids)] {
                let json = serde_json::to_string(&plan).unwrap();
                let back: Plan = serde_json::from_str(&json).unwrap();
                prop_assert_eq!(&back, &plan);
                // Only parts the index has are planned.
                prop_assert!(!plan.holds(Part::Nav) || plan.entry != EntryPart::Medoid);
                prop_assert_eq!(plan.graph(), plan.layout != LayoutKind::Ivf);
            }
        }
    }

    #[test]
    fn every_profile_plans_its_parts() {
        let plan = |name: &str| crate::profile::plan(&BuildParams::for_profile(name)).unwrap();
        assert_eq!(plan("diskann").codes, CodesPart::Pq);
        assert_eq!(plan("diskann").entry, EntryPart::Medoid);
        assert_eq!(plan("laser").codes, CodesPart::Records);
        assert_eq!(plan("laser").entry, EntryPart::Clusters);
        assert_eq!(plan("laser").search, SearchPart::Laser);
        assert_eq!(
            plan("gorgeous").search,
            SearchPart::TwoStage { pipelined: false }
        );
        assert!(plan("gorgeous").holds(Part::Adjacency));
        assert_eq!(plan("gorgeous").entry, EntryPart::NavGraph);
        assert!(!plan("gorgeous").as_built(false).holds(Part::Nav));
        assert_eq!(plan("ivf").codes, CodesPart::None);
        assert_eq!(plan("ivf").search, SearchPart::Clusters);
        assert!(!plan("ivf").graph());
        assert_eq!(plan("tiered").layout, LayoutKind::Csr);
        assert_eq!(plan("starling").layout, LayoutKind::Blocked);
        assert!(matches!(
            plan("octopus").search,
            SearchPart::Block { pipeline: true, .. }
        ));
        assert!(matches!(
            plan("pipeann").search,
            SearchPart::Pipelined { .. }
        ));
        let ivf_pq = BuildParams {
            ivf_codes: true,
            ..BuildParams::for_profile("ivf")
        };
        assert_eq!(
            crate::profile::plan(&ivf_pq).unwrap().codes,
            CodesPart::IvfPq
        );
    }
}
