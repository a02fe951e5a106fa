//! The last stage: the caller's ids, the checksums, the manifest (written
//! last: its presence marks a complete index, with the plan as built) and
//! the commit of the staging directory.

use super::{stopped_at, Build};
use crate::error::FileContext;
use crate::error::Result;
use crate::graph::{BuildStats, Graph};
use crate::index::build::{peak_rss_bytes, write_report, BuildReport};
use crate::index::commit::file_entry_until;
use crate::index::ids::{self, IDS_FILE};
use crate::index::interrupt::unless_cancelled;
use crate::index::manifest::{Manifest, BUILD_REVISION, FORMAT_VERSION, MANIFEST};
use crate::plan::{CodesPart, SearchPart};
use std::collections::BTreeMap;
use std::io::Write;
use std::time::Instant;

pub(super) fn write_ids(b: &mut Build) -> Result<()> {
    match b.ids {
        Some(list) => b.write_file(IDS_FILE, |w| ids::write(w, list)),
        None => Ok(()),
    }
}

/// `labels.bin` and, with names, `label_names.tsv` (`labels::store`).
pub(super) fn write_labels(b: &mut Build) -> Result<()> {
    use crate::labels::store;
    let Some(l) = b.labels else { return Ok(()) };
    let bytes = store::encode(l.sets, l.n_labels());
    b.write_file(store::LABELS_FILE, |w| w.write_all(&bytes))?;
    if let Some(names) = l.names {
        let text = store::names_tsv(names, l.sets);
        b.write_file(store::LABEL_NAMES_FILE, |w| w.write_all(text.as_bytes()))?;
    }
    Ok(())
}

/// The manifest of the index `b` built, over `files`.
fn manifest(
    b: &Build,
    layout: &'static str,
    graph: &Graph,
    stats: &BuildStats,
    files: BTreeMap<String, crate::index::manifest::FileEntry>,
) -> Manifest {
    let p = &b.params;
    Manifest {
        format_version: FORMAT_VERSION,
        build_revision: BUILD_REVISION,
        profile: p.profile.clone(),
        dtype: b.dtype,
        dim: b.dim,
        n: b.n,
        metric: p.metric,
        build: p.clone(),
        layout: layout.into(),
        page_size: p.page_size,
        quantizer: match b.plan.codes {
            CodesPart::Records => format!("rabitq{} (in records)", p.code_dim.unwrap_or(0)),
            CodesPart::ExRabitq => format!("exrabitq{}", p.exrabitq_bits.unwrap_or(0)),
            _ => format!("pq{}", p.pq_bytes),
        },
        medoid: graph.medoid,
        graph_mean_degree: stats.mean_degree,
        files,
        plan: Some(b.plan.clone()),
        chosen: b.chosen.clone(),
        update_seq: b.given.update_seq,
    }
}

/// Checksums every file, writes the manifest and the report, and commits.
pub(super) fn commit(
    mut b: Build,
    layout: &'static str,
    graph: &Graph,
    stats: &BuildStats,
    t_all: Instant,
) -> Result<BuildReport> {
    b.checkpoint("checksum")?;
    let t = Instant::now();
    let progress = b.progress;
    let stop = || progress.cancelled();
    let mut files = BTreeMap::new();
    for name in [crate::layout::PAGES_FILE]
        .into_iter()
        .chain(b.files.iter().copied())
    {
        let entry = file_entry_until(&b.staging.dir.join(name), &stop)?;
        files.insert(name.to_string(), entry.ok_or_else(|| stopped_at(b.dir))?);
    }
    b.report.index_bytes = files.values().map(|f| f.bytes).sum();
    let mpath = b.staging.dir.join(MANIFEST);
    let write = |b: &Build, files: &BTreeMap<_, _>| {
        let manifest = manifest(b, layout, graph, stats, files.clone());
        std::fs::write(&mpath, manifest.to_json()).at("write", &mpath)
    };
    write(&b, &files)?;
    b.stage("checksum", t, 0.0);
    if b.measure_refinement && matches!(b.plan.search, SearchPart::TwoStage { .. }) {
        // Measured on the staged index, so its manifest is written first
        // and written again with the refinement chosen.
        b.checkpoint("refinement")?;
        let t = Instant::now();
        if let Some((pipelined, why)) = super::refinement::measure(&b)? {
            b.plan.search = SearchPart::TwoStage { pipelined };
            b.params.pipelined_refinement = pipelined;
            b.choose("pipelined_refinement", why);
            write(&b, &files)?;
        }
        b.stage("refinement", t, 0.0);
    }
    let r = &mut b.report;
    r.graph_mean_degree = stats.mean_degree;
    r.duplicate_links = stats.duplicate_links;
    r.peak_rss_bytes = peak_rss_bytes();
    r.total_s = t_all.elapsed().as_secs_f64();
    write_report(&b.staging.dir, &b.report)?;
    // The last moment to stop: from here on the index is complete and the
    // commit is two renames.
    unless_cancelled(b.progress, b.dir, Ok(()))?;
    b.staging.commit()?;
    Ok(b.report)
}
