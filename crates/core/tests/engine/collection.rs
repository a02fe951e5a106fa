//! Collections (issue #24): a collection searched over every segment
//! returns exactly the merge of each segment's own answer; its recall is
//! the single index's at the same L (within noise); k-means partitions
//! route a query to its nearest segments; a failed build leaves the
//! previous collection as it was; bad segment sets are refused by name.

use crate::common;

use common::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use stratavec::collection::{
    build_collection, commit_collection, Collection, CollectionParams, Partition, Probe,
};
use stratavec::data::{Metric, Vectors};
use stratavec::progress::{Progress, Silent};
use stratavec::{OpenOptions, Result};

const N: usize = 4000;
const NQ: usize = 60;
const DIM: usize = 24;

fn build(dir: &std::path::Path, base: &[f32], segments: usize, partition: Partition) {
    build_with(dir, base, segments, partition, &Silent).unwrap();
}

fn build_with(
    dir: &std::path::Path,
    base: &[f32],
    segments: usize,
    partition: Partition,
    progress: &dyn Progress,
) -> Result<stratavec::collection::CollectionReport> {
    build_collection(
        Vectors::f32(base, DIM).unwrap(),
        stratavec::Attached::default(),
        "test data",
        dir,
        &small_params(Metric::L2),
        &CollectionParams {
            segments,
            partition,
        },
        2,
        progress,
    )
}

fn opts() -> OpenOptions {
    OpenOptions {
        memory_budget_bytes: Some(4_000_000),
        ..Default::default()
    }
}

fn recall(ids: &[i64], gt: &stratavec::data::GroundTruth, k: usize) -> f64 {
    let lists: Vec<Vec<u32>> = ids
        .chunks(k)
        .map(|c| c.iter().map(|&i| i as u32).collect())
        .collect();
    stratavec::data::recall_at_k(&lists, gt, k).unwrap()
}

#[test]
fn searching_every_segment_is_the_exact_merge_and_keeps_recall() {
    let tmp = tempdir();
    let (base, queries) = synth(N, NQ, DIM, 7);
    let gt = gt_f32(&base, &queries, DIM, Metric::L2, 10);
    let single = tmp.path().join("single");
    build_f32(&single, &base, DIM, &small_params(Metric::L2), 2);
    let single = stratavec::Index::open(&single, &opts()).unwrap();
    for partition in [Partition::Range, Partition::Kmeans] {
        let dir = tmp.path().join(format!("c-{partition}"));
        build(&dir, &base, 4, partition);
        let c = Collection::open(&dir, &opts()).unwrap();
        assert_eq!(c.len(), N);
        assert_eq!(c.segments().len(), 4);
        // The budget is split, never exceeded.
        let budgets: u64 = c
            .manifest
            .segments
            .iter()
            .map(|s| s.memory_budget.unwrap_or(0))
            .sum();
        assert_eq!(budgets, 0, "built without a budget: no shares recorded");
        for l in [10, 20, 40] {
            let p = search_params(10, l);
            let res = c
                .search_batch(&queries, DIM, &p, &Probe::exhaustive())
                .unwrap();
            assert_eq!(res.failed(), 0);
            assert_eq!(res.segment_queries, vec![NQ; 4]);
            // The merge is exact: each segment searched alone, its answers
            // merged plainly (sort all by distance, then id).
            for q in 0..NQ {
                let mut all: Vec<(f32, i64)> = Vec::new();
                for seg in c.segments() {
                    seg.with_base(|seg| {
                        let r = seg
                            .search_batch(&queries[q * DIM..(q + 1) * DIM], DIM, &p)
                            .unwrap();
                        let ids = seg.result_ids(&r.ids);
                        all.extend(r.dists.iter().copied().zip(ids).filter(|x| x.1 >= 0));
                    });
                }
                all.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap().then(a.1.cmp(&b.1)));
                let want: Vec<i64> = all.iter().take(10).map(|x| x.1).collect();
                assert_eq!(
                    &res.ids[q * 10..(q + 1) * 10],
                    &want[..],
                    "query {q}, L {l}"
                );
            }
            let one = single.search_batch(&queries, DIM, &p).unwrap();
            let r_one = recall_of(&one, &gt, 10);
            let r_col = recall(&res.ids, &gt, 10);
            assert!(
                r_col >= r_one - 0.005,
                "{partition} L={l}: collection recall {r_col} < single {r_one} - 0.005"
            );
            // Global ids: every id a row of the data, reported distances exact.
            check_results(&res.to_batch().unwrap(), &base, &queries, DIM, Metric::L2);
        }
    }
}

#[test]
fn kmeans_probe_searches_the_nearest_segments_only() {
    let tmp = tempdir();
    let (base, queries) = synth(N, NQ, DIM, 8);
    let gt = gt_f32(&base, &queries, DIM, Metric::L2, 10);
    let dir = tmp.path().join("c");
    build(&dir, &base, 4, Partition::Kmeans);
    let c = Collection::open(&dir, &opts()).unwrap();
    // Shares: each segment's floor (codes, buffers) first, then the rest by
    // vectors; together never over the budget, however small a segment.
    let budgets = stratavec::collection::open::segment_budgets(&dir, &c.manifest, &opts())
        .unwrap()
        .unwrap();
    assert_eq!(budgets.iter().sum::<u64>(), 4_000_000);
    for (seg, b) in c.segments().iter().zip(&budgets) {
        assert!(seg.with_base(|s| s.memory().total()) as u64 <= *b);
    }
    let p = search_params(10, 40);
    let mut last = 0.0;
    let mut reads = vec![];
    for probe in 1..=4 {
        let res = c
            .search_batch(&queries, DIM, &p, &Probe::nearest(Some(probe)))
            .unwrap();
        assert_eq!(res.segment_queries.iter().sum::<usize>(), NQ * probe);
        let r = recall(&res.ids, &gt, 10);
        assert!(
            r >= last - 1e-9,
            "recall fell from {last} to {r} at probe {probe}"
        );
        last = r;
        // Nodes fetched, from disk or the cache (this small set is cached).
        reads.push(
            res.stats
                .iter()
                .map(|s| (s.reads + s.cache_hits) as f64)
                .sum::<f64>(),
        );
    }
    // Searching all segments at L costs more reads than shrinking lists.
    let full = c
        .search_batch(&queries, DIM, &p, &Probe::exhaustive())
        .unwrap();
    let full_reads: f64 = full
        .stats
        .iter()
        .map(|s| (s.reads + s.cache_hits) as f64)
        .sum();
    assert!(reads[3] < full_reads, "{reads:?} vs {full_reads}");
    let all = c
        .search_batch(&queries, DIM, &p, &Probe::default())
        .unwrap();
    let four = c
        .search_batch(&queries, DIM, &p, &Probe::nearest(Some(4)))
        .unwrap();
    assert_eq!(all.ids, four.ids);
    let e = err_msg(c.search_batch(&queries, DIM, &p, &Probe::nearest(Some(0))));
    assert_mentions(&e, &["probe"]);
    let e = err_msg(c.search_batch(
        &queries,
        DIM,
        &p,
        &Probe {
            segments: None,
            shrink: 2.0,
        },
    ));
    assert_mentions(&e, &["probe shrink", "(0, 1]", "2"]);

    // Probe 3 at shrinking lists is exactly: rank the centroids by
    // distance, search the nearest three at 40, 20, 10, merge plainly.
    let three = c
        .search_batch(&queries, DIM, &p, &Probe::nearest(Some(3)))
        .unwrap();
    let centroids = c.centroids().unwrap();
    for q in 0..NQ {
        let x = &queries[q * DIM..(q + 1) * DIM];
        let mut order: Vec<(f32, usize)> = centroids
            .chunks_exact(DIM)
            .enumerate()
            .map(|(s, cen)| (x.iter().zip(cen).map(|(a, b)| (a - b) * (a - b)).sum(), s))
            .collect();
        order.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap().then(a.1.cmp(&b.1)));
        let mut all: Vec<(f32, i64)> = Vec::new();
        for (&(_, s), l) in order.iter().zip([40, 20, 10]) {
            c.segments()[s].with_base(|seg| {
                let r = seg.search_batch(x, DIM, &search_params(10, l)).unwrap();
                let ids = seg.result_ids(&r.ids);
                all.extend(r.dists.iter().copied().zip(ids).filter(|x| x.1 >= 0));
            });
        }
        all.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap().then(a.1.cmp(&b.1)));
        let want: Vec<i64> = all.iter().take(10).map(|x| x.1).collect();
        assert_eq!(&three.ids[q * 10..(q + 1) * 10], &want[..], "query {q}");
    }
}

/// Cancels the build when the third segment starts.
struct StopAtThird(AtomicUsize);
impl Progress for StopAtThird {
    fn note(&self, msg: &str) {
        if msg.starts_with("segment ") {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    fn cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst) >= 3
    }
}

/// Every file under `dir` (recursively), by relative path, with its bytes.
fn snapshot(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        if e.file_type().unwrap().is_dir() {
            out.extend(
                snapshot(&e.path())
                    .into_iter()
                    .map(|(n, b)| (format!("{name}/{n}"), b)),
            );
        } else {
            out.push((name, std::fs::read(e.path()).unwrap()));
        }
    }
    out.sort();
    out
}

#[test]
fn a_failed_build_leaves_the_previous_collection_untouched() {
    let tmp = tempdir();
    let (base, _) = synth(2000, 1, DIM, 9);
    let dir = tmp.path().join("c");
    build(&dir, &base, 2, Partition::Range);
    let before = snapshot(&dir);
    let (other, _) = synth(2000, 1, DIM, 10);
    let e = build_with(
        &dir,
        &other,
        4,
        Partition::Range,
        &StopAtThird(AtomicUsize::new(0)),
    );
    assert!(e.is_err());
    assert_eq!(snapshot(&dir), before);
    assert!(
        hidden_entries(tmp.path()).is_empty(),
        "{:?}",
        hidden_entries(tmp.path())
    );
    Collection::open(&dir, &opts()).unwrap();
    // Not a collection nor an index: refused, nothing written.
    let file = tmp.path().join("plain");
    std::fs::create_dir(&file).unwrap();
    std::fs::write(file.join("notes.txt"), "mine").unwrap();
    let e = err_msg(build_with(&file, &base, 2, Partition::Range, &Silent));
    assert_mentions(&e, &["refusing to overwrite"]);
}

#[test]
fn commit_refuses_segments_that_do_not_form_a_collection() {
    let tmp = tempdir();
    let (base, _) = synth(1000, 1, DIM, 11);
    let ids_a: Vec<i64> = (0..500).collect();
    let ids_b: Vec<i64> = (499..999).collect();
    let seg = |staged: &std::path::Path, i: usize, rows: std::ops::Range<usize>, ids: &[i64]| {
        stratavec::build_index_with_ids(
            Vectors::f32(&base[rows.start * DIM..rows.end * DIM], DIM).unwrap(),
            Some(ids),
            "test data",
            &staged.join(format!("seg-{i:04}")),
            &small_params(Metric::L2),
            2,
            &Silent,
        )
        .unwrap();
    };
    let staged = tmp.path().join("staged");
    seg(&staged, 0, 0..500, &ids_a);
    seg(&staged, 1, 500..1000, &ids_b);
    let target = tmp.path().join("c");
    let e = err_msg(commit_collection(
        &staged,
        &target,
        Partition::Range,
        None,
        None,
    ));
    assert_mentions(&e, &["segment ids", "id 499 in two segments"]);
    assert!(!target.exists());
    // Disjoint ids: published, staged dir moved into place.
    std::fs::remove_dir_all(staged.join("seg-0001")).unwrap();
    let ids_c: Vec<i64> = (500..1000).collect();
    seg(&staged, 1, 500..1000, &ids_c);
    let e = err_msg(commit_collection(
        &staged,
        &target,
        Partition::Kmeans,
        None,
        None,
    ));
    assert_mentions(&e, &["centroids", "2 x 24"]);
    std::fs::create_dir(staged.join("seg-0003")).unwrap();
    let e = err_msg(commit_collection(
        &staged,
        &target,
        Partition::Range,
        None,
        None,
    ));
    assert_mentions(&e, &["seg-0003", "out of sequence"]);
    std::fs::remove_dir(staged.join("seg-0003")).unwrap();
    let m = commit_collection(&staged, &target, Partition::Range, None, Some(1_000_000)).unwrap();
    assert_eq!(m.n, 1000);
    assert_eq!(
        m.segments
            .iter()
            .map(|s| s.memory_budget.unwrap())
            .sum::<u64>(),
        1_000_000
    );
    assert!(!staged.exists());
    Collection::open(&target, &opts()).unwrap();
}
