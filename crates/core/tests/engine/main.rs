//! The engine's integration tests, as one test binary: each module was its
//! own binary, and each of those linked the whole engine (and its Parquet
//! and Arrow stack) again, ~140 s of CI's compile time for 26 binaries, and
//! built its own shared small index (`common::shared`). The tests that read
//! process-wide counters (`/proc/self/io`: `engine_proc_io*.rs`) stay
//! binaries of their own, so no other test's reads land in their counts.

#[path = "../common/mod.rs"]
mod common;

mod architecture_doc;
mod collection;
mod data_formats;
mod data_groundtruth;
mod data_knn;
mod engine_auto;
mod engine_bad_input;
mod engine_build_safety;
mod engine_crash;
mod engine_determinism;
mod engine_duplicates;
mod engine_exrabitq;
mod engine_f16;
mod engine_faults;
mod engine_filtered;
mod engine_filtered_props;
mod engine_fit;
mod engine_generations;
mod engine_gorgeous;
mod engine_interrupt;
mod engine_ivf;
mod engine_laser;
mod engine_live_switch;
mod engine_node_cache;
mod engine_old_indexes;
mod engine_pipe;
mod engine_range;
mod engine_search;
mod engine_starling;
mod engine_tables;
mod engine_tiered;
mod engine_updates;
mod function_length;
mod params;
mod wordnet;
