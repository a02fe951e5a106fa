//! Starling's shuffled block layout (§4.1): blocks of records chosen by a
//! block shuffle, so one read brings a node and (ideally) its neighbours.
//! Each block starts with a directory of the ids stored in it (u32, u32::MAX
//! for an empty slot), so block search knows every record it was handed
//! without an in-RAM position→id map; an id→position map (`map.bin`, 4 bytes
//! per node, loaded at open and counted in memory) finds a node's block.
//!
//! Page 0 is the usual header; block b is page 1 + b. Records never span
//! pages: a record larger than a page cannot share a block, so such indexes
//! keep the coupled layout.

use super::header::PagesHeader;
use super::record::{write_record, NodeView};
use super::shuffle::BlockAssignment;
use super::{Layout, Span};
use crate::data::DType;
use std::io::Write;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockedLayout {
    pub page_size: usize,
    pub n: usize,
    pub dim: usize,
    pub dtype: DType,
    pub max_degree: usize,
    pub record_bytes: usize,
    /// Records per block.
    pub per_block: usize,
    /// Position of each node: block * per_block + slot.
    pub position: Vec<u32>,
}

/// Records (and their directory entries) that fit a page, or 0.
pub fn records_per_block(page_size: usize, record_bytes: usize) -> usize {
    page_size / (record_bytes + 4)
}

/// Records per block for a shuffle, which needs at least 2 (one record per
/// page leaves nothing to place together).
pub fn shuffle_capacity(page_size: usize, record_bytes: usize) -> crate::error::Result<usize> {
    let per_block = records_per_block(page_size, record_bytes);
    if per_block < 2 {
        return Err(crate::error::Error::argument(
            "shuffle",
            format!(
                "pages that hold at least 2 records of {record_bytes} bytes (use --page-size 8192 or 16384)"
            ),
            format!("{per_block} per {page_size}-byte page"),
        ));
    }
    Ok(per_block)
}

impl BlockedLayout {
    pub fn new(
        page_size: usize,
        dim: usize,
        dtype: DType,
        max_degree: usize,
        position: Vec<u32>,
        per_block: usize,
    ) -> Self {
        let record_bytes = dim * dtype.size() + 4 + 4 * max_degree;
        assert!(per_block >= 1 && per_block <= records_per_block(page_size, record_bytes));
        BlockedLayout {
            page_size,
            n: position.len(),
            dim,
            dtype,
            max_degree,
            record_bytes,
            per_block,
            position,
        }
    }

    fn dir_bytes(&self) -> usize {
        4 * self.per_block
    }

    pub fn blocks(&self) -> usize {
        self.n.div_ceil(self.per_block)
    }

    /// Writes the pages file for `assignment`. `vector_bytes(id, out)` gives
    /// the stored vector of node `id`. Blocks are written in order, one page
    /// buffer at a time.
    pub fn write<W: Write>(
        &self,
        out: &mut W,
        medoid: u32,
        assignment: &BlockAssignment,
        neighbors: &[Vec<u32>],
        vector_bytes: &dyn Fn(u32, &mut [u8]),
    ) -> std::io::Result<()> {
        let header = PagesHeader {
            layout: self.name().into(),
            page_size: self.page_size as u32,
            n: self.n as u64,
            dim: self.dim as u32,
            dtype: self.dtype,
            max_degree: self.max_degree as u32,
            medoid,
            pages: 1 + self.blocks() as u64,
        };
        let mut page = vec![0u8; self.page_size];
        header.encode(&mut page);
        out.write_all(&page)?;
        let vb = self.dim * self.dtype.size();
        let mut vec_buf = vec![0u8; vb];
        for members in &assignment.members {
            page.fill(0);
            for slot in 0..self.per_block {
                let id = members.get(slot).copied().unwrap_or(u32::MAX);
                page[4 * slot..4 * slot + 4].copy_from_slice(&id.to_le_bytes());
                if id == u32::MAX {
                    continue;
                }
                vector_bytes(id, &mut vec_buf);
                let s = self.dir_bytes() + slot * self.record_bytes;
                write_record(
                    &mut page[s..s + self.record_bytes],
                    &vec_buf,
                    &neighbors[id as usize],
                    self.max_degree,
                );
            }
            out.write_all(&page)?;
        }
        Ok(())
    }

    fn records_of_block<'a>(&self, bytes: &'a [u8], out: &mut Vec<(u32, &'a [u8])>) {
        out.clear();
        for slot in 0..self.per_block {
            let d = &bytes[4 * slot..4 * slot + 4];
            let id = u32::from_le_bytes([d[0], d[1], d[2], d[3]]);
            if id == u32::MAX || id as usize >= self.n {
                continue;
            }
            let s = self.dir_bytes() + slot * self.record_bytes;
            out.push((id, &bytes[s..s + self.record_bytes]));
        }
    }
}

impl Layout for BlockedLayout {
    fn name(&self) -> &'static str {
        "blocked"
    }

    fn page_size(&self) -> usize {
        self.page_size
    }

    fn max_span_bytes(&self) -> usize {
        self.page_size
    }

    fn span_of(&self, id: u32) -> Span {
        let block = self.position[id as usize] as usize / self.per_block;
        Span {
            offset: ((1 + block) * self.page_size) as u64,
            len: self.page_size as u32,
        }
    }

    fn record_bytes(&self) -> usize {
        self.record_bytes
    }

    fn record_slice<'a>(&self, id: u32, bytes: &'a [u8]) -> &'a [u8] {
        let slot = self.position[id as usize] as usize % self.per_block;
        let s = self.dir_bytes() + slot * self.record_bytes;
        &bytes[s..s + self.record_bytes]
    }

    fn parse<'a>(&self, record: &'a [u8]) -> NodeView<'a> {
        NodeView::parse(record, self.dim * self.dtype.size(), self.max_degree)
    }

    fn block_records<'a>(&self, _target: u32, bytes: &'a [u8], out: &mut Vec<(u32, &'a [u8])>) {
        self.records_of_block(bytes, out)
    }

    fn file_bytes(&self) -> u64 {
        ((1 + self.blocks()) * self.page_size) as u64
    }

    /// The id→position map.
    fn resident_bytes(&self) -> usize {
        self.position.capacity() * 4
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
        /// equals the one read through id order, and every block's directory
        /// lists exactly the records it holds.
        #[test]
        fn shuffled_layout_returns_the_same_records_as_id_order(
            n in 1usize..200, dim in 1usize..64, deg in 1usize..24, seed in 0u64..1000,
            method in prop_oneof![Just(Shuffle::None), Just(Shuffle::Bnp), Just(Shuffle::Bnf), Just(Shuffle::Bns)]) {
            let mut rng = Rng::new(seed);
            let lists: Vec<Vec<u32>> = (0..n).map(|u| {
                let mut l: Vec<u32> = (0..deg).map(|_| rng.below(n) as u32).filter(|&v| v != u as u32).collect();
                l.sort_unstable(); l.dedup(); l
            }).collect();
            let vb = |id: u32, out: &mut [u8]| out.iter_mut().enumerate().for_each(|(k, b)| *b = (k as u32 * 7 + id * 13) as u8);
            let page = 4096;
            let coupled = CoupledLayout::new(page, n, dim, DType::F32, deg);
            let mut id_file = vec![];
            coupled.write(&mut id_file, 0, &lists, &vb).unwrap();

            let per_block = records_per_block(page, coupled.record_bytes);
            prop_assume!(per_block >= 1);
            let p = ShuffleParams { method, iterations: 2, gain_threshold: 0.0 };
            let (assignment, _) = shuffle(&lists, per_block, &p);
            let blocked = BlockedLayout::new(page, dim, DType::F32, deg, assignment.positions(), per_block);
            let mut file = vec![];
            blocked.write(&mut file, 0, &assignment, &lists, &vb).unwrap();
            prop_assert_eq!(file.len() as u64, blocked.file_bytes());

            let mut records = vec![];
            for id in 0..n as u32 {
                let a = coupled.span_of(id);
                let want = coupled.record_slice(id, &id_file[a.offset as usize..a.offset as usize + a.len as usize]);
                let b = blocked.span_of(id);
                let bytes = &file[b.offset as usize..b.offset as usize + b.len as usize];
                prop_assert_eq!(blocked.record_slice(id, bytes), want);
                blocked.block_records(id, bytes, &mut records);
                prop_assert!(records.iter().any(|&(rid, rec)| rid == id && rec == want));
                prop_assert!(records.len() <= per_block);
            }
        }
    }

    #[test]
    fn records_per_block_for_the_papers_settings() {
        // Starling Appendix C: 128-d u8, R = 48 -> 12 records per 4 KB block.
        assert_eq!(records_per_block(4096, 128 + 4 + 48 * 4), 12);
        // wordnet-minilm: 384-d f32, R = 64 -> 2; its 96-d PCA -> 6.
        assert_eq!(records_per_block(4096, 384 * 4 + 4 + 64 * 4), 2);
        assert_eq!(records_per_block(4096, 96 * 4 + 4 + 64 * 4), 6);
    }
}
