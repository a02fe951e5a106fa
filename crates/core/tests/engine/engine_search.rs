//! End to end: synthetic clustered data → build → open (with and without a
//! node cache) → batch search → recall against brute force, for every metric
//! and for u8 data; plus what the stats and the memory report say.

use crate::common;

use common::*;
use stratavec::data::{brute_force_knn, GroundTruth, Metric, Vectors};
use stratavec::memory::node_cache::bytes_per_node;
use stratavec::memory::node_cache::NodeCacheBuilder;
use stratavec::progress::Silent;
use stratavec::{build_index, Index, OpenOptions};

const N: usize = 4000;
const NQ: usize = 100;
const DIM: usize = 32;
const K: usize = 10;
const L: usize = 64;

/// Budget = what the index needs without a cache + room for `nodes` records.
fn budget_for_cache(index: &Index, nodes: usize) -> u64 {
    let fixed = index.memory().get("codes") + index.memory().get("buffers");
    let layout_record = DIM * 4 + 4 + 4 * 24;
    (fixed + nodes * bytes_per_node(layout_record)) as u64
}

#[test]
fn l2_recall_and_cache_stats() {
    let tmp = tempdir();
    let dir = tmp.path().join("l2");
    let (base, queries) = synth(N, NQ, DIM, 11);
    build_f32(&dir, &base, DIM, &small_params(Metric::L2), 2);
    let gt = gt_f32(&base, &queries, DIM, Metric::L2, K);

    let plain = Index::open(&dir, &OpenOptions::default()).unwrap();
    assert_eq!(plain.cached_nodes(), 0);
    assert_eq!(
        (plain.len(), plain.dim(), plain.metric()),
        (N, DIM, Metric::L2)
    );
    let budget = budget_for_cache(&plain, 500);
    let cached = Index::open(
        &dir,
        &OpenOptions {
            memory_budget_bytes: Some(budget),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(
        cached.cached_nodes() >= 400 && cached.cached_nodes() <= 500,
        "budget for 500 nodes cached {}",
        cached.cached_nodes()
    );
    assert!(
        cached.memory().total() as u64 <= budget,
        "memory {} over budget {budget}",
        cached.memory()
    );

    let r_plain = search(&plain, &queries, K, L);
    let r_cached = search(&cached, &queries, K, L);
    check_results(&r_plain, &base, &queries, DIM, Metric::L2);
    check_results(&r_cached, &base, &queries, DIM, Metric::L2);
    let rec_plain = recall_of(&r_plain, &gt, K);
    let rec_cached = recall_of(&r_cached, &gt, K);
    eprintln!("l2 recall@10: {rec_plain} (no cache), {rec_cached} (cache)");
    assert!(rec_plain >= 0.9, "recall@10 without cache {rec_plain}");
    assert!(rec_cached >= 0.9, "recall@10 with cache {rec_cached}");

    let (tp, tc) = (r_plain.total(), r_cached.total());
    let nq = NQ as f64;
    assert!(
        tp.reads as f64 / nq > 1.0,
        "reads/query without cache {}",
        tp.reads
    );
    assert_eq!(tp.cache_hits, 0);
    assert_eq!(tp.bytes, tp.reads * 4096, "one 4 KiB page per read");
    assert!(
        tc.cache_hits > 0,
        "no cache hits with {} cached nodes",
        cached.cached_nodes()
    );
    assert!(tc.reads > 0);
    assert!(
        tc.reads < tp.reads,
        "reads with cache {} not fewer than without {}",
        tc.reads,
        tp.reads
    );
    // Every expansion is a read, a share of a read (two beam candidates in
    // one page) or a cache hit.
    assert_eq!(tp.hops, tp.reads + tp.shared_reads);
    assert_eq!(tc.hops, tc.reads + tc.shared_reads + tc.cache_hits);
    assert!(r_plain
        .stats
        .iter()
        .all(|s| s.reads > 0 && s.latency_us > 0.0));
    assert!(!r_plain.io_backend.is_empty());
}

#[test]
fn larger_complexity_does_not_lower_recall() {
    let s = shared();
    let index = open(&s.dir);
    let gt = gt_f32(&s.base, &s.queries, s.dim, Metric::L2, K);
    let r20 = recall_of(&search(&index, &s.queries, K, 20), &gt, K);
    let r100 = recall_of(&search(&index, &s.queries, K, 100), &gt, K);
    assert!(r100 >= r20, "recall L=100 {r100} < L=20 {r20}");
    assert!(r100 >= 0.95, "recall@10 at L=100: {r100}");
}

#[test]
fn repeated_batches_and_thread_counts_agree() {
    let s = shared();
    let index = open(&s.dir);
    let a = search(&index, &s.queries, K, 40);
    let mut p = search_params(K, 40);
    p.threads = 1;
    p.in_flight = 1;
    // One query at a time: every query after the first runs in the
    // recycled buffers of the one before (`BeamSearch::recycle`).
    let b = index.search_batch(&s.queries, index.dim(), &p).unwrap();
    assert_eq!(a.ids, b.ids, "results depend on threads / in_flight");
    assert_eq!(a.dists, b.dists);
    // A sub-batch gives the same rows.
    let c = search(&index, &s.queries[5 * s.dim..9 * s.dim], K, 40);
    assert_eq!(c.ids, a.ids[5 * K..9 * K]);
}

/// Unnormalised clustered data under maximum inner product; recall against
/// brute force under `-dot`.
#[test]
fn inner_product_recall() {
    let tmp = tempdir();
    let dir = tmp.path().join("ip");
    let (base, queries) = synth(N, NQ, DIM, 12);
    build_f32(&dir, &base, DIM, &small_params(Metric::InnerProduct), 2);
    let index = open(&dir);
    assert_eq!(index.metric(), Metric::InnerProduct);
    let gt = gt_f32(&base, &queries, DIM, Metric::InnerProduct, K);
    let res = search(&index, &queries, K, L);
    check_results(&res, &base, &queries, DIM, Metric::InnerProduct);
    let r = recall_of(&res, &gt, K);
    eprintln!("ip recall@10: {r}");
    assert!(r >= 0.9, "ip recall@10 {r}");
}

/// Cosine: the engine normalises base and queries; the reported distance is
/// 1 - cos of the raw vectors and recall is against brute-force cosine.
#[test]
fn cosine_recall() {
    let tmp = tempdir();
    let dir = tmp.path().join("cos");
    let (base, mut queries) = synth(N, NQ, DIM, 13);
    // Scale queries: cosine must not care.
    queries
        .iter_mut()
        .enumerate()
        .for_each(|(i, x)| *x *= 1.0 + (i / DIM % 5) as f32);
    build_f32(&dir, &base, DIM, &small_params(Metric::Cosine), 2);
    let index = open(&dir);
    let gt = gt_f32(&base, &queries, DIM, Metric::Cosine, K);
    let res = search(&index, &queries, K, L);
    check_results(&res, &base, &queries, DIM, Metric::Cosine);
    let r = recall_of(&res, &gt, K);
    eprintln!("cosine recall@10: {r}");
    assert!(r >= 0.9, "cosine recall@10 {r}");
}

/// Maps f32 data onto 0..=255 (one affine map for base and queries).
fn quantize(v: &[f32], lo: f32, hi: f32) -> Vec<u8> {
    v.iter()
        .map(|&x| ((x - lo) / (hi - lo) * 255.0).round().clamp(0.0, 255.0) as u8)
        .collect()
}

#[test]
fn u8_data_recall() {
    let tmp = tempdir();
    let dir = tmp.path().join("u8");
    let (base_f, queries_f) = synth(N, NQ, DIM, 14);
    let lo = base_f.iter().copied().fold(f32::INFINITY, f32::min);
    let hi = base_f.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let base = quantize(&base_f, lo, hi);
    let queries = quantize(&queries_f, lo, hi);
    build_index(
        Vectors::u8(&base, DIM).unwrap(),
        "u8 test data",
        &dir,
        &small_params(Metric::L2),
        2,
        &Silent,
    )
    .unwrap();
    let index = open(&dir);
    assert_eq!(index.manifest.dtype.as_str(), "u8");
    let gt: GroundTruth = brute_force_knn(
        &Vectors::u8(&base, DIM).unwrap(),
        &Vectors::u8(&queries, DIM).unwrap(),
        Metric::L2,
        K,
        2,
    )
    .unwrap();
    let qf: Vec<f32> = queries.iter().map(|&x| x as f32).collect();
    let bf: Vec<f32> = base.iter().map(|&x| x as f32).collect();
    let res = search(&index, &qf, K, L);
    check_results(&res, &bf, &qf, DIM, Metric::L2);
    let r = recall_of(&res, &gt, K);
    eprintln!("u8 recall@10: {r}");
    assert!(r >= 0.9, "u8 recall@10 {r}");
    // A u8 index refuses queries that are not bytes.
    let mut bad = qf.clone();
    bad[3] = 256.0;
    let msg = err_msg(index.search_batch(&bad, index.dim(), &search_params(K, L)));
    assert_mentions(&msg, &["query 0, component 3", "0..=255", "256"]);
    bad[3] = 1.5;
    let msg = err_msg(index.search_batch(&bad, index.dim(), &search_params(K, L)));
    assert_mentions(&msg, &["query 0, component 3", "1.5"]);
}

/// Memory plan: a budget fills the cache up to, never over, the budget; no
/// budget means no cache; the report sums its parts.
#[test]
fn memory_budget_is_respected() {
    let s = shared();
    let plain = open(&s.dir);
    let m = plain.memory();
    assert_eq!(m.get("cache"), 0);
    assert!(m.get("codes") >= SHARED_N * 8, "codes {}", m.get("codes"));
    assert_eq!(m.total(), m.get("codes") + m.get("buffers"));
    for extra in [0usize, 1, 10_000, 100_000, 100_000_000] {
        let budget = (m.total() + extra) as u64;
        let idx = Index::open(
            &s.dir,
            &OpenOptions {
                memory_budget_bytes: Some(budget),
                ..Default::default()
            },
        )
        .unwrap();
        assert!(
            idx.memory().total() as u64 <= budget,
            "budget {budget}: memory {}",
            idx.memory()
        );
        assert!(idx.cached_nodes() <= SHARED_N);
        if extra == 100_000_000 {
            assert_eq!(
                idx.cached_nodes(),
                SHARED_N,
                "a huge budget caches every node"
            );
            // Everything cached: a search reads nothing.
            let res = search(&idx, &s.queries, K, 40);
            assert_eq!(res.total().reads, 0);
            assert!(res.total().cache_hits > 0);
        }
    }
}

/// The planner charges `bytes_per_node(record)` for each cached node and
/// reports that as the cache's memory; the cache's real footprint should not
/// exceed it (the budget is "enforced, not advisory").
#[test]
fn node_cache_real_bytes_within_planned_bytes() {
    let record = DIM * 4 + 4 + 4 * 24;
    let mut over = Vec::new();
    for nodes in [100usize, 500, 1000, 3000] {
        let mut b = NodeCacheBuilder::new(record, nodes);
        let rec = vec![7u8; record];
        for id in 0..nodes as u32 {
            b.push(id * 3, &rec);
        }
        let c = b.finish();
        let planned = nodes * bytes_per_node(record);
        if c.resident_bytes() > planned {
            over.push(format!(
                "{nodes} nodes: resident {} bytes > planned {planned}",
                c.resident_bytes()
            ));
        }
    }
    assert!(over.is_empty(), "{over:#?}");
}
