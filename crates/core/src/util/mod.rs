//! Small shared structures used by both the graph build and search.
pub mod candidates;
pub mod elias_fano;
pub mod packed;
pub mod rng;
pub mod visited;
