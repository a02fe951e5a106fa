//! What stays in RAM (the first of the five questions): the memory plan of
//! an open index. The parts every search needs (codes, I/O buffers, the
//! layout's map) come first; then the plan's resident parts in its order,
//! each taking what it can of what is left (`memory::planner`, Gorgeous
//! §4.1 ②–④), and each loaded up to its grant.

use super::files::IndexFiles;
use super::Plan;
use crate::entry::{EntryPoints, Medoid};
use crate::error::Result;
use crate::index::cache_load::{load_bfs, load_ranked};
use crate::layout::Layout;
use crate::memory::adjacency_cache::{self, GRAPH_FILE};
use crate::memory::cache_order::{self, ORDER_FILE};
use crate::memory::node_cache::bytes_per_node;
use crate::memory::planner::{self, granted, Demand, Grant, Part};
use crate::memory::{AdjacencyCache, NodeCache};
use stratavec_io::BlockReader;

/// What the open asks of the memory plan.
pub struct Wants<'a> {
    pub budget: Option<usize>,
    /// Bytes of the codes part (always held).
    pub codes: usize,
    /// I/O buffers reserved for the searches the index is opened for.
    pub buffers: usize,
    /// The entry part read from disk, if it holds anything and the caller
    /// allows it (`OpenOptions::navigation_graph`).
    pub entry: Option<Box<dyn EntryPoints>>,
    /// The caller allows the graph cache and the node cache (ablations).
    pub graph_cache: bool,
    pub node_cache: bool,
    pub layout: &'a dyn Layout,
    /// The graph's medoid, where searches start without an entry part and
    /// where a breadth-first node cache is filled from.
    pub medoid: u32,
}

/// The resident parts of an open index, each filled to its grant.
pub struct Resident {
    pub entry: Box<dyn EntryPoints>,
    pub cache: NodeCache,
    pub adjacency: AdjacencyCache,
    pub grants: Vec<Grant>,
}

/// Plans the budget over `wants` and loads each resident part. `reader`
/// reads records of the pages file for the node cache; `wider` reopens it
/// with slots as large as the layout's widest read when the cache needs
/// that.
pub fn fill(
    plan: &Plan,
    files: &IndexFiles,
    wants: Wants,
    reader: &mut Box<dyn BlockReader>,
    wider: &dyn Fn(usize) -> Result<Box<dyn BlockReader>>,
) -> Result<Resident> {
    let m = files.manifest;
    let layout = wants.layout;
    let node_bytes = bytes_per_node(layout.record_bytes());
    let graph_path = match wants.graph_cache && plan.holds(Part::Adjacency) {
        true => Some(files.path(GRAPH_FILE)?),
        false => None,
    };
    let mut demands = vec![
        Demand {
            part: Part::Codes,
            bytes: wants.codes,
        },
        Demand {
            part: Part::Buffers,
            bytes: wants.buffers,
        },
        Demand {
            part: Part::Map,
            bytes: layout.resident_bytes(),
        },
    ];
    for &part in &plan.resident {
        let bytes = match part {
            Part::Nav => match &wants.entry {
                Some(e) => e.resident_bytes(),
                None => continue,
            },
            Part::Adjacency => match &graph_path {
                Some(p) => adjacency_cache::demand(p)?,
                None => continue,
            },
            // A cached record without its vector saves nothing the graph
            // cache does not save better.
            Part::Nodes if !layout.records_hold_vectors() || !wants.node_cache => continue,
            Part::Nodes => m.n.saturating_mul(node_bytes),
            _ => continue,
        };
        demands.push(Demand { part, bytes });
    }
    let grants = planner::plan(wants.budget, &demands)?;
    let entry: Box<dyn EntryPoints> = match wants.entry.filter(|_| granted(&grants, Part::Nav) > 0)
    {
        Some(e) => e,
        None => Box::new(Medoid(wants.medoid)),
    };
    let cache_nodes = granted(&grants, Part::Nodes) / node_bytes.max(1);
    if cache_nodes > 0 && layout.max_span_bytes() > reader.slot_bytes() {
        *reader = wider(layout.max_span_bytes())?;
    }
    // A cache order ranked at build (by visits, in-degree, ...), else
    // breadth-first from the medoid (DiskANN).
    let cache = match plan.ranks_node_cache() && cache_nodes > 0 {
        true => {
            let order = cache_order::read(&files.path(ORDER_FILE)?, m.n)?;
            load_ranked(layout, &mut **reader, &order, cache_nodes)?
        }
        false => load_bfs(
            layout,
            &mut **reader,
            wants.medoid,
            cache_nodes,
            m.n,
            &files.dir.join(crate::layout::PAGES_FILE),
        )?,
    };
    let adjacency = match &graph_path {
        Some(p) => AdjacencyCache::load(p, m.n, granted(&grants, Part::Adjacency))?,
        None => AdjacencyCache::default(),
    };
    Ok(Resident {
        entry,
        cache,
        adjacency,
        grants,
    })
}
