//! Graph construction: the Vamana build of DiskANN (Subramanya et al. 2019,
//! restated in Gorgeous §2 and OctopusANN §2), made deterministic by inserting
//! points in seeded batches.
pub mod duplicates;
pub mod greedy;
pub mod medoid;
pub mod prune;
pub mod space;
pub mod two_hop;
pub mod vamana;

pub use space::BuildSpace;
pub use vamana::{build, build_until, BuildStats, Graph, VamanaParams};
