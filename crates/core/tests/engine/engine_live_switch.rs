//! Searches go on while the index they search is merged and rebuilt under
//! them (issue #55): three threads search one handle without pause while
//! it merges its inserts and deletes into a new generation, then while the
//! directory is rebuilt with other data (the handle moves to it by
//! itself); every answer is, query by query, the old generation's or the
//! new one's, and none fails. All the while
//! another process opens the directory again and again (this test binary
//! re-run as `opener_child`), and no open finds it missing or broken.

use crate::common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use stratavec::data::Metric;
use stratavec::update::live::LiveIndex;
use stratavec::{Index, OpenOptions};

const DIM: usize = 16;
const OPENER_DIR: &str = "STRATAVEC_OPENER_DIR";
const SEARCHERS: usize = 3;

/// The other process: opens the directory until its stop file appears,
/// then prints how many opens it made; the first failed open is printed
/// and ends it with status 1.
#[test]
fn opener_child() {
    let Ok(dir) = std::env::var(OPENER_DIR) else {
        return;
    };
    let dir = PathBuf::from(dir);
    let stop = dir.with_extension("stop");
    let mut opens = 0;
    while !stop.exists() {
        match Index::open(&dir, &OpenOptions::default()) {
            Ok(index) if !index.is_empty() => opens += 1,
            Ok(_) => {
                println!("\nopen found an empty index");
                std::process::exit(1);
            }
            Err(e) => {
                println!("\nopen failed: {e}");
                std::process::exit(1);
            }
        }
    }
    println!("\nopens {opens}");
}

/// The other process, stopped (its stop file written, then killed if it
/// has not ended) when dropped: a failing test leaves nothing running.
struct Opener {
    child: Option<Child>,
    stop: PathBuf,
}

impl Opener {
    fn spawn(dir: &Path) -> Opener {
        let child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "engine_live_switch::opener_child",
                "--nocapture",
                "--test-threads",
                "1",
            ])
            .env(OPENER_DIR, dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Opener {
            child: Some(child),
            stop: dir.with_extension("stop"),
        }
    }

    /// Stops it; the opens it made, or panics with what it said.
    fn finish(mut self) -> usize {
        std::fs::write(&self.stop, b"").unwrap();
        let out = self.child.take().unwrap().wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(out.status.success(), "the other process: {text}");
        text.lines()
            .find_map(|l| l.strip_prefix("opens "))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or_else(|| panic!("the other process said {text:?}"))
    }
}

impl Drop for Opener {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = std::fs::write(&self.stop, b"");
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Query `q`'s answer from `index` (k 10, L 40), as its own batch; panics
/// if the query failed.
fn answer(index: &LiveIndex, queries: &[f32], q: usize) -> Vec<i64> {
    let r = index
        .search(
            &queries[q * DIM..(q + 1) * DIM],
            DIM,
            &search_params(10, 40),
        )
        .unwrap_or_else(|e| panic!("query {q}: {e}"));
    assert_eq!(r.base.failed(), 0, "query {q}: {:?}", r.base.errors);
    r.ids
}

fn all_answers(index: &LiveIndex, queries: &[f32]) -> Vec<Vec<i64>> {
    (0..queries.len() / DIM)
        .map(|q| answer(index, queries, q))
        .collect()
}

/// Searches `index` from [`SEARCHERS`] threads, query after query, while
/// `work` runs; returns every (query, answer) seen.
fn searching_during(
    index: &LiveIndex,
    queries: &[f32],
    work: impl FnOnce() + Send,
) -> Vec<(usize, Vec<i64>)> {
    let nq = queries.len() / DIM;
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let searchers: Vec<_> = (0..SEARCHERS)
            .map(|t| {
                let done = &done;
                s.spawn(move || {
                    let mut seen = Vec::new();
                    let mut q = t;
                    // At least one pass of the queries, then until done.
                    while !done.load(Ordering::Acquire) || seen.len() < nq {
                        seen.push((q % nq, answer(index, queries, q % nq)));
                        q += SEARCHERS;
                    }
                    seen
                })
            })
            .collect();
        work();
        done.store(true, Ordering::Release);
        searchers
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    })
}

/// Every answer seen is the old or the new generation's for its query;
/// returns how many were of each.
fn each_is_old_or_new(
    seen: &[(usize, Vec<i64>)],
    old: &[Vec<i64>],
    new: &[Vec<i64>],
    what: &str,
) -> (usize, usize) {
    let (mut o, mut n) = (0, 0);
    for (q, got) in seen {
        if *got == new[*q] {
            n += 1;
        } else if *got == old[*q] {
            o += 1;
        } else {
            panic!(
                "{what}: query {q} answered {got:?}: neither the old generation's {:?} nor the new one's {:?}",
                old[*q], new[*q]
            );
        }
    }
    (o, n)
}

#[test]
fn searches_during_merges_and_rebuilds_see_one_generation_a_query() {
    let tmp = tempdir();
    let dir = tmp.path().join("index");
    let (a, queries) = synth(1500, 24, DIM, 81);
    let (more, _) = synth(300, 0, DIM, 82);
    let (b, _) = synth(1500, 0, DIM, 83);
    let params = small_params(Metric::L2);
    build_f32(&dir, &a, DIM, &params, 1);
    let opener = Opener::spawn(&dir);

    // A merge under the searches of its own handle.
    let index = LiveIndex::open(&dir, &OpenOptions::default()).unwrap();
    index.add(&more, None, 0).unwrap();
    let gone: Vec<i64> = (0..150).map(|i| i * 7).chain(1500..1530).collect();
    index.remove(&gone, 0).unwrap();
    let old = all_answers(&index, &queries);
    let seen = searching_during(&index, &queries, || {
        index.merge(1, &stratavec::progress::Silent).unwrap();
    });
    // (Where both generations find the exact answer, old and new agree.)
    let new = all_answers(&index, &queries);
    let (o, n) = each_is_old_or_new(&seen, &old, &new, "during the merge");
    eprintln!("during the merge: {o} answers of the old generation, {n} of the new");
    drop(index);

    // A rebuild under a handle that does not write: it answers from its
    // generation until the switch and from the new one once a search has
    // looked again (`update/live/refresh.rs`), never a mix.
    let reader = LiveIndex::open(&dir, &OpenOptions::default()).unwrap();
    let merged = all_answers(&reader, &queries);
    assert_eq!(merged, new);
    let seen = searching_during(&reader, &queries, || {
        build_f32(&dir, &b, DIM, &params, 1);
    });
    let rebuilt = all_answers(
        &LiveIndex::open(&dir, &OpenOptions::default()).unwrap(),
        &queries,
    );
    assert_ne!(rebuilt, merged, "the rebuild changed no answer");
    let (o, n) = each_is_old_or_new(&seen, &merged, &rebuilt, "during the rebuild");
    eprintln!("during the rebuild: {o} answers of the old generation, {n} of the new");
    std::thread::sleep(std::time::Duration::from_millis(
        stratavec::update::live::REFRESH_MS + 30,
    ));
    assert_eq!(
        all_answers(&reader, &queries),
        rebuilt,
        "the reader did not move"
    );

    let opens = opener.finish();
    assert!(opens > 0);
    eprintln!("the other process opened the directory {opens} times, every time whole");
}
