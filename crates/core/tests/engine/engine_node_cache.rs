//! The node cache's order (`--node-cache-rank`, OctopusANN §4.1's cache
//! policies) and polling for completions (`poll_us`): both change how many
//! reads a query makes or how it waits for them, never what it returns.

use crate::common;

use common::*;
use stratavec::data::Metric;
use stratavec::memory::cache_rank::CacheRank;
use stratavec::{BuildParams, Index, OpenOptions, SearchParams};
use stratavec_io::Backend;

const DIM: usize = 16;
const N: usize = 3000;

type Built = (tempfile::TempDir, Vec<f32>, Vec<f32>);

/// One diskann index with a navigation graph per node cache rank, from the
/// same data and seed (so the same graph and records).
fn indexes() -> &'static Built {
    static DIR: std::sync::OnceLock<Built> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let (base, queries) = synth(N, 100, DIM, 31);
        let tmp = tempdir();
        for rank in RANKS {
            let params = BuildParams {
                nav_sample: 0.02,
                node_cache_rank: Some(rank),
                ..small_params(Metric::L2)
            };
            build_f32(&tmp.path().join(rank.to_string()), &base, DIM, &params, 2);
        }
        (tmp, base, queries)
    })
}

const RANKS: [CacheRank; 4] = [
    CacheRank::Bfs,
    CacheRank::Nav,
    CacheRank::Indegree,
    CacheRank::Visits,
];

/// Opened with a budget that caches about a tenth of the records (a record
/// here is 164 bytes: 16 floats, a degree, 24 ids).
fn open(rank: CacheRank) -> Index {
    let dir = indexes().0.path().join(rank.to_string());
    let unbudgeted = Index::open(&dir, &OpenOptions::default()).unwrap();
    let floor = unbudgeted.memory().total() as u64;
    let opts = OpenOptions {
        memory_budget_bytes: Some(floor + 60_000),
        ..Default::default()
    };
    Index::open(&dir, &opts).unwrap()
}

fn params(l: usize) -> SearchParams {
    SearchParams {
        threads: 1,
        in_flight: 4,
        ..search_params(10, l)
    }
}

#[test]
fn every_node_cache_order_gives_the_same_answers_and_only_ranked_ones_write_an_order() {
    let (tmp, base, queries) = indexes();
    let reference = open(CacheRank::Bfs);
    assert!(
        reference.cached_nodes() > 100,
        "{}",
        reference.cached_nodes()
    );
    let want = reference.search_batch(queries, DIM, &params(40)).unwrap();
    check_results(&want, base, queries, DIM, Metric::L2);
    for rank in RANKS {
        let dir = tmp.path().join(rank.to_string());
        // bfs is the open's own fill; every other rank is written at build.
        assert_eq!(
            dir.join("order.bin").exists(),
            rank != CacheRank::Bfs,
            "{rank}"
        );
        let index = open(rank);
        assert_eq!(index.cached_nodes(), reference.cached_nodes(), "{rank}");
        let got = index.search_batch(queries, DIM, &params(40)).unwrap();
        assert_eq!(id_lists(&got), id_lists(&want), "{rank}");
        let hits: u64 = got.stats.iter().map(|s| s.cache_hits).sum();
        eprintln!(
            "{rank}: {:.2} reads, {:.2} cache hits a query",
            got.total().reads as f64 / 100.0,
            hits as f64 / 100.0
        );
        assert!(hits > 0, "{rank}: the cache served nothing");
    }
}

/// The navigation graph's nodes are where its searches start: ranked by
/// `nav`, their records are the first cached, so a query's first
/// expansions never wait for a read.
#[test]
fn a_nav_ranked_cache_holds_the_navigation_graphs_starts() {
    let (_, _, queries) = indexes();
    let index = open(CacheRank::Nav);
    let first = SearchParams {
        complexity: 10,
        ..params(10)
    };
    let r = index.search_batch(queries, DIM, &first).unwrap();
    let hits: u64 = r.stats.iter().map(|s| s.cache_hits).sum();
    let bfs = open(CacheRank::Bfs)
        .search_batch(queries, DIM, &first)
        .unwrap();
    let bfs_hits: u64 = bfs.stats.iter().map(|s| s.cache_hits).sum();
    eprintln!(
        "nav-ranked: {hits} hits, {} reads; bfs: {bfs_hits} hits, {} reads",
        r.total().reads,
        bfs.total().reads
    );
    assert!(
        hits > bfs_hits,
        "nav-ranked cache hits {hits} vs breadth-first from the medoid {bfs_hits}"
    );
}

/// Laser keeps no PQ codes, so its `visits` rank runs the sample queries
/// on exact distances from its cluster entries: the recall of its
/// in-degree cache, and more of a query's expansions served from RAM,
/// since the sample searches go where queries go.
#[test]
fn a_laser_visits_cache_ranks_by_exact_sample_searches() {
    // 1-bit codes need dimensions to rank neighbours (16 are too few).
    const DIM: usize = 64;
    let (base, queries) = synth(N, 100, DIM, 3);
    let tmp = tempdir();
    let build = |rank: CacheRank| {
        let dir = tmp.path().join(rank.to_string());
        let params = BuildParams {
            node_cache_rank: Some(rank),
            graph_degree: 24,
            complexity: 48,
            pq_bytes: 8,
            ..BuildParams::for_profile("laser")
        };
        build_f32(&dir, &base, DIM, &params, 2);
        let floor = Index::open(&dir, &OpenOptions::default())
            .unwrap()
            .memory()
            .total() as u64;
        let opts = OpenOptions {
            memory_budget_bytes: Some(floor + 60_000),
            ..Default::default()
        };
        Index::open(&dir, &opts).unwrap()
    };
    let (indegree, visits) = (build(CacheRank::Indegree), build(CacheRank::Visits));
    assert!(visits.dir.join("order.bin").exists());
    assert_eq!(visits.cached_nodes(), indegree.cached_nodes());
    assert!(visits.cached_nodes() > 50, "{}", visits.cached_nodes());
    let a = indegree.search_batch(&queries, DIM, &params(40)).unwrap();
    let b = visits.search_batch(&queries, DIM, &params(40)).unwrap();
    // Laser's early dispatch acts on the reads that are in, and a cached
    // record is in at once, so the cache can change which candidates a
    // round expands: the answers agree in recall, not id for id.
    let gt = gt_f32(&base, &queries, DIM, Metric::L2, 10);
    let (ra, rb) = (recall_of(&a, &gt, 10), recall_of(&b, &gt, 10));
    assert!((ra - rb).abs() <= 0.02, "recall indegree {ra}, visits {rb}");
    let hits = |r: &stratavec::BatchResult| r.stats.iter().map(|s| s.cache_hits).sum::<u64>();
    eprintln!(
        "laser cache hits a query: indegree {:.2}, visits {:.2}; reads {:.2} and {:.2}",
        hits(&a) as f64 / 100.0,
        hits(&b) as f64 / 100.0,
        a.total().reads as f64 / 100.0,
        b.total().reads as f64 / 100.0
    );
    assert!(
        hits(&b) > hits(&a),
        "visits {} vs indegree {}",
        hits(&b),
        hits(&a)
    );
}

/// Polling for completions instead of sleeping: the same answers at one
/// query in flight and at many, on every backend; an unbounded poll is
/// refused by name.
#[test]
fn polling_for_completions_changes_no_answer() {
    let (_, _, queries) = indexes();
    let dir = indexes().0.path().join(CacheRank::Bfs.to_string());
    for io in [Backend::Auto, Backend::Pread, Backend::Ram] {
        let index = open_with_io(&dir, io);
        for in_flight in [1, 8] {
            let base = SearchParams {
                in_flight,
                ..params(40)
            };
            let want = index.search_batch(queries, DIM, &base).unwrap();
            for poll_us in [1, 2_000] {
                let got = index
                    .search_batch(
                        queries,
                        DIM,
                        &SearchParams {
                            poll_us,
                            ..base.clone()
                        },
                    )
                    .unwrap();
                assert_eq!(got.failed(), 0);
                assert_eq!(id_lists(&got), id_lists(&want), "{io:?} poll {poll_us}");
                assert_eq!(got.total().reads, want.total().reads);
            }
        }
        let e = err_msg(index.search_batch(
            queries,
            DIM,
            &SearchParams {
                poll_us: stratavec::search::MAX_POLL_US + 1,
                ..params(40)
            },
        ));
        assert_mentions(&e, &["poll_us", "10000"]);
    }
}
