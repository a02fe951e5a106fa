//! An acknowledged update survives SIGKILL (issue #55). A child process —
//! this test binary again, running `crash_child` — replays a fixed plan of
//! inserts, deletes and merges on a small index and prints `ack N` once op
//! N returned; the parent kills it (SIGKILL) at a random moment, or at a
//! named point it pauses at (half a log record written; a record written
//! and not yet fsynced; a merge's pages being written; its manifest and
//! checksums; just before and just after its publish), then reopens the
//! index and checks it against the plan: every acknowledged op is there,
//! the op in flight is there whole or not at all, no deleted id is back,
//! every file verifies against the manifest, and inserted vectors are
//! found by their own vector. The next child retries the op in flight
//! (its batch id makes a retry of an applied op a no-op) and goes on.

use crate::common;

use common::*;
use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use stratavec::data::Metric;
use stratavec::update::live::LiveIndex;
use stratavec::util::rng::Rng;
use stratavec::{Index, OpenOptions};

const DIM: usize = 8;
const BASE: usize = 300;
const CHILD_DIR: &str = "STRATAVEC_CRASH_DIR";
const CHILD_START: &str = "STRATAVEC_CRASH_START";
const CYCLES: usize = 100;

#[derive(Clone, Debug, PartialEq)]
enum Step {
    Insert(Vec<i64>),
    Delete(Vec<i64>),
    Merge,
}

/// The vector of id `id`: distinct for every id, a pure function of it.
fn vector(id: i64) -> Vec<f32> {
    let mut rng = Rng::new(id as u64 * 7919 + 13);
    (0..DIM).map(|_| rng.normal()).collect()
}

/// The plan: 12 new ids inserted, or 6 live ids deleted, a merge every
/// eighth step; what is live at each step follows from the steps before.
fn plan() -> Vec<Step> {
    let mut rng = Rng::new(99);
    let mut live: Vec<i64> = (0..BASE as i64).collect();
    let mut next = 10_000i64;
    let mut steps = Vec::new();
    for k in 0..400 {
        let step = if k % 8 == 7 {
            Step::Merge
        } else if k % 3 == 0 {
            let ids: Vec<i64> = (0..6)
                .map(|_| live.swap_remove(rng.below(live.len())))
                .collect();
            Step::Delete(ids)
        } else {
            let ids: Vec<i64> = (next..next + 12).collect();
            next += 12;
            live.extend(&ids);
            Step::Insert(ids)
        };
        steps.push(step);
    }
    steps
}

fn apply(index: &LiveIndex, k: usize, step: &Step) {
    let batch = k as u64 + 1;
    match step {
        Step::Insert(ids) => {
            let vectors: Vec<f32> = ids.iter().flat_map(|&id| vector(id)).collect();
            index.add(&vectors, Some(ids), batch).unwrap();
        }
        Step::Delete(ids) => {
            index.remove(ids, batch).unwrap();
        }
        Step::Merge => {
            index.merge(1, &stratavec::progress::Silent).unwrap();
        }
    }
}

/// The child's body: a no-op unless run by `sigkill_at_any_point...`.
#[test]
fn crash_child() {
    let Ok(dir) = std::env::var(CHILD_DIR) else {
        return;
    };
    let start: usize = std::env::var(CHILD_START).unwrap().parse().unwrap();
    let index = LiveIndex::open(&dir, &OpenOptions::default()).unwrap();
    // Ends libtest's "test crash_child ... " so every ack is a line of its own.
    println!();
    for (k, step) in plan().iter().enumerate().skip(start) {
        apply(&index, k, step);
        println!("ack {k}");
    }
    println!("done");
}

/// What must hold after ops `..acked` were acknowledged and `in_flight`
/// may or may not have been applied.
fn check(dir: &Path, steps: &[Step], acked: usize, cycle: usize) {
    Index::open(
        dir,
        &OpenOptions {
            verify_checksums: true,
            ..Default::default()
        },
    )
    .unwrap_or_else(|e| panic!("cycle {cycle}: the index does not verify: {e}"));
    let index = LiveIndex::open(dir, &OpenOptions::default())
        .unwrap_or_else(|e| panic!("cycle {cycle}: reopen failed: {e}"));
    let mut live: HashSet<i64> = (0..BASE as i64).collect();
    for step in &steps[..acked] {
        match step {
            Step::Insert(ids) => live.extend(ids),
            Step::Delete(ids) => ids.iter().for_each(|id| {
                live.remove(id);
            }),
            Step::Merge => {}
        }
    }
    let in_flight = steps.get(acked);
    let maybe: HashSet<i64> = match in_flight {
        Some(Step::Insert(ids)) | Some(Step::Delete(ids)) => ids.iter().copied().collect(),
        _ => HashSet::new(),
    };
    for &id in &live {
        if !maybe.contains(&id) {
            assert!(
                index.contains(id),
                "cycle {cycle}: acknowledged id {id} is missing (acked {acked})"
            );
        }
    }
    if let Some(Step::Insert(ids)) | Some(Step::Delete(ids)) = in_flight {
        let there = ids.iter().filter(|&&id| index.contains(id)).count();
        assert!(
            there == 0 || there == ids.len(),
            "cycle {cycle}: op {acked} applied in part ({there} of {})",
            ids.len()
        );
    }
    let everything = steps[..acked].iter().flat_map(|s| match s {
        Step::Insert(ids) | Step::Delete(ids) => ids.clone(),
        Step::Merge => vec![],
    });
    for id in everything.filter(|id| !live.contains(id) && !maybe.contains(id)) {
        assert!(
            !index.contains(id),
            "cycle {cycle}: deleted id {id} came back"
        );
    }
    let n = index.len();
    if !(n + maybe.len() >= live.len() && n <= live.len() + maybe.len()) {
        let all_ids: Vec<i64> = (0..BASE as i64).chain(10_000..10_000 + 12 * 400).collect();
        let extra: Vec<i64> = all_ids
            .iter()
            .copied()
            .filter(|id| index.contains(*id) && !live.contains(id))
            .collect();
        panic!("cycle {cycle}: {n} live, expected {} (acked {acked}); live but not expected: {extra:?}; pending {:?}", live.len(), index.pending());
    }
    // Inserted vectors are found by themselves.
    let probe: Vec<i64> = live
        .iter()
        .copied()
        .filter(|&id| id >= 10_000 && !maybe.contains(&id))
        .take(5)
        .collect();
    if !probe.is_empty() {
        let queries: Vec<f32> = probe.iter().flat_map(|&id| vector(id)).collect();
        let res = index.search(&queries, DIM, &search_params(1, 64)).unwrap();
        let found = probe
            .iter()
            .enumerate()
            .filter(|(i, &id)| res.ids[*i] == id)
            .count();
        assert!(found + 1 >= probe.len(), "cycle {cycle}: {found} of {} inserted vectors found by themselves: {probe:?} -> {:?} at {:?}; pending {:?}", probe.len(), res.ids, res.dists, index.pending());
    }
}

/// Where the child is killed in cycle `c`: at a random moment, or at a
/// named pause point.
fn kill_point(c: usize) -> Option<&'static str> {
    const POINTS: [Option<&str>; 8] = [
        None,
        Some("wal-half"),
        Some("wal-written"),
        None,
        Some("write"),
        Some("checksum"),
        Some("publish"),
        Some("published"),
    ];
    POINTS[c % POINTS.len()]
}

#[test]
fn sigkill_at_any_point_loses_no_acknowledged_update() {
    let tmp = tempdir();
    let dir = tmp.path().join("index");
    let base: Vec<f32> = (0..BASE as i64).flat_map(vector).collect();
    build_f32(&dir, &base, DIM, &small_params(Metric::L2), 1);
    let steps = plan();
    let exe = std::env::current_exe().unwrap();
    let mut rng = Rng::new(5);
    let mut start = 0;
    let mut kills = 0;
    for cycle in 0..CYCLES {
        if start >= steps.len() {
            break;
        }
        let point = kill_point(cycle);
        let mut cmd = Command::new(&exe);
        cmd.args([
            "--exact",
            "engine_crash::crash_child",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(CHILD_DIR, &dir)
        .env(CHILD_START, start.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        if let Some(p) = point {
            cmd.env(stratavec::index::interrupt::PAUSE_ENV, p);
        }
        let mut child = cmd.spawn().unwrap();
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        let out = child.stdout.take().unwrap();
        let err = child.stderr.take().unwrap();
        let tx2 = tx.clone();
        let readers = [
            std::thread::spawn(move || {
                BufReader::new(out)
                    .lines()
                    .map_while(Result::ok)
                    .for_each(|l| drop(tx.send(l)))
            }),
            std::thread::spawn(move || {
                BufReader::new(err)
                    .lines()
                    .map_while(Result::ok)
                    .for_each(|l| drop(tx2.send(l)))
            }),
        ];
        // A random moment: after 0-4 acknowledged ops and 0-30 ms.
        let (acks_before, delay) = (rng.below(5), Duration::from_millis(rng.below(30) as u64));
        let mut acked = start;
        let t = Instant::now();
        let mut killed = false;
        loop {
            let line = match rx.recv_timeout(Duration::from_millis(2)) {
                Ok(line) => line,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => String::new(),
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            };
            assert!(
                t.elapsed() < Duration::from_secs(120),
                "cycle {cycle}: the child neither paused nor finished"
            );
            if !line.is_empty() && std::env::var("STRATAVEC_CRASH_DEBUG").is_ok() {
                eprintln!("cycle {cycle} child: {line}");
            }
            if let Some(k) = line.strip_prefix("ack ") {
                acked = k.trim().parse::<usize>().unwrap() + 1;
            }
            if line.contains("panicked at") {
                let rest: Vec<String> =
                    std::iter::from_fn(|| rx.recv_timeout(Duration::from_secs(1)).ok())
                        .take(20)
                        .collect();
                panic!(
                    "cycle {cycle}: the child failed at op {acked}: {line}\n{}",
                    rest.join("\n")
                );
            }
            if line == "done" {
                break;
            }
            let paused = line.contains("stratavec: test pause at");
            let random_due =
                point.is_none() && acked - start >= acks_before && t.elapsed() >= delay;
            if paused || random_due {
                killed = true;
                break;
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        // Every line the child printed before it died (the readers end at
        // the pipes' end).
        for r in readers {
            let _ = r.join();
        }
        while let Ok(line) = rx.try_recv() {
            if let Some(k) = line.strip_prefix("ack ") {
                acked = acked.max(k.trim().parse::<usize>().unwrap() + 1);
            }
        }
        kills += usize::from(killed);
        check(&dir, &steps, acked, cycle);
        start = acked;
    }
    assert!(kills >= CYCLES / 2, "only {kills} kills");
}

/// The plan applied in one process, without kills: the same checks hold
/// after every step around each merge (the reference the crash cycles are
/// held to).
#[test]
fn the_plan_applied_without_kills_matches_its_model() {
    let tmp = tempdir();
    let dir = tmp.path().join("index");
    let base: Vec<f32> = (0..BASE as i64).flat_map(vector).collect();
    build_f32(&dir, &base, DIM, &small_params(Metric::L2), 1);
    let steps = plan();
    let index = LiveIndex::open(&dir, &OpenOptions::default()).unwrap();
    for (k, step) in steps.iter().enumerate().take(48) {
        apply(&index, k, step);
        check(&dir, &steps, k + 1, k);
    }
}
