//! Shared helpers of the engine integration tests: small synthetic data,
//! small build parameters, temporary directories on the target's filesystem
//! (ext4 here, so O_DIRECT works; /tmp may be tmpfs), and one shared small
//! index per test binary so most tests do not pay for a build.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use stratavec::data::{brute_force_knn, GroundTruth, Metric, Vectors};
use stratavec::progress::Silent;
use stratavec::synthetic::{clustered, SyntheticSpec};
use stratavec::{build_index, BatchResult, BuildParams, Index, OpenOptions, SearchParams};

/// A temporary directory under the cargo target directory (not /tmp, which
/// may be tmpfs and refuse O_DIRECT).
pub fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir in CARGO_TARGET_TMPDIR")
}

/// Clustered synthetic data: (base, queries), row-major.
pub fn synth(n: usize, nq: usize, dim: usize, seed: u64) -> (Vec<f32>, Vec<f32>) {
    clustered(&SyntheticSpec {
        n,
        queries: nq,
        dim,
        clusters: 16,
        seed,
    })
}

/// Small, quick build parameters (R=24, L=48, 8 PQ bytes).
pub fn small_params(metric: Metric) -> BuildParams {
    BuildParams {
        metric,
        graph_degree: 24,
        complexity: 48,
        pq_bytes: 8,
        pq_sample: 4_000,
        pq_iters: 6,
        ..Default::default()
    }
}

pub fn build_f32(dir: &Path, data: &[f32], dim: usize, params: &BuildParams, threads: usize) {
    build_index(
        Vectors::f32(data, dim).unwrap(),
        "test data",
        dir,
        params,
        threads,
        &Silent,
    )
    .unwrap_or_else(|e| panic!("build at {} failed: {e}", dir.display()));
}

pub fn search_params(k: usize, l: usize) -> SearchParams {
    SearchParams {
        k,
        complexity: l,
        beam_width: 4,
        threads: 2,
        in_flight: 8,
        ..Default::default()
    }
}

pub fn search(index: &Index, queries: &[f32], k: usize, l: usize) -> BatchResult {
    index
        .search_batch(queries, index.dim(), &search_params(k, l))
        .unwrap_or_else(|e| panic!("search failed: {e}"))
}

/// Per-query id lists of a batch.
pub fn id_lists(res: &BatchResult) -> Vec<Vec<u32>> {
    res.ids.chunks(res.k).map(|c| c.to_vec()).collect()
}

pub fn gt_f32(base: &[f32], queries: &[f32], dim: usize, metric: Metric, k: usize) -> GroundTruth {
    brute_force_knn(
        &Vectors::f32(base, dim).unwrap(),
        &Vectors::f32(queries, dim).unwrap(),
        metric,
        k,
        2,
    )
    .unwrap()
}

pub fn recall_of(res: &BatchResult, gt: &GroundTruth, k: usize) -> f64 {
    stratavec::data::recall_at_k(&id_lists(res), gt, k).unwrap()
}

/// The shared small index of a test binary: 2000 x 32 clustered f32, L2.
pub struct Shared {
    pub dir: PathBuf,
    pub dim: usize,
    pub base: Vec<f32>,
    pub queries: Vec<f32>,
}

pub const SHARED_N: usize = 2000;
pub const SHARED_NQ: usize = 64;
pub const SHARED_DIM: usize = 32;

/// Built once per test binary, at a fixed path per binary under the target's
/// temporary directory (a static is never dropped, so a `TempDir` here would
/// leak one directory per run; a fixed path is rebuilt in place instead).
pub fn shared() -> &'static Shared {
    static SHARED: OnceLock<Shared> = OnceLock::new();
    SHARED.get_or_init(|| {
        let exe = std::env::current_exe().unwrap();
        let stem = exe.file_stem().unwrap().to_string_lossy();
        let name = stem.rsplit_once('-').map_or(&*stem, |(n, _)| n);
        let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("shared-{name}"));
        let _ = std::fs::remove_dir_all(&root);
        let dir = root.join("index");
        let (base, queries) = synth(SHARED_N, SHARED_NQ, SHARED_DIM, 7);
        build_f32(&dir, &base, SHARED_DIM, &small_params(Metric::L2), 2);
        Shared {
            dir,
            dim: SHARED_DIM,
            base,
            queries,
        }
    })
}

/// Copies every regular file of index directory `src` into a new directory
/// `dst` (for tests that corrupt an index).
pub fn copy_index(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), dst.join(e.file_name())).unwrap();
        }
    }
}

/// A private copy of the shared index, in its own temporary directory.
pub fn private_copy() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempdir();
    let dir = tmp.path().join("index");
    copy_index(&shared().dir, &dir);
    (tmp, dir)
}

/// The index at `dir` read through backend `io`, no budget.
pub fn open_with_io(dir: &Path, io: stratavec::Backend) -> Index {
    let opts = OpenOptions {
        io,
        ..Default::default()
    };
    Index::open(dir, &opts).unwrap_or_else(|e| panic!("open {} via {io}: {e}", dir.display()))
}

pub fn open(dir: &Path) -> Index {
    Index::open(dir, &OpenOptions::default())
        .unwrap_or_else(|e| panic!("open {} failed: {e}", dir.display()))
}

/// The error message of `r`, panicking if it is `Ok`.
pub fn err_msg<T>(r: stratavec::Result<T>) -> String {
    match r {
        Ok(_) => panic!("expected an error, got Ok"),
        Err(e) => e.to_string(),
    }
}

/// Asserts `msg` contains every one of `parts`.
#[track_caller]
pub fn assert_mentions(msg: &str, parts: &[&str]) {
    for p in parts {
        assert!(msg.contains(p), "message {msg:?} does not mention {p:?}");
    }
}

/// Names of entries in `dir` that start with '.' (leftover staging dirs).
pub fn hidden_entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect()
}

/// Every file of an index directory, by name, with its bytes.
pub fn read_all(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

/// Returned ids are distinct and valid, distances ascending, and each
/// distance equals the metric's exact distance (as brute force computes it)
/// between the query and that base row.
#[allow(dead_code)]
pub fn check_results(res: &BatchResult, base: &[f32], queries: &[f32], dim: usize, metric: Metric) {
    assert_eq!(
        res.failed(),
        0,
        "errors: {:?}",
        res.errors.iter().flatten().next()
    );
    for (q, (ids, dists)) in res
        .ids
        .chunks(res.k)
        .zip(res.dists.chunks(res.k))
        .enumerate()
    {
        let mut sorted = ids.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), ids.len(), "query {q}: repeated ids {ids:?}");
        assert!(
            dists.windows(2).all(|w| w[0] <= w[1]),
            "query {q}: {dists:?}"
        );
        let qv = &queries[q * dim..(q + 1) * dim];
        for (&id, &d) in ids.iter().zip(dists) {
            assert!((id as usize) < base.len() / dim, "query {q}: id {id}");
            let want = metric.distance_f32(qv, &base[id as usize * dim..(id as usize + 1) * dim]);
            let tol = 1e-3 * want.abs().max(1.0);
            assert!(
                (d - want).abs() <= tol,
                "query {q}, id {id}: reported distance {d}, exact {metric} distance {want}"
            );
        }
    }
}

/// The wordnet-minilm 20k set (`STRATAVEC_WORDNET_DIR`, with its ground
/// truth), or `None` after reporting `test` skipped and how to make it.
pub fn wordnet_dir(test: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("STRATAVEC_WORDNET_DIR")
        .map(PathBuf::from)
        .filter(|d| d.join("gt.ibin").is_file());
    if dir.is_none() {
        stratavec_testkit::skipped(
            test,
            stratavec_testkit::Need::Wordnet,
            "no STRATAVEC_WORDNET_DIR: run `scripts/wordnet.sh 20k` and set it to the directory \
             it prints (test.sh does both)",
        );
    }
    dir
}
