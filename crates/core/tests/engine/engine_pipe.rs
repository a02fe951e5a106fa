//! PipeANN's pipelined search and the width policies (OctopusANN §4.3):
//! every policy and entry choice finds what beam search finds at large L;
//! no completed read is ever dropped; a query whose read fails mid-flight
//! leaves its reader clean for the next batch.

use crate::common;

use common::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use stratavec::data::Metric;
use stratavec::search::WidthPolicy;
use stratavec::{BuildParams, Index, OpenOptions, SearchParams};
use stratavec_io::Backend;

const DIM: usize = 16;
const N: usize = 3000;
const W: usize = 8;

/// A diskann index with a navigation graph (PipeANN's in-memory entry).
fn index_dir() -> &'static (tempfile::TempDir, Vec<f32>, Vec<f32>) {
    static DIR: std::sync::OnceLock<(tempfile::TempDir, Vec<f32>, Vec<f32>)> =
        std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let (base, queries) = synth(N, 100, DIM, 23);
        let tmp = tempdir();
        let params = BuildParams {
            profile: "pipeann".into(),
            nav_sample: 0.05,
            ..small_params(Metric::L2)
        };
        build_f32(&tmp.path().join("i"), &base, DIM, &params, 2);
        (tmp, base, queries)
    })
}

fn open(nav: bool, io: Backend, fault: Option<stratavec::index::FaultPredicate>) -> Index {
    let opts = OpenOptions {
        navigation_graph: nav,
        io,
        fault_injection: fault,
        ..Default::default()
    }
    .reserve_for(Some(W), Some(4));
    Index::open(index_dir().0.path().join("i"), &opts).unwrap()
}

fn params(l: usize, pipelined: bool, width: WidthPolicy) -> SearchParams {
    SearchParams {
        pipelined,
        width,
        beam_width: W,
        in_flight: 4,
        ..search_params(10, l)
    }
}

#[test]
fn the_pipeann_profile_searches_pipelined_with_the_adaptive_width() {
    let index = open(true, Backend::Auto, None);
    let p = index.search_defaults(&Default::default());
    assert!(p.pipelined);
    assert_eq!(p.width, WidthPolicy::Adaptive);
}

#[test]
fn every_width_policy_and_entry_reaches_beam_recall_at_large_l() {
    let (_, base, queries) = index_dir();
    let gt = gt_f32(base, queries, DIM, Metric::L2, 10);
    for nav in [false, true] {
        let index = open(nav, Backend::Auto, None);
        let beam = index
            .search_batch(queries, DIM, &params(120, false, WidthPolicy::Fixed))
            .unwrap();
        let reference = recall_of(&beam, &gt, 10);
        assert!(reference >= 0.95, "beam recall {reference}");
        for pipelined in [false, true] {
            for width in WidthPolicy::ALL {
                let r = index
                    .search_batch(queries, DIM, &params(120, pipelined, width))
                    .unwrap();
                assert_eq!(r.failed(), 0);
                let recall = recall_of(&r, &gt, 10);
                eprintln!(
                    "nav {nav} pipelined {pipelined} {width}: recall {recall:.4} \
                     (beam {reference:.4}), reads {:.1}, wasted {:.2}",
                    r.total().reads as f64 / 100.0,
                    r.total().wasted as f64 / 100.0
                );
                assert!(
                    recall >= reference - 0.01,
                    "nav {nav} pipelined {pipelined} {width}: {recall} vs beam {reference}"
                );
                check_results(&r, base, queries, DIM, Metric::L2);
            }
        }
    }
}

/// Every read the pipelined search issues comes back and is used: each
/// node read (and each candidate riding on a read of its page, and each
/// cached one) gets its exact distance, whether its read was wasted or not.
#[test]
fn a_pipelined_query_never_drops_a_completed_read() {
    let (_, _, queries) = index_dir();
    for io in [Backend::Auto, Backend::Pread, Backend::Ram] {
        let index = open(true, io, None);
        for width in WidthPolicy::ALL {
            let r = index
                .search_batch(queries, DIM, &params(60, true, width))
                .unwrap();
            for (q, s) in r.stats.iter().enumerate() {
                assert_eq!(
                    s.exact,
                    s.reads + s.shared_reads + s.cache_hits,
                    "{io:?} {width} query {q}: {s:?}"
                );
                assert!(s.wasted <= s.reads);
            }
        }
    }
}

/// Reads submitted by an io_uring kernel thread (`OpenOptions::sqpoll`;
/// the reader falls back to a plain ring where the kernel refuses it) give
/// the beam search the same answers, and the pipelined search still uses
/// every read it issues, one query at a time as latency mode runs it.
#[test]
fn reads_submitted_by_a_kernel_thread_give_the_same_search() {
    let (_, _, queries) = index_dir();
    let with = |sqpoll: bool| {
        let opts = OpenOptions {
            sqpoll,
            ..Default::default()
        }
        .reserve_for(Some(W), Some(1));
        Index::open(index_dir().0.path().join("i"), &opts).unwrap()
    };
    let (plain, kernel) = (with(false), with(true));
    let one = |pipelined| SearchParams {
        threads: 1,
        in_flight: 1,
        ..params(60, pipelined, WidthPolicy::Fixed)
    };
    let a = plain.search_batch(queries, DIM, &one(false)).unwrap();
    let b = kernel.search_batch(queries, DIM, &one(false)).unwrap();
    assert_eq!(a.ids, b.ids);
    assert_eq!(a.dists, b.dists);
    if !kernel.io_backend().contains("sqpoll") {
        eprintln!(
            "note: this kernel refused SQPOLL ({}); both sides read through a plain ring",
            kernel.io_backend()
        );
    }
    let r = kernel.search_batch(queries, DIM, &one(true)).unwrap();
    for (q, s) in r.stats.iter().enumerate() {
        assert!(s.reads > 0, "query {q} read nothing: {s:?}");
        assert_eq!(
            s.exact,
            s.reads + s.shared_reads + s.cache_hits,
            "query {q}: {s:?}"
        );
    }
}

/// A read failing while others of the same query are in flight fails that
/// query only; the reader goes back to the pool with nothing in flight, and
/// the next batch on the same index answers as a fresh index does.
#[test]
fn a_failed_read_mid_flight_leaves_the_reader_clean() {
    let (_, _, queries) = index_dir();
    let p = SearchParams {
        threads: 1,
        ..params(60, true, WidthPolicy::Fixed)
    };
    // The page about half the queries read: failing it fails them
    // mid-flight, with reads of the same query outstanding.
    let log = Arc::new(std::sync::Mutex::new(Vec::<(usize, u64)>::new()));
    let l2 = log.clone();
    let current = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let c2 = current.clone();
    let recorder = open(
        false,
        Backend::Pread,
        Some(Arc::new(move |off| {
            l2.lock().unwrap().push((c2.load(Ordering::Relaxed), off));
            false
        })),
    );
    let one = SearchParams {
        in_flight: 1,
        ..p.clone()
    };
    for q in 0..100 {
        current.store(q, Ordering::Relaxed);
        recorder
            .search_batch(&queries[q * DIM..(q + 1) * DIM], DIM, &one)
            .unwrap();
    }
    let mut readers: std::collections::BTreeMap<u64, std::collections::BTreeSet<usize>> =
        Default::default();
    for &(q, off) in log.lock().unwrap().iter() {
        readers.entry(off).or_default().insert(q);
    }
    let (&page, _) = readers
        .iter()
        .min_by_key(|(_, qs)| qs.len().abs_diff(50))
        .unwrap();

    let failing = Arc::new(AtomicBool::new(true));
    let f2 = failing.clone();
    let index = open(
        false,
        Backend::Pread,
        Some(Arc::new(move |off| {
            f2.load(Ordering::Relaxed) && off == page
        })),
    );
    let faulted = index.search_batch(queries, DIM, &p).unwrap();
    let failed = faulted.failed();
    assert!(failed > 0 && failed < 100, "{failed} of 100 failed");
    failing.store(false, Ordering::Relaxed);
    let again = index.search_batch(queries, DIM, &p).unwrap();
    assert_eq!(again.failed(), 0);
    let fresh = open(false, Backend::Pread, None)
        .search_batch(queries, DIM, &p)
        .unwrap();
    assert_eq!(again.ids, fresh.ids);
    assert_eq!(again.total().reads, fresh.total().reads);
}
