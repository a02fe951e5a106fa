//! What a newcomer and an operator read: each message the binary prints for
//! a mistake says it once, before any work, and names the file, field,
//! expected and found value (issue 19, items 2, 3 and 7).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

fn run(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_stratavec"));
    for a in args {
        c.arg(a);
    }
    c.output().expect("run stratavec")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[track_caller]
fn ok(o: Output) -> Output {
    assert!(
        o.status.success(),
        "stratavec failed ({}):\nstdout: {}\nstderr: {}",
        o.status,
        stdout(&o),
        stderr(&o)
    );
    o
}

/// The error message of a run that must fail; it must have printed nothing
/// on stdout (no table header before the error).
#[track_caller]
fn fails(o: Output) -> String {
    assert_eq!(o.status.code(), Some(1), "stderr: {}", stderr(&o));
    assert_eq!(stdout(&o), "", "output before the error");
    let e = stderr(&o);
    assert!(e.starts_with("error: "), "stderr: {e}");
    e
}

/// A 16-d set of 50 vectors (5 queries, ground truth of depth 100 capped at
/// n = 50), built with every default: the smallest set a newcomer tries.
struct Small {
    data: PathBuf,
    index: PathBuf,
}

fn small() -> &'static Small {
    static S: OnceLock<Small> = OnceLock::new();
    S.get_or_init(|| {
        let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("messages-fixture");
        let _ = std::fs::remove_dir_all(&root);
        let data = root.join("data");
        let index = root.join("index");
        ok(run(&[
            &"synth",
            &data,
            &"--n",
            &"50",
            &"--queries",
            &"5",
            &"--dim",
            &"16",
        ]));
        ok(run(&[&"build", &data.join("base.fbin"), &index]));
        Small { data, index }
    })
}

#[test]
fn an_os_error_is_printed_once() {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let missing = tmp.path().join("missing.fbin");
    let e = fails(run(&[&"convert", &missing, &tmp.path().join("out.npy")]));
    assert_eq!(e.matches("os error 2").count(), 1, "{e}");
    assert!(e.contains(&missing.display().to_string()), "{e}");
}
