//! `stratavec bench`: sweeps search parameters for stratavec profiles and for
//! peer engines on one data set, in one run, and writes JSON lines plus a
//! summary read off each system's recall–QPS Pareto front.
pub mod device;
pub mod peers;
pub mod range;
pub mod run;
pub mod summary;
pub mod variants;
