//! Starling's shuffled block layout (§4.1): blocks of records chosen by a
//! block shuffle, so one read brings a node and (ideally) its neighbours.
//!
//! Block format (one page): u16 record count c, c u32 ids (the directory, so
//! block search knows every record it was handed without an in-RAM
//! position→id map), then the c records back to back in the packed encoding
//! ([`super::record`]: u16 degree, ids of ⌈log2 n⌉ bits), each as long as
//! its degree needs. At 96-d float with R = 64 (mean degree 48) that is
//! about 8 records per 4 KB block where fixed u32 slots hold 6. A node's
//! block comes from the id→block map (`map.bin`, 4 bytes per node, loaded at
//! open and counted in memory); its place in the block from the directory.
//!
//! Page 0 is the usual header; block b is page 1 + b. Records never span
//! pages: a block must hold at least two of the largest records, else the
//! index keeps the coupled layout.

use super::header::PagesHeader;
use super::record::{id_bits, packed_len, write_packed, NodeView};
use super::shuffle::{BlockAssignment, Capacity};
use super::{Layout, Span};
use crate::data::DType;
use crate::util::packed::PackedInts;
use std::io::Write;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockedLayout {
    pub page_size: usize,
    pub n: usize,
    pub dim: usize,
    pub dtype: DType,
    pub max_degree: usize,
    /// Bits of each stored neighbour id.
    pub id_bits: u32,
    /// Bytes of a record with `max_degree` neighbours (node cache slots).
    pub max_record_bytes: usize,
    /// Block of each node, in ⌈log2 blocks⌉ bits (96-d wordnet: 14 bits,
    /// 204 KB instead of 467 KB; the difference goes to the node cache).
    block_of: PackedInts,
    pub blocks: usize,
    /// All zero: what a record missing from its block reads as (a corrupt
    /// page), a zero vector with no neighbours.
    zero_record: Vec<u8>,
}

/// Bytes of a block's record count.
pub const COUNT_BYTES: usize = 2;
/// Bytes of one directory entry.
const DIR_BYTES: usize = 4;

/// Bytes a block gives to the largest record of a node with `max_degree`
/// neighbours among `n` nodes (record and directory entry).
pub fn largest_entry(dim: usize, dtype: DType, n: usize, max_degree: usize) -> usize {
    DIR_BYTES + packed_len(dim * dtype.size(), max_degree, id_bits(n))
}

/// Whether a `page_size` block holds two records of `largest` bytes: one
/// record per page leaves nothing to place together.
pub fn holds_two(page_size: usize, largest: usize) -> bool {
    2 * largest <= page_size - COUNT_BYTES
}

/// What a block holds and what each node's record (with its directory
/// entry) costs of it, for the shuffles; an error when a block cannot hold
/// two of the largest records. The build checks this before any work
/// (`index::fit`) with the largest degree the graph can have; this is the
/// check on the graph itself.
pub fn capacity(
    page_size: usize,
    dim: usize,
    dtype: DType,
    lists: &[Vec<u32>],
) -> crate::error::Result<Capacity> {
    let vb = dim * dtype.size();
    let bits = id_bits(lists.len());
    let block = page_size - COUNT_BYTES;
    let max_degree = lists.iter().map(Vec::len).max().unwrap_or(0);
    let largest = largest_entry(dim, dtype, lists.len(), max_degree);
    if !holds_two(page_size, largest) {
        return Err(crate::error::Error::argument(
            "page_size",
            format!(
                "pages that hold at least 2 shuffled records of {largest} bytes (use --page-size 8192 or 16384)"
            ),
            format!("{} per {page_size}-byte page", block / largest),
        ));
    }
    let cost = lists
        .iter()
        .map(|l| (DIR_BYTES + packed_len(vb, l.len(), bits)) as u16)
        .collect();
    Ok(Capacity::bytes(block, cost))
}

impl BlockedLayout {
    pub fn new(
        page_size: usize,
        dim: usize,
        dtype: DType,
        max_degree: usize,
        block_of: Vec<u32>,
        blocks: usize,
    ) -> Self {
        let n = block_of.len();
        let bits = id_bits(n);
        let max_record_bytes = packed_len(dim * dtype.size(), max_degree, bits);
        BlockedLayout {
            page_size,
            n,
            dim,
            dtype,
            max_degree,
            id_bits: bits,
            max_record_bytes,
            block_of: PackedInts::new(&block_of, id_bits(blocks)),
            blocks,
            zero_record: vec![0; max_record_bytes],
        }
    }

    pub fn blocks(&self) -> usize {
        self.blocks
    }

    /// The block of every node, unpacked (for writing `map.bin`).
    pub fn block_map(&self) -> Vec<u32> {
        (0..self.n).map(|i| self.block_of.get(i)).collect()
    }

    fn vector_bytes(&self) -> usize {
        self.dim * self.dtype.size()
    }

    /// Writes the pages file for `assignment` (whose blocks must be this
    /// layout's). `vector_bytes(id, out)` gives the stored vector of node
    /// `id`. Blocks are written in order, one page buffer at a time.
    pub fn write<W: Write>(
        &self,
        out: &mut W,
        medoid: u32,
        assignment: &BlockAssignment,
        neighbors: &[Vec<u32>],
        vector_bytes: &dyn Fn(u32, &mut [u8]),
    ) -> std::io::Result<()> {
        assert_eq!(assignment.blocks(), self.blocks);
        let header = PagesHeader {
            layout: self.name().into(),
            page_size: self.page_size as u32,
            n: self.n as u64,
            dim: self.dim as u32,
            dtype: self.dtype,
            max_degree: self.max_degree as u32,
            medoid,
            pages: 1 + self.blocks as u64,
            record_extra: 0,
        };
        let mut page = vec![0u8; self.page_size];
        header.encode(&mut page);
        out.write_all(&page)?;
        let vb = self.vector_bytes();
        let mut vec_buf = vec![0u8; vb];
        for members in &assignment.members {
            page.fill(0);
            page[..COUNT_BYTES].copy_from_slice(&(members.len() as u16).to_le_bytes());
            let mut at = COUNT_BYTES + DIR_BYTES * members.len();
            for (slot, &id) in members.iter().enumerate() {
                let d = COUNT_BYTES + DIR_BYTES * slot;
                page[d..d + DIR_BYTES].copy_from_slice(&id.to_le_bytes());
                let nbrs = &neighbors[id as usize];
                let len = packed_len(vb, nbrs.len(), self.id_bits);
                if at + len > self.page_size {
                    return Err(std::io::Error::other(format!(
                        "block of node {id}: records need more than {} bytes",
                        self.page_size
                    )));
                }
                vector_bytes(id, &mut vec_buf);
                write_packed(&mut page[at..at + len], &vec_buf, nbrs, self.id_bits);
                at += len;
            }
            out.write_all(&page)?;
        }
        Ok(())
    }

    /// Walks a block: (id, record) of each record, in directory order. A
    /// count or degree that runs past the page (a corrupt page) ends the walk.
    fn walk<'a>(&self, bytes: &'a [u8], mut visit: impl FnMut(u32, &'a [u8]) -> bool) {
        if bytes.len() < COUNT_BYTES {
            return;
        }
        let count = u16::from_le_bytes([bytes[0], bytes[1]]) as usize;
        let vb = self.vector_bytes();
        let mut at = COUNT_BYTES + DIR_BYTES * count;
        for slot in 0..count {
            let d = COUNT_BYTES + DIR_BYTES * slot;
            if at + vb + 2 > bytes.len() {
                return;
            }
            let id = u32::from_le_bytes([bytes[d], bytes[d + 1], bytes[d + 2], bytes[d + 3]]);
            let degree = u16::from_le_bytes([bytes[at + vb], bytes[at + vb + 1]]) as usize;
            let len = packed_len(vb, degree.min(self.max_degree), self.id_bits);
            let end = (at + len).min(bytes.len());
            if id as usize >= self.n || !visit(id, &bytes[at..end]) {
                return;
            }
            at += len;
        }
    }
}

impl Layout for BlockedLayout {
    fn name(&self) -> &'static str {
        super::LayoutKind::Blocked.name()
    }

    fn page_size(&self) -> usize {
        self.page_size
    }

    fn max_span_bytes(&self) -> usize {
        self.page_size
    }

    fn span_of(&self, id: u32) -> Span {
        let block = self.block_of.get(id as usize) as usize;
        Span {
            offset: ((1 + block) * self.page_size) as u64,
            len: self.page_size as u32,
        }
    }

    /// The largest record (node cache slots are this big).
    fn record_bytes(&self) -> usize {
        self.max_record_bytes
    }

    fn record_slice<'a>(&'a self, id: u32, bytes: &'a [u8]) -> &'a [u8] {
        let mut found: &'a [u8] = &self.zero_record;
        self.walk(bytes, |rid, rec| {
            if rid == id {
                found = rec;
            }
            rid != id
        });
        found
    }

    fn parse<'a>(&self, record: &'a [u8]) -> NodeView<'a> {
        NodeView::parse_packed(record, self.vector_bytes(), self.max_degree, self.id_bits)
    }

    fn block_records<'a>(&self, _target: u32, bytes: &'a [u8], out: &mut Vec<(u32, &'a [u8])>) {
        out.clear();
        self.walk(bytes, |id, rec| {
            out.push((id, rec));
            true
        });
    }

    fn file_bytes(&self) -> u64 {
        ((1 + self.blocks) * self.page_size) as u64
    }

    fn records_per_block(&self) -> f64 {
        self.n as f64 / self.blocks.max(1) as f64
    }

    /// The id→block map.
    fn resident_bytes(&self) -> usize {
        self.block_of.bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::super::shuffle::{shuffle, Shuffle, ShuffleParams};
    use super::super::CoupledLayout;
    use super::*;
    use crate::util::rng::Rng;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        /// Round trip: every node's record read through the shuffled layout
        /// holds the same vector and neighbours as the one read through id
        /// order, and every block's directory lists exactly the records it
        /// holds.
        #[test]
        fn shuffled_layout_returns_the_same_records_as_id_order(
            n in 1usize..200, dim in 1usize..64, deg in 1usize..24, seed in 0u64..1000,
            method in prop_oneof![Just(Shuffle::None), Just(Shuffle::Bnp), Just(Shuffle::Bnf), Just(Shuffle::Bns)]) {
            let lists = super::super::shuffle::random_graph(n, deg, &mut Rng::new(seed));
            let vb = |id: u32, out: &mut [u8]| out.iter_mut().enumerate().for_each(|(k, b)| *b = (k as u32 * 7 + id * 13) as u8);
            let page = 4096;
            let coupled = CoupledLayout::new(page, n, dim, DType::F32, deg);
            let mut id_file = vec![];
            coupled.write(&mut id_file, 0, &lists, &vb).unwrap();

            let cap = capacity(page, dim, DType::F32, &lists).unwrap();
            let p = ShuffleParams { method, iterations: 2, gain_threshold: 0.0, undirected: Some(seed % 2 == 0), nearest: Some(0) };
            let (assignment, _) = shuffle(&lists, &cap, &p, None);
            let blocked = BlockedLayout::new(page, dim, DType::F32, deg, assignment.block_of.clone(), assignment.blocks());
            let mut file = vec![];
            blocked.write(&mut file, 0, &assignment, &lists, &vb).unwrap();
            prop_assert_eq!(file.len() as u64, blocked.file_bytes());

            let mut records = vec![];
            for id in 0..n as u32 {
                let a = coupled.span_of(id);
                let want = coupled.record(id, &id_file[a.offset as usize..a.offset as usize + a.len as usize]);
                let b = blocked.span_of(id);
                let bytes = &file[b.offset as usize..b.offset as usize + b.len as usize];
                let got = blocked.record(id, bytes);
                prop_assert_eq!(got.vector, want.vector);
                prop_assert_eq!(got.neighbors().collect::<Vec<_>>(), want.neighbors().collect::<Vec<_>>());
                blocked.block_records(id, bytes, &mut records);
                let members = &assignment.members[assignment.block_of[id as usize] as usize];
                prop_assert_eq!(records.iter().map(|r| r.0).collect::<Vec<_>>(), members.clone());
            }
        }
    }

    #[test]
    fn records_per_block_for_the_papers_settings() {
        let per_block = |n: usize, dim: usize, dtype: DType, degree: usize| {
            let lists = vec![(0..degree as u32).collect::<Vec<_>>(); n];
            let cap = capacity(4096, dim, dtype, &lists).unwrap();
            4094 / cap.cost(0) as usize
        };
        // Starling Appendix C: 128-d u8, R = 48 -> 12 fixed records per 4 KB
        // block; packed at 1M nodes (20-bit ids), 16.
        assert_eq!(per_block(1 << 20, 128, DType::U8, 48), 16);
        // wordnet-minilm (116,707 nodes, 17-bit ids) at its mean degree 48:
        // 384-d f32 -> 2 (as fixed), its 96-d PCA -> 8 (fixed: 6).
        assert_eq!(per_block(116_707, 384, DType::F32, 48), 2);
        assert_eq!(per_block(116_707, 96, DType::F32, 48), 8);
    }

    #[test]
    fn a_missing_record_reads_as_zero() {
        let lists = vec![vec![1u32], vec![0]];
        let cap = capacity(4096, 4, DType::F32, &lists).unwrap();
        let (a, _) = shuffle(&lists, &cap, &ShuffleParams::default(), None);
        let l = BlockedLayout::new(4096, 4, DType::F32, 1, a.block_of.clone(), a.blocks());
        let mut file = vec![];
        l.write(&mut file, 0, &a, &lists, &|_, o: &mut [u8]| o.fill(7))
            .unwrap();
        let block = &file[4096..8192];
        assert_eq!(l.record(1, block).neighbors().collect::<Vec<_>>(), vec![0]);
        let mut corrupt = block.to_vec();
        corrupt[2..6].copy_from_slice(&9u32.to_le_bytes()); // directory names 9, not 0
        let r = l.record(0, &corrupt);
        assert!(r.vector.iter().all(|&b| b == 0) && r.degree() == 0);
    }

    #[test]
    fn too_large_records_are_refused() {
        let lists = vec![(0..64u32).collect::<Vec<_>>(); 100];
        let e = capacity(4096, 1024, DType::F32, &lists)
            .unwrap_err()
            .to_string();
        assert!(e.contains("at least 2 shuffled records"), "{e}");
    }
}
