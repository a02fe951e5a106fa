//! Bad input of every kind gets an error whose message names the file or
//! argument, the field, and the expected and found values — never a panic
//! and never a silent wrong answer.

use crate::common;

use common::*;
use std::path::Path;
use stratavec::data::{write_fbin, Metric, Vectors};
use stratavec::index::Manifest;
use stratavec::progress::Silent;
use stratavec::{build_from_file, build_index, BuildParams, Index, OpenOptions, SearchParams};

fn open_err(dir: &Path) -> String {
    err_msg(Index::open(dir, &OpenOptions::default()))
}

fn search_err(queries: &[f32], params: &SearchParams) -> String {
    let index = open(&shared().dir);
    err_msg(index.search_batch(queries, index.dim(), params))
}

fn build_err(params: &BuildParams, dim: usize) -> String {
    let tmp = tempdir();
    let (base, _) = synth(300, 0, dim, 41);
    let r = build_index(
        Vectors::f32(&base, dim).unwrap(),
        "base.fbin",
        &tmp.path().join("index"),
        params,
        1,
        &Silent,
    );
    let msg = err_msg(r.map(|_| ()));
    assert!(
        !tmp.path().join("index").exists(),
        "a refused build created the index"
    );
    assert_eq!(hidden_entries(tmp.path()), Vec::<String>::new());
    msg
}

// ---------------------------------------------------------------- queries

#[test]
fn query_dimension_not_a_multiple_of_index_dimension() {
    let s = shared();
    let q = vec![0.5f32; 3 * (SHARED_DIM - 1)]; // 3 queries of dim 31
    let msg = search_err(&q, &search_params(10, 40));
    assert_mentions(&msg, &["queries", "index dimension 32", "93 values"]);
    assert!(!s.queries.is_empty());
}

/// 4 queries of dimension 24 are 96 = 3 x 32 values: the flat-slice API
/// cannot tell them from 3 queries of dimension 32 and answers them.
#[test]
fn query_dimension_mismatch_with_compatible_length_is_refused() {
    let q = vec![0.5f32; 4 * 24];
    let r = open(&shared().dir).search_batch(&q, 24, &search_params(10, 40));
    assert!(
        r.is_err(),
        "4 queries of dimension 24 were searched as 3 of dimension 32"
    );
}

#[test]
fn empty_query_batch() {
    let msg = search_err(&[], &search_params(10, 40));
    assert_mentions(&msg, &["queries", "non-empty", "0 values"]);
}

#[test]
fn nan_in_queries() {
    let mut q = shared().queries[..4 * SHARED_DIM].to_vec();
    q[2 * SHARED_DIM + 7] = f32::NAN;
    let msg = search_err(&q, &search_params(10, 40));
    assert_mentions(&msg, &["query 2, component 7", "finite", "NaN"]);
}

#[test]
fn inf_in_queries() {
    let mut q = shared().queries[..4 * SHARED_DIM].to_vec();
    q[3 * SHARED_DIM] = f32::INFINITY;
    let msg = search_err(&q, &search_params(10, 40));
    assert_mentions(&msg, &["query 3, component 0", "finite", "inf"]);
}

#[test]
fn k_zero() {
    let msg = search_err(&shared().queries, &search_params(0, 40));
    assert_mentions(&msg, &["k", "at least 1", "found 0"]);
}

#[test]
fn k_larger_than_n() {
    let k = SHARED_N + 1;
    let msg = search_err(&shared().queries, &search_params(k, k + 10));
    assert_mentions(&msg, &["k", &SHARED_N.to_string(), &format!("found {k}")]);
}

#[test]
fn complexity_below_k() {
    let msg = search_err(&shared().queries, &search_params(10, 5));
    assert_mentions(&msg, &["complexity", "k = 10", "found 5"]);
}

#[test]
fn beam_width_zero() {
    let mut p = search_params(10, 40);
    p.beam_width = 0;
    let msg = search_err(&shared().queries, &p);
    assert_mentions(&msg, &["beam width", "1..=64", "found 0"]);
}

// ---------------------------------------------------------------- data files

#[test]
fn nan_in_base_data_file() {
    let tmp = tempdir();
    let (mut base, _) = synth(400, 0, 16, 42);
    base[321 * 16 + 9] = f32::NAN;
    let path = tmp.path().join("base.fbin");
    write_fbin(&path, 400, 16, &base).unwrap();
    let out = tmp.path().join("index");
    let r = build_from_file(&path, &out, &small_params(Metric::L2), 1, &Silent);
    let msg = err_msg(r.map(|_| ()));
    assert_mentions(
        &msg,
        &[&path.display().to_string(), "row 321", "component 9", "NaN"],
    );
    assert!(!out.exists());
    assert_eq!(hidden_entries(tmp.path()), Vec::<String>::new());
}

#[test]
fn empty_data_file() {
    let tmp = tempdir();
    let path = tmp.path().join("empty.fbin");
    std::fs::write(&path, b"").unwrap();
    let r = build_from_file(
        &path,
        &tmp.path().join("index"),
        &small_params(Metric::L2),
        1,
        &Silent,
    );
    let msg = err_msg(r.map(|_| ()));
    assert_mentions(&msg, &[&path.display().to_string(), "empty", "0 bytes"]);
}

#[test]
fn fbin_header_disagrees_with_size() {
    let tmp = tempdir();
    let path = tmp.path().join("short.fbin");
    let mut bytes = Vec::new();
    bytes.extend_from_slice(&100u32.to_le_bytes());
    bytes.extend_from_slice(&16u32.to_le_bytes());
    bytes.extend(std::iter::repeat_n(0u8, 50 * 16 * 4)); // 50 rows, not 100
    std::fs::write(&path, &bytes).unwrap();
    let r = build_from_file(
        &path,
        &tmp.path().join("index"),
        &small_params(Metric::L2),
        1,
        &Silent,
    );
    let msg = err_msg(r.map(|_| ()));
    let expected = (8 + 100 * 16 * 4).to_string();
    let found = bytes.len().to_string();
    assert_mentions(
        &msg,
        &[&path.display().to_string(), "100 x 16", &expected, &found],
    );
}

// ---------------------------------------------------------------- build parameters

#[test]
fn pq_bytes_larger_than_dim() {
    let mut p = small_params(Metric::L2);
    p.pq_bytes = 32;
    let msg = build_err(&p, 16);
    assert_mentions(&msg, &["pq_bytes", "1..=16", "found 32"]);
}

/// Only the two-stage search has a refinement to pipeline.
#[test]
fn pipelined_refinement_without_a_two_stage_search() {
    let mut p = small_params(Metric::L2);
    p.pipelined_refinement = true;
    let msg = build_err(&p, 16);
    assert_mentions(&msg, &["pipelined_refinement", "two-stage", "found true"]);
}

#[test]
fn graph_degree_zero() {
    let mut p = small_params(Metric::L2);
    p.graph_degree = 0;
    let msg = build_err(&p, 16);
    assert_mentions(&msg, &["graph_degree", "1..=1024", "found 0"]);
}

#[test]
fn page_size_5000() {
    let mut p = small_params(Metric::L2);
    p.page_size = 5000;
    let msg = build_err(&p, 16);
    assert_mentions(&msg, &["page_size", "4096, 8192 or 16384", "found 5000"]);
}

#[test]
fn complexity_below_degree() {
    let mut p = small_params(Metric::L2);
    p.complexity = 8;
    let msg = build_err(&p, 16);
    assert_mentions(&msg, &["complexity", "graph_degree", "found 8"]);
}

/// The convention: every error names the expected value; this one says
/// "at least graph_degree" without the degree.
#[test]
fn complexity_below_degree_names_the_degree() {
    let mut p = small_params(Metric::L2);
    p.complexity = 8;
    let msg = build_err(&p, 16);
    assert_mentions(&msg, &["24"]);
}

// ---------------------------------------------------------------- index directory

#[test]
fn index_directory_missing() {
    let tmp = tempdir();
    let dir = tmp.path().join("nowhere");
    let msg = open_err(&dir);
    assert_mentions(
        &msg,
        &[
            &dir.display().to_string(),
            "index directory",
            "nothing there",
        ],
    );
}

#[test]
fn manifest_missing() {
    let (_tmp, dir) = private_copy();
    std::fs::remove_file(dir.join("manifest.json")).unwrap();
    let msg = open_err(&dir);
    assert_mentions(&msg, &["manifest.json", "not an index"]);
}

#[test]
fn manifest_corrupt_json() {
    let (_tmp, dir) = private_copy();
    let path = dir.join("manifest.json");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, &text[..text.len() / 2]).unwrap();
    let msg = open_err(&dir);
    assert_mentions(
        &msg,
        &[&path.display().to_string(), "JSON", "a valid manifest"],
    );
}

#[test]
fn manifest_from_newer_version() {
    let (_tmp, dir) = private_copy();
    let path = dir.join("manifest.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let newer = text.replacen("\"format_version\": 1,", "\"format_version\": 999,", 1);
    assert_ne!(newer, text, "format_version not found in {text}");
    std::fs::write(&path, newer).unwrap();
    let msg = open_err(&dir);
    assert_mentions(
        &msg,
        &["manifest.json", "format_version", "<= 1", "999", "newer"],
    );
}

/// A build records the revision of its logic; an index from before the
/// revision was recorded still opens (as revision 0), so only `bench`'s reuse
/// of cached indexes looks at it.
#[test]
fn manifest_records_the_build_revision_and_older_ones_open() {
    let (_tmp, dir) = private_copy();
    let m = Manifest::read(&dir).unwrap();
    assert_eq!(m.build_revision, stratavec::index::BUILD_REVISION);
    assert!(m.build_revision > 0);
    let path = dir.join("manifest.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let line = format!("  \"build_revision\": {},\n", m.build_revision);
    let older = text.replacen(&line, "", 1);
    assert_ne!(older, text, "build_revision not found in {text}");
    std::fs::write(&path, older).unwrap();
    assert_eq!(Manifest::read(&dir).unwrap().build_revision, 0);
    Index::open(&dir, &OpenOptions::default()).unwrap();
}

#[test]
fn manifest_disagrees_with_pages_header() {
    let (_tmp, dir) = private_copy();
    let mut m = Manifest::read(&dir).unwrap();
    m.dim = 33;
    std::fs::write(dir.join("manifest.json"), m.to_json()).unwrap();
    let msg = open_err(&dir);
    // Either file may be blamed, but both dimensions must be named.
    assert_mentions(&msg, &["dim", "33", "32"]);
}

#[test]
fn pages_truncated_by_one_page() {
    let (_tmp, dir) = private_copy();
    let path = dir.join("pages.bin");
    let len = std::fs::metadata(&path).unwrap().len();
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(len - 4096).unwrap();
    let msg = open_err(&dir);
    assert_mentions(
        &msg,
        &[
            "pages.bin",
            "size",
            &format!("{len} bytes"),
            &format!("{} bytes", len - 4096),
        ],
    );
}

#[test]
fn pages_header_garbage() {
    let (_tmp, dir) = private_copy();
    let path = dir.join("pages.bin");
    let mut bytes = std::fs::read(&path).unwrap();
    for (i, b) in bytes[..4096].iter_mut().enumerate() {
        *b = (i * 131 + 17) as u8;
    }
    std::fs::write(&path, &bytes).unwrap();
    let msg = open_err(&dir);
    assert_mentions(&msg, &["pages.bin", "header", "magic", "STRVPAGE"]);
}

#[test]
fn pages_flipped_byte_caught_by_checksum() {
    let (_tmp, dir) = private_copy();
    let path = dir.join("pages.bin");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[3 * 4096 + 10] ^= 0x40;
    std::fs::write(&path, &bytes).unwrap();
    let opts = OpenOptions {
        verify_checksums: true,
        ..Default::default()
    };
    let msg = err_msg(Index::open(&dir, &opts));
    let m = Manifest::read(&dir).unwrap();
    assert_mentions(&msg, &["pages.bin", "sha256", &m.files["pages.bin"].sha256]);
}

#[test]
fn codes_truncated() {
    let (_tmp, dir) = private_copy();
    let path = dir.join("codes.bin");
    let len = std::fs::metadata(&path).unwrap().len();
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(len - 100).unwrap();
    let msg = open_err(&dir);
    assert_mentions(
        &msg,
        &[
            "codes.bin",
            "size",
            &format!("{len} bytes"),
            &format!("{} bytes", len - 100),
        ],
    );
}

/// Truncated codes whose manifest entry was "fixed" to match: the codes
/// file's own size check must still catch it.
#[test]
fn codes_truncated_with_matching_manifest() {
    let (_tmp, dir) = private_copy();
    let path = dir.join("codes.bin");
    let len = std::fs::metadata(&path).unwrap().len();
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(len - 100).unwrap();
    let mut m = Manifest::read(&dir).unwrap();
    m.files.get_mut("codes.bin").unwrap().bytes = len - 100;
    std::fs::write(dir.join("manifest.json"), m.to_json()).unwrap();
    let msg = open_err(&dir);
    assert_mentions(
        &msg,
        &[
            "codes.bin",
            "file size",
            &len.to_string(),
            &(len - 100).to_string(),
        ],
    );
}

#[test]
fn codes_garbage_magic() {
    let (_tmp, dir) = private_copy();
    let path = dir.join("codes.bin");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[..8].copy_from_slice(b"NOTCODES");
    std::fs::write(&path, &bytes).unwrap();
    let msg = open_err(&dir);
    assert_mentions(&msg, &["codes.bin", "magic", "STRVPQ01"]);
}

#[test]
fn memory_budget_smaller_than_codes() {
    let s = shared();
    let plain = open(&s.dir);
    let codes = plain.memory().get("codes");
    let fixed = codes + plain.memory().get("buffers");
    let budget = (codes / 2) as u64;
    let opts = OpenOptions {
        memory_budget_bytes: Some(budget),
        ..Default::default()
    };
    let msg = err_msg(Index::open(&s.dir, &opts));
    let mb = |b: f64| format!("{:.2} MB", b / 1e6);
    assert_mentions(
        &msg,
        &[
            "memory budget",
            &mb(fixed as f64),
            "PQ codes",
            &mb(codes as f64),
            &mb(budget as f64),
        ],
    );
}

/// A neighbour id past the end of the index in a page (corruption that the
/// size checks cannot see) must fail the queries that meet it, not panic.
#[test]
fn corrupt_neighbour_id_does_not_panic() {
    let (_tmp, dir) = private_copy();
    let m = Manifest::read(&dir).unwrap();
    let record = m.dim * 4 + 4 + 4 * m.build.graph_degree;
    let per_page = m.page_size / record;
    let medoid = m.medoid as usize;
    let off = (1 + medoid / per_page) * m.page_size + (medoid % per_page) * record + m.dim * 4 + 4;
    let path = dir.join("pages.bin");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[off..off + 4].copy_from_slice(&(m.n as u32 + 5).to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let index = open(&dir);
    let queries = shared().queries.clone();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        index.search_batch(&queries, index.dim(), &search_params(10, 40))
    }));
    match outcome {
        Err(_) => panic!("search panicked on a corrupt neighbour id"),
        Ok(Err(e)) => assert_mentions(&e.to_string(), &["pages.bin"]),
        Ok(Ok(res)) => {
            assert!(res.failed() > 0, "corrupt neighbour id went unnoticed");
            let e = res.errors.iter().flatten().next().unwrap();
            assert_mentions(e, &["pages.bin", &(m.n + 5).to_string()]);
        }
    }
}

/// A recorded plan that pairs parts no build pairs (a cluster search of a
/// graph, or a plan newer than this stratavec) is refused at open, naming
/// manifest.json and the plan's field.
#[test]
fn a_plan_whose_parts_do_not_fit_is_refused_naming_the_field() {
    let (_tmp, dir) = private_copy();
    let path = dir.join("manifest.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut m: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(m["plan"].is_object(), "today's build records its plan");
    let cases = [
        (
            "/plan/search",
            serde_json::json!({"kind": "clusters"}),
            "plan.search",
        ),
        ("/plan/codes", serde_json::json!("records"), "plan.codes"),
        ("/plan/layout", serde_json::json!("laser"), "plan.layout"),
        ("/plan/version", serde_json::json!(99), "plan.version"),
    ];
    for (at, value, field) in cases {
        let mut bad = m.clone();
        *bad.pointer_mut(at).unwrap() = value;
        std::fs::write(&path, serde_json::to_string_pretty(&bad).unwrap()).unwrap();
        let msg = err_msg(stratavec::Index::open(&dir, &Default::default()));
        assert_mentions(&msg, &["manifest.json", field]);
    }
    m["plan"] = serde_json::Value::Null;
    std::fs::write(&path, serde_json::to_string_pretty(&m).unwrap()).unwrap();
    // Without a plan, the index is read as one from before plans were
    // recorded.
    assert!(stratavec::Index::open(&dir, &Default::default()).is_ok());
}
