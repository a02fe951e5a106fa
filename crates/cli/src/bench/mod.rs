//! `stratavec bench`: sweeps search parameters for stratavec profiles and for
//! peer engines on one data set, in one run, round-robin over R rounds, and
//! writes one JSON line per timed pass plus a summary (median and range over
//! rounds) read off each system's recall–QPS Pareto front.
pub mod ablation;
pub mod device;
pub mod filtered;
pub mod peers;
pub mod range;
pub mod rounds;
pub mod run;
pub mod runbook;
pub mod stats;
pub mod summary;
pub mod update_plan;
pub mod updates;
pub mod variants;
