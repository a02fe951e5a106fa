//! stratavec: disk-resident approximate nearest neighbor search whose
//! techniques compose. See docs/architecture.md for the map: one module per
//! question (what is in RAM, disk layout, distance estimation, entry points,
//! read order).
#![forbid(unsafe_code)]

pub mod args;
pub mod autoplan;
pub mod collection;
pub mod data;
pub mod entry;
pub mod error;
pub mod graph;
pub mod index;
pub mod labels;
pub mod layout;
pub mod memory;
pub mod plan;
pub mod profile;
pub mod progress;
pub mod quant;
pub mod search;
pub mod synthetic;
pub mod update;
pub mod util;

pub use error::{Error, ErrorKind, Result};
pub use index::{
    build_from_file, build_from_input, build_from_table, build_index, build_index_with,
    build_index_with_ids, Attached, BatchResult, BuildParams, BuildReport, Index, OpenOptions,
    Unset,
};
pub use search::SearchParams;
pub use stratavec_io::Backend;
