//! The decoupled cluster layout of paper 002 §6 (the `ivf` profile):
//! vectors stored once, clusters as addresses.
//!
//! `pages.bin`: page 0 is the header; from byte `page_size` the vector
//! records in stored order (`layout::ivf_assign::Storage`), each the vector
//! then its u32 id, back to back; then, cluster after cluster, the u32
//! positions of the members a cluster does not hold in its own group (its
//! replicas and, without grouping, everyone). Reading cluster j is one
//! large read of its group (split into reads of at most `max_span_bytes`)
//! and its list, then one small read per listed position (§6.1–§6.2).
//!
//! `clusters.bin` (all of it held in RAM): magic `STRVIVF1`, u64 n, u32 k,
//! u32 dim, the k centroids (f32, row-major), then per cluster u32 group
//! start, u32 group length (positions), u64 list offset (bytes into
//! `pages.bin`), u32 list length (positions); then n u32: each id's
//! position (what [`Layout::span_of`] reads).

use super::header::PagesHeader;
use super::record::NodeView;
use super::{Layout, Span};
use crate::data::DType;
use crate::error::{Error, FileContext, Result};
use std::io::Write;
use std::path::Path;

pub const CLUSTERS_FILE: &str = "clusters.bin";
const MAGIC: &[u8; 8] = b"STRVIVF1";
/// The largest single read of a group: a group of more records is read in
/// several (a 64 KB read already runs at the SSD's bandwidth, and buffers
/// stay small: 64 slots of it a thread).
pub const MAX_READ: usize = 64 << 10;

/// Where cluster j's vectors are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClusterEntry {
    pub group_start: u32,
    pub group_len: u32,
    pub list_offset: u64,
    pub list_len: u32,
}

#[derive(Clone, Debug, PartialEq)]
pub struct IvfLayout {
    pub page_size: usize,
    pub n: usize,
    pub dim: usize,
    pub dtype: DType,
    /// Row-major `k x dim`, and transposed (`dim x k`) for the scan.
    pub centroids: Vec<f32>,
    transposed: Vec<f32>,
    pub clusters: Vec<ClusterEntry>,
    position: Vec<u32>,
}

impl IvfLayout {
    /// The layout of `storage` and its clusters' outsider lists.
    pub fn new(
        page_size: usize,
        dim: usize,
        dtype: DType,
        centroids: Vec<f32>,
        storage: &super::ivf_assign::Storage,
        lists: &[Vec<u32>],
    ) -> Self {
        let n = storage.order.len();
        let record = dim * dtype.size() + 4;
        let mut at = (page_size + n * record) as u64;
        let clusters = storage
            .groups
            .iter()
            .zip(lists)
            .map(|(&(s, l), list)| {
                let e = ClusterEntry {
                    group_start: s,
                    group_len: l,
                    list_offset: at,
                    list_len: list.len() as u32,
                };
                at += 4 * list.len() as u64;
                e
            })
            .collect();
        let k = storage.groups.len();
        let transposed = crate::quant::kmeans::transpose(&centroids, k, dim);
        IvfLayout {
            page_size,
            n,
            dim,
            dtype,
            centroids,
            transposed,
            clusters,
            position: storage.position.clone(),
        }
    }

    pub fn record_len(&self) -> usize {
        self.dim * self.dtype.size() + 4
    }

    /// The squared L2 distance of `query` to every centroid, into `out`.
    pub fn centroid_distances(&self, query: &[f32], out: &mut Vec<f32>) {
        out.resize(self.clusters.len(), 0.0);
        stratavec_simd::l2_sq_transposed(query, &self.transposed, out);
    }

    /// The byte span of the records at positions `start..start + len`.
    pub fn positions_span(&self, start: u32, len: u32) -> Span {
        let r = self.record_len() as u64;
        Span {
            offset: self.page_size as u64 + start as u64 * r,
            len: (len as u64 * r) as u32,
        }
    }

    /// Cluster j's group as reads of at most [`MAX_READ`] bytes: (first
    /// position, positions) each.
    pub fn group_reads(&self, j: usize) -> impl Iterator<Item = (u32, u32)> + '_ {
        let e = self.clusters[j];
        let per = (MAX_READ / self.record_len()).max(1) as u32;
        (0..e.group_len.div_ceil(per)).map(move |i| {
            let s = i * per;
            (e.group_start + s, per.min(e.group_len - s))
        })
    }

    /// The read of cluster j's outsider list (`None` when it is empty).
    pub fn list_span(&self, j: usize) -> Option<Span> {
        let e = self.clusters[j];
        (e.list_len > 0).then_some(Span {
            offset: e.list_offset,
            len: 4 * e.list_len,
        })
    }

    /// (id, vector bytes) of the record at the start of `bytes`.
    pub fn record_at<'a>(&self, bytes: &'a [u8]) -> (u32, &'a [u8]) {
        let vb = self.dim * self.dtype.size();
        let id = u32::from_le_bytes(bytes[vb..vb + 4].try_into().expect("4 bytes"));
        (id, &bytes[..vb])
    }

    /// Writes `pages.bin`: header, records in stored order, the lists.
    pub fn write<W: Write>(
        &self,
        out: &mut W,
        order: &[u32],
        lists: &[Vec<u32>],
        vector_bytes: &dyn Fn(u32, &mut [u8]),
    ) -> std::io::Result<()> {
        let header = PagesHeader {
            layout: self.name().into(),
            page_size: self.page_size as u32,
            n: self.n as u64,
            dim: self.dim as u32,
            dtype: self.dtype,
            max_degree: 0,
            medoid: 0,
            pages: self.file_bytes().div_ceil(self.page_size as u64),
            record_extra: 0,
        };
        let mut page = vec![0u8; self.page_size];
        header.encode(&mut page);
        out.write_all(&page)?;
        let vb = self.dim * self.dtype.size();
        let mut rec = vec![0u8; vb + 4];
        for &id in order {
            vector_bytes(id, &mut rec[..vb]);
            rec[vb..].copy_from_slice(&id.to_le_bytes());
            out.write_all(&rec)?;
        }
        for list in lists {
            for p in list {
                out.write_all(&p.to_le_bytes())?;
            }
        }
        Ok(())
    }

    /// Writes `clusters.bin`.
    pub fn write_clusters<W: Write>(&self, out: &mut W) -> std::io::Result<()> {
        out.write_all(MAGIC)?;
        out.write_all(&(self.n as u64).to_le_bytes())?;
        out.write_all(&(self.clusters.len() as u32).to_le_bytes())?;
        out.write_all(&(self.dim as u32).to_le_bytes())?;
        for c in &self.centroids {
            out.write_all(&c.to_le_bytes())?;
        }
        for e in &self.clusters {
            out.write_all(&e.group_start.to_le_bytes())?;
            out.write_all(&e.group_len.to_le_bytes())?;
            out.write_all(&e.list_offset.to_le_bytes())?;
            out.write_all(&e.list_len.to_le_bytes())?;
        }
        for p in &self.position {
            out.write_all(&p.to_le_bytes())?;
        }
        Ok(())
    }

    /// The layout `header` describes, its clusters read from `path` and
    /// checked: groups and lists inside the file, positions a permutation.
    pub fn open(header: &PagesHeader, path: &Path) -> Result<Self> {
        let bytes = std::fs::read(path).at("read", path)?;
        let bad = |field: &str, expected: String, found: String| {
            Error::index(path, field, expected, found)
        };
        if bytes.len() < 24 || &bytes[..8] != MAGIC {
            return Err(bad("magic", "\"STRVIVF1\"".into(), "other bytes".into()));
        }
        let u32_at = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().expect("4 bytes"));
        let u64_at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().expect("8 bytes"));
        let (n, k, dim) = (u64_at(8) as usize, u32_at(16) as usize, u32_at(20) as usize);
        if n != header.n as usize {
            return Err(bad("n", format!("{} (pages.bin)", header.n), n.to_string()));
        }
        if dim != header.dim as usize {
            return Err(bad(
                "dim",
                format!("{} (pages.bin)", header.dim),
                dim.to_string(),
            ));
        }
        // In u128: a damaged k must not wrap the size it implies (n and dim
        // are the header's, checked against the manifest).
        let want = 24 + 4 * k as u128 * dim as u128 + 20 * k as u128 + 4 * n as u128;
        if bytes.len() as u128 != want || k == 0 {
            return Err(bad(
                "file size",
                format!("{want} bytes (k = {k} >= 1)"),
                bytes.len().to_string(),
            ));
        }
        let centroids: Vec<f32> = bytes[24..24 + 4 * k * dim]
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect();
        let dir = 24 + 4 * k * dim;
        let page_size = header.page_size as usize;
        let record = dim * header.dtype.size() + 4;
        let lists_start = (page_size + n * record) as u64;
        let mut clusters = Vec::with_capacity(k);
        let mut list_end = lists_start;
        for j in 0..k {
            let o = dir + 20 * j;
            let e = ClusterEntry {
                group_start: u32_at(o),
                group_len: u32_at(o + 4),
                list_offset: u64_at(o + 8),
                list_len: u32_at(o + 16),
            };
            if e.group_start as usize + e.group_len as usize > n {
                return Err(bad(
                    &format!("group of cluster {j}"),
                    format!("positions within 0..{n}"),
                    format!(
                        "{}..{}",
                        e.group_start,
                        e.group_start as u64 + e.group_len as u64
                    ),
                ));
            }
            if e.list_offset != list_end {
                return Err(bad(
                    &format!("list offset of cluster {j}"),
                    list_end.to_string(),
                    e.list_offset.to_string(),
                ));
            }
            list_end += 4 * e.list_len as u64;
            clusters.push(e);
        }
        let pos = dir + 20 * k;
        let position: Vec<u32> = bytes[pos..]
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect();
        let mut seen = vec![false; n];
        for (id, &p) in position.iter().enumerate() {
            if p as usize >= n || std::mem::replace(&mut seen[p as usize], true) {
                return Err(bad(
                    &format!("position of vector {id}"),
                    format!("a position in 0..{n} no other vector has"),
                    p.to_string(),
                ));
            }
        }
        let transposed = crate::quant::kmeans::transpose(&centroids, k, dim);
        let layout = IvfLayout {
            page_size,
            n,
            dim,
            dtype: header.dtype,
            centroids,
            transposed,
            clusters,
            position,
        };
        Ok(layout)
    }
}

impl Layout for IvfLayout {
    fn name(&self) -> &'static str {
        super::LayoutKind::Ivf.name()
    }

    fn page_size(&self) -> usize {
        self.page_size
    }

    /// A group read, widened to pages on an SSD.
    fn max_span_bytes(&self) -> usize {
        super::widened_room((MAX_READ / self.record_len()).max(1) * self.record_len())
    }

    fn span_of(&self, id: u32) -> Span {
        self.positions_span(self.position[id as usize], 1)
    }

    fn record_bytes(&self) -> usize {
        self.record_len()
    }

    fn record_slice<'a>(&'a self, _id: u32, bytes: &'a [u8]) -> &'a [u8] {
        &bytes[..self.record_len()]
    }

    fn parse<'a>(&self, record: &'a [u8]) -> NodeView<'a> {
        NodeView::vector_only(&record[..self.dim * self.dtype.size()])
    }

    fn block_records<'a>(&self, target: u32, bytes: &'a [u8], out: &mut Vec<(u32, &'a [u8])>) {
        out.clear();
        out.push((target, &bytes[..self.record_len()]));
    }

    fn file_bytes(&self) -> u64 {
        let lists: u64 = self.clusters.iter().map(|e| 4 * e.list_len as u64).sum();
        (self.page_size + self.n * self.record_len()) as u64 + lists
    }

    /// Centroids (both orientations), the directory and the position map.
    fn resident_bytes(&self) -> usize {
        8 * self.centroids.len() + 20 * self.clusters.len() + 4 * self.position.len()
    }

    fn clusters(&self) -> Option<&IvfLayout> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::super::ivf_assign::{AssignParams, Assignment, Grouping};
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(20))]
        /// Written and reopened, every cluster read as the search reads it
        /// (its group's records, then each listed position's record) gives
        /// exactly its members with their own vectors, each once; and every
        /// id's own span holds its vector.
        #[test]
        fn clusters_read_back_to_their_members(n in 1usize..300, k in 1usize..20, r in 1usize..9,
                                               grouping in 0usize..3, seed in 0u64..30) {
            let dim = 5;
            let mut rng = crate::util::rng::Rng::new(seed);
            let x: Vec<f32> = (0..n * dim).map(|_| rng.normal()).collect();
            let a = Assignment::build(&x, dim, &AssignParams { clusters: k, replicas: r, closure: 0.5, balance: 1.5, iters: 4, seed });
            let h = a.frequencies(&x, 2);
            let g = [Grouping::None, Grouping::Primary, Grouping::Frequency][grouping];
            let s = a.storage(a.group_of(g, &h).as_deref());
            let lists: Vec<Vec<u32>> = a.members.iter().enumerate().map(|(j, m)| {
                let (gs, gl) = s.groups[j];
                m.iter().map(|&v| s.position[v as usize]).filter(|p| !(gs..gs + gl).contains(p)).collect()
            }).collect();
            let l = IvfLayout::new(4096, dim, DType::F32, a.centroids.clone(), &s, &lists);
            let vb = |id: u32, out: &mut [u8]| {
                for (o, v) in out.chunks_exact_mut(4).zip(&x[id as usize * dim..(id as usize + 1) * dim]) {
                    o.copy_from_slice(&v.to_le_bytes());
                }
            };
            let mut file = vec![];
            l.write(&mut file, &s.order, &lists, &vb).unwrap();
            prop_assert_eq!(file.len() as u64, l.file_bytes());
            let dir = tempfile::tempdir().unwrap();
            let cp = dir.path().join(CLUSTERS_FILE);
            let mut cb = vec![];
            l.write_clusters(&mut cb).unwrap();
            std::fs::write(&cp, &cb).unwrap();
            let h0 = PagesHeader::decode(&file[..4096]).unwrap();
            let back = IvfLayout::open(&h0, &cp).unwrap();
            prop_assert_eq!(&back, &l);
            let read = |sp: Span| &file[sp.offset as usize..(sp.offset + sp.len as u64) as usize];
            let rl = back.record_len();
            let mut expect = vec![0u8; dim * 4];
            for (j, m) in a.members.iter().enumerate() {
                let mut got = vec![];
                for (start, len) in back.group_reads(j) {
                    let bytes = read(back.positions_span(start, len));
                    prop_assert!(bytes.len() <= back.max_span_bytes());
                    for rec in bytes.chunks_exact(rl) {
                        let (id, v) = back.record_at(rec);
                        vb(id, &mut expect);
                        prop_assert_eq!(v, &expect[..]);
                        got.push(id);
                    }
                }
                if let Some(sp) = back.list_span(j) {
                    for p in read(sp).chunks_exact(4) {
                        let p = u32::from_le_bytes(p.try_into().unwrap());
                        let (id, v) = back.record_at(read(back.positions_span(p, 1)));
                        vb(id, &mut expect);
                        prop_assert_eq!(v, &expect[..]);
                        got.push(id);
                    }
                }
                got.sort_unstable();
                // A group holds only vectors of its cluster: exactly the
                // members, each once.
                prop_assert_eq!(&got, m, "cluster {}", j);
            }
            for id in 0..n as u32 {
                let (rid, v) = back.record_at(read(back.span_of(id)));
                vb(id, &mut expect);
                prop_assert_eq!(rid, id);
                prop_assert_eq!(v, &expect[..]);
            }
        }
    }
}
