//! One profile through a runbook (issue #55), as `stratavec bench-updates`
//! measures it:
//!
//! 1. **Build** the first step's live set (timed: the build's points a
//!    second) and copy it for the run; the copy is the one that changes.
//! 2. **Steps**, by a `LiveIndex` within the memory budget: inserts in
//!    batches (each logged and fsynced, acknowledged, then in the delta),
//!    the delta merged whenever the next batch would overfill its share;
//!    deletes in one batch a step; at each search step recall@k over the
//!    live set at one L, beside a fresh build's of the same live set.
//! 3. **After the last merge**, the merged index and a fresh build of the
//!    same live set swept over L in interleaved rounds (QPS at a recall).
//! 4. **A merge's cost**: a share of the live set deleted and inserted
//!    again, merged alone (against the build's time), then again while
//!    one thread searches (against its idle QPS).
//!
//! Every measurement is a JSON row (`kind`: build, step, search, fresh,
//! merge, final, merge-cost, merge-load).

use super::runbook::Step;
use super::update_plan::{Data, Plan, Planned};
use crate::measured::measure;
use crate::search_target::Target;
use anyhow::{Context, Result};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;
use stratavec::args::Given;
use stratavec::data::{GroundTruth, Vectors};
use stratavec::update::delta::Delta;
use stratavec::update::live::{LiveIndex, UpdateOptions};
use stratavec::{BuildParams, OpenOptions, SearchParams};

/// One profile's run.
#[derive(Clone)]
pub struct Setup<'a> {
    pub system: String,
    pub data: &'a Data<'a>,
    pub params: BuildParams,
    /// The variant's search keywords (k, threads, its switches).
    pub search: Given,
    pub budget: u64,
    pub threads: usize,
    pub work: PathBuf,
    /// The list size of every search step (clusters probed for ivf).
    pub l: usize,
    /// Vectors an insert call carries.
    pub batch: usize,
    pub delta_share: f64,
    /// Compare each search step with a fresh build of its live set.
    pub fresh: bool,
    pub sweep: &'a [usize],
    pub rounds: usize,
    pub min_pass_s: f64,
    /// The share of the live set a merge-cost measurement replaces.
    pub merge_share: f64,
}

type Emit<'e> = dyn FnMut(Vec<Value>) -> Result<()> + 'e;

/// Fresh builds by live set (its tags), so a live set seen again (every
/// step after a re-insert, in a churn) is built once.
#[derive(Default)]
pub struct Fresh {
    built: HashMap<u64, (PathBuf, f64)>,
}

pub fn run(s: &Setup, plan: &Plan, emit: &mut Emit) -> Result<()> {
    let mut fresh = Fresh::default();
    let (first, build_s) = fresh.build(s, &plan.initial)?;
    let n0 = plan.initial.len();
    emit(vec![s.row(
        "build",
        json!({"n": n0, "seconds": build_s, "points_per_s": n0 as f64 / build_s}),
    )])?;
    let dir = s.work.join(format!("{}-live", s.system));
    copy_index(&first, &dir)?;
    let index = LiveIndex::open_with(&dir, &s.open_options(Some(s.budget)), &s.update_options())?;
    for p in &plan.steps {
        step(s, &index, p, &mut fresh, emit)
            .with_context(|| format!("{}: runbook step {}", s.system, p.number))?;
    }
    if index.pending() != (0, 0) {
        merge(s, &index, "final", emit)?;
    }
    let last: &[(usize, usize)] = plan.steps.last().map_or(&plan.initial, |p| &p.live);
    let truth = super::update_plan::live_truth(last, s.data)?;
    let (fresh_dir, _) = fresh.build(s, last)?;
    let fresh_index = LiveIndex::open_with(
        &fresh_dir,
        &s.open_options(Some(s.budget)),
        &s.update_options(),
    )?;
    final_sweep(s, [&index, &fresh_index], &truth, emit)?;
    drop((index, fresh_index));
    merge_cost(s, &dir, last, build_s, emit)
}

fn step(
    s: &Setup,
    index: &LiveIndex,
    p: &Planned,
    fresh: &mut Fresh,
    emit: &mut Emit,
) -> Result<()> {
    match p.step {
        Step::Insert { start, end } => {
            let tags: Vec<usize> = (start..end).collect();
            insert(s, index, &tags, &tags, p.number, emit)
        }
        Step::Replace {
            tags_start,
            tags_end,
            ids_start,
            ids_end,
        } => {
            let tags: Vec<i64> = (tags_start..tags_end).map(|t| t as i64).collect();
            delete(s, index, &tags, p.number, emit)?;
            let rows: Vec<usize> = (ids_start..ids_end).collect();
            let tags: Vec<usize> = (tags_start..tags_end).collect();
            insert(s, index, &tags, &rows, p.number, emit)
        }
        Step::Delete { start, end } => {
            let tags: Vec<i64> = (start..end).map(|t| t as i64).collect();
            delete(s, index, &tags, p.number, emit)
        }
        Step::Merge => merge(s, index, &p.number.to_string(), emit).map(|_| ()),
        Step::Search => {
            let truth = p.truth.as_ref().expect("a search step has its truth");
            let (row, recall) = s.search_row(index, truth, s.l)?;
            let mut out = vec![s.row(
                "search",
                with(row, json!({"step": p.number, "live": p.live.len()})),
            )];
            if s.fresh {
                let (dir, _) = fresh.build(s, &p.live)?;
                let f = LiveIndex::open_with(
                    &dir,
                    &s.open_options(Some(s.budget)),
                    &s.update_options(),
                )?;
                let (row, fresh_recall) = s.search_row(&f, truth, s.l)?;
                out.push(s.row(
                    "fresh",
                    with(
                        row,
                        json!({"step": p.number, "recall_gap": fresh_recall - recall}),
                    ),
                ));
            }
            emit(out)
        }
    }
}

/// Inserts `rows` under `tags` a batch at a time, merging first whenever
/// the batch would overfill the delta's share; times the inserts alone.
fn insert(
    s: &Setup,
    index: &LiveIndex,
    tags: &[usize],
    rows: &[usize],
    number: usize,
    emit: &mut Emit,
) -> Result<()> {
    let dim = s.data.dim;
    let per_point = Delta::bytes_per_point(dim);
    let (mut insert_s, mut merges, mut merge_s) = (0.0, 0, 0.0);
    let (mut at, mut largest) = (0, 0);
    let mut vectors = Vec::with_capacity(s.batch * dim);
    while at < tags.len() {
        // The batch, or what the delta's share has room for; a full delta
        // is merged first (the run's "merge when the delta fills").
        let free = |i: &LiveIndex| i.room().saturating_sub(i.update_bytes()) / per_point;
        let want = s.batch.min(tags.len() - at);
        if free(index) < want && index.pending() != (0, 0) {
            merge_s += merge(s, index, &number.to_string(), emit)?;
            merges += 1;
        }
        let take = want.min(free(index));
        if take == 0 {
            anyhow::bail!(
                "the delta's share ({} bytes) holds not one vector ({per_point} bytes) beside what \
                 a merged index keeps there ({} bytes): give a larger --delta-share or budget",
                index.room(),
                index.update_bytes()
            );
        }
        largest = largest.max(take);
        vectors.clear();
        for &r in &rows[at..at + take] {
            vectors.extend_from_slice(s.data.row(r));
        }
        let ids: Vec<i64> = tags[at..at + take].iter().map(|&t| t as i64).collect();
        let t = Instant::now();
        index.add(&vectors, Some(&ids), 0)?;
        insert_s += t.elapsed().as_secs_f64();
        at += take;
    }
    let batch = largest;
    emit(vec![s.row(
        "step",
        json!({"step": number, "op": "insert", "count": tags.len(), "seconds": insert_s,
               "per_s": tags.len() as f64 / insert_s.max(1e-9), "batch": batch, "merges": merges,
               "merge_s": merge_s, "per_s_with_merges": tags.len() as f64 / (insert_s + merge_s).max(1e-9),
               "update_bytes": index.update_bytes(), "room_bytes": index.room()}),
    )])
}

fn delete(
    s: &Setup,
    index: &LiveIndex,
    tags: &[i64],
    number: usize,
    emit: &mut Emit,
) -> Result<()> {
    let t = Instant::now();
    let a = index.remove(tags, 0)?;
    let secs = t.elapsed().as_secs_f64();
    emit(vec![s.row(
        "step",
        json!({"step": number, "op": "delete", "count": a.count, "missing": a.missing,
               "seconds": secs, "per_s": a.count as f64 / secs.max(1e-9),
               "update_bytes": index.update_bytes(), "room_bytes": index.room()}),
    )])
}

/// A merge of the run (when the delta fills, or a runbook's merge step):
/// its row, and its seconds.
fn merge(s: &Setup, index: &LiveIndex, at: &str, emit: &mut Emit) -> Result<f64> {
    let (row, secs) = timed_merge(index, s.threads)?;
    emit(vec![s.row("merge", with(row, json!({"step": at})))])?;
    Ok(secs)
}

/// A merge with `threads`: its row (seconds, what it wrote) and seconds.
fn timed_merge(index: &LiveIndex, threads: usize) -> Result<(Value, f64)> {
    let io0 = stratavec_io::proc_self_io();
    let t = Instant::now();
    let m = index.merge(threads, &stratavec::progress::Silent)?;
    let secs = t.elapsed().as_secs_f64();
    let written = io0
        .zip(stratavec_io::proc_self_io())
        .map(|(a, b)| b.write_bytes - a.write_bytes);
    let row = json!({"seconds": secs, "inserted": m.inserted, "deleted": m.deleted,
                     "n_before": m.n_before, "n_after": m.report.n, "write_bytes": written,
                     "stages": m.report.stages, "threads": threads});
    Ok((row, secs))
}

/// The merged index and a fresh build of the same live set, swept over L
/// in interleaved rounds (the order swapped every point and round).
fn final_sweep(
    s: &Setup,
    systems: [&LiveIndex; 2],
    truth: &GroundTruth,
    emit: &mut Emit,
) -> Result<()> {
    let names = ["merged", "fresh"];
    for round in 0..s.rounds.max(1) {
        for (j, &l) in s.sweep.iter().enumerate() {
            for i in 0..2 {
                let which = (i + round + j) % 2;
                let (row, _) = s.timed_row(systems[which], truth, l)?;
                emit(vec![s.row(
                    "final",
                    with(row, json!({"which": names[which], "round": round})),
                )])?;
            }
        }
    }
    Ok(())
}

/// A share of the live set deleted and inserted again, then merged: alone
/// with every thread (against the build's time), and again while one
/// thread searches (its QPS against its idle QPS). Opened without the
/// budget: the replaced share may outgrow the delta's share of it, and
/// this measures the merge, not the budget.
fn merge_cost(
    s: &Setup,
    dir: &Path,
    live: &[(usize, usize)],
    build_s: f64,
    emit: &mut Emit,
) -> Result<()> {
    let index = LiveIndex::open_with(
        dir,
        &s.open_options(None),
        &UpdateOptions {
            auto_merge: false,
            ..UpdateOptions::default()
        },
    )?;
    let m = ((live.len() as f64 * s.merge_share) as usize).clamp(1, live.len() / 2);
    let replace = |part: &[(usize, usize)]| -> Result<()> {
        let tags: Vec<i64> = part.iter().map(|&(t, _)| t as i64).collect();
        index.remove(&tags, 0)?;
        let mut vectors = Vec::with_capacity(part.len() * s.data.dim);
        for &(_, r) in part {
            vectors.extend_from_slice(s.data.row(r));
        }
        index.add(&vectors, Some(&tags), 0)?;
        Ok(())
    };
    replace(&live[..m])?;
    let (row, secs) = timed_merge(&index, s.threads)?;
    emit(vec![s.row(
        "merge-cost",
        with(
            row,
            json!({"build_s": build_s, "ratio_to_build": secs / build_s, "share": s.merge_share}),
        ),
    )])?;
    replace(&live[m..2 * m])?;
    let truth = super::update_plan::live_truth(live, s.data)?;
    let one = Setup {
        threads: 1,
        ..s.clone()
    };
    let (idle, _) = one.timed_row(&index, &truth, s.l)?;
    let done = AtomicBool::new(false);
    let (merged, during) = std::thread::scope(|scope| -> Result<_> {
        let merging = scope.spawn(|| {
            let r = timed_merge(&index, s.threads.saturating_sub(1).max(1));
            done.store(true, Ordering::Release);
            r
        });
        let (mut queries, mut secs) = (0usize, 0.0);
        while !done.load(Ordering::Acquire) {
            let (_, res) = one.pass(&index, s.l)?;
            queries += res.stats.len();
            secs += res.wall_s;
        }
        let merged = merging.join().expect("the merge thread")?;
        Ok((merged, queries as f64 / secs.max(1e-9)))
    })?;
    let idle_qps = idle["qps"].as_f64().unwrap_or(0.0);
    emit(vec![s.row(
        "merge-load",
        with(
            merged.0,
            json!({"idle_qps": idle_qps, "during_qps": during,
                              "ratio": during / idle_qps.max(1e-9), "search_threads": 1, "L": s.l}),
        ),
    )])
}

impl Setup<'_> {
    fn open_options(&self, budget: Option<u64>) -> OpenOptions {
        OpenOptions {
            memory_budget_bytes: budget,
            reserve_threads: self.threads,
            ..Default::default()
        }
        .reserve_for(self.search.get("beam_width"), self.search.get("in_flight"))
    }

    fn update_options(&self) -> UpdateOptions {
        UpdateOptions {
            delta_share: self.delta_share,
            auto_merge: false,
            merge_threads: self.threads,
        }
    }

    /// A row of this profile's run.
    fn row(&self, kind: &str, fields: Value) -> Value {
        with(
            json!({"kind": kind, "system": self.system, "profile": self.params.profile,
                   "threads": self.threads, "memory_budget_bytes": self.budget}),
            fields,
        )
    }

    fn params_at(&self, index: &LiveIndex, l: usize) -> Result<SearchParams> {
        let p = self.search.search_params(|sw| index.search_defaults(sw))?;
        Ok(SearchParams {
            complexity: l,
            threads: self.threads,
            ..p
        })
    }

    /// One pass of the query set at `l`.
    fn pass(&self, index: &LiveIndex, l: usize) -> Result<(SearchParams, stratavec::BatchResult)> {
        let params = self.params_at(index, l)?;
        let (res, _) = Target::search(index, self.data.queries, self.data.dim, &params, None)?;
        Ok((params, res))
    }

    /// A search step's row (one pass) and its recall@k.
    fn search_row(&self, index: &LiveIndex, truth: &GroundTruth, l: usize) -> Result<(Value, f64)> {
        let (params, res) = self.pass(index, l)?;
        self.measured_row(index, &params, &res, truth)
    }

    /// A timed row: passes repeated until `min_pass_s`, QPS over them all.
    fn timed_row(&self, index: &LiveIndex, truth: &GroundTruth, l: usize) -> Result<(Value, f64)> {
        let (mut wall, mut passes) = (0.0, 0);
        let mut first = None;
        while passes == 0 || wall < self.min_pass_s {
            let (params, res) = self.pass(index, l)?;
            wall += res.wall_s;
            passes += 1;
            first.get_or_insert((params, res));
        }
        let (params, mut res) = first.expect("one pass");
        res.wall_s = wall / passes as f64;
        let (row, recall) = self.measured_row(index, &params, &res, truth)?;
        Ok((with(row, json!({"repetitions": passes})), recall))
    }

    fn measured_row(
        &self,
        index: &LiveIndex,
        params: &SearchParams,
        res: &stratavec::BatchResult,
        truth: &GroundTruth,
    ) -> Result<(Value, f64)> {
        let m = measure(res, Some(truth), params.k)?;
        let recall = m.recall.unwrap_or(0.0);
        let (inserted, deleted) = index.pending();
        let row = with(
            serde_json::to_value(&m)?,
            json!({"L": params.complexity, "k": params.k, "n": index.len(),
                   "memory_bytes": Target::memory_bytes(index), "update_bytes": index.update_bytes(),
                   "pending_inserted": inserted, "pending_deleted": deleted}),
        );
        Ok((row, recall))
    }
}

impl Fresh {
    /// The fresh build of `live` (tag, row), built once: its directory and
    /// build seconds.
    fn build(&mut self, s: &Setup, live: &[(usize, usize)]) -> Result<(PathBuf, f64)> {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        live.hash(&mut h);
        let key = h.finish();
        if let Some(done) = self.built.get(&key) {
            return Ok(done.clone());
        }
        let dir = s.work.join(format!("{}-fresh-{key:016x}", s.system));
        let mut rows = Vec::with_capacity(live.len() * s.data.dim);
        for &(_, r) in live {
            rows.extend_from_slice(s.data.row(r));
        }
        let ids: Vec<i64> = live.iter().map(|&(t, _)| t as i64).collect();
        let report = stratavec::build_index_with_ids(
            Vectors::f32(&rows, s.data.dim)?,
            Some(&ids),
            "the runbook's live set",
            &dir,
            &s.params,
            s.threads,
            &stratavec::progress::Silent,
        )?;
        self.built.insert(key, (dir.clone(), report.total_s));
        Ok((dir, report.total_s))
    }
}

/// `extra`'s fields over `base`'s.
fn with(mut base: Value, extra: Value) -> Value {
    if let (Some(b), Value::Object(e)) = (base.as_object_mut(), extra) {
        b.extend(e);
    }
    base
}

/// A copy of the index at `from` as `to` (its files; an old `to` removed).
fn copy_index(from: &Path, to: &Path) -> Result<()> {
    if to.exists() {
        std::fs::remove_dir_all(to).with_context(|| format!("remove {}", to.display()))?;
    }
    std::fs::create_dir_all(to).with_context(|| format!("create {}", to.display()))?;
    for e in std::fs::read_dir(from).with_context(|| format!("list {}", from.display()))? {
        let e = e?;
        if e.file_type()?.is_file() {
            std::fs::copy(e.path(), to.join(e.file_name()))
                .with_context(|| format!("copy {} to {}", e.path().display(), to.display()))?;
        }
    }
    Ok(())
}
