//! Collections: a large vector set split into data segments, each a disk
//! index with its own small memory budget (Starling §1–§2's setting), many
//! segments a machine — and, through the Python layer on Ray, many
//! machines. A query fans out to its segments and their answers are merged
//! exactly (ties by id, as one index breaks them).
//!
//! - `manifest`: `collection.json`, segment entries and budget shares;
//! - `partition`: which segment each vector goes to (range or k-means);
//! - `route`: which segments a query searches (`probe`) and at what list
//!   size (shrinking by rank);
//! - `merge`: the exact top-k merge;
//! - `build`: partition, build the segments, publish atomically;
//! - `open`: an open collection and its batch search;
//! - `update`: inserts, deletes and merges routed to the segments.

pub mod build;
pub mod manifest;
pub mod merge;
pub mod open;
pub mod partition;
pub mod route;
pub mod update;

pub use build::{build_collection, commit_collection, CollectionParams, CollectionReport};
pub use manifest::{is_collection, CollectionManifest, Partition};
pub use open::{Collection, CollectionResult};
pub use route::{Probe, Visit};
