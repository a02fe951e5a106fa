//! Reading an index's graph back from its pages file, sequentially and
//! buffered (one pass, a page at a time): what the relayout and the
//! shuffle report need, without holding the whole file in RAM.

use crate::error::{Error, FileContext, Result};
use crate::layout::{CoupledLayout, Layout, PagesHeader};
use std::io::Read;
use std::path::Path;

/// The neighbour lists of every node and the layout they were read from.
pub fn read_graph(dir: &Path) -> Result<(CoupledLayout, u32, Vec<Vec<u32>>)> {
    let path = dir.join(crate::layout::PAGES_FILE);
    let mut f =
        std::io::BufReader::with_capacity(1 << 20, std::fs::File::open(&path).at("open", &path)?);
    let mut first = vec![0u8; 4096];
    f.read_exact(&mut first).at("read", &path)?;
    let header = PagesHeader::decode(&first)
        .map_err(|e| Error::index(&path, "header", "a stratavec pages header", e))?;
    let layout = CoupledLayout::from_header(&header)
        .map_err(|e| Error::index(&path, "header", "a coupled layout", e))?;
    let page = layout.page_size;
    // The header page may be larger than the 4 KiB already read.
    let mut rest = vec![0u8; page.saturating_sub(4096)];
    f.read_exact(&mut rest).at("read", &path)?;
    let span = layout.max_span_bytes();
    let mut buf = vec![0u8; span];
    let mut lists = Vec::with_capacity(layout.n);
    let per = layout.nodes_per_page.max(1);
    for first_id in (0..layout.n).step_by(per) {
        f.read_exact(&mut buf).at("read", &path)?;
        for id in first_id..(first_id + per).min(layout.n) {
            let rec = layout.record(id as u32, &buf);
            let l: Vec<u32> = rec.neighbors().collect();
            if let Some(&bad) = l.iter().find(|&&v| v as usize >= layout.n) {
                return Err(Error::index(
                    &path,
                    format!("node {id}: neighbour id"),
                    format!("< {}", layout.n),
                    bad,
                ));
            }
            lists.push(l);
        }
    }
    Ok((layout, header.medoid, lists))
}
