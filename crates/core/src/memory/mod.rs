//! What is in RAM (the first of the five questions in
//! docs/architecture.md): the node cache and the accounting that enforces
//! the memory budget.
pub mod adjacency_cache;
pub mod cache_order;
pub mod cache_rank;
pub mod nav_plan;
pub mod node_cache;
pub mod planner;
pub mod pq_plan;
pub mod report;

pub use adjacency_cache::AdjacencyCache;
pub use node_cache::NodeCache;
pub use report::MemoryReport;
