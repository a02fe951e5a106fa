//! A damaged or hostile index is refused with an error naming the damaged
//! file, never a panic, an abort or a huge allocation (issue #52, item 4).
//!
//! A tiny index of every profile (and of the separated layout, of IVF with
//! codes, and of ids given with the data) is built once; each case copies
//! it, damages one file (flips a byte, writes a size-like value over a
//! header field, truncates or extends it), opens the copy with a memory
//! budget (so the caches load) and runs one search. Half the cases also
//! rewrite the manifest's size and sha256 of the damaged file, as a hostile
//! index would, so the damage gets past the manifest's size check and
//! reaches the file's own parser.
//!
//! Its own binary: the whole process runs under an address-space limit
//! (current size + 2 GiB), so an allocation sized from a damaged field fails
//! the test instead of quietly succeeding on a large machine.

mod common;

use common::*;
use proptest::prelude::*;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::{Once, OnceLock};
use stratavec::data::Vectors;
use stratavec::index::build::build_index_with_ids;
use stratavec::layout::LayoutKind;
use stratavec::progress::Silent;
use stratavec::{BuildParams, Index, OpenOptions, SearchParams};

const N: usize = 300;
const DIM: usize = 16;
/// Cases per index; with the sweep below, about 20 s for all ten indexes in
/// a dev build on two cores.
const CASES: u32 = 300;

/// Caps the process's address space at what it maps now plus 2 GiB.
fn limit_address_space() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
        let kb: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmSize:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmSize in /proc/self/status");
        let limit = kb * 1024 + (2 << 30);
        let rl = libc::rlimit {
            rlim_cur: limit,
            rlim_max: libc::RLIM_INFINITY,
        };
        // SAFETY: setrlimit reads the struct we pass and changes only limits.
        let rc = unsafe { libc::setrlimit(libc::RLIMIT_AS, &rl) };
        assert_eq!(rc, 0, "setrlimit(RLIMIT_AS)");
    });
}

/// The build parameters of index `name`.
fn params(name: &str) -> BuildParams {
    let base = |profile: &str| BuildParams {
        graph_degree: 12,
        complexity: 24,
        pq_bytes: 4,
        pq_sample: N,
        pq_iters: 3,
        ..BuildParams::for_profile(profile)
    };
    match name {
        "separated" => BuildParams {
            layout: Some(LayoutKind::Separated),
            ..base("gorgeous")
        },
        "ivf" => BuildParams {
            ivf_clusters: Some(8),
            ..base("ivf")
        },
        "ivf-codes" => BuildParams {
            ivf_clusters: Some(8),
            ivf_codes: true,
            ..base("ivf")
        },
        "laser" => BuildParams {
            code_dim: Some(16),
            page_size: 8192,
            ..base("laser")
        },
        "diskann-ids" => base("diskann"),
        p => base(p),
    }
}

/// The tiny index `name`, built once per process.
fn built(name: &'static str) -> &'static Path {
    static BUILT: OnceLock<std::sync::Mutex<Vec<(&'static str, &'static Path)>>> = OnceLock::new();
    let all = BUILT.get_or_init(Default::default);
    let mut all = all.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&(_, p)) = all.iter().find(|e| e.0 == name) {
        return p;
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("corrupt-index")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    let (base, _) = synth(N, 0, DIM, 11);
    let ids: Vec<i64> = (0..N as i64).map(|i| 1_000_000 + 3 * i).collect();
    build_index_with_ids(
        Vectors::f32(&base, DIM).unwrap(),
        (name == "diskann-ids").then_some(&ids[..]),
        "tiny",
        &dir,
        &params(name),
        1,
        &Silent,
    )
    .unwrap_or_else(|e| panic!("build {name}: {e}"));
    let p: &'static Path = Box::leak(dir.into_boxed_path());
    all.push((name, p));
    p
}

/// What a case does to one file.
#[derive(Clone, Debug)]
enum Damage {
    /// XOR the byte at this fraction of the file (or of its first 64
    /// bytes, where the headers are) with a non-zero value.
    Flip { at: f64, head: bool, xor: u8 },
    /// Overwrite 4 or 8 bytes there with a value a size field could hold.
    Put {
        at: f64,
        head: bool,
        wide: bool,
        value: u64,
    },
    /// Keep this fraction of the file.
    Truncate(f64),
    /// Append this many bytes of this value.
    Extend(usize, u8),
    /// Replace a manifest field with a value no index of this size has.
    Field(&'static str, serde_json::Value),
}

fn damage() -> impl Strategy<Value = Damage> {
    let sizes = prop_oneof![
        Just(0u64),
        Just(1),
        Just(0xFFFF_FFFF),
        Just(0x8000_0000),
        Just(u64::MAX),
        Just(1 << 40),
        any::<u64>(),
        0u64..100_000,
    ];
    prop_oneof![
        (0.0..1.0f64, any::<bool>(), 1..=255u8).prop_map(|(at, head, xor)| Damage::Flip {
            at,
            head,
            xor
        }),
        (0.0..1.0f64, any::<bool>(), any::<bool>(), sizes).prop_map(|(at, head, wide, value)| {
            Damage::Put {
                at,
                head,
                wide,
                value,
            }
        }),
        (0.0..1.0f64).prop_map(Damage::Truncate),
        (1usize..9000, any::<u8>()).prop_map(|(n, b)| Damage::Extend(n, b)),
    ]
}

fn manifest_damage() -> impl Strategy<Value = Damage> {
    let field = prop_oneof![
        Just("page_size"),
        Just("n"),
        Just("dim"),
        Just("medoid"),
        Just("dtype"),
        Just("layout"),
        Just("profile"),
    ];
    let value = prop_oneof![
        Just(serde_json::json!(0)),
        Just(serde_json::json!(1)),
        Just(serde_json::json!(4096)),
        Just(serde_json::json!(16384)),
        Just(serde_json::json!(4_294_963_200u64)),
        Just(serde_json::json!(u64::MAX)),
        Just(serde_json::json!(1u64 << 40)),
        Just(serde_json::json!(N - 1)),
        Just(serde_json::json!(N + 1)),
        Just(serde_json::json!("u8")),
        Just(serde_json::json!("csr")),
    ];
    prop_oneof![
        3 => (field, value).prop_map(|(f, v)| Damage::Field(f, v)),
        1 => damage(),
    ]
}

/// Applies `d` to `bytes` (the file's contents).
fn apply(d: &Damage, bytes: &mut Vec<u8>) {
    let place = |at: f64, head: bool, width: usize, len: usize| -> Option<usize> {
        let span = if head { len.min(64) } else { len };
        (span >= width).then(|| ((span - width) as f64 * at) as usize)
    };
    match d {
        Damage::Flip { at, head, xor } => {
            if let Some(o) = place(*at, *head, 1, bytes.len()) {
                bytes[o] ^= xor;
            }
        }
        Damage::Put {
            at,
            head,
            wide,
            value,
        } => {
            let width = if *wide { 8 } else { 4 };
            if let Some(o) = place(*at, *head, width, bytes.len()) {
                bytes[o..o + width].copy_from_slice(&value.to_le_bytes()[..width]);
            }
        }
        Damage::Truncate(keep) => bytes.truncate((bytes.len() as f64 * keep) as usize),
        Damage::Extend(n, b) => bytes.extend(std::iter::repeat_n(*b, *n)),
        Damage::Field(name, value) => {
            let mut m: serde_json::Value = serde_json::from_slice(bytes).expect("manifest JSON");
            m[*name] = value.clone();
            *bytes = serde_json::to_vec_pretty(&m).unwrap();
        }
    }
}

/// Records `file`'s new size and sha256 in the manifest of `dir`, as a
/// hostile index whose files all agree with its manifest would.
fn resign(dir: &Path, file: &str) {
    let got = stratavec::index::commit::file_entry(&dir.join(file)).unwrap();
    let path = dir.join("manifest.json");
    let mut m: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    if let Some(entry) = m["files"].get_mut(file) {
        entry["bytes"] = serde_json::json!(got.bytes);
        entry["sha256"] = serde_json::json!(got.sha256);
        std::fs::write(&path, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
    }
}

/// Opens `dir` with a budget that holds every cache and searches one query
/// with the index's own defaults.
fn open_and_search(dir: &Path) -> stratavec::Result<()> {
    let opts = OpenOptions {
        memory_budget_bytes: Some(64 << 20),
        verify_checksums: false,
        ..Default::default()
    };
    let index = Index::open(dir, &opts)?;
    let params = SearchParams {
        k: 5,
        complexity: 20,
        threads: 1,
        in_flight: 1,
        ..index.search_defaults(&Default::default())
    };
    let (_, queries) = synth(N, 1, DIM, 11);
    index.search_batch(&queries, DIM, &params).map(|_| ())
}

/// Damages `file` of a copy of index `name` with `d` (and re-signs it when
/// `signed`); Ok, or a message saying what went wrong.
fn run_case(name: &'static str, file: &str, d: &Damage, signed: bool) -> Result<(), String> {
    let tmp = tempdir();
    let dir: PathBuf = tmp.path().join("index");
    copy_index(built(name), &dir);
    let path = dir.join(file);
    let mut bytes = std::fs::read(&path).unwrap();
    apply(d, &mut bytes);
    std::fs::write(&path, &bytes).unwrap();
    if signed && file != "manifest.json" {
        resign(&dir, file);
    }
    let case = format!("index {name}, file {file}, {d:?}, manifest re-signed: {signed}");
    // An abort (a refused allocation) ends the process before any report:
    // CORRUPT_INDEX_TRACE=1 prints each case before it runs.
    if std::env::var_os("CORRUPT_INDEX_TRACE").is_some() {
        eprintln!("case: {case}");
    }
    match catch_unwind(AssertUnwindSafe(|| open_and_search(&dir))) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => {
            let msg = e.to_string();
            // A damaged manifest may be caught by the file it no longer
            // describes; the message then says "manifest".
            let names = if file == "manifest.json" {
                "manifest"
            } else {
                file
            };
            if msg.contains(names) {
                Ok(())
            } else {
                Err(format!("{case}: error does not name {names}: {msg}"))
            }
        }
        Err(p) => {
            let what = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            Err(format!("{case}: panicked: {what}"))
        }
    }
}

fn files_of(name: &'static str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(built(name))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Every file of index `name`: the damages every file gets, then `CASES`
/// random ones.
fn check_index(name: &'static str) {
    limit_address_space();
    let files = files_of(name);
    let fixed = [
        Damage::Truncate(0.0),
        Damage::Truncate(0.5),
        Damage::Extend(4096, 0),
        Damage::Put {
            at: 12.0 / 60.0,
            head: true,
            wide: false,
            value: 0,
        },
        Damage::Put {
            at: 16.0 / 56.0,
            head: true,
            wide: true,
            value: u64::MAX,
        },
    ];
    for file in &files {
        for d in &fixed {
            for signed in [false, true] {
                if let Err(e) = run_case(name, file, d, signed) {
                    panic!("{e}");
                }
            }
        }
    }
    // PROPTEST_CASES overrides the count, for a longer hunt.
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(CASES);
    // A fixed seed a profile, so a failure in CI is the same case when run
    // again; PROPTEST_RNG_SEED (read by the default config) picks others.
    let defaults = ProptestConfig::default();
    let rng_seed = match std::env::var_os("PROPTEST_RNG_SEED") {
        Some(_) => defaults.rng_seed,
        None => proptest::test_runner::RngSeed::Fixed(
            name.bytes()
                .fold(52, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b))),
        ),
    };
    let config = ProptestConfig {
        cases,
        failure_persistence: None,
        rng_seed,
        ..defaults
    };
    let file_damage =
        (any::<prop::sample::Index>(), any::<bool>()).prop_flat_map(move |(i, signed)| {
            let file = files_of(name)[i.index(files_of(name).len())].clone();
            let d = if file == "manifest.json" {
                manifest_damage().boxed()
            } else {
                damage().boxed()
            };
            (Just(file), d, Just(signed))
        });
    proptest::test_runner::TestRunner::new(config)
        .run(&file_damage, |(file, d, signed)| {
            run_case(name, &file, &d, signed).map_err(TestCaseError::fail)
        })
        .unwrap();
}

#[test]
fn diskann() {
    check_index("diskann");
}

#[test]
fn diskann_with_ids() {
    check_index("diskann-ids");
}

#[test]
fn starling() {
    check_index("starling");
}

#[test]
fn gorgeous() {
    check_index("gorgeous");
}

#[test]
fn separated() {
    check_index("separated");
}

#[test]
fn laser() {
    check_index("laser");
}

#[test]
fn pipeann() {
    check_index("pipeann");
}

#[test]
fn octopus() {
    check_index("octopus");
}

#[test]
fn tiered() {
    check_index("tiered");
}

#[test]
fn ivf() {
    check_index("ivf");
}

#[test]
fn ivf_with_codes() {
    check_index("ivf-codes");
}

/// The cases can fail: an intact copy searches, and a zeroed page size in
/// the pages header is an error that names pages.bin and the field.
#[test]
fn intact_index_searches_and_zero_page_size_is_named() {
    limit_address_space();
    open_and_search(built("diskann")).unwrap();
    let tmp = tempdir();
    let dir = tmp.path().join("index");
    copy_index(built("diskann"), &dir);
    let path = dir.join("pages.bin");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[12..16].fill(0);
    std::fs::write(&path, &bytes).unwrap();
    let msg = err_msg(open_and_search(&dir));
    assert_mentions(&msg, &["pages.bin", "page size", "found 0"]);
}
