//! Dataset files, ground truth and recall.
//!
//! Reading: [`open`] maps and validates a vector file (`.fbin`, `.u8bin`,
//! `.i8bin`, `.fvecs`, `.bvecs`, `.npy`) and hands out rows without copying.
//! Writing: `write_*` functions write a temporary sibling, fsync and rename.
//! Tables: [`import_table`] streams a Parquet or Arrow IPC column of vectors
//! (and an id column) into an `.fbin`.
//! Ground truth: [`GroundTruth`] (`.ibin`, `.ivecs`), computed exactly by
//! [`brute_force_knn`]; [`recall`] scores search results against it the way
//! big-ann-benchmarks does. Every error is a [`DataError`] naming the file,
//! the field, and the expected and found values.

mod atomic;
mod bin;
mod dtype;
mod error;
mod groundtruth;
mod knn;
mod mapped;
mod metric;
mod npy;
mod open;
mod range_gt;
mod recall;
mod table;
mod table_labels;
mod vecs;
mod vectors;

pub use bin::{write_fbin, write_i8bin, write_u8bin};
pub use dtype::DType;
pub use error::DataError;
pub use groundtruth::{write_ibin, write_ivecs, GroundTruth};
pub use knn::brute_force_knn;
pub use metric::{normalize_f32, Metric};
pub use npy::{write_npy_f32, write_npy_i64, write_npy_i8, write_npy_u8};
pub use open::{open, Format, VectorFile};
pub use range_gt::{brute_force_range, range_scores, RangeGroundTruth};
pub use recall::{recall, recall_at_k, NeighborId, Recall, TIE_EPSILON};
pub use table::{check_unique, import_table, is_table, Imported, TableColumns};
pub use table_labels::TableLabels;
pub use vecs::{write_bvecs, write_fvecs};
pub use vectors::{Elems, VectorRows, Vectors};
