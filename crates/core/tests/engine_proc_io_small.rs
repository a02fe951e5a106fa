//! `BatchResult::proc_read_bytes` for a small batch: the kernel's count
//! should still be the queries' reads. Its own binary with one test, because
//! `/proc/self/io` counts the whole process.

mod common;

use common::*;
use stratavec::data::Metric;
use stratavec::{Index, OpenOptions, SearchParams};

#[test]
fn one_query_batch_kernel_bytes_match_stats() {
    let tmp = tempdir();
    let dir = tmp.path().join("index");
    let (base, queries) = synth(2000, 1, 32, 52);
    build_f32(&dir, &base, 32, &small_params(Metric::L2), 2);
    let index = Index::open(&dir, &OpenOptions::default()).unwrap();
    let p = SearchParams {
        k: 10,
        complexity: 64,
        beam_width: 4,
        threads: 1,
        in_flight: 1,
        ..Default::default()
    };
    let res = index.search_batch(&queries, index.dim(), &p).unwrap();
    if !res.io_backend.contains("direct") {
        let why = format!(
            "backend {} is not O_DIRECT; nothing to compare",
            res.io_backend
        );
        stratavec_testkit::skipped(
            "one_query_batch_kernel_bytes_match_stats",
            stratavec_testkit::Need::Hardware,
            &why,
        );
        return;
    }
    let Some(kernel) = res.proc_read_bytes else {
        let why = "/proc/self/io is not readable; nothing to compare";
        stratavec_testkit::skipped(
            "one_query_batch_kernel_bytes_match_stats",
            stratavec_testkit::Need::Procfs,
            why,
        );
        return;
    };
    let counted = res.total().bytes;
    let diff = kernel.abs_diff(counted) as f64 / counted as f64;
    // The kernel also counts the process's own page faults that go to the
    // disk (a test binary's code paged in on first use, seen as 3 stray
    // 4 KB pages in a clean-clone CI run on a loaded machine): a few pages
    // are not the search's reads; a whole query's worth would be.
    let stray = kernel.abs_diff(counted) <= 4 * 4096;
    assert!(
        diff <= 0.01 || stray,
        "backend {}: stats say {counted} bytes, /proc/self/io says {kernel} ({:.2}% apart)",
        res.io_backend,
        diff * 100.0
    );
}
