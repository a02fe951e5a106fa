//! A build stops soon after its caller asks (`Progress::cancelled`, which the
//! CLI's signal handler and Python's signal check set): the long stages poll
//! it inside their loops, not only between stages, and a stopped build
//! leaves no staging directory and the previous index untouched.

use crate::common;

use common::*;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use stratavec::data::{Metric, Vectors};
use stratavec::progress::Progress;
use stratavec::{build_index, BuildParams, ErrorKind};

/// Counts the polls in each stage, and asks to stop from poll `limit` on.
struct StopAt {
    polls: AtomicU64,
    limit: u64,
    stage: Mutex<String>,
    by_stage: Mutex<BTreeMap<String, u64>>,
}

impl StopAt {
    fn new(limit: u64) -> Self {
        StopAt {
            polls: AtomicU64::new(0),
            limit,
            stage: Mutex::new("prepare".into()),
            by_stage: Mutex::default(),
        }
    }
}

impl Progress for StopAt {
    fn stage(&self, name: &str, _total: u64) {
        *self.stage.lock().unwrap() = name.into();
    }
    fn cancelled(&self) -> bool {
        let stage = self.stage.lock().unwrap().clone();
        *self.by_stage.lock().unwrap().entry(stage).or_default() += 1;
        self.polls.fetch_add(1, Ordering::Relaxed) + 1 >= self.limit
    }
}

fn starling() -> BuildParams {
    BuildParams {
        shuffle: stratavec::layout::shuffle::Shuffle::Bnf,
        profile: "starling".into(),
        ..small_params(Metric::L2)
    }
}

fn build(dir: &Path, data: &[f32], progress: &StopAt) -> stratavec::Result<()> {
    let v = Vectors::f32(data, 16).unwrap();
    build_index(v, "test data", dir, &starling(), 2, progress).map(|_| ())
}

#[test]
fn build_stops_inside_every_long_stage() {
    let tmp = tempdir();
    let dir = tmp.path().join("index");
    let (base, _) = synth(3000, 0, 16, 5);

    // A build that never stops, to count the polls of each stage: each long
    // stage polls many times, so it stops within a fraction of itself.
    let count = StopAt::new(u64::MAX);
    build(&dir, &base, &count).unwrap();
    let by_stage = count.by_stage.into_inner().unwrap();
    for stage in ["train PQ", "build graph", "write pages", "shuffle blocks"] {
        let polls = by_stage.get(stage).copied().unwrap_or(0);
        assert!(
            polls >= 20,
            "{stage} polled only {polls} times: {by_stage:?}"
        );
    }
    let before = read_all(&dir);

    // Stopped at every tenth of the polls: each build fails as cancelled,
    // removes its staging directory and leaves the index as it was.
    let total = count.polls.load(Ordering::Relaxed);
    for tenth in 0..10 {
        let stop = StopAt::new(1 + total * tenth / 10);
        let err = build(&dir, &base, &stop).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Cancelled, "{err}");
        assert!(err.to_string().contains("stopped on request"), "{err}");
        assert_eq!(hidden_entries(tmp.path()), Vec::<String>::new());
        assert_eq!(read_all(&dir), before, "a stopped build changed the index");
    }
}
