//! The compact CSR layout for second-tier memory (Cheng et al., paper 002
//! §5, "Compressed layout"): every record — vector, u16 degree, the ids
//! packed in ⌈log2 n⌉ bits — back to back in id order, with no page padding,
//! and an offsets array saying where each begins. DiskANN pads records so
//! none straddles a 4 KB page, because an SSD reads whole pages; a tier read
//! at 64–256 B granularity (CXL, NVM, RDMA) reads just the record, so the
//! padding, and the unused id slots of fixed-degree records, are waste
//! (4–44% of the index in the paper's Figure 8).
//!
//! `pages.bin`: page 0 is the header; the records follow from byte
//! `page_size`. `offsets.bin` holds where each record starts ([`write_offsets`]).
//! At open the offsets are kept as a 32-bit offset a node from a 64-bit base
//! every 65,536 nodes: 4 bytes a node of RAM instead of 8.
//!
//! The layout also opens on an SSD: the scheduler widens a record's span to
//! the aligned pages around it (`Span::aligned`), one or two pages a read.

use super::header::PagesHeader;
use super::record::{id_bits, packed_len, write_packed, NodeView};
use super::{Layout, Span};
use crate::data::DType;
use crate::error::{Error, FileContext, Result};
use std::io::Write;
use std::path::Path;

/// The offsets file's name in an index directory.
pub const OFFSETS_FILE: &str = "offsets.bin";
const MAGIC: &[u8; 8] = b"STRVCSR1";
const HEADER: usize = 16;
/// Nodes a 64-bit base covers: a group's records must span < 4 GiB, which
/// holds for any record under 64 KB (the u16 degree's bound already).
const GROUP_BITS: u32 = 16;

/// Where every record starts, n + 1 entries (the last: the end of the file).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Offsets {
    bases: Vec<u64>,
    rel: Vec<u32>,
}

impl Offsets {
    fn new(all: &[u64]) -> Offsets {
        let bases: Vec<u64> = all.iter().step_by(1 << GROUP_BITS).copied().collect();
        let rel = all
            .iter()
            .enumerate()
            .map(|(i, &o)| {
                let d = o - bases[i >> GROUP_BITS];
                u32::try_from(d).expect("a group of records spans under 4 GiB")
            })
            .collect();
        Offsets { bases, rel }
    }

    #[inline]
    fn get(&self, i: usize) -> u64 {
        self.bases[i >> GROUP_BITS] + u64::from(self.rel[i])
    }

    fn resident_bytes(&self) -> usize {
        8 * self.bases.len() + 4 * self.rel.len()
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CsrLayout {
    pub page_size: usize,
    pub n: usize,
    pub dim: usize,
    pub dtype: DType,
    pub max_degree: usize,
    pub id_bits: u32,
    offsets: Offsets,
}

impl CsrLayout {
    /// The layout of `lists` (what [`CsrLayout::write`] will write).
    pub fn new(
        page_size: usize,
        dim: usize,
        dtype: DType,
        max_degree: usize,
        lists: &[Vec<u32>],
    ) -> Self {
        let n = lists.len();
        let bits = id_bits(n);
        let vb = dim * dtype.size();
        let mut all = Vec::with_capacity(n + 1);
        let mut at = page_size as u64;
        for l in lists {
            all.push(at);
            at += packed_len(vb, l.len(), bits) as u64;
        }
        all.push(at);
        CsrLayout {
            page_size,
            n,
            dim,
            dtype,
            max_degree,
            id_bits: bits,
            offsets: Offsets::new(&all),
        }
    }

    /// The layout `header` describes, its offsets read from `offsets_path`
    /// and checked: the first record right after the header page, each no
    /// shorter than an empty record and no longer than a full one.
    pub fn open(header: &PagesHeader, offsets_path: &Path) -> Result<Self> {
        let n = header.n as usize;
        let bytes = std::fs::read(offsets_path).at("read", offsets_path)?;
        let bad = |field: String, expected: String, found: String| {
            Error::index(offsets_path, field, expected, found)
        };
        if bytes.len() < HEADER || &bytes[..8] != MAGIC {
            return Err(bad(
                "magic".into(),
                "\"STRVCSR1\"".into(),
                "other bytes".into(),
            ));
        }
        let fn_ = u64::from_le_bytes(bytes[8..16].try_into().expect("8 bytes")) as usize;
        if fn_ != n {
            return Err(bad("n".into(), format!("{n} (pages.bin)"), fn_.to_string()));
        }
        // In u128: no header count makes the size wrap.
        let want = HEADER as u128 + 8 * (n as u128 + 1);
        if bytes.len() as u128 != want {
            return Err(bad(
                "file size".into(),
                want.to_string(),
                bytes.len().to_string(),
            ));
        }
        let all: Vec<u64> = bytes[HEADER..]
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect();
        let (dim, dtype, max_degree) = (
            header.dim as usize,
            header.dtype,
            header.max_degree as usize,
        );
        let bits = id_bits(n);
        let vb = dim * dtype.size();
        let (lo, hi) = (
            packed_len(vb, 0, bits) as u64,
            packed_len(vb, max_degree, bits) as u64,
        );
        if all[0] != u64::from(header.page_size) {
            return Err(bad(
                "offset of node 0".into(),
                format!("{} (after the header page)", header.page_size),
                all[0].to_string(),
            ));
        }
        for (id, w) in all.windows(2).enumerate() {
            let len = w[1].wrapping_sub(w[0]);
            if w[1] < w[0] || len < lo || len > hi {
                return Err(bad(
                    format!("length of record {id}"),
                    format!("{lo}..={hi} bytes (degree 0..={max_degree}, pages.bin's header)"),
                    format!("{} (offsets {} .. {})", len as i64, w[0], w[1]),
                ));
            }
        }
        Ok(CsrLayout {
            page_size: header.page_size as usize,
            n,
            dim,
            dtype,
            max_degree,
            id_bits: bits,
            offsets: Offsets::new(&all),
        })
    }

    fn vector_bytes(&self) -> usize {
        self.dim * self.dtype.size()
    }

    fn len_of(&self, id: usize) -> usize {
        (self.offsets.get(id + 1) - self.offsets.get(id)) as usize
    }

    /// Streams `pages.bin`: the header page, then every record in id order.
    pub fn write<W: Write>(
        &self,
        out: &mut W,
        medoid: u32,
        lists: &[Vec<u32>],
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
            pages: self.file_bytes().div_ceil(self.page_size as u64),
            record_extra: 0,
        };
        let mut page = vec![0u8; self.page_size];
        header.encode(&mut page);
        out.write_all(&page)?;
        let mut vector = vec![0u8; self.vector_bytes()];
        let mut record = Vec::with_capacity(self.record_bytes());
        for (id, list) in lists.iter().enumerate() {
            vector_bytes(id as u32, &mut vector);
            record.resize(self.len_of(id), 0);
            write_packed(&mut record, &vector, list, self.id_bits);
            out.write_all(&record)?;
        }
        Ok(())
    }

    /// Writes `offsets.bin`: magic, u64 n, then n + 1 u64 offsets.
    pub fn write_offsets<W: Write>(&self, out: &mut W) -> std::io::Result<()> {
        out.write_all(MAGIC)?;
        out.write_all(&(self.n as u64).to_le_bytes())?;
        for i in 0..=self.n {
            out.write_all(&self.offsets.get(i).to_le_bytes())?;
        }
        Ok(())
    }

    /// Bytes of the records alone (what the coupled layout's data pages
    /// hold padded).
    pub fn record_region_bytes(&self) -> u64 {
        self.offsets.get(self.n) - self.offsets.get(0)
    }
}

impl Layout for CsrLayout {
    fn name(&self) -> &'static str {
        super::LayoutKind::Csr.name()
    }

    fn page_size(&self) -> usize {
        self.page_size
    }

    /// Room for the aligned read that covers the largest record wherever it
    /// lies (on a byte-granular tier the read is just the record).
    fn max_span_bytes(&self) -> usize {
        super::widened_room(self.record_bytes())
    }

    fn span_of(&self, id: u32) -> Span {
        let id = id as usize;
        Span {
            offset: self.offsets.get(id),
            len: self.len_of(id) as u32,
        }
    }

    fn record_bytes(&self) -> usize {
        packed_len(self.vector_bytes(), self.max_degree, self.id_bits)
    }

    fn record_slice<'a>(&'a self, id: u32, bytes: &'a [u8]) -> &'a [u8] {
        &bytes[..self.len_of(id as usize)]
    }

    fn parse<'a>(&self, record: &'a [u8]) -> NodeView<'a> {
        NodeView::parse_packed(record, self.vector_bytes(), self.max_degree, self.id_bits)
    }

    fn block_records<'a>(&self, target: u32, bytes: &'a [u8], out: &mut Vec<(u32, &'a [u8])>) {
        out.clear();
        out.push((target, &bytes[..self.len_of(target as usize)]));
    }

    fn file_bytes(&self) -> u64 {
        self.offsets.get(self.n)
    }

    fn resident_bytes(&self) -> usize {
        self.offsets.resident_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::CoupledLayout;
    use proptest::prelude::*;

    fn lists(n: usize, deg: usize, salt: u32) -> Vec<Vec<u32>> {
        (0..n)
            .map(|i| {
                let d = (i * 7 + salt as usize) % (deg + 1);
                (0..d as u32)
                    .map(|j| (j * 131 + i as u32 * 17 + salt) % n as u32)
                    .collect()
            })
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(40))]
        /// The round trip of paper 002's CSR: every record read back
        /// through span_of + record equals the graph and the vectors
        /// written; the offsets file reopens to the same layout; the file
        /// is exactly the records, unpadded.
        #[test]
        fn csr_round_trip_equals_the_graph(n in 1usize..300, dim in 1usize..300, deg in 1usize..70,
                                           salt in 0u32..1000, f16 in any::<bool>()) {
            let dtype = if f16 { DType::F16 } else { DType::F32 };
            let g = lists(n, deg, salt);
            let l = CsrLayout::new(4096, dim, dtype, deg, &g);
            let vb = |id: u32, out: &mut [u8]| out.iter_mut().enumerate().for_each(|(k, b)| *b = (k as u32 * 31 + id) as u8);
            let mut file = vec![];
            l.write(&mut file, 0, &g, &vb).unwrap();
            prop_assert_eq!(file.len() as u64, l.file_bytes());
            let bits = id_bits(n) as usize;
            let packed: usize = g.iter().map(|x| dim * dtype.size() + 2 + (x.len() * bits).div_ceil(8)).sum();
            prop_assert_eq!(l.record_region_bytes() as usize, packed);
            let dir = tempfile::tempdir().unwrap();
            let off = dir.path().join(OFFSETS_FILE);
            let mut ob = vec![];
            l.write_offsets(&mut ob).unwrap();
            std::fs::write(&off, &ob).unwrap();
            let h = PagesHeader::decode(&file[..4096]).unwrap();
            let back = CsrLayout::open(&h, &off).unwrap();
            prop_assert_eq!(&back, &l);
            let mut expect = vec![0u8; dim * dtype.size()];
            for id in 0..n as u32 {
                let sp = back.span_of(id);
                let bytes = &file[sp.offset as usize..(sp.offset + sp.len as u64) as usize];
                let rec = back.record(id, bytes);
                vb(id, &mut expect);
                prop_assert_eq!(rec.vector, &expect[..]);
                prop_assert_eq!(rec.neighbors().collect::<Vec<_>>(), g[id as usize].clone());
                // Widened to pages (an SSD read), the record is found at its shift.
                let (read, shift) = sp.aligned(4096);
                prop_assert!(read.len as usize <= back.max_span_bytes());
                let end = ((read.offset + read.len as u64) as usize).min(file.len());
                let wide = &file[read.offset as usize..end];
                prop_assert_eq!(back.record(id, &wide[shift..]).vector, &expect[..]);
            }
        }
    }

    /// At 384-d float32 and R = 64 (wordnet-minilm, mean degree 52.5) the
    /// coupled layout pads two 1,796-byte records into each 4 KB page; CSR
    /// stores 1,538 bytes and 17 bits an id: 0.81x the bytes.
    #[test]
    fn csr_is_smaller_than_coupled_at_384d() {
        let n = 116_707;
        let g: Vec<Vec<u32>> = (0..n)
            .map(|i| (0..52 + i % 2).map(|j| (i + j) as u32 % n as u32).collect())
            .collect();
        let csr = CsrLayout::new(4096, 384, DType::F32, 64, &g);
        let coupled = CoupledLayout::new(4096, n, 384, DType::F32, 64);
        assert_eq!(csr.record_bytes(), 1536 + 2 + 136);
        let ratio = csr.file_bytes() as f64 / coupled.file_bytes() as f64;
        assert!((0.80..0.81).contains(&ratio), "{ratio}");
        assert_eq!(csr.resident_bytes(), 8 * 2 + 4 * (n + 1));
    }

    #[test]
    fn bad_offsets_are_named() {
        let g = lists(50, 8, 3);
        let l = CsrLayout::new(4096, 4, DType::F32, 8, &g);
        let mut file = vec![];
        l.write(&mut file, 0, &g, &|_, o| o.fill(1)).unwrap();
        let h = PagesHeader::decode(&file[..4096]).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let off = dir.path().join(OFFSETS_FILE);
        let mut ob = vec![];
        l.write_offsets(&mut ob).unwrap();
        // A record made one byte longer than a full one can be.
        let at = HEADER + 8 * 10;
        let v = u64::from_le_bytes(ob[at..at + 8].try_into().unwrap()) + 100;
        ob[at..at + 8].copy_from_slice(&v.to_le_bytes());
        std::fs::write(&off, &ob).unwrap();
        let e = CsrLayout::open(&h, &off).unwrap_err().to_string();
        assert!(
            e.contains("offsets.bin") && e.contains("length of record 9"),
            "{e}"
        );
        std::fs::write(&off, &ob[..40]).unwrap();
        let e = CsrLayout::open(&h, &off).unwrap_err().to_string();
        assert!(e.contains("file size"), "{e}");
    }
}
