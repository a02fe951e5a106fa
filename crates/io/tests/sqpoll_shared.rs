//! Every SQPOLL reader of a process shares one kernel submission thread
//! (`sq_thread`, IORING_SETUP_ATTACH_WQ), and reads through rings that share
//! it return the right bytes, also after the ring the others attached to has
//! closed. Its own test binary: it counts the process's `iou-sqp-*` threads,
//! which another test's rings would add to.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use stratavec_io::{
    open_reader, Backend, BlockReader, Completion, IoError, ReadRequest, ReaderOptions,
};

const PAGES: u64 = 64;
const PAGE: usize = 4096;

fn byte(offset: u64) -> u8 {
    (offset.wrapping_mul(2_654_435_761) >> 13) as u8
}

fn scratch_file(dir: &Path) -> PathBuf {
    let path = dir.join("pages.bin");
    let data: Vec<u8> = (0..PAGES * PAGE as u64).map(byte).collect();
    std::fs::File::create(&path)
        .unwrap()
        .write_all(&data)
        .unwrap();
    path
}

/// The process's SQPOLL kernel threads (named `iou-sqp-PID`).
fn sq_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|comm| comm.starts_with("iou-sqp"))
        .count()
}

fn open_sqpoll(path: &Path) -> Result<Box<dyn BlockReader>, IoError> {
    let opts = ReaderOptions {
        backend: Backend::IoUring,
        sqpoll: true,
        ..ReaderOptions::default()
    };
    open_reader(path, &opts)
}

/// Reads four pages through `r` and checks their bytes.
fn read_and_check(r: &mut dyn BlockReader, first_page: u64) {
    for i in 0..4u64 {
        let page = (first_page + i * 7) % PAGES;
        r.push(ReadRequest {
            offset: page * PAGE as u64,
            len: PAGE as u32,
            slot: i as u32,
            tag: page,
        })
        .unwrap();
    }
    r.submit().unwrap();
    let mut done: Vec<Completion> = Vec::new();
    while done.len() < 4 {
        r.reap(1, &mut done).unwrap();
    }
    for c in &done {
        assert_eq!(
            c.result.as_ref().ok(),
            Some(&(PAGE as u32)),
            "page {}",
            c.tag
        );
        let want: Vec<u8> = (0..PAGE as u64)
            .map(|j| byte(c.tag * PAGE as u64 + j))
            .collect();
        assert!(
            r.slot(c.slot)[..PAGE] == want[..],
            "page {} read wrong bytes",
            c.tag
        );
    }
}

#[test]
fn sqpoll_readers_share_one_kernel_thread() {
    let dir = tempfile::tempdir().unwrap();
    let path = scratch_file(dir.path());
    let mut first = match open_sqpoll(&path) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("SKIP: this kernel or sandbox refuses an O_DIRECT SQPOLL ring: {e}");
            return;
        }
    };
    if sq_threads() == 0 {
        eprintln!("SKIP: the SQPOLL thread is not listed in /proc/self/task here");
        return;
    }
    assert_eq!(sq_threads(), 1);
    let mut others: Vec<Box<dyn BlockReader>> =
        (0..3).map(|_| open_sqpoll(&path).unwrap()).collect();
    assert_eq!(
        sq_threads(),
        1,
        "each SQPOLL ring started its own kernel thread"
    );
    read_and_check(first.as_mut(), 0);
    for (i, r) in others.iter_mut().enumerate() {
        read_and_check(r.as_mut(), 10 * i as u64 + 1);
    }
    // The ring the others attached to closes; the rest keep reading, and a
    // new ring attaches to one of them.
    drop(first);
    let mut late = open_sqpoll(&path).unwrap();
    read_and_check(late.as_mut(), 5);
    for r in others.iter_mut() {
        read_and_check(r.as_mut(), 3);
    }
    assert_eq!(sq_threads(), 1);
    // With every ring closed the thread goes (the kernel reaps it a moment
    // later).
    drop(others);
    drop(late);
    let deadline = Instant::now() + Duration::from_secs(5);
    while sq_threads() > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(sq_threads(), 0, "the SQPOLL thread outlived its rings");
}
