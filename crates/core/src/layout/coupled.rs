//! DiskANN's coupled layout: each node's full vector and neighbour list in one
//! record, records packed into pages in id order, none straddling a page
//! boundary (so one page read fetches one node). A record larger than a page
//! takes whole pages of its own. Page 0 is the header. (DiskANN, restated in
//! Starling §2 and OctopusANN §2.2.)

use super::header::PagesHeader;
use super::record::{write_record, NodeView};
use super::{Layout, Span};
use crate::data::DType;
use std::io::Write;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoupledLayout {
    pub page_size: usize,
    pub n: usize,
    pub dim: usize,
    pub dtype: DType,
    pub max_degree: usize,
    /// Bytes of one record: vector + degree + max_degree ids + extra.
    pub record_bytes: usize,
    /// Bytes a record carries after its ids (the laser layout's neighbour
    /// codes); 0 for DiskANN's records.
    pub extra_bytes: usize,
    /// Records per page (>= 1), or 0 when one record spans several pages.
    pub nodes_per_page: usize,
    /// Pages one record takes when `nodes_per_page == 0`, else 1.
    pub pages_per_node: usize,
}

impl CoupledLayout {
    pub fn new(page_size: usize, n: usize, dim: usize, dtype: DType, max_degree: usize) -> Self {
        Self::with_extra(page_size, n, dim, dtype, max_degree, 0)
    }

    /// Records that carry `extra_bytes` after their ids (written by
    /// [`CoupledLayout::write_with`]).
    pub fn with_extra(
        page_size: usize,
        n: usize,
        dim: usize,
        dtype: DType,
        max_degree: usize,
        extra_bytes: usize,
    ) -> Self {
        let record_bytes = dim * dtype.size() + 4 + 4 * max_degree + extra_bytes;
        let nodes_per_page = page_size / record_bytes;
        let pages_per_node = if nodes_per_page == 0 {
            record_bytes.div_ceil(page_size)
        } else {
            1
        };
        CoupledLayout {
            page_size,
            n,
            dim,
            dtype,
            max_degree,
            record_bytes,
            extra_bytes,
            nodes_per_page,
            pages_per_node,
        }
    }

    /// The layout a pages header describes (whose ranges
    /// `PagesHeader::decode` checked); an error when its page count is not
    /// this layout's, so no span reaches past the pages the file has.
    pub fn from_header(h: &PagesHeader) -> Result<Self, String> {
        let l = Self::new(
            h.page_size as usize,
            h.n as usize,
            h.dim as usize,
            h.dtype,
            h.max_degree as usize,
        );
        l.check_pages(h.pages)?;
        Ok(l)
    }

    /// `pages` (a header's count) is the header page and this layout's
    /// data pages.
    pub fn check_pages(&self, pages: u64) -> Result<(), String> {
        let want = 1 + self.data_pages() as u64;
        match pages == want {
            true => Ok(()),
            false => Err(format!(
                "page count: expected {want} (a header page and {} records in {} \
                 pages of {} bytes), found {pages}",
                self.n,
                self.data_pages(),
                self.page_size
            )),
        }
    }

    /// Data pages (excluding the header page).
    pub fn data_pages(&self) -> usize {
        if self.nodes_per_page > 0 {
            self.n.div_ceil(self.nodes_per_page)
        } else {
            self.n * self.pages_per_node
        }
    }

    fn first_page(&self, id: u32) -> usize {
        1 + (id as usize)
            .checked_div(self.nodes_per_page)
            .unwrap_or(id as usize * self.pages_per_node)
    }

    /// Streams the pages file. `vector_bytes(id, out)` fills the stored form of
    /// vector `id` (`dim * dtype.size()` bytes, little-endian).
    pub fn write<W: Write>(
        &self,
        out: &mut W,
        medoid: u32,
        neighbors: &[Vec<u32>],
        vector_bytes: &dyn Fn(u32, &mut [u8]),
    ) -> std::io::Result<()> {
        self.write_with(
            out,
            self.name(),
            0,
            medoid,
            neighbors,
            vector_bytes,
            &|_, _| {},
        )
    }

    /// [`CoupledLayout::write`] under another layout's name and header
    /// field, filling each record's extra bytes with `extra(id, out)`.
    #[allow(clippy::too_many_arguments)]
    pub fn write_with<W: Write>(
        &self,
        out: &mut W,
        name: &str,
        record_extra: u32,
        medoid: u32,
        neighbors: &[Vec<u32>],
        vector_bytes: &dyn Fn(u32, &mut [u8]),
        extra: &dyn Fn(u32, &mut [u8]),
    ) -> std::io::Result<()> {
        let header = PagesHeader {
            layout: name.into(),
            page_size: self.page_size as u32,
            n: self.n as u64,
            dim: self.dim as u32,
            dtype: self.dtype,
            max_degree: self.max_degree as u32,
            medoid,
            pages: 1 + self.data_pages() as u64,
            record_extra,
        };
        let mut page = vec![0u8; self.page_size * self.pages_per_node];
        header.encode(&mut page[..self.page_size]);
        out.write_all(&page[..self.page_size])?;
        let vb = self.dim * self.dtype.size();
        let mut vec_buf = vec![0u8; vb];
        let per_page = self.nodes_per_page.max(1);
        for first in (0..self.n).step_by(per_page) {
            page.fill(0);
            for (slot, id) in (first..(first + per_page).min(self.n)).enumerate() {
                vector_bytes(id as u32, &mut vec_buf);
                let s = slot * self.record_bytes;
                let e = s + self.record_bytes - self.extra_bytes;
                write_record(&mut page[s..e], &vec_buf, &neighbors[id], self.max_degree);
                if self.extra_bytes > 0 {
                    extra(id as u32, &mut page[e..e + self.extra_bytes]);
                }
            }
            out.write_all(&page)?;
        }
        Ok(())
    }
}

impl Layout for CoupledLayout {
    fn name(&self) -> &'static str {
        super::LayoutKind::Coupled.name()
    }

    fn page_size(&self) -> usize {
        self.page_size
    }

    fn max_span_bytes(&self) -> usize {
        self.page_size * self.pages_per_node
    }

    fn span_of(&self, id: u32) -> Span {
        Span {
            offset: (self.first_page(id) * self.page_size) as u64,
            len: (self.page_size * self.pages_per_node) as u32,
        }
    }

    fn record_bytes(&self) -> usize {
        self.record_bytes
    }

    fn record_slice<'a>(&'a self, id: u32, bytes: &'a [u8]) -> &'a [u8] {
        let slot = if self.nodes_per_page > 0 {
            id as usize % self.nodes_per_page
        } else {
            0
        };
        let s = slot * self.record_bytes;
        &bytes[s..s + self.record_bytes]
    }

    fn parse<'a>(&self, record: &'a [u8]) -> NodeView<'a> {
        NodeView::parse(record, self.dim * self.dtype.size(), self.max_degree)
    }

    fn block_records<'a>(&self, target: u32, bytes: &'a [u8], out: &mut Vec<(u32, &'a [u8])>) {
        out.clear();
        if self.nodes_per_page == 0 {
            out.push((target, &bytes[..self.record_bytes]));
            return;
        }
        // Id order: the page holds the ids around the target.
        let first = target as usize / self.nodes_per_page * self.nodes_per_page;
        for id in first..(first + self.nodes_per_page).min(self.n) {
            let s = (id - first) * self.record_bytes;
            out.push((id as u32, &bytes[s..s + self.record_bytes]));
        }
    }

    fn file_bytes(&self) -> u64 {
        ((1 + self.data_pages()) * self.page_size) as u64
    }

    fn records_per_block(&self) -> f64 {
        self.nodes_per_page.max(1) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(40))]
        /// Every record read back through span_of + record equals what was
        /// written, for records smaller and larger than a page.
        #[test]
        fn every_record_round_trips(n in 1usize..60, dim in 1usize..1500, deg in 1usize..40,
                                    page in prop_oneof![Just(4096usize), Just(8192), Just(16384)],
                                    u8data in any::<bool>()) {
            let dtype = if u8data { DType::U8 } else { DType::F32 };
            let l = CoupledLayout::new(page, n, dim, dtype, deg);
            let lists: Vec<Vec<u32>> = (0..n).map(|i| (0..(i % (deg + 1)) as u32).map(|j| j * 7 + i as u32).collect()).collect();
            let vb = |id: u32, out: &mut [u8]| out.iter_mut().enumerate().for_each(|(k, b)| *b = (k as u32 * 31 + id) as u8);
            let mut file = vec![];
            l.write(&mut file, 0, &lists, &vb).unwrap();
            prop_assert_eq!(file.len() as u64, l.file_bytes());
            let h = PagesHeader::decode(&file[..page]).unwrap();
            prop_assert_eq!(CoupledLayout::from_header(&h).unwrap(), l.clone());
            let mut expect = vec![0u8; dim * dtype.size()];
            for id in 0..n as u32 {
                let sp = l.span_of(id);
                prop_assert_eq!(sp.offset % page as u64, 0);
                let bytes = &file[sp.offset as usize..sp.offset as usize + sp.len as usize];
                let rec = l.record(id, bytes);
                vb(id, &mut expect);
                prop_assert_eq!(rec.vector, &expect[..]);
                prop_assert_eq!(rec.neighbors().collect::<Vec<_>>(), lists[id as usize].clone());
            }
        }
    }

    #[test]
    fn diskann_geometry_for_384d_f32_r64() {
        let l = CoupledLayout::new(4096, 1000, 384, DType::F32, 64);
        assert_eq!(l.record_bytes, 1536 + 4 + 256);
        assert_eq!(l.nodes_per_page, 2);
        assert_eq!(l.data_pages(), 500);
    }
}
