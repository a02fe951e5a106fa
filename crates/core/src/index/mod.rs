//! The index directory: build, commit, manifest, open and search.
pub mod build;
mod build_auto;
pub mod build_checks;
pub mod build_ivf;
pub mod cache_load;
pub mod commit;
pub mod filter_costs;
pub mod filtered;
pub mod fit;
pub mod graph_file;
pub mod ids;
pub mod interrupt;
pub mod manifest;
pub mod open;
pub mod page_utility;
pub mod placement;
pub mod relayout;
pub mod relayout_csr;
pub(crate) mod stages;

pub use build::{
    build_from_file, build_from_input, build_from_table, build_index, build_index_with,
    build_index_with_ids, Attached, BuildParams, BuildReport,
};
pub use fit::Unset;
pub use manifest::{Manifest, BUILD_REVISION, FORMAT_VERSION};
pub use open::{BatchResult, FaultPredicate, Index, OpenOptions};
pub use page_utility::PageUtility;
