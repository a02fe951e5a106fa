//! Gorgeous's graph-replicated layout (§3.4, Figure 7(a); §4.1): one block
//! of one page per node, in id order after the header page, holding the
//! node's exact vector and adjacency list and then the lists of some of its
//! neighbours, so that when those neighbours become candidates their lists
//! need no read. The file costs one page per node whatever the replicas
//! (§4.1: "the disk block of each vector takes up at most one 4KB disk
//! page"), so next to the coupled layout it grows only where the coupled
//! one fits two or more records a page (Figure 14: none at 768-d, 2x at
//! 384-d float).
//!
//! Block of node u (`page_size` bytes):
//!
//! | bytes            | field                                               |
//! |------------------|-----------------------------------------------------|
//! | dim·dtype size   | u's vector, stored element type, little endian      |
//! | 2                | u's degree d (u16 little endian)                    |
//! | ⌈d·id_bits/8⌉    | u's neighbour ids, `id_bits` = ⌈log2 n⌉ bits each   |
//! | 2 + ...          | the replica section ([`super::replication`])        |
//! | rest             | zero                                                |
//!
//! The first three rows are a packed record ([`super::record`]). Which lists
//! are replicated is [`super::replication`]'s rule (Gorgeous §4.1). A block
//! must hold the vector, the list of `max_degree` ids and the replica count,
//! or the layout is refused when built (`new`), before anything is written.

use super::header::PagesHeader;
use super::record::{id_bits, packed_len, NodeView};
use super::replication::{
    block_replicas, check_geometry, check_lists, own_record, BlockWriter, ReplicationStats,
    COUNT_BYTES,
};
use super::{CoupledLayout, Layout, Span};
use crate::data::DType;
use crate::error::{Error, Result};
use std::io::Write;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplicatedLayout {
    pub page_size: usize,
    pub n: usize,
    pub dim: usize,
    pub dtype: DType,
    pub max_degree: usize,
    /// Bits of each stored neighbour id.
    pub id_bits: u32,
    /// Bytes of the own record of a node with `max_degree` neighbours (node
    /// cache slots are this big).
    pub max_record_bytes: usize,
    /// A zero vector and degree 0: what the own record of a corrupt block
    /// reads as (as a missing record does in the blocked layout).
    zero_record: Vec<u8>,
}

impl ReplicatedLayout {
    /// The layout for `n` nodes; an error when a page cannot hold one node's
    /// vector, a list of `max_degree` ids and the replica count (the paper
    /// takes 8 or 16 KB blocks for such dimensions, §3.4).
    pub fn new(
        page_size: usize,
        n: usize,
        dim: usize,
        dtype: DType,
        max_degree: usize,
    ) -> Result<Self> {
        check_geometry(page_size, n, max_degree)?;
        let bits = id_bits(n);
        let vb = dim * dtype.size();
        let max_record_bytes = packed_len(vb, max_degree, bits);
        if max_record_bytes + COUNT_BYTES > page_size {
            // What a page of this size does hold, to say what to change.
            let spare = page_size.saturating_sub(vb + 2 + COUNT_BYTES);
            let fit_degree = spare * 8 / bits as usize;
            let fit_dim = page_size.saturating_sub(packed_len(0, max_degree, bits) + COUNT_BYTES)
                / dtype.size();
            return Err(Error::argument(
                "page_size",
                format!(
                    "a page that holds one node's vector and list: {} bytes for dim {dim} \
                     {dtype} ({vb} bytes) and degree {max_degree} ({}-bit ids), with the \
                     replica count (use --page-size 8192 or 16384)",
                    max_record_bytes + COUNT_BYTES,
                    bits
                ),
                format!(
                    "{page_size}-byte pages, which hold degree at most {fit_degree} at dim \
                     {dim}, or dim at most {fit_dim} at degree {max_degree}"
                ),
            ));
        }
        Ok(ReplicatedLayout {
            page_size,
            n,
            dim,
            dtype,
            max_degree,
            id_bits: bits,
            max_record_bytes,
            zero_record: vec![0; vb + 2],
        })
    }

    /// The layout a pages file's header describes; an error when the header
    /// is another layout's or its page count is not this layout's.
    pub fn from_header(h: &PagesHeader) -> Result<Self> {
        if h.layout != "replicated" {
            return Err(Error::argument(
                "pages header layout",
                "\"replicated\"",
                format!("{:?}", h.layout),
            ));
        }
        let l = Self::new(
            h.page_size as usize,
            h.n as usize,
            h.dim as usize,
            h.dtype,
            h.max_degree as usize,
        )?;
        let pages = l.file_bytes() / l.page_size as u64;
        if h.pages != pages {
            return Err(Error::argument(
                "pages header page count",
                format!("{pages} (a header page and one block per node)"),
                h.pages,
            ));
        }
        Ok(l)
    }

    fn vector_bytes(&self) -> usize {
        self.dim * self.dtype.size()
    }

    /// Streams the pages file: the header page, then the block of every
    /// node in id order. `vector_bytes(id, out)` fills the stored vector of
    /// node `id`; `distance(u, v)` is the exact distance that orders u's
    /// candidates; `max_replicas` is R' (`None`: as many as fit). Lists
    /// longer than `max_degree` or naming ids not below n are refused
    /// (`InvalidInput`) before anything is written.
    pub fn write<W: Write>(
        &self,
        out: &mut W,
        medoid: u32,
        lists: &[Vec<u32>],
        vector_bytes: &dyn Fn(u32, &mut [u8]),
        distance: &(dyn Fn(u32, u32) -> f32 + Sync),
        max_replicas: Option<usize>,
    ) -> std::io::Result<ReplicationStats> {
        check_lists(lists, self.n, self.max_degree)?;
        let file_bytes = self.file_bytes();
        let header = PagesHeader {
            layout: self.name().into(),
            page_size: self.page_size as u32,
            n: self.n as u64,
            dim: self.dim as u32,
            dtype: self.dtype,
            max_degree: self.max_degree as u32,
            medoid,
            pages: file_bytes / self.page_size as u64,
            record_extra: 0,
        };
        let packing = BlockWriter {
            header: &header,
            page_size: self.page_size,
            lists,
            id_bits: self.id_bits,
            vector_bytes: self.vector_bytes(),
            vector: vector_bytes,
        }
        .write(out, distance, max_replicas)?;
        let coupled = CoupledLayout::new(
            self.page_size,
            self.n,
            self.dim,
            self.dtype,
            self.max_degree,
        );
        Ok(packing.stats(self.n, file_bytes, coupled.file_bytes()))
    }
}

impl Layout for ReplicatedLayout {
    fn name(&self) -> &'static str {
        super::LayoutKind::Replicated.name()
    }

    fn page_size(&self) -> usize {
        self.page_size
    }

    fn max_span_bytes(&self) -> usize {
        self.page_size
    }

    fn span_of(&self, id: u32) -> Span {
        Span {
            offset: ((1 + id as u64) * self.page_size as u64),
            len: self.page_size as u32,
        }
    }

    /// The largest own record.
    fn record_bytes(&self) -> usize {
        self.max_record_bytes
    }

    fn record_slice<'a>(&'a self, _id: u32, bytes: &'a [u8]) -> &'a [u8] {
        own_record(bytes, self.vector_bytes(), self.max_degree, self.id_bits)
            .unwrap_or(&self.zero_record)
    }

    fn parse<'a>(&self, record: &'a [u8]) -> NodeView<'a> {
        NodeView::parse_packed(record, self.vector_bytes(), self.max_degree, self.id_bits)
    }

    /// The block's one full record (the replicas have no vectors); none
    /// when the block is corrupt.
    fn block_records<'a>(&self, target: u32, bytes: &'a [u8], out: &mut Vec<(u32, &'a [u8])>) {
        out.clear();
        if let Some(rec) = own_record(bytes, self.vector_bytes(), self.max_degree, self.id_bits) {
            out.push((target, rec));
        }
    }

    fn file_bytes(&self) -> u64 {
        (1 + self.n as u64) * self.page_size as u64
    }

    fn replicated_lists<'a>(
        &self,
        _target: u32,
        bytes: &'a [u8],
        out: &mut Vec<(u32, NodeView<'a>)>,
    ) {
        block_replicas(
            bytes,
            self.vector_bytes(),
            self.n,
            self.max_degree,
            self.id_bits,
            out,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::super::replication::testing::{
        check_blocks, coarse_distance, f32_bytes, l2, random_data, read,
    };
    use super::super::shuffle::random_graph;
    use super::*;
    use crate::util::rng::Rng;
    use proptest::prelude::*;

    fn vector_of(id: u32, out: &mut [u8]) {
        out.iter_mut()
            .enumerate()
            .for_each(|(k, b)| *b = (k as u32 * 31 + id * 7 + 1) as u8);
    }

    /// The largest dim whose vector, a full list and the replica count fit
    /// a page (the block is then full, or all but a few bytes).
    fn barely_fitting_dim(page: usize, n: usize, dtype: DType, deg: usize) -> usize {
        (page - packed_len(0, deg, id_bits(n)) - COUNT_BYTES) / dtype.size()
    }

    /// Checks everything a reader can see of a written replicated file;
    /// returns how many blocks each list was found in.
    fn check_file(
        l: &ReplicatedLayout,
        file: &[u8],
        lists: &[Vec<u32>],
        max_replicas: Option<usize>,
    ) -> std::result::Result<Vec<u32>, TestCaseError> {
        prop_assert_eq!(file.len() as u64, l.file_bytes());
        let h = PagesHeader::decode(&file[..l.page_size]).unwrap();
        prop_assert_eq!(&h.layout, "replicated");
        prop_assert_eq!(ReplicatedLayout::from_header(&h).unwrap(), l.clone());
        let mut expect = vec![0u8; l.dim * l.dtype.size()];
        for id in 0..l.n as u32 {
            // The vector comes with the block: no second read.
            prop_assert_eq!(l.vector_span_of(id), l.span_of(id));
            let bytes = read(l, file, l.span_of(id))?;
            vector_of(id, &mut expect);
            prop_assert_eq!(l.record(id, bytes).vector, &expect[..]);
            prop_assert_eq!(l.vector_slice(id, bytes), &expect[..]);
        }
        check_blocks(l, file, lists, l.id_bits, max_replicas, &coarse_distance)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        /// Every block parses back to the graph: the node's vector and list,
        /// and replicas that are its neighbours' lists, closest first, within
        /// the cap, filling the block as far as the rule allows; the header
        /// and file length agree with the layout; the same input gives the
        /// same bytes.
        #[test]
        fn every_block_round_trips(n in 1usize..90, deg in 1usize..40, seed in 0u64..10_000,
                                   page in prop_oneof![Just(4096usize), Just(8192)],
                                   u8data in any::<bool>(), large in any::<bool>(), dim_seed in 1usize..300,
                                   max_replicas in prop_oneof![Just(None), (0usize..6).prop_map(Some)]) {
            let dtype = if u8data { DType::U8 } else { DType::F32 };
            let dim = if large { barely_fitting_dim(page, n, dtype, deg) - dim_seed % 3 } else { dim_seed };
            let l = ReplicatedLayout::new(page, n, dim, dtype, deg).unwrap();
            let lists = random_graph(n, deg, &mut Rng::new(seed));
            let mut file = vec![];
            let stats = l.write(&mut file, 0, &lists, &vector_of, &coarse_distance, max_replicas).unwrap();
            let times = check_file(&l, &file, &lists, max_replicas)?;
            prop_assert_eq!(stats.replicas, times.iter().map(|&t| u64::from(t)).sum::<u64>());
            prop_assert_eq!(stats.max_times_replicated, times.iter().copied().max().unwrap_or(0));
            prop_assert_eq!(stats.file_bytes, file.len() as u64);
            let coupled = CoupledLayout::new(page, n, dim, dtype, deg).file_bytes();
            prop_assert_eq!(stats.blowup_vs_coupled, file.len() as f64 / coupled as f64);
            let mut again = vec![];
            l.write(&mut again, 0, &lists, &vector_of, &coarse_distance, max_replicas).unwrap();
            prop_assert!(again == file);
        }

        /// Random bytes as a block (of any length, read against any layout)
        /// never panic; whatever parses is in range.
        #[test]
        fn garbage_blocks_never_panic(n in 1usize..100_000, deg in 0usize..200, dim in 1usize..400,
                                      u8data in any::<bool>(), seed in any::<u64>(), len in 0usize..4097,
                                      sparse in any::<bool>()) {
            let dtype = if u8data { DType::U8 } else { DType::F32 };
            let Ok(l) = ReplicatedLayout::new(4096, n, dim, dtype, deg) else { return Ok(()) };
            let mut rng = Rng::new(seed);
            // Sparse: mostly zero, so small counts and degrees parse further.
            let bytes: Vec<u8> = (0..len)
                .map(|_| if sparse && rng.below(4) > 0 { rng.below(3) as u8 } else { rng.next_u64() as u8 })
                .collect();
            let target = rng.below(n) as u32;
            let rec = l.record(target, &bytes);
            prop_assert!(rec.degree() <= deg);
            prop_assert_eq!(rec.neighbors().count(), rec.degree());
            let mut records = vec![];
            l.block_records(target, &bytes, &mut records);
            prop_assert!(records.len() <= 1);
            let mut replicas = vec![];
            l.replicated_lists(target, &bytes, &mut replicas);
            for (id, view) in &replicas {
                prop_assert!((*id as usize) < n);
                prop_assert!(view.degree() <= deg);
                prop_assert_eq!(view.neighbors().count(), view.degree());
            }
        }

        /// A written block with bytes flipped at random never panics.
        #[test]
        fn corrupted_blocks_never_panic(seed in any::<u64>(), flips in 1usize..40) {
            let n = 50;
            let l = ReplicatedLayout::new(4096, n, 16, DType::F32, 12).unwrap();
            let lists = random_graph(n, 12, &mut Rng::new(seed));
            let mut file = vec![];
            l.write(&mut file, 0, &lists, &vector_of, &coarse_distance, None).unwrap();
            let mut rng = Rng::new(seed ^ 1);
            let id = rng.below(n) as u32;
            let sp = l.span_of(id);
            let mut block = file[sp.offset as usize..sp.offset as usize + 4096].to_vec();
            for _ in 0..flips {
                // Mostly in the used front of the block, where it matters.
                let front = rng.below(2) == 0;
                let at = rng.below(if front { 400 } else { 4096 });
                block[at] ^= 1 << rng.below(8);
            }
            let mut replicas = vec![];
            l.replicated_lists(id, &block, &mut replicas);
            for (rid, view) in &replicas {
                prop_assert!((*rid as usize) < n);
                prop_assert!(view.degree() <= 12);
            }
            prop_assert!(l.record(id, &block).degree() <= 12);
        }
    }

    /// The figures of the report: 10,000 random f32 vectors with random
    /// lists of 64 at 4 KB. The file is one page a node whatever R', so next
    /// to the coupled layout it doubles at 384-d (coupled: 2 records of 1796
    /// bytes a page) and costs nothing at 768-d (coupled: 1 record of 3332
    /// bytes a page), as Gorgeous Figure 14 reports for Wiki and Laion.
    #[test]
    fn blowup_for_10k_random_vectors_at_384d_and_768d() {
        let n = 10_000;
        for (dim, per_block, blowup) in [(384, 21.0f64, 10_001.0 / 5_001.0), (768, 7.0, 1.0)] {
            let (vectors, lists) = random_data(n, dim, 64, 7);
            let l = ReplicatedLayout::new(4096, n, dim, DType::F32, 64).unwrap();
            let vb = |id: u32, out: &mut [u8]| f32_bytes(&vectors, dim, id, out);
            let d = |u: u32, v: u32| l2(&vectors, dim, u, v);
            for max_replicas in [None, Some(8), Some(4)] {
                let s = l
                    .write(&mut std::io::sink(), 0, &lists, &vb, &d, max_replicas)
                    .unwrap();
                eprintln!(
                    "replicated {dim}-d R'={max_replicas:?}: {:.2} replicas a block, a list in at \
                     most {} blocks, {} bytes, blow-up {:.4} vs coupled",
                    s.mean_replicas_per_block,
                    s.max_times_replicated,
                    s.file_bytes,
                    s.blowup_vs_coupled
                );
                assert_eq!(s.file_bytes, 10_001 * 4096);
                assert!((s.blowup_vs_coupled - blowup).abs() < 1e-9);
                // Own record 1536 + 114 (or 3072 + 114) bytes, count 2,
                // replicas of 2 + 2 + 112 bytes each.
                // Under a cap a node whose closest lists are taken by earlier
                // nodes can run out of candidates: the mean stays a little
                // under R'.
                let want = max_replicas.map_or(per_block, |r| per_block.min(r as f64));
                let m = s.mean_replicas_per_block;
                assert!(m <= want && m > 0.95 * want, "{s:?}");
            }
        }
    }

    #[test]
    fn a_page_too_small_for_one_node_is_an_error_naming_the_sizes() {
        // 1024-d float (4096 bytes) cannot share a 4 KB page with its list.
        let e = ReplicatedLayout::new(4096, 1000, 1024, DType::F32, 64)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("page_size:") && e.contains("dim 1024") && e.contains("degree 64"),
            "{e}"
        );
        assert!(e.contains("4096-byte pages"), "{e}");
        // One byte too many: the barely fitting dim plus one element.
        let dim = barely_fitting_dim(4096, 1000, DType::U8, 64);
        assert!(ReplicatedLayout::new(4096, 1000, dim, DType::U8, 64).is_ok());
        let e = ReplicatedLayout::new(4096, 1000, dim + 1, DType::U8, 64).unwrap_err();
        assert!(
            e.to_string()
                .contains(&format!("dim at most {dim} at degree 64")),
            "{e}"
        );
        assert!(ReplicatedLayout::new(8192, 1000, 1024, DType::F32, 64).is_ok());
        assert!(ReplicatedLayout::new(4000, 10, 8, DType::F32, 4).is_err());
    }

    #[test]
    fn lists_the_layout_cannot_encode_are_refused_before_writing() {
        let l = ReplicatedLayout::new(4096, 3, 4, DType::F32, 2).unwrap();
        let mut file = vec![];
        let too_long = vec![vec![1, 2, 0], vec![], vec![]];
        let e = l.write(&mut file, 0, &too_long, &vector_of, &coarse_distance, None);
        assert!(e.unwrap_err().to_string().contains("degree of node 0"));
        let out_of_range = vec![vec![1], vec![3], vec![]];
        let e = l.write(
            &mut file,
            0,
            &out_of_range,
            &vector_of,
            &coarse_distance,
            None,
        );
        assert!(e.unwrap_err().to_string().contains("found 3"));
        assert!(file.is_empty());
    }

    #[test]
    fn another_layouts_header_is_refused() {
        let l = ReplicatedLayout::new(4096, 10, 8, DType::F32, 4).unwrap();
        let mut h = PagesHeader {
            layout: "coupled".into(),
            page_size: 4096,
            n: 10,
            dim: 8,
            dtype: DType::F32,
            max_degree: 4,
            medoid: 0,
            pages: 11,
            record_extra: 0,
        };
        assert!(ReplicatedLayout::from_header(&h).is_err());
        h.layout = "replicated".into();
        assert_eq!(ReplicatedLayout::from_header(&h).unwrap(), l);
        h.pages = 6;
        assert!(ReplicatedLayout::from_header(&h).is_err());
    }
}
