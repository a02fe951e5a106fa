//! What one page read brings a graph search: the overlap ratio OR(G) of the
//! index's pages as stored (Starling eq. 5; OctopusANN §3 "Overlap Ratio":
//! OR(u) = |B(u) ∩ N(u)| / (n_p − 1), the share of the other records in
//! u's page that are u's out-neighbours, 0 when u is alone, averaged over
//! the nodes) and n_p, the records a node's page holds. With the hops a
//! query makes they are the inputs of OctopusANN's page-I/O model (§3,
//! eq. 1–2), which `stratavec bench --ablate` sets beside the reads it
//! measures.
//!
//! Computed from the pages file itself, so it describes the layout a search
//! reads (id order, BNF blocks, laser records) rather than the assignment a
//! shuffle reported while building.

use super::open::Index;
use crate::error::{Error, FileContext, Result};
use rayon::prelude::*;

#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct PageUtility {
    /// OR(G): mean over nodes of the share of their page-mates that are
    /// their out-neighbours.
    pub overlap_ratio: f64,
    /// Mean over nodes of the records their page holds (n_p, the node
    /// itself included).
    pub records_per_page: f64,
}

impl PageUtility {
    /// Records a page read for a node is expected to bring that the search
    /// wants (OctopusANN §3's intuition for eq. 2, "each page read contributes
    /// an expected OR(G)·n_p useful neighbours", with the node itself
    /// counted): 1 + OR(G)·(n_p − 1). A search that looks only at the
    /// record it read for uses 1.
    pub fn useful_records(&self) -> f64 {
        1.0 + self.overlap_ratio * (self.records_per_page - 1.0).max(0.0)
    }
}

impl Index {
    /// OR(G) and n_p of this index's pages, or `None` for layouts whose
    /// reads are not graph pages. Reads the whole pages file (through a
    /// memory map, not the search's reader).
    pub fn page_utility(&self) -> Result<Option<PageUtility>> {
        let layout = self.layout();
        if !self.plan.layout.reads_graph_pages() {
            return Ok(None);
        }
        let path = self.pages_path();
        let file = std::fs::File::open(path).at("open", path)?;
        let map = stratavec_io::map_readonly(&file).at("mmap", path)?;
        let n = self.len();
        let page_of = |id: u32| layout.span_of(id).offset;
        let per_node = |u: u32| -> Result<(f64, f64)> {
            let span = layout.span_of(u);
            let end = span.offset + span.len as u64;
            let bytes = map.get(span.offset as usize..end as usize).ok_or_else(|| {
                Error::index(
                    path,
                    format!("node {u}: page"),
                    format!("bytes {}..{end} inside the file", span.offset),
                    format!("{} bytes", map.len()),
                )
            })?;
            let mut records = Vec::new();
            layout.block_records(u, bytes, &mut records);
            let np = records.len().max(1);
            if np == 1 {
                return Ok((0.0, 1.0));
            }
            let shared = layout
                .record(u, bytes)
                .neighbors()
                .filter(|&v| v != u && (v as usize) < n && page_of(v) == span.offset)
                .count();
            Ok((shared as f64 / (np - 1) as f64, np as f64))
        };
        // Summed in fixed chunks: the same value for any number of threads.
        let ids: Vec<u32> = (0..n as u32).collect();
        let sums = ids
            .par_chunks(4096)
            .map(|chunk| {
                chunk.iter().try_fold((0.0, 0.0), |(o, p), &u| {
                    per_node(u).map(|(ou, pu)| (o + ou, p + pu))
                })
            })
            .collect::<Result<Vec<(f64, f64)>>>()?;
        let (or, np) = sums
            .iter()
            .fold((0.0, 0.0), |(a, b), &(o, p)| (a + o, b + p));
        let n = n.max(1) as f64;
        Ok(Some(PageUtility {
            overlap_ratio: or / n,
            records_per_page: np / n,
        }))
    }
}
