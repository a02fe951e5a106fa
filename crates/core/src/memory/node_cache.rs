//! DiskANN's node cache: the records of the nodes nearest the entry point in
//! BFS order, kept in RAM so the first hops of every query read nothing.
//! Records are stored exactly as on disk, so a cached node is expanded by the
//! same code as a node just read.

use std::collections::HashMap;

#[derive(Default)]
pub struct NodeCache {
    record_bytes: usize,
    slot_of: HashMap<u32, u32, BuildIdHasher>,
    records: Vec<u8>,
}

/// Ids are already well spread; a multiplicative hash is plenty and several
/// times cheaper than SipHash on the search hot path.
#[derive(Clone, Copy, Default)]
pub struct BuildIdHasher;

pub struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x100_0000_01B3);
        }
    }
    fn write_u32(&mut self, i: u32) {
        self.0 = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

impl std::hash::BuildHasher for BuildIdHasher {
    type Hasher = IdHasher;
    fn build_hasher(&self) -> IdHasher {
        IdHasher(0)
    }
}

/// Bytes one cached node costs: its record plus the map entry (estimated as
/// key + value + control byte, rounded up for the table's load factor).
pub fn bytes_per_node(record_bytes: usize) -> usize {
    record_bytes + 12
}

impl NodeCache {
    pub fn new(record_bytes: usize) -> Self {
        NodeCache {
            record_bytes,
            ..Default::default()
        }
    }

    pub fn insert(&mut self, id: u32, record: &[u8]) {
        debug_assert_eq!(record.len(), self.record_bytes);
        if self.slot_of.contains_key(&id) {
            return;
        }
        self.slot_of.insert(id, self.slot_of.len() as u32);
        self.records.extend_from_slice(record);
    }

    #[inline]
    pub fn get(&self, id: u32) -> Option<&[u8]> {
        if self.slot_of.is_empty() {
            return None;
        }
        self.slot_of.get(&id).map(|&s| {
            let s = s as usize * self.record_bytes;
            &self.records[s..s + self.record_bytes]
        })
    }

    pub fn len(&self) -> usize {
        self.slot_of.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slot_of.is_empty()
    }

    pub fn resident_bytes(&self) -> usize {
        self.records.capacity() + self.slot_of.capacity() * 9
    }
}
