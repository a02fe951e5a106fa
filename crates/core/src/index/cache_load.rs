//! Filling DiskANN's node cache at open: breadth-first from the entry point,
//! level by level, until the budget's node count is reached. Each level's
//! records are read in batches over one block reader (queue depth 64), so
//! loading 15k nodes takes well under a second. Or, for profiles that rank
//! their cache at build time, the first nodes of that order.

use crate::error::Result;
use crate::layout::Layout;
use crate::memory::node_cache::NodeCacheBuilder;
use crate::memory::NodeCache;
use crate::util::visited::VisitedSet;
use stratavec_io::{BlockReader, ReadRequest};

/// Reads the records of `ids` (at most `reader.slots()` at once) and hands
/// each to `each(id, record)` in completion order. A failed read fails the
/// load: an open that cannot fill its cache says so.
fn read_records(
    layout: &dyn Layout,
    reader: &mut dyn BlockReader,
    ids: &[u32],
    each: &mut dyn FnMut(u32, &[u8]) -> Result<()>,
) -> Result<()> {
    let mut done = Vec::new();
    let mut shift = vec![0; reader.slots()];
    for batch in ids.chunks(reader.slots()) {
        for (slot, &id) in batch.iter().enumerate() {
            let (read, at) = layout.span_of(id).aligned(reader.alignment() as u64);
            shift[slot] = at;
            reader.push(ReadRequest {
                offset: read.offset,
                len: read.len,
                slot: slot as u32,
                tag: id as u64,
            })?;
        }
        reader.submit()?;
        done.clear();
        while done.len() < batch.len() {
            reader.reap(batch.len() - done.len(), &mut done)?;
        }
        for c in &done {
            c.result.as_ref().map_err(|e| {
                crate::error::Error::argument("node cache load", "every read to succeed", e)
            })?;
            let id = c.tag as u32;
            let bytes = &reader.slot(c.slot)[shift[c.slot as usize]..];
            each(id, layout.record_slice(id, bytes))?;
        }
    }
    Ok(())
}

/// Fills the node cache with the first `max_nodes` of `order` (AlayaLaser
/// §3.3: nodes by in-degree, the most linked first).
pub fn load_ranked(
    layout: &dyn Layout,
    reader: &mut dyn BlockReader,
    order: &[u32],
    max_nodes: usize,
) -> Result<NodeCache> {
    let take = max_nodes.min(order.len());
    let mut cache = NodeCacheBuilder::new(layout.record_bytes(), take);
    read_records(layout, reader, &order[..take], &mut |id, record| {
        cache.push(id, record);
        Ok(())
    })?;
    Ok(cache.finish())
}

pub fn load_bfs(
    layout: &dyn Layout,
    reader: &mut dyn BlockReader,
    start: u32,
    max_nodes: usize,
    n: usize,
    path: &std::path::Path,
) -> Result<NodeCache> {
    let mut cache = NodeCacheBuilder::new(layout.record_bytes(), max_nodes);
    if max_nodes == 0 {
        return Ok(cache.finish());
    }
    let mut seen = VisitedSet::with_capacity(max_nodes);
    seen.insert(start);
    let mut level = vec![start];
    while !level.is_empty() && cache.len() < max_nodes {
        let mut next = Vec::new();
        let take = level.len().min(max_nodes - cache.len());
        read_records(layout, reader, &level[..take], &mut |id, record| {
            cache.push(id, record);
            for nb in layout.parse(record).neighbors() {
                if nb as usize >= n {
                    return Err(crate::error::Error::index(
                        path,
                        format!("node {id}: neighbour id"),
                        format!("< {n}"),
                        nb,
                    ));
                }
                if seen.insert(nb) {
                    next.push(nb);
                }
            }
            Ok(())
        })?;
        // Deterministic order within a level whatever the completion order.
        next.sort_unstable();
        level = next;
    }
    Ok(cache.finish())
}
