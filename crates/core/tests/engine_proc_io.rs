//! The engine's own read count agrees with the kernel's: with an O_DIRECT
//! backend (io_uring or pread) every read reaches the device, so the bytes
//! `/proc/self/io` saw during a batch (`BatchResult::proc_read_bytes`) equal
//! the bytes the queries' stats say they read, within 1%.
//!
//! `/proc/self/io` counts the whole process, so this binary holds exactly one
//! test: nothing else may read while the batch runs.

mod common;

use common::*;
use stratavec::data::Metric;
use stratavec::{Index, OpenOptions};

#[test]
fn stats_bytes_match_kernel_read_bytes() {
    let tmp = tempdir();
    let dir = tmp.path().join("index");
    let (base, queries) = synth(4000, 200, 32, 51);
    build_f32(&dir, &base, 32, &small_params(Metric::L2), 2);
    let index = Index::open(&dir, &OpenOptions::default()).unwrap();
    let res = search(&index, &queries, 10, 64);
    assert_eq!(res.failed(), 0);
    if !res.io_backend.contains("direct") {
        let why = format!(
            "backend {} is not O_DIRECT (filesystem without direct I/O?): kernel counts include \
             page-cache hits, nothing to compare",
            res.io_backend
        );
        stratavec_testkit::skipped(
            "stats_bytes_match_kernel_read_bytes",
            stratavec_testkit::Need::Hardware,
            &why,
        );
        return;
    }
    let Some(kernel) = res.proc_read_bytes else {
        let why = "/proc/self/io is not readable; nothing to compare";
        stratavec_testkit::skipped(
            "stats_bytes_match_kernel_read_bytes",
            stratavec_testkit::Need::Procfs,
            why,
        );
        return;
    };
    let counted = res.total().bytes;
    assert!(
        counted > 1_000_000,
        "too few bytes read to compare: {counted}"
    );
    let diff = kernel.abs_diff(counted) as f64 / counted as f64;
    eprintln!(
        "backend {}: stats {counted} bytes, kernel {kernel} bytes ({:.3}% apart)",
        res.io_backend,
        diff * 100.0
    );
    assert!(
        diff <= 0.01,
        "backend {}: stats say {counted} bytes, /proc/self/io says {kernel} ({:.2}% apart)",
        res.io_backend,
        diff * 100.0
    );
}
