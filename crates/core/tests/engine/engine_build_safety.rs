//! A build never damages what is at its output path: a failed build leaves
//! the previous index untouched (and no staging directory behind), a path
//! holding anything but an index is refused, and an unwritable path fails
//! with a message naming it.

use crate::common;

use common::*;
use std::path::Path;
use stratavec::data::{Metric, Vectors};
use stratavec::progress::Silent;
use stratavec::{build_index, BuildParams};

fn try_build(dir: &Path, data: &[f32], dim: usize, params: &BuildParams) -> stratavec::Result<()> {
    build_index(
        Vectors::f32(data, dim).unwrap(),
        "new data",
        dir,
        params,
        2,
        &Silent,
    )
    .map(|_| ())
}

#[test]
fn failed_rebuild_leaves_previous_index_untouched() {
    let tmp = tempdir();
    let dir = tmp.path().join("index");
    let (base, queries) = synth(1500, 20, 16, 31);
    build_f32(&dir, &base, 16, &small_params(Metric::L2), 2);
    let before = read_all(&dir);
    let res_before = search(&open(&dir), &queries, 10, 40);

    // Same shape, a NaN deep in the data: the build fails after it started.
    let (mut bad, _) = synth(1500, 0, 16, 32);
    bad[1234 * 16 + 5] = f32::NAN;
    let msg = err_msg(try_build(&dir, &bad, 16, &small_params(Metric::L2)));
    assert_mentions(
        &msg,
        &["new data", "row 1234", "component 5", "finite", "NaN"],
    );
    // An infinity likewise.
    bad[1234 * 16 + 5] = 1.0;
    bad[7 * 16] = f32::NEG_INFINITY;
    let msg = err_msg(try_build(&dir, &bad, 16, &small_params(Metric::L2)));
    assert_mentions(&msg, &["row 7", "component 0", "-inf"]);

    assert_eq!(read_all(&dir), before, "the failed build changed the index");
    assert_eq!(
        hidden_entries(tmp.path()),
        Vec::<String>::new(),
        "staging left behind"
    );
    let res_after = search(&open(&dir), &queries, 10, 40);
    assert_eq!(res_after.ids, res_before.ids);
    assert_eq!(res_after.dists, res_before.dists);
}

#[test]
fn successful_rebuild_replaces_index_and_cleans_up() {
    let tmp = tempdir();
    let dir = tmp.path().join("index");
    let (a, _) = synth(1000, 0, 16, 33);
    let (b, _) = synth(1200, 0, 16, 34);
    build_f32(&dir, &a, 16, &small_params(Metric::L2), 2);
    build_f32(&dir, &b, 16, &small_params(Metric::L2), 2);
    assert_eq!(open(&dir).len(), 1200);
    assert_eq!(hidden_entries(tmp.path()), Vec::<String>::new());
    // An existing empty directory is a valid target too.
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    build_f32(&empty, &a, 16, &small_params(Metric::L2), 2);
    assert_eq!(open(&empty).len(), 1000);
    assert_eq!(hidden_entries(tmp.path()), Vec::<String>::new());
}

#[test]
fn refuses_non_index_directory() {
    let tmp = tempdir();
    let dir = tmp.path().join("photos");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("holiday.jpg"), b"precious").unwrap();
    let (base, _) = synth(500, 0, 16, 35);
    let msg = err_msg(try_build(&dir, &base, 16, &small_params(Metric::L2)));
    assert_mentions(
        &msg,
        &[
            &dir.display().to_string(),
            "output path",
            "refusing to overwrite",
        ],
    );
    assert_eq!(
        read_all(&dir),
        vec![("holiday.jpg".to_string(), b"precious".to_vec())]
    );
    assert_eq!(hidden_entries(tmp.path()), Vec::<String>::new());
}

#[test]
fn refuses_regular_file() {
    let tmp = tempdir();
    let file = tmp.path().join("notes.txt");
    std::fs::write(&file, b"do not touch").unwrap();
    let (base, _) = synth(500, 0, 16, 36);
    let msg = err_msg(try_build(&file, &base, 16, &small_params(Metric::L2)));
    assert_mentions(
        &msg,
        &[&file.display().to_string(), "refusing to overwrite"],
    );
    assert_eq!(std::fs::read(&file).unwrap(), b"do not touch");
    assert_eq!(hidden_entries(tmp.path()), Vec::<String>::new());
}

#[test]
fn unwritable_path_under_a_regular_file() {
    let tmp = tempdir();
    let file = tmp.path().join("file.txt");
    std::fs::write(&file, b"x").unwrap();
    let target = file.join("sub/index");
    let (base, _) = synth(500, 0, 16, 37);
    let msg = err_msg(try_build(&target, &base, 16, &small_params(Metric::L2)));
    assert_mentions(&msg, &["file.txt/sub", "Not a directory"]);
    assert_eq!(std::fs::read(&file).unwrap(), b"x");
}

#[test]
fn unwritable_path_under_proc() {
    let (base, _) = synth(500, 0, 16, 38);
    let target = Path::new("/proc/stratavec-test-no-such-dir/index");
    let msg = err_msg(try_build(target, &base, 16, &small_params(Metric::L2)));
    assert_mentions(&msg, &["/proc/stratavec-test-no-such-dir"]);
}

/// A read-only parent directory. Root ignores permission bits, so the test
/// only asserts when the directory really is read-only for this process.
#[test]
fn unwritable_read_only_directory() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempdir();
    let ro = tmp.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o500)).unwrap();
    let enforced = std::fs::File::create(ro.join("probe")).is_err();
    let (base, _) = synth(500, 0, 16, 39);
    let result = try_build(&ro.join("index"), &base, 16, &small_params(Metric::L2));
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o700)).unwrap();
    if !enforced {
        eprintln!("permissions are not enforced (running as root?); only checking the build ran");
        let _ = std::fs::remove_file(ro.join("probe"));
        result.unwrap();
        return;
    }
    let msg = err_msg(result);
    assert_mentions(&msg, &[&ro.display().to_string(), "ermission denied"]);
    assert_eq!(std::fs::read_dir(&ro).unwrap().count(), 0);
}
