//! Relayout into the compact CSR layout (paper 002 §5): an index of the
//! `diskann` profile becomes one of the `tiered` profile without a graph
//! build. The graph is read once, sequentially; each record's vector is one
//! positioned read of the source; records are written back to back in id
//! order. PQ codes, the navigation graph and ids are copied (they are keyed
//! by id). The result is byte-identical to building the same parameters
//! with `--profile tiered` (tested), and with `store` = f16 an f32 index
//! becomes an f16 one.

use super::build::BuildReport;
use super::commit::Staging;
use super::graph_file::read_graph;
use super::relayout::{commit, copy_parts, coupled_source, SourceVectors};
use crate::data::DType;
use crate::error::{FileContext, Result};
use crate::layout::{csr, CsrLayout, LayoutKind};
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Instant;

/// Writes `dst`, the index at `src` in the CSR layout (vectors as `store`,
/// default the source's). `src` is left as it is; a failure leaves `dst` as
/// it was.
pub fn relayout_csr(src: &Path, dst: &Path, store: Option<DType>) -> Result<BuildReport> {
    let t_all = Instant::now();
    let mut manifest = coupled_source(src)?;
    let t = Instant::now();
    let (coupled, medoid, lists) = read_graph(src)?;
    let dtype = super::build::stored_dtype(store, coupled.dtype)?;
    let mut stages = vec![("read graph".to_string(), t.elapsed().as_secs_f64())];
    let staging = Staging::new(dst)?;
    let t = Instant::now();
    let layout = CsrLayout::new(
        coupled.page_size,
        coupled.dim,
        dtype,
        coupled.max_degree,
        &lists,
    );
    let source = SourceVectors::open(src, &coupled, dtype != coupled.dtype)?;
    let pages_path = staging.dir.join(crate::layout::PAGES_FILE);
    let mut w = BufWriter::with_capacity(
        1 << 20,
        std::fs::File::create(&pages_path).at("create", &pages_path)?,
    );
    layout
        .write(&mut w, medoid, &lists, &|id, out| source.fill(id, out))
        .and_then(|_| w.flush())
        .at("write", &pages_path)?;
    drop(w);
    source.finish()?;
    let offsets_path = staging.dir.join(csr::OFFSETS_FILE);
    let mut w = BufWriter::new(std::fs::File::create(&offsets_path).at("create", &offsets_path)?);
    layout
        .write_offsets(&mut w)
        .and_then(|_| w.flush())
        .at("write", &offsets_path)?;
    drop(w);
    let mut names = vec![crate::layout::PAGES_FILE, csr::OFFSETS_FILE];
    copy_parts(src, &staging, &manifest, &mut names)?;
    stages.push(("write".to_string(), t.elapsed().as_secs_f64()));
    let profile = crate::profile::of_layout(LayoutKind::Csr).name;
    manifest.profile = profile.into();
    manifest.build.profile = profile.into();
    manifest.build.layout = Some(LayoutKind::Csr);
    if dtype != coupled.dtype {
        manifest.dtype = dtype;
        manifest.build.store = Some(dtype);
    }
    manifest.layout = LayoutKind::Csr.name().into();
    commit(src, staging, manifest, &names, stages, 1, t_all, None)
}
