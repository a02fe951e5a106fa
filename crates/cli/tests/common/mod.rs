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
