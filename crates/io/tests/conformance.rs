//! One conformance suite, run against every backend: io_uring (registered,
//! unregistered, SQPOLL, buffered), pread (direct, buffered), RAM, the
//! memory tiers (mmap, a simulated tier), the fault
//! wrapper with a never-true predicate, and whatever `auto` picks. A backend
//! the machine refuses (no O_DIRECT on this filesystem, no io_uring in this
//! sandbox) is skipped with a printed message, never silently.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use stratavec_testkit::Need;

use stratavec_io::{
    open_reader, proc_self_io, Backend, BlockReader, Completion, FaultyReader, IoCounters, IoError,
    PreadReader, ReadRequest, ReaderOptions, UringReader,
};

const FILE_LEN: u64 = (1 << 20) + 1234;
const SLOTS: usize = 16;
const SLOT_BYTES: usize = 16 << 10;
const PAGE: u64 = 4096;

fn pattern(i: u64) -> u8 {
    // Differs between neighbouring bytes and between pages, so a read at a
    // wrong offset or into a wrong slot cannot pass by accident.
    (i.wrapping_mul(0x9E37_79B9).rotate_right(13) ^ (i >> 12)) as u8
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A temp dir on the target's filesystem (a real disk, unlike a tmpfs /tmp).
fn temp_dir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir in target dir")
}

fn write_file(dir: &Path, name: &str, len: u64, salt: u64) -> PathBuf {
    let path = dir.join(name);
    let data: Vec<u8> = (0..len).map(|i| pattern(i + salt)).collect();
    let mut f = File::create(&path).unwrap();
    f.write_all(&data).unwrap();
    f.sync_all().unwrap();
    path
}

fn open_direct(path: &Path) -> Option<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .ok()
}

/// Every backend this machine allows, by name. Refusals are printed.
fn backends(path: &Path, slots: usize, slot_bytes: usize) -> Vec<Box<dyn BlockReader>> {
    let opts = |backend| ReaderOptions {
        backend,
        slots,
        slot_bytes,
        sqpoll: false,
    };
    let p = path.to_path_buf();
    let mut out: Vec<Box<dyn BlockReader>> = Vec::new();
    let mut keep = |what: &str, r: Result<Box<dyn BlockReader>, IoError>| match r {
        Ok(r) => out.push(r),
        Err(e @ IoError::Unsupported { .. }) => {
            stratavec_testkit::skipped(what, Need::Hardware, &e.to_string())
        }
        Err(e) => panic!("{what}: {e}"),
    };
    let boxed = |r: Result<UringReader, IoError>| r.map(|r| Box::new(r) as Box<dyn BlockReader>);

    keep(
        "io_uring+direct",
        open_reader(path, &opts(Backend::IoUring)),
    );
    keep("pread+direct", open_reader(path, &opts(Backend::Pread)));
    keep(
        "pread+buffered",
        open_reader(path, &opts(Backend::Buffered)),
    );
    keep("ram", open_reader(path, &opts(Backend::Ram)));
    keep("mmap", open_reader(path, &opts(Backend::Mmap)));
    keep(
        "simulated",
        open_reader(path, &opts("simulated:2000,4".parse().unwrap())),
    );
    keep("auto", open_reader(path, &opts(Backend::Auto)));
    let plain = || File::open(path).unwrap();
    keep(
        "io_uring+buffered",
        boxed(UringReader::new(
            plain(),
            p.clone(),
            false,
            slots,
            slot_bytes,
            false,
        )),
    );
    keep(
        "io_uring+buffered(unregistered)",
        boxed(UringReader::new_unregistered(
            plain(),
            p.clone(),
            false,
            slots,
            slot_bytes,
            false,
        )),
    );
    match open_direct(path) {
        Some(f) => keep(
            "io_uring+direct(unregistered)",
            boxed(UringReader::new_unregistered(
                f,
                p.clone(),
                true,
                slots,
                slot_bytes,
                false,
            )),
        ),
        None => stratavec_testkit::skipped(
            "io_uring+direct(unregistered)",
            Need::Hardware,
            "O_DIRECT refused here",
        ),
    }
    match open_direct(path) {
        Some(f) => keep(
            "io_uring+direct+sqpoll",
            boxed(UringReader::new(
                f,
                p.clone(),
                true,
                slots,
                slot_bytes,
                true,
            )),
        ),
        None => stratavec_testkit::skipped(
            "io_uring+direct+sqpoll",
            Need::Hardware,
            "O_DIRECT refused here",
        ),
    }
    let faulty = open_reader(path, &opts(Backend::IoUring))
        .or_else(|_| open_reader(path, &opts(Backend::Buffered)))
        .map(|r| Box::new(FaultyReader::new(r, Box::new(|_| false))) as Box<dyn BlockReader>);
    keep("faulty(never)", faulty);
    out
}

/// What a read of `len` bytes at `offset` must return.
fn expected(offset: u64, len: u32, file_len: u64, salt: u64) -> Option<Vec<u8>> {
    if offset >= file_len {
        return None;
    }
    let end = (offset + u64::from(len)).min(file_len);
    Some((offset..end).map(|i| pattern(i + salt)).collect())
}

#[derive(Clone, Copy)]
struct Sent {
    offset: u64,
    len: u32,
    tag: u64,
}

/// Check completions against what was sent; returns successful reads/bytes.
fn check(
    r: &dyn BlockReader,
    done: &[Completion],
    sent: &mut [Option<Sent>],
    file_len: u64,
    salt: u64,
) -> IoCounters {
    let mut ok = IoCounters::default();
    for c in done {
        let s = sent[c.slot as usize]
            .take()
            .unwrap_or_else(|| panic!("{}: completion for idle slot {}", r.name(), c.slot));
        assert_eq!(c.tag, s.tag, "{}: tag of slot {}", r.name(), c.slot);
        match (expected(s.offset, s.len, file_len, salt), &c.result) {
            (Some(want), Ok(n)) => {
                assert_eq!(
                    *n as usize,
                    want.len(),
                    "{}: count at {}",
                    r.name(),
                    s.offset
                );
                let got = &r.slot(c.slot)[..want.len()];
                assert!(
                    got == want.as_slice(),
                    "{}: bytes at offset {}",
                    r.name(),
                    s.offset
                );
                ok.reads += 1;
                ok.bytes += u64::from(*n);
            }
            (
                None,
                Err(IoError::UnexpectedEof {
                    offset, file_size, ..
                }),
            ) => {
                assert_eq!((*offset, *file_size), (s.offset, file_len), "{}", r.name());
            }
            (want, got) => panic!(
                "{}: read at {} len {}: expected {:?} bytes, got {:?}",
                r.name(),
                s.offset,
                s.len,
                want.map(|w| w.len()),
                got
            ),
        }
    }
    ok
}

fn random_batches(r: &mut dyn BlockReader, file_len: u64, salt: u64, seed: u64) {
    let mut rng = Rng(seed);
    let slots = r.slots();
    let mut sent: Vec<Option<Sent>> = vec![None; slots];
    let mut total = IoCounters::default();
    let mut out = Vec::new();
    let pages = file_len.div_ceil(PAGE);
    let mut tag = 1000u64;
    for _round in 0..200 {
        // Push a random number of reads into random free slots.
        let free: Vec<u32> = (0..slots as u32)
            .filter(|&s| sent[s as usize].is_none())
            .collect();
        let n = rng.below(free.len() as u64 + 1) as usize;
        for &slot in free.iter().take(n) {
            let len = [4096u32, 8192, 16384][rng.below(3) as usize];
            // Mostly inside the file; sometimes the tail (short read) or
            // just past the end (error).
            let page = match rng.below(20) {
                0 => pages - 1,
                1 => pages + rng.below(3),
                2 => pages - 2,
                _ => rng.below(pages),
            };
            tag += 1;
            let s = Sent {
                offset: page * PAGE,
                len,
                tag,
            };
            r.push(ReadRequest {
                offset: s.offset,
                len,
                slot,
                tag,
            })
            .unwrap();
            sent[slot as usize] = Some(s);
        }
        if rng.below(3) != 0 {
            r.submit().unwrap();
        }
        let busy = sent.iter().flatten().count();
        assert_eq!(r.in_flight(), busy, "{}: in_flight", r.name());
        let min = match rng.below(3) {
            0 => 0,
            1 => 1,
            _ => busy,
        };
        out.clear();
        let got = r.reap(min, &mut out).unwrap();
        assert_eq!(got, out.len());
        assert!(got >= min.min(busy), "{}: reap({min}) gave {got}", r.name());
        total += check(r, &out, &mut sent, file_len, salt);
    }
    let busy = sent.iter().flatten().count();
    out.clear();
    r.submit().unwrap();
    r.reap(busy, &mut out).unwrap();
    total += check(r, &out, &mut sent, file_len, salt);
    assert_eq!(r.in_flight(), 0);
    assert!(sent.iter().all(Option::is_none));
    assert_eq!(r.counters(), total, "{}: counters", r.name());
}

#[test]
fn random_batches_every_backend() {
    let dir = temp_dir();
    let path = write_file(dir.path(), "pages.bin", FILE_LEN, 0);
    let readers = backends(&path, SLOTS, SLOT_BYTES);
    let names: Vec<&str> = readers.iter().map(|r| r.name()).collect();
    eprintln!("backends under test: {names:?}");
    assert!(
        readers.len() >= 4,
        "at least pread+buffered, ram, auto, faulty must run"
    );
    for (i, mut r) in readers.into_iter().enumerate() {
        random_batches(r.as_mut(), FILE_LEN, 0, 42 + i as u64);
    }
}

/// Polling for completions (`set_poll`) changes when a reap returns, never
/// what it returns: every backend passes the same random batches with a
/// poll shorter and longer than a read.
#[test]
fn random_batches_every_backend_while_polling() {
    let dir = temp_dir();
    let path = write_file(dir.path(), "pages.bin", FILE_LEN, 0);
    for (poll_us, seed) in [(1u64, 7u64), (5_000, 11)] {
        for (i, mut r) in backends(&path, SLOTS, SLOT_BYTES).into_iter().enumerate() {
            r.set_poll(std::time::Duration::from_micros(poll_us));
            random_batches(r.as_mut(), FILE_LEN, 0, seed + i as u64);
        }
    }
}

/// A poll that times out after reaping some of the reads a blocking reap
/// waits for must then wait only for the rest: waiting for the count from
/// before the poll can wait for more completions than there are reads in
/// flight, which never returns (a CI run hung here). A 1 µs poll makes a
/// part-way timeout likely; each reader runs on its own thread so a hang
/// fails the test after a minute instead of stalling the suite.
#[test]
fn a_poll_that_times_out_part_way_waits_only_for_the_rest() {
    let dir = temp_dir();
    let path = write_file(dir.path(), "pages.bin", FILE_LEN, 0);
    let pages = FILE_LEN / PAGE;
    let (tx, rx) = std::sync::mpsc::channel();
    let readers = backends(&path, SLOTS, SLOT_BYTES);
    let n = readers.len();
    for (i, mut r) in readers.into_iter().enumerate() {
        let tx = tx.clone();
        std::thread::spawn(move || {
            r.set_poll(std::time::Duration::from_micros(1));
            let mut rng = Rng(31 + i as u64);
            let mut out = Vec::new();
            for _ in 0..500 {
                for slot in 0..SLOTS as u32 {
                    let req = ReadRequest {
                        offset: rng.below(pages) * PAGE,
                        len: 4096,
                        slot,
                        tag: u64::from(slot),
                    };
                    r.push(req).unwrap();
                }
                r.submit().unwrap();
                out.clear();
                assert_eq!(r.reap(SLOTS, &mut out).unwrap(), SLOTS, "{}", r.name());
                assert!(out.iter().all(|c| c.result.is_ok()), "{}", r.name());
            }
            tx.send(r.name()).unwrap();
        });
    }
    drop(tx);
    for _ in 0..n {
        match rx.recv_timeout(std::time::Duration::from_secs(60)) {
            Ok(_) => {}
            Err(e) => panic!("a reader's blocking reap did not return within 60 s ({e})"),
        }
    }
}

#[test]
fn eof_short_count_and_past_end_error() {
    let dir = temp_dir();
    let path = write_file(dir.path(), "pages.bin", FILE_LEN, 7);
    let last = FILE_LEN / PAGE * PAGE;
    for mut r in backends(&path, 4, SLOT_BYTES) {
        let reqs = [
            (last, 4096u32),
            (last - PAGE, 16384),
            (last + PAGE, 4096),
            (0, 16384),
        ];
        for (slot, &(offset, len)) in reqs.iter().enumerate() {
            r.push(ReadRequest {
                offset,
                len,
                slot: slot as u32,
                tag: slot as u64,
            })
            .unwrap();
        }
        r.submit().unwrap();
        let mut out = Vec::new();
        r.reap(4, &mut out).unwrap();
        out.sort_by_key(|c| c.tag);
        assert_eq!(out.len(), 4, "{}", r.name());
        let name = r.name();
        assert_eq!(out[0].result.as_ref().ok(), Some(&1234), "{name}");
        assert_eq!(out[1].result.as_ref().ok(), Some(&(4096 + 1234)), "{name}");
        let e = out[2].result.as_ref().expect_err("past end must fail");
        let msg = e.to_string();
        assert!(
            msg.contains(&format!("offset {}", last + PAGE)),
            "{name}: {msg}"
        );
        assert!(msg.contains(path.to_str().unwrap()), "{name}: {msg}");
        assert!(
            msg.contains(&format!("({FILE_LEN} bytes)")),
            "{name}: {msg}"
        );
        assert_eq!(out[3].result.as_ref().ok(), Some(&16384), "{name}");
        let want: Vec<u8> = (last..FILE_LEN).map(|i| pattern(i + 7)).collect();
        assert_eq!(&r.slot(0)[..1234], want.as_slice(), "{name}");
        assert_eq!(
            r.counters(),
            IoCounters {
                reads: 3,
                bytes: 1234 + 4096 + 1234 + 16384
            }
        );
    }
}

#[test]
fn push_rejects_malformed_requests() {
    let dir = temp_dir();
    let path = write_file(dir.path(), "pages.bin", FILE_LEN, 0);
    for mut r in backends(&path, 4, 8192) {
        let name = r.name();
        let rq = |offset, len, slot| ReadRequest {
            offset,
            len,
            slot,
            tag: 9,
        };
        let bad = |r: &mut Box<dyn BlockReader>, req: ReadRequest, words: &str| match r.push(req) {
            Err(e @ IoError::BadRequest { .. }) => {
                let msg = e.to_string();
                assert!(msg.contains(words), "{name}: {msg:?} lacks {words:?}");
                assert!(msg.contains(path.to_str().unwrap()), "{name}: {msg}");
                assert!(msg.contains(&format!("slot {}", req.slot)), "{name}: {msg}");
            }
            other => panic!("{name}: {req:?} should be refused, got {other:?}"),
        };
        bad(
            &mut r,
            rq(0, 4096, 4),
            "slot out of range (expected 0..4, found 4)",
        );
        bad(&mut r, rq(0, 4096, u32::MAX), "slot out of range");
        bad(
            &mut r,
            rq(0, 12288, 0),
            "length over the 8192-byte slot size",
        );
        bad(&mut r, rq(0, 0, 0), "zero-length read");
        if r.alignment() > 1 {
            assert_eq!(r.alignment(), 4096);
            bad(
                &mut r,
                rq(4095, 4096, 0),
                "offset not a multiple of the 4096-byte alignment",
            );
            bad(
                &mut r,
                rq(4096, 100, 0),
                "length not a multiple of the 4096-byte alignment",
            );
        }
        assert_eq!(r.in_flight(), 0, "{name}: refused pushes must not queue");
        r.push(rq(4096, 4096, 1)).unwrap();
        bad(&mut r, rq(8192, 4096, 1), "slot busy (expected a free slot, found it holding the read of 4096 bytes at offset 4096 with tag 9)");
        assert!(
            r.slot(1).is_empty(),
            "{name}: a busy slot must not be readable"
        );
        r.submit().unwrap();
        let mut out = Vec::new();
        assert_eq!(r.reap(1, &mut out).unwrap(), 1);
        assert_eq!(out[0].result.as_ref().ok(), Some(&4096));
        assert_eq!(r.slot(1).len(), 8192);
        assert_eq!(r.slot(1)[0], pattern(4096));
        // Freed by the reap: pushable again.
        r.push(rq(8192, 4096, 1)).unwrap();
        r.reap(1, &mut out).unwrap();
        assert_eq!(r.counters().reads, 2, "{name}");
    }
}

#[test]
fn reap_without_submit_and_reap_zero() {
    let dir = temp_dir();
    let path = write_file(dir.path(), "pages.bin", FILE_LEN, 3);
    for mut r in backends(&path, 8, 4096) {
        let name = r.name();
        let mut out = Vec::new();
        assert_eq!(r.reap(5, &mut out).unwrap(), 0, "{name}: nothing in flight");
        for s in 0..8u32 {
            r.push(ReadRequest {
                offset: u64::from(s) * 4096,
                len: 4096,
                slot: s,
                tag: 0,
            })
            .unwrap();
        }
        // reap(all) without submit hands the reads over itself.
        r.reap(8, &mut out).unwrap();
        assert_eq!(out.len(), 8, "{name}");
        for c in &out {
            assert_eq!(
                r.slot(c.slot)[17],
                pattern(u64::from(c.slot) * 4096 + 17 + 3),
                "{name}"
            );
        }
        assert_eq!(r.submit().unwrap(), 0, "{name}: nothing left to submit");
        // reap(0) polls; eventually everything submitted arrives.
        r.push(ReadRequest {
            offset: 0,
            len: 4096,
            slot: 0,
            tag: 5,
        })
        .unwrap();
        assert_eq!(r.submit().unwrap(), 1, "{name}");
        out.clear();
        let t = std::time::Instant::now();
        while out.is_empty() {
            r.reap(0, &mut out).unwrap();
            assert!(
                t.elapsed().as_secs() < 10,
                "{name}: reap(0) never delivered"
            );
        }
        assert_eq!(out[0].tag, 5);
    }
}

#[test]
fn readers_move_between_threads_and_drop_with_reads_in_flight() {
    let dir = temp_dir();
    let path = write_file(dir.path(), "pages.bin", FILE_LEN, 0);
    let handles: Vec<_> = backends(&path, 16, 16384)
        .into_iter()
        .map(|mut r| {
            std::thread::spawn(move || {
                for s in 0..16u32 {
                    let req = ReadRequest {
                        offset: u64::from(s) * 16384,
                        len: 16384,
                        slot: s,
                        tag: 0,
                    };
                    r.push(req).unwrap();
                }
                r.submit().unwrap();
                // Dropped here with reads in flight: must wait for them, not
                // free buffers the kernel is still writing.
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

#[test]
fn fault_wrapper_fails_exactly_the_chosen_reads() {
    let dir = temp_dir();
    let path = write_file(dir.path(), "pages.bin", FILE_LEN, 0);
    let opts = ReaderOptions {
        backend: Backend::Buffered,
        slots: 8,
        slot_bytes: 4096,
        sqpoll: false,
    };
    let mut inners: Vec<Box<dyn BlockReader>> = vec![open_reader(&path, &opts).unwrap()];
    for b in [Backend::IoUring, Backend::Ram] {
        match open_reader(
            &path,
            &ReaderOptions {
                backend: b,
                ..opts.clone()
            },
        ) {
            Ok(r) => inners.push(r),
            Err(e) => eprintln!("SKIP fault test over {b}: {e}"),
        }
    }
    for inner in inners {
        let doomed = |off: u64| (off / 4096).rem_euclid(3) == 0;
        let mut r = FaultyReader::new(inner, Box::new(doomed)).with_path(path.clone());
        let name = r.name();
        let (mut failed, mut ok) = (0, 0);
        let mut out = Vec::new();
        for batch in 0..8u64 {
            for s in 0..8u32 {
                let offset = (batch * 8 + u64::from(s)) * 4096;
                r.push(ReadRequest {
                    offset,
                    len: 4096,
                    slot: s,
                    tag: offset,
                })
                .unwrap();
            }
            r.submit().unwrap();
            out.clear();
            r.reap(8, &mut out).unwrap();
            for c in &out {
                if doomed(c.tag) {
                    let e = c.result.as_ref().expect_err("doomed read must fail");
                    assert_eq!(e.raw_os_error(), Some(libc::EIO), "{name}");
                    let msg = e.to_string();
                    assert!(
                        msg.contains(&format!("at offset {} of", c.tag)),
                        "{name}: {msg}"
                    );
                    assert!(msg.contains("injected"), "{name}: {msg}");
                    assert!(msg.contains(path.to_str().unwrap()), "{name}: {msg}");
                    failed += 1;
                } else {
                    assert_eq!(c.result.as_ref().ok(), Some(&4096), "{name}");
                    assert_eq!(r.slot(c.slot)[1], pattern(c.tag + 1), "{name}");
                    ok += 1;
                }
            }
        }
        assert_eq!((failed, ok), (22, 42), "{name}");
        assert_eq!(
            r.counters(),
            IoCounters {
                reads: 42,
                bytes: 42 * 4096
            },
            "{name}"
        );
    }
}

/// O_DIRECT reads always reach the device, and the kernel counts them in
/// /proc/self/io read_bytes — including reads done by io_uring's workers,
/// which belong to this process. Other tests running at the same time only
/// add to the count, so "at least" is exact enough.
#[test]
fn proc_self_io_counts_direct_reads() {
    let Some(_) = proc_self_io() else {
        stratavec_testkit::skipped(
            "proc_self_io_counts_direct_reads",
            stratavec_testkit::Need::Procfs,
            "/proc/self/io is not readable",
        );
        return;
    };
    let dir = temp_dir();
    for backend in [Backend::IoUring, Backend::Pread] {
        // A fresh file per backend: its blocks were never read before.
        let len = 4 << 20;
        let path = write_file(dir.path(), &format!("fresh-{backend}.bin"), len, 11);
        let opts = ReaderOptions {
            backend,
            slots: 32,
            slot_bytes: 65536,
            sqpoll: false,
        };
        let mut r = match open_reader(&path, &opts) {
            Ok(r) => r,
            Err(e @ IoError::Unsupported { .. }) => {
                eprintln!("SKIP {backend}: {e}");
                continue;
            }
            Err(e) => panic!("{e}"),
        };
        let before = proc_self_io().unwrap();
        let mut out = Vec::new();
        let mut offset = 0;
        while offset < len {
            for s in 0..32u32 {
                if offset >= len {
                    break;
                }
                r.push(ReadRequest {
                    offset,
                    len: 65536,
                    slot: s,
                    tag: offset,
                })
                .unwrap();
                offset += 65536;
            }
            r.submit().unwrap();
            let n = r.in_flight();
            r.reap(n, &mut out).unwrap();
        }
        let after = proc_self_io().unwrap();
        assert!(out.iter().all(|c| c.result.is_ok()));
        assert_eq!(r.counters().bytes, len);
        let counted = after.read_bytes - before.read_bytes;
        eprintln!(
            "{}: read {} bytes, /proc/self/io read_bytes grew {}",
            r.name(),
            len,
            counted
        );
        assert!(
            counted >= len,
            "{}: read_bytes grew {counted} < {len}",
            r.name()
        );
    }
}

#[test]
fn explicit_backends_do_not_fall_back() {
    let dir = temp_dir();
    let path = write_file(dir.path(), "pages.bin", 8192, 0);
    let opts = |backend| ReaderOptions {
        backend,
        ..Default::default()
    };
    let names = [
        (Backend::IoUring, "io_uring+direct"),
        (Backend::Pread, "pread+direct"),
        (Backend::Buffered, "pread+buffered"),
        (Backend::Ram, "ram"),
        (Backend::Mmap, "mmap"),
        ("simulated:300".parse().unwrap(), "simulated"),
    ];
    for (b, name) in names {
        match open_reader(&path, &opts(b)) {
            Ok(r) => assert!(r.name().starts_with(name), "{b}: got {}", r.name()),
            Err(e @ IoError::Unsupported { .. }) => eprintln!("SKIP {b}: {e}"),
            Err(e) => panic!("{b}: {e}"),
        }
    }
    // Direct backends need slot sizes that keep every slot aligned.
    let odd = ReaderOptions {
        backend: Backend::Pread,
        slot_bytes: 5000,
        ..Default::default()
    };
    if let Err(e) = open_reader(&path, &odd) {
        assert!(
            matches!(
                e,
                IoError::InvalidOptions { .. } | IoError::Unsupported { .. }
            ),
            "{e}"
        );
    } else {
        panic!("slot_bytes 5000 must be refused under O_DIRECT");
    }
    let none = ReaderOptions {
        backend: Backend::Ram,
        slots: 0,
        ..Default::default()
    };
    let e = open_reader(&path, &none)
        .err()
        .expect("zero slots must be refused");
    assert!(e.to_string().contains("slots: expected"), "{e}");
}

#[test]
fn pread_reader_refuses_mismatched_direct_flag() {
    let dir = temp_dir();
    let path = write_file(dir.path(), "pages.bin", 8192, 0);
    let e = PreadReader::new(File::open(&path).unwrap(), path.clone(), true, 4, 4096)
        .err()
        .expect("a buffered file is not direct");
    assert!(e.to_string().contains("opened without O_DIRECT"), "{e}");
}

#[test]
fn empty_file_reads_fail_cleanly() {
    let dir = temp_dir();
    let path = write_file(dir.path(), "empty.bin", 0, 0);
    for mut r in backends(&path, 2, 4096) {
        r.push(ReadRequest {
            offset: 0,
            len: 4096,
            slot: 0,
            tag: 1,
        })
        .unwrap();
        let mut out = Vec::new();
        r.reap(1, &mut out).unwrap();
        assert!(
            matches!(
                out[0].result,
                Err(IoError::UnexpectedEof { file_size: 0, .. })
            ),
            "{}: {:?}",
            r.name(),
            out[0].result
        );
        assert_eq!(r.counters(), IoCounters::default());
    }
}
