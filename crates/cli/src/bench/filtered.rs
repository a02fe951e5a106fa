//! What `stratavec bench-filtered` measures (issue #56): one labelled
//! index a profile, searched with the data set's filtered queries band by
//! band (the filter's selectivity: ~30–60%, 5–15%, 0.5–2%, 0.05–0.2% of
//! the base), each way forced and chosen per query, at each list size,
//! in interleaved rounds. Each point is a row: recall@k against the
//! filtered ground truth, QPS, reads a query, and the ways the queries
//! went.

use crate::measured::measure;
use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;
use stratavec::data::GroundTruth;
use stratavec::index::filtered::{Allowed, FilterWay};
use stratavec::labels::{Expr, LabelSets};
use stratavec::{BatchResult, Index, SearchParams};

/// The queries of one selectivity band.
pub struct Band {
    /// The band's number in the data set (0: the broadest).
    pub band: usize,
    pub members: Vec<usize>,
}

/// The bands of `query.filters.tsv` (columns `query`, `band`, ...): the
/// queries of each, in band order.
pub fn bands(path: &Path, nq: usize) -> Result<Vec<Band>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("read {}", path.display()))?;
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().unwrap_or("").split('\t').collect();
    let col = |name: &str| head.iter().position(|h| *h == name);
    let (Some(qc), Some(bc)) = (col("query"), col("band")) else {
        bail!(
            "{}: header: expected columns query and band, found {head:?}",
            path.display()
        );
    };
    let mut out: Vec<Band> = Vec::new();
    for (i, line) in lines.enumerate().filter(|(_, l)| !l.is_empty()) {
        let f: Vec<&str> = line.split('\t').collect();
        let parse = |c: usize| f.get(c).and_then(|v| v.parse::<usize>().ok());
        let (Some(q), Some(b)) = (parse(qc), parse(bc)) else {
            bail!(
                "{}: line {}: expected a query and a band number, found {line:?}",
                path.display(),
                i + 2
            );
        };
        if q >= nq {
            bail!(
                "{}: line {}: query {q}: expected < {nq} (the query file's)",
                path.display(),
                i + 2
            );
        }
        match out.iter_mut().find(|x| x.band == b) {
            Some(x) => x.members.push(q),
            None => out.push(Band {
                band: b,
                members: vec![q],
            }),
        }
    }
    out.sort_by_key(|b| b.band);
    Ok(out)
}

/// A band's queries, their allowed rows in `index` and their truth.
pub struct BandSet {
    pub band: usize,
    pub queries: Vec<f32>,
    pub allowed: Vec<Allowed>,
    pub gt: GroundTruth,
    /// The band's mean selectivity (matching rows / n).
    pub selectivity: f64,
}

impl BandSet {
    pub fn new(
        band: &Band,
        queries: &[f32],
        dim: usize,
        filters: &LabelSets,
        gt: &GroundTruth,
        index: &Index,
    ) -> Result<BandSet> {
        let labels = index
            .labels()
            .context("bench-filtered: the index keeps no labels")?;
        let mut q = Vec::with_capacity(band.members.len() * dim);
        let (mut ids, mut dists) = (Vec::new(), Vec::new());
        let mut allowed = Vec::with_capacity(band.members.len());
        let mut matched = 0u64;
        for &qi in &band.members {
            q.extend_from_slice(&queries[qi * dim..(qi + 1) * dim]);
            let rows = Expr::all_of(filters.row(qi)).map(|e| Arc::new(e.rows(labels)));
            matched += rows.as_ref().map_or(index.len() as u64, |r| r.len());
            allowed.push(rows);
            ids.extend_from_slice(gt.ids_of(qi));
            if let Some(d) = gt.dists_of(qi) {
                dists.extend_from_slice(d);
            }
        }
        let nq = band.members.len();
        let dists = (dists.len() == ids.len()).then_some(dists);
        Ok(BandSet {
            band: band.band,
            queries: q,
            allowed,
            gt: GroundTruth::new(nq, gt.k, ids, dists)?,
            selectivity: matched as f64 / (nq.max(1) as f64 * index.len() as f64),
        })
    }
}

/// One timed point: the band's queries searched `way` at list size `l`,
/// repeated until the pass has run `min_pass_s`; its row.
pub fn point(
    index: &Index,
    set: &BandSet,
    params: &SearchParams,
    way: FilterWay,
    min_pass_s: f64,
) -> Result<Value> {
    let dim = index.dim();
    let (mut first, mut passes, mut wall, mut kernel): (
        Option<BatchResult>,
        usize,
        f64,
        Option<u64>,
    ) = (None, 0, 0.0, Some(0));
    let cpu0 = stratavec_io::process_cpu_seconds();
    loop {
        let r = index.search_filtered(&set.queries, dim, params, &set.allowed, way)?;
        passes += 1;
        wall += r.wall_s;
        kernel = kernel.zip(r.proc_read_bytes).map(|(a, b)| a + b);
        first.get_or_insert(r);
        if wall >= min_pass_s {
            break;
        }
    }
    let cpu = stratavec_io::process_cpu_seconds()
        .zip(cpu0)
        .map(|(b, a)| (b - a) / passes as f64);
    let mut res = first.expect("one pass");
    res.wall_s = wall / passes as f64;
    res.proc_read_bytes = kernel.map(|b| b / passes as u64);
    let m = measure(&res, Some(&set.gt), params.k)?;
    let t = res.total();
    let nq = res.stats.len().max(1) as f64;
    Ok(json!({
        "kind": "point",
        "band": set.band,
        "selectivity": set.selectivity,
        "way": way,
        "L": params.complexity,
        "recall": m.recall,
        "recall_at_10": m.recall_at_10,
        "qps": m.qps,
        "mean_us": m.mean_us,
        "p99_us": m.p99_us,
        "reads_per_query": m.reads_per_query,
        "proc_reads_per_query": m.proc_reads_per_query,
        "cpu_s_per_query": cpu.map(|c| c / nq),
        "failed": m.failed,
        "repetitions": passes,
        "mix": {
            "pre": t.filter_pre as f64 / nq,
            "in_search": t.filter_graph as f64 / nq,
            "post": t.filter_post as f64 / nq,
        },
        "matches_mean": t.filter_matches as f64 / nq,
    }))
}
