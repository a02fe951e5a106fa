//! The pages stage: `pages.bin` in the plan's layout, and the layout's own
//! files (the blocked layout's id → block map, the CSR offsets). The one
//! registry of layout writers: a new layout is its file under `layout/`
//! and one arm here.

use super::codes::Codes;
use super::{stopped_at, Build};
use crate::error::{Error, FileContext, Result};
use crate::graph::Graph;
use crate::index::interrupt::{unless_cancelled, StopWriter};
use crate::index::placement;
use crate::layout::replication::ReplicationStats;
use crate::layout::shuffle::shuffle_until;
use crate::layout::{
    blocked, csr, position_map, BlockedLayout, CoupledLayout, CsrLayout, LaserLayout, Layout,
    LayoutKind, ReplicatedLayout, SeparatedLayout,
};
use std::io::{BufWriter, Write};
use std::time::Instant;

/// The pages file being written: every page goes through the stop check,
/// so a stop ends the write at the next page (and the staging directory,
/// with its partial pages.bin, goes).
type Pages<'a> = StopWriter<'a, BufWriter<std::fs::File>>;

/// Writes the pages (and the layout's own files); returns the layout's
/// name for the manifest.
pub(super) fn write(b: &mut Build, graph: &Graph, codes: &Codes) -> Result<&'static str> {
    let path = b.staging.dir.join(crate::layout::PAGES_FILE);
    let file = std::fs::File::create(&path).at("create", &path)?;
    b.checkpoint("write")?;
    let mut w = StopWriter {
        inner: BufWriter::with_capacity(8 << 20, file),
        progress: b.progress,
    };
    let name = match b.plan.layout {
        LayoutKind::Coupled => coupled(b, graph, &mut w)?,
        LayoutKind::Blocked => blocks(b, graph, codes, &mut w)?,
        kind @ (LayoutKind::Replicated | LayoutKind::Separated) => {
            let stats = replicated(b, graph, kind, &mut w)?;
            b.report.replication = Some(stats);
            kind.name()
        }
        LayoutKind::Laser => laser(b, graph, codes, &mut w)?,
        LayoutKind::Csr => compact(b, graph, &mut w)?,
        LayoutKind::Ivf => {
            return Err(Error::argument(
                "layout",
                "a graph layout (the ivf layout is built without a graph)",
                LayoutKind::Ivf.name(),
            ))
        }
    };
    Ok(name)
}

/// Flushes the pages written by `written`, naming the file in an error,
/// and ends the build if it was stopped meanwhile.
fn flushed<T>(b: &Build, w: &mut Pages, written: std::io::Result<T>) -> Result<T> {
    let path = b.staging.dir.join(crate::layout::PAGES_FILE);
    let done = written
        .and_then(|t| w.flush().map(|_| t))
        .at("write", &path);
    unless_cancelled(b.progress, b.dir, done)
}

/// DiskANN: records in id order, none straddling a page.
fn coupled(b: &Build, graph: &Graph, w: &mut Pages) -> Result<&'static str> {
    let p = &b.params;
    let layout = CoupledLayout::new(p.page_size, b.n, b.dim, b.dtype, p.graph_degree);
    let bytes = |id: u32, out: &mut [u8]| b.vector_bytes(id, out);
    let written = layout.write(w, graph.medoid, &graph.lists, &bytes);
    flushed(b, w, written)?;
    Ok(layout.name())
}

/// Starling §4.1: records shuffled into blocks with the records their
/// searches read with them, and the id → block map.
fn blocks(b: &mut Build, graph: &Graph, codes: &Codes, w: &mut Pages) -> Result<&'static str> {
    let p = &b.params;
    let cap = blocked::capacity(p.page_size, b.dim, b.dtype, &graph.lists)?;
    b.checkpoint("shuffle")?;
    let t = Instant::now();
    b.progress.stage("shuffle blocks", 0);
    let sp = p.shuffle_params();
    let progress = b.progress;
    let stop = || progress.cancelled();
    let pq = || {
        codes
            .pq()
            .ok_or_else(|| Error::argument("shuffle", "PQ codes to place by", "none"))
    };
    let nearest = b
        .pool
        .install(|| placement::nearest_for_until(&graph.lists, &cap, &sp, pq, &stop));
    let nearest = unless_cancelled(progress, b.dir, nearest)?;
    if nearest.is_some() {
        b.nested += b.stage("nearest", t, 0.0);
    }
    let t = Instant::now();
    let (assignment, shuffle_report) = b
        .pool
        .install(|| shuffle_until(&graph.lists, &cap, &sp, nearest.as_deref(), &stop))
        .ok_or_else(|| stopped_at(b.dir))?;
    drop(nearest);
    progress.finish();
    b.nested += b.stage("shuffle", t, 0.0);
    progress.stage("write pages", 0);
    b.report.shuffle = Some(shuffle_report);
    let p = &b.params;
    let layout = BlockedLayout::new(
        p.page_size,
        b.dim,
        b.dtype,
        p.graph_degree,
        assignment.block_of.clone(),
        assignment.blocks(),
    );
    let bytes = |id: u32, out: &mut [u8]| b.vector_bytes(id, out);
    let written = layout.write(w, graph.medoid, &assignment, &graph.lists, &bytes);
    flushed(b, w, written)?;
    b.write_file(crate::layout::position_map::MAP_FILE, |w| {
        position_map::write(w, layout.blocks(), &layout.block_map())
    })?;
    Ok(layout.name())
}

/// Gorgeous §3.4: a block per node with its neighbours' lists (or graph
/// blocks and vector pages apart), the closest neighbours' lists first
/// (§4.1), by exact distances between stored vectors.
fn replicated(
    b: &Build,
    graph: &Graph,
    kind: LayoutKind,
    w: &mut Pages,
) -> Result<ReplicationStats> {
    let p = &b.params;
    let (ps, md, n, dim, dtype) = (p.page_size, p.graph_degree, b.n, b.dim, b.dtype);
    let distance = |u: u32, v: u32| b.space.dist(u, v);
    let bytes = |id: u32, out: &mut [u8]| b.vector_bytes(id, out);
    let (medoid, lists, replicas) = (graph.medoid, &graph.lists, p.replicas);
    let written = match kind {
        LayoutKind::Replicated => ReplicatedLayout::new(ps, n, dim, dtype, md)?
            .write(w, medoid, lists, &bytes, &distance, replicas),
        _ => SeparatedLayout::new(ps, n, dim, dtype, md)?
            .write(w, medoid, lists, &bytes, &distance, replicas),
    };
    flushed(b, w, written)
}

/// AlayaLaser §3.2: coupled records that carry their neighbours' codes.
fn laser(b: &Build, graph: &Graph, codes: &Codes, w: &mut Pages) -> Result<&'static str> {
    let Codes::Records(_, codes, factors) = codes else {
        return Err(Error::argument(
            "laser layout",
            "record codes (the codes part of the laser plan)",
            "none",
        ));
    };
    let p = &b.params;
    let code_dim = p.code_dim.expect("fitted");
    let layout = LaserLayout::new(p.page_size, b.n, b.dim, b.dtype, p.graph_degree, code_dim)
        .map_err(|e| Error::argument("laser layout", "a record that fits", e))?;
    b.checkpoint("write")?;
    let bytes = |id: u32, out: &mut [u8]| b.vector_bytes(id, out);
    let written = layout.write(w, graph.medoid, &graph.lists, &bytes, codes, factors);
    flushed(b, w, written)?;
    Ok(layout.name())
}

/// Paper 002 §5: packed records back to back, and their offsets.
fn compact(b: &mut Build, graph: &Graph, w: &mut Pages) -> Result<&'static str> {
    let p = &b.params;
    let layout = CsrLayout::new(p.page_size, b.dim, b.dtype, p.graph_degree, &graph.lists);
    let bytes = |id: u32, out: &mut [u8]| b.vector_bytes(id, out);
    let written = layout.write(w, graph.medoid, &graph.lists, &bytes);
    flushed(b, w, written)?;
    b.write_file(csr::OFFSETS_FILE, |w| layout.write_offsets(w))?;
    Ok(layout.name())
}
