//! The laser profile end to end (issue #21): records that carry their
//! neighbours' codes, no codes in RAM, the node cache, cluster entry
//! points, adaptive beam and early dispatch — each switchable — finding
//! the true neighbours; and byte-identical rebuilds.

use crate::common;

use common::*;
use stratavec::data::Metric;
use stratavec::{BuildParams, Index, OpenOptions, SearchParams};

const DIM: usize = 128;
const N: usize = 4000;
/// One bit a dimension on unstructured synthetic data ranks neighbours far
/// worse than 32-byte PQ (R@10 0.62 at L = 64 where diskann has 0.998;
/// 0.98 at L = 200): the list is long enough for that. Real embeddings,
/// where the codes cover the principal components, are in BENCHMARKS.md.
const L: usize = 256;

fn laser() -> BuildParams {
    BuildParams {
        // Full floats, so reported distances are exact (`check_results`).
        store: Some(stratavec::data::DType::F32),
        graph_degree: 32,
        complexity: 64,
        ..BuildParams::for_profile("laser")
    }
}

fn open_with(dir: &std::path::Path, budget: Option<u64>, entries: bool) -> Index {
    let opts = OpenOptions {
        memory_budget_bytes: budget,
        navigation_graph: entries,
        ..Default::default()
    };
    Index::open(dir, &opts).unwrap_or_else(|e| panic!("open {}: {e}", dir.display()))
}

#[test]
fn laser_finds_the_neighbours_with_every_part_on_or_off() {
    let (base, queries) = synth(N, 100, DIM, 31);
    let gt = gt_f32(&base, &queries, DIM, Metric::L2, 10);
    let tmp = tempdir();
    let dir = tmp.path().join("laser");
    build_f32(&dir, &base, DIM, &laser(), 2);
    let m = stratavec::index::Manifest::read(&dir).unwrap();
    assert_eq!(m.layout, "laser");
    assert!(!m.files.contains_key("codes.bin"), "no PQ codes");
    for f in ["rabitq.bin", "order.bin", "entry.bin"] {
        assert!(m.files.contains_key(f), "{f}");
    }
    // No codes in RAM: "codes" is the PCA basis and RaBitQ's rotation
    // fused into one matrix (128 x 128: f16 and bf16 AMX tiles, 4 bytes a
    // value, where the process has AMX; else i8 with a step, a sum and a
    // size a row), RaBitQ's centre's image and the mean, whatever n is.
    let plain = open_with(&dir, None, true);
    assert_eq!(m.build.code_dim, Some(DIM));
    let map = match stratavec_simd::amx::active() {
        true => 4 * DIM * DIM,
        false => DIM * DIM + 12 * DIM,
    };
    assert_eq!(plain.memory().get("codes"), map + 4 * (DIM + DIM));
    let full = open_with(&dir, Some(plain.memory().total() as u64 + 2_000_000), true);
    assert!(full.cached_nodes() > 0);
    for (index, what) in [(&plain, "no cache"), (&full, "node cache")] {
        for (adaptive, ratio) in [(false, 1.0), (true, 1.0), (true, 0.5), (true, 0.25)] {
            let p = SearchParams {
                adaptive_beam: adaptive,
                dispatch_ratio: ratio,
                beam_width: 8,
                ..search_params(10, L)
            };
            let res = index.search_batch(&queries, DIM, &p).unwrap();
            assert_eq!(res.failed(), 0);
            check_results(&res, &base, &queries, DIM, Metric::L2);
            let r = recall_of(&res, &gt, 10);
            assert!(
                r >= 0.95,
                "{what}, adaptive {adaptive}, ratio {ratio}: recall {r}"
            );
        }
    }
    // Cache hits replace reads.
    let p = search_params(10, L);
    let a = plain.search_batch(&queries, DIM, &p).unwrap().total();
    let b = full.search_batch(&queries, DIM, &p).unwrap().total();
    assert!(b.cache_hits > 0 && b.reads < a.reads, "{a:?} {b:?}");
    // From the medoid instead of the cluster entries: still correct.
    let medoid = open_with(&dir, None, false);
    let r = recall_of(&medoid.search_batch(&queries, DIM, &p).unwrap(), &gt, 10);
    assert!(r >= 0.9, "from the medoid: {r}");
    // The CPU split is measured.
    assert!(a.exact_ns > 0 && a.estimate_ns > 0);
    // A batch maps its queries through the codes' matrix 8 at a time; one
    // query alone maps itself: the same answers, bit for bit.
    let batch = plain.search_batch(&queries, DIM, &p).unwrap();
    for q in 0..queries.len() / DIM {
        let one = plain
            .search_batch(&queries[q * DIM..(q + 1) * DIM], DIM, &p)
            .unwrap();
        assert_eq!(one.ids, batch.ids[q * 10..(q + 1) * 10], "query {q}");
        let bits = |d: &[f32]| d.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&one.dists), bits(&batch.dists[q * 10..(q + 1) * 10]));
    }
    // A range search needs codes in RAM.
    let range = SearchParams {
        radius: Some(1.0),
        ..search_params(1, 16)
    };
    assert_mentions(
        &err_msg(plain.check_search(&range, 1)),
        &["laser", "range search needs codes in RAM"],
    );
}

#[test]
fn laser_builds_are_byte_identical_and_cosine_works() {
    let (base, queries) = synth(1500, 30, DIM, 32);
    let tmp = tempdir();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let cosine = BuildParams {
        metric: Metric::Cosine,
        ..laser()
    };
    build_f32(&a, &base, DIM, &cosine, 1);
    build_f32(&b, &base, DIM, &cosine, 1);
    let (fa, fb) = (read_all(&a), read_all(&b));
    let strip = |v: Vec<(String, Vec<u8>)>| -> Vec<(String, Vec<u8>)> {
        v.into_iter()
            .filter(|f| f.0 != "build_report.json")
            .collect()
    };
    assert!(strip(fa) == strip(fb), "two builds differ");
    let index = open(&a);
    let res = search(&index, &queries, 10, L);
    check_results(&res, &base, &queries, DIM, Metric::Cosine);
    let gt = gt_f32(&base, &queries, DIM, Metric::Cosine, 10);
    let r = recall_of(&res, &gt, 10);
    assert!(r >= 0.9, "cosine recall {r}");
}

#[test]
fn laser_refuses_what_cannot_work_before_any_work() {
    let (base, _) = synth(200, 1, DIM, 33);
    let tmp = tempdir();
    let v = stratavec::data::Vectors::f32(&base, DIM).unwrap();
    let build = |p: &BuildParams| {
        stratavec::build_index(
            v,
            "data",
            &tmp.path().join("x"),
            p,
            1,
            &stratavec::progress::Silent,
        )
    };
    let ip = BuildParams {
        metric: Metric::InnerProduct,
        ..laser()
    };
    assert_mentions(&err_msg(build(&ip)), &["metric", "l2 or cosine", "laser"]);
    let odd = BuildParams {
        code_dim: Some(12),
        ..laser()
    };
    assert_mentions(
        &err_msg(build(&odd)),
        &["code_dim", "multiple of 8 from 8 to 128", "12"],
    );
    let page = BuildParams {
        page_size: 4096,
        graph_degree: 200,
        complexity: 200,
        unset: stratavec::Unset::default(),
        ..laser()
    };
    assert_mentions(
        &err_msg(build(&page)),
        &["page_size", "laser records", "8192 or more"],
    );
}
