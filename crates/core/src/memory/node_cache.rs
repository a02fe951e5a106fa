//! DiskANN's node cache: the records of the nodes nearest the entry point in
//! BFS order, kept in RAM so the first hops of every query read nothing.
//! Records are stored exactly as on disk, so a cached node is expanded by the
//! same code as a node just read.
//!
//! Ids are kept sorted with their records in the same order and looked up by
//! binary search: 4 bytes of index per node and no hash-table slack, so the
//! memory the budget charges is exactly the memory held (a hash map would
//! need up to 2x its entries in buckets). A lookup costs ~14 probes into a
//! few-KB array, noise beside the read it replaces.

#[derive(Default)]
pub struct NodeCache {
    record_bytes: usize,
    ids: Vec<u32>,
    records: Vec<u8>,
}

/// Bytes one cached node costs: its record plus its id.
pub fn bytes_per_node(record_bytes: usize) -> usize {
    record_bytes + 4
}

/// Collects records in any order; `finish` sorts them into a cache.
pub struct NodeCacheBuilder {
    record_bytes: usize,
    entries: Vec<(u32, usize)>,
    records: Vec<u8>,
}

impl NodeCacheBuilder {
    pub fn new(record_bytes: usize, capacity: usize) -> Self {
        NodeCacheBuilder {
            record_bytes,
            entries: Vec::with_capacity(capacity),
            records: Vec::with_capacity(capacity * record_bytes),
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Adds a record; a shorter one (a packed record below the maximum
    /// degree) is padded to the slot size with zeros.
    pub fn push(&mut self, id: u32, record: &[u8]) {
        debug_assert!(record.len() <= self.record_bytes);
        self.entries.push((id, self.records.len()));
        self.records.extend_from_slice(record);
        self.records
            .resize(self.records.len() + self.record_bytes - record.len(), 0);
    }

    pub fn finish(mut self) -> NodeCache {
        self.entries.sort_unstable();
        self.entries.dedup_by_key(|e| e.0);
        let rb = self.record_bytes;
        let mut ids = Vec::with_capacity(self.entries.len());
        let mut records = Vec::with_capacity(self.entries.len() * rb);
        for &(id, at) in &self.entries {
            ids.push(id);
            records.extend_from_slice(&self.records[at..at + rb]);
        }
        NodeCache {
            record_bytes: rb,
            ids,
            records,
        }
    }
}

impl NodeCache {
    pub fn new(record_bytes: usize) -> Self {
        NodeCache {
            record_bytes,
            ..Default::default()
        }
    }

    #[inline]
    pub fn get(&self, id: u32) -> Option<&[u8]> {
        let i = self.ids.binary_search(&id).ok()?;
        let s = i * self.record_bytes;
        Some(&self.records[s..s + self.record_bytes])
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Bytes held (capacity, not length: what the allocator gave us).
    pub fn resident_bytes(&self) -> usize {
        self.ids.capacity() * 4 + self.records.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups_and_exact_memory() {
        let mut b = NodeCacheBuilder::new(3, 4);
        for id in [9u32, 2, 7, 4] {
            b.push(id, &[id as u8; 3]);
        }
        let c = b.finish();
        for id in [9u32, 2, 7, 4] {
            assert_eq!(c.get(id), Some(&[id as u8; 3][..]));
        }
        assert_eq!(c.get(5), None);
        assert_eq!(c.resident_bytes(), 4 * bytes_per_node(3));
    }
}
