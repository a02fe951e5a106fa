//! Running the `stratavec` binary from the CLI tests, and reading what it
//! printed.
#![allow(dead_code)] // each test file uses its own subset

use std::process::{Command, Output};

pub fn run(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_stratavec"));
    for a in args {
        c.arg(a);
    }
    c.output().expect("run stratavec")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `o`, after checking the run succeeded (else: its status and output).
#[track_caller]
pub fn ok(o: Output) -> Output {
    assert!(
        o.status.success(),
        "stratavec failed ({}):\nstdout: {}\nstderr: {}",
        o.status,
        stdout(&o),
        stderr(&o)
    );
    o
}

/// Writes `rows` (each row's column ids) as a big-ann-benchmarks `.spmat`
/// file with `ncol` columns: a label matrix or a filter file.
#[allow(dead_code)] // not every test binary writes one
pub fn write_spmat(path: &std::path::Path, rows: &[Vec<i32>], ncol: i64) {
    let nnz: usize = rows.iter().map(Vec::len).sum();
    let mut b = Vec::new();
    for v in [rows.len() as i64, ncol, nnz as i64] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    let mut p = 0i64;
    b.extend_from_slice(&p.to_le_bytes());
    for r in rows {
        p += r.len() as i64;
        b.extend_from_slice(&p.to_le_bytes());
    }
    rows.iter()
        .flatten()
        .for_each(|c| b.extend_from_slice(&c.to_le_bytes()));
    (0..nnz).for_each(|_| b.extend_from_slice(&1f32.to_le_bytes()));
    std::fs::write(path, b).unwrap();
}

/// The flags of a small, quick graph build: R 16, L 32, 8-byte PQ, 2 threads.
pub static SMALL_GRAPH: [&str; 8] = [
    "-R",
    "16",
    "--complexity",
    "32",
    "--pq-bytes",
    "8",
    "--threads",
    "2",
];

/// `head` (a command and its own arguments) followed by [`SMALL_GRAPH`].
pub fn small_graph<'a>(
    head: &[&'a dyn AsRef<std::ffi::OsStr>],
) -> Vec<&'a dyn AsRef<std::ffi::OsStr>> {
    let mut v = head.to_vec();
    v.extend(SMALL_GRAPH.iter().map(|s| s as &dyn AsRef<std::ffi::OsStr>));
    v
}
