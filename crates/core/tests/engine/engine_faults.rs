//! An I/O error fails the queries that needed the failed read, never the
//! batch or the process; every other query's answer is exactly the
//! fault-free answer. Reads are failed with `OpenOptions::fault_injection`.

use crate::common;

use common::*;
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use stratavec::{BatchResult, Index, OpenOptions, SearchParams};
use stratavec_io::Backend;

const K: usize = 10;
const L: usize = 40;
const PAGE: u64 = 4096;

fn params() -> SearchParams {
    SearchParams {
        k: K,
        complexity: L,
        beam_width: 4,
        threads: 2,
        in_flight: 8,
        ..Default::default()
    }
}

fn open_with(io: Backend, fault: Option<stratavec::index::FaultPredicate>) -> Index {
    Index::open(
        &shared().dir,
        &OpenOptions {
            io,
            fault_injection: fault,
            ..Default::default()
        },
    )
    .unwrap()
}

/// Offsets of the pages each query reads (no cache), found by running every
/// query alone with a predicate that only records.
fn pages_per_query() -> &'static Vec<BTreeSet<u64>> {
    static PAGES: std::sync::OnceLock<Vec<BTreeSet<u64>>> = std::sync::OnceLock::new();
    PAGES.get_or_init(|| {
        let s = shared();
        let log = Arc::new(Mutex::new(Vec::<u64>::new()));
        let l2 = log.clone();
        let index = open_with(
            Backend::Auto,
            Some(Arc::new(move |off| {
                l2.lock().unwrap().push(off);
                false
            })),
        );
        let mut one = params();
        one.threads = 1;
        one.in_flight = 1;
        (0..SHARED_NQ)
            .map(|q| {
                log.lock().unwrap().clear();
                let r = index
                    .search_batch(&s.queries[q * s.dim..(q + 1) * s.dim], s.dim, &one)
                    .unwrap();
                assert_eq!(r.failed(), 0);
                let log = log.lock().unwrap();
                assert_eq!(
                    log.len() as u64,
                    r.stats[0].reads,
                    "query {q}: reads counted"
                );
                // Several nodes share a page, so a page may be read more than once.
                log.iter().copied().collect()
            })
            .collect()
    })
}

fn fault_free() -> BatchResult {
    let s = shared();
    open_with(Backend::Auto, None)
        .search_batch(&s.queries, s.dim, &params())
        .unwrap()
}

fn medoid_page() -> u64 {
    let m = &shared().dir;
    let manifest = stratavec::index::Manifest::read(m).unwrap();
    let record = manifest.dim * 4 + 4 + 4 * manifest.build.graph_degree;
    let per_page = manifest.page_size / record;
    (1 + manifest.medoid as u64 / per_page as u64) * manifest.page_size as u64
}

/// Checks a faulted batch against the prediction: query q fails exactly when
/// it reads a failing page; its error names an injected fault at one of the
/// failing offsets; every other query equals the fault-free run.
fn check_against_prediction(
    res: &BatchResult,
    clean: &BatchResult,
    failing: &BTreeSet<u64>,
) -> usize {
    let pages = pages_per_query();
    let mut failed = 0;
    for (q, read) in pages.iter().enumerate() {
        let should_fail = !read.is_disjoint(failing);
        let row = q * K..(q + 1) * K;
        match &res.errors[q] {
            Some(e) => {
                assert!(
                    should_fail,
                    "query {q} failed but reads no failing page: {e}"
                );
                assert_mentions(e, &["injected", "pages.bin"]);
                assert!(
                    failing.iter().any(|o| e.contains(&format!("offset {o} "))),
                    "query {q}: error names none of the failing offsets: {e}"
                );
                assert!(res.ids[row.clone()].iter().all(|&i| i == u32::MAX));
                assert!(res.dists[row].iter().all(|d| d.is_infinite()));
                failed += 1;
            }
            None => {
                assert!(!should_fail, "query {q} reads a failing page but succeeded");
                assert_eq!(
                    res.ids[row.clone()],
                    clean.ids[row.clone()],
                    "query {q} ids"
                );
                assert_eq!(res.dists[row.clone()], clean.dists[row], "query {q} dists");
            }
        }
    }
    assert_eq!(res.failed(), failed);
    failed
}

#[test]
fn medoid_page_failure_fails_every_query_but_not_the_batch() {
    let s = shared();
    let x = medoid_page();
    assert!(
        pages_per_query().iter().all(|p| p.contains(&x)),
        "every query starts at the medoid"
    );
    let index = open_with(Backend::Auto, Some(Arc::new(move |off| off == x)));
    let res = index
        .search_batch(&s.queries, index.dim(), &params())
        .unwrap();
    assert_eq!(res.failed(), SHARED_NQ);
    for e in res.errors.iter().flatten() {
        assert_mentions(e, &["injected", &format!("offset {x} ")]);
    }
    assert!(res.ids.iter().all(|&i| i == u32::MAX));
    // Nothing sticks: the same files opened without the fault answer normally.
    let again = open_with(Backend::Auto, None)
        .search_batch(&s.queries, s.dim, &params())
        .unwrap();
    assert_eq!(again.failed(), 0);
}

#[test]
fn one_page_failure_fails_only_the_queries_that_read_it() {
    let s = shared();
    let pages = pages_per_query();
    // The page read by the number of queries closest to half of them.
    let mut counts = std::collections::BTreeMap::<u64, usize>::new();
    for p in pages.iter().flatten() {
        *counts.entry(*p).or_default() += 1;
    }
    let (&x, &c) = counts
        .iter()
        .min_by_key(|(_, &c)| (c as i64 - SHARED_NQ as i64 / 2).abs())
        .unwrap();
    assert!(
        c > 0 && c < SHARED_NQ,
        "no page is read by only some queries"
    );
    let index = open_with(Backend::Auto, Some(Arc::new(move |off| off == x)));
    let res = index
        .search_batch(&s.queries, index.dim(), &params())
        .unwrap();
    let failed = check_against_prediction(&res, &fault_free(), &BTreeSet::from([x]));
    assert_eq!(failed, c);
}

/// About 10% of the data pages fail (never the medoid's, or every query
/// would); on every backend the batch returns, the failures are exactly the
/// predicted queries, and the rest are untouched.
#[test]
fn ten_percent_of_pages_fail() {
    let s = shared();
    let medoid = medoid_page();
    let failing_page = move |off: u64| {
        let page = off / PAGE;
        off != medoid
            && page > 0
            && (page.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32).is_multiple_of(10)
    };
    let max_page = pages_per_query().iter().flatten().max().unwrap() / PAGE;
    let failing: BTreeSet<u64> = (1..=max_page)
        .map(|p| p * PAGE)
        .filter(|&o| failing_page(o))
        .collect();
    assert!(
        failing.len() * 20 >= max_page as usize && failing.len() * 5 <= max_page as usize,
        "{} of {max_page} pages fail",
        failing.len()
    );
    let clean = fault_free();
    for io in [Backend::Auto, Backend::Buffered, Backend::Ram] {
        let index = open_with(io, Some(Arc::new(failing_page)));
        let res = index
            .search_batch(&s.queries, index.dim(), &params())
            .unwrap();
        let failed = check_against_prediction(&res, &clean, &failing);
        assert!(
            failed > 0 && failed < SHARED_NQ,
            "{io}: {failed} of {SHARED_NQ} failed"
        );
        // Failed reads are still counted as issued reads of their queries.
        assert!(res.stats.iter().all(|st| st.reads > 0));
    }
}

/// With every node in the node cache nothing is read, so even a predicate
/// that fails every read fails no query.
#[test]
fn cached_nodes_are_not_read() {
    let s = shared();
    let index = Index::open(
        &s.dir,
        &OpenOptions {
            memory_budget_bytes: Some(100_000_000),
            fault_injection: Some(Arc::new(|_| true)),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(index.cached_nodes(), SHARED_N);
    let res = index
        .search_batch(&s.queries, index.dim(), &params())
        .unwrap();
    assert_eq!(res.failed(), 0, "{:?}", res.errors.iter().flatten().next());
    assert_eq!(res.total().reads, 0);
    assert_eq!(res.ids, fault_free().ids);
}
