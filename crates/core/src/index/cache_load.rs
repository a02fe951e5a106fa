//! Filling DiskANN's node cache at open: breadth-first from the entry point,
//! level by level, until the budget's node count is reached. Each level's
//! records are read in batches over one block reader (queue depth 64), so
//! loading 15k nodes takes well under a second.

use crate::error::Result;
use crate::layout::Layout;
use crate::memory::node_cache::NodeCacheBuilder;
use crate::memory::NodeCache;
use crate::util::visited::VisitedSet;
use stratavec_io::{BlockReader, ReadRequest};

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
    let mut done = Vec::new();
    while !level.is_empty() && cache.len() < max_nodes {
        let mut next = Vec::new();
        let take = level.len().min(max_nodes - cache.len());
        for batch in level[..take].chunks(reader.slots()) {
            for (slot, &id) in batch.iter().enumerate() {
                let span = layout.span_of(id);
                reader.push(ReadRequest {
                    offset: span.offset,
                    len: span.len,
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
                let record = layout.record_slice(id, reader.slot(c.slot));
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
            }
        }
        // Deterministic order within a level whatever the completion order.
        next.sort_unstable();
        level = next;
    }
    Ok(cache.finish())
}
