//! The starling profile end to end: BNF-shuffled blocked layout, the id
//! map, block search; and the errors its files can raise.

use crate::common;

use common::*;
use stratavec::data::Metric;
use stratavec::layout::shuffle::Shuffle;
use stratavec::{Index, OpenOptions, SearchParams};

const DIM: usize = 16;
const N: usize = 3000;

fn starling_params() -> stratavec::BuildParams {
    stratavec::BuildParams {
        profile: "starling".into(),
        shuffle: Shuffle::Bnf,
        ..small_params(Metric::L2)
    }
}

fn params(l: usize, page_search: bool) -> SearchParams {
    SearchParams {
        page_search,
        ..search_params(10, l)
    }
}

#[test]
fn shuffled_index_finds_neighbours_with_fewer_reads() {
    let (base, queries) = synth(N, 100, DIM, 11);
    let gt = gt_f32(&base, &queries, DIM, Metric::L2, 10);
    let tmp = tempdir();
    let (d_dir, s_dir) = (tmp.path().join("diskann"), tmp.path().join("starling"));
    build_f32(&d_dir, &base, DIM, &small_params(Metric::L2), 2);
    build_f32(&s_dir, &base, DIM, &starling_params(), 2);

    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(s_dir.join("build_report.json")).unwrap())
            .unwrap();
    let id_or = report["shuffle"]["id_order"].as_f64().unwrap();
    let stages = report["shuffle"]["stages"].as_array().unwrap();
    let bnf_or = stages.last().unwrap()[1].as_f64().unwrap();
    // ~35 packed 16-d records per block: OR(G), a share of the block, is
    // small even when each node has a few neighbours beside it.
    assert!(
        bnf_or > 5.0 * id_or,
        "OR(G) id order {id_or}, after BNF {bnf_or}"
    );

    let open = |dir| Index::open(dir, &OpenOptions::default()).unwrap();
    let (d, s) = (open(&d_dir), open(&s_dir));
    assert_eq!(s.manifest.layout, "blocked");
    // The id→block map is counted, packed in ⌈log2 blocks⌉ bits a node
    // (~100 blocks here: 7 bits, not 32).
    assert!(s.memory().get("map") >= N * 7 / 8, "{}", s.memory());
    assert!(s.memory().get("map") <= N + 8, "{}", s.memory());
    let dr = d.search_batch(&queries, DIM, &params(40, false)).unwrap();
    let sr = s.search_batch(&queries, DIM, &params(40, true)).unwrap();
    let (d_recall, s_recall) = (recall_of(&dr, &gt, 10), recall_of(&sr, &gt, 10));
    assert!(s_recall >= 0.9, "starling recall {s_recall}");
    let (d_reads, s_reads) = (dr.total().reads, sr.total().reads);
    eprintln!(
        "diskann recall {d_recall} reads {d_reads}; starling recall {s_recall} reads {s_reads}"
    );
    // 30 records per block, most of them neighbours: far fewer reads.
    assert!(
        s_reads * 10 < d_reads * 8,
        "starling {s_reads} reads vs diskann {d_reads}"
    );
    // Without block search the shuffled layout is just another id order.
    let plain = s.search_batch(&queries, DIM, &params(40, false)).unwrap();
    assert!(recall_of(&plain, &gt, 10) >= 0.9);

    // OR(G) read back from the pages is what the shuffle reported placing.
    let su = s
        .page_utility()
        .unwrap()
        .expect("blocked pages are graph pages");
    assert!(
        (su.overlap_ratio - bnf_or).abs() < 1e-9,
        "pages {su:?}, shuffle {bnf_or}"
    );
    assert!(su.records_per_page > 20.0, "{su:?}");
    // The id-order pages against eq. 5 computed here from the graph.
    let du = d
        .page_utility()
        .unwrap()
        .expect("coupled pages are graph pages");
    let (layout, _, lists) = stratavec::index::graph_file::read_graph(&d_dir).unwrap();
    let per = layout.nodes_per_page.max(1);
    let (mut or, mut np) = (0.0, 0.0);
    for (u, l) in lists.iter().enumerate() {
        let first = u / per * per;
        let size = per.min(N - first);
        np += size as f64;
        if size > 1 {
            let mates = l.iter().filter(|&&v| (v as usize) / per == u / per).count();
            or += mates as f64 / (size - 1) as f64;
        }
    }
    assert!((du.overlap_ratio - or / N as f64).abs() < 1e-9, "{du:?}");
    assert!((du.records_per_page - np / N as f64).abs() < 1e-9, "{du:?}");
    assert!(su.overlap_ratio > 5.0 * du.overlap_ratio);
    assert!(
        (du.useful_records() - (1.0 + du.overlap_ratio * (du.records_per_page - 1.0))).abs()
            < 1e-12
    );
}

/// With a coarse PQ (16 dimensions per sub-space; 48 bytes give 384-d
/// vectors 8) estimates run well below exact distances. Block search must
/// still read fewer blocks than beam search: the records it lists must rank
/// by the same kind of distance as the candidates they compete with.
/// (Listing them at their exact distance made the 384-d wordnet search read
/// ~1,500 blocks per query at L = 34, and this test read 11% more blocks
/// with block search than without.)
#[test]
fn block_search_converges_with_a_coarse_quantizer() {
    const DIM: usize = 256;
    let (base, queries) = synth(N, 100, DIM, 12);
    let gt = gt_f32(&base, &queries, DIM, Metric::L2, 10);
    let tmp = tempdir();
    let dir = tmp.path().join("starling");
    let coarse = stratavec::BuildParams {
        pq_bytes: 16,
        ..starling_params()
    };
    build_f32(&dir, &base, DIM, &coarse, 2);
    let index = Index::open(&dir, &OpenOptions::default()).unwrap();
    let plain = index
        .search_batch(&queries, DIM, &params(40, false))
        .unwrap();
    let block = index
        .search_batch(&queries, DIM, &params(40, true))
        .unwrap();
    let (p_reads, b_reads) = (plain.total().reads, block.total().reads);
    let (p_recall, b_recall) = (recall_of(&plain, &gt, 10), recall_of(&block, &gt, 10));
    eprintln!(
        "beam search: recall {p_recall}, {p_reads} reads; block search: {b_recall}, {b_reads}"
    );
    assert!(
        b_recall >= p_recall - 0.02,
        "recall {b_recall} vs {p_recall}"
    );
    assert!(
        b_reads <= p_reads,
        "block search read {b_reads} blocks, beam search {p_reads}"
    );
}

#[test]
fn corrupt_map_is_refused_with_its_name() {
    let (base, _) = synth(500, 1, DIM, 3);
    let tmp = tempdir();
    let dir = tmp.path().join("s");
    build_f32(&dir, &base, DIM, &starling_params(), 1);
    let map = dir.join("map.bin");
    let mut bytes = std::fs::read(&map).unwrap();
    // Node 1 in a block past the end of pages.bin.
    bytes[28..32].copy_from_slice(&u32::MAX.to_le_bytes());
    std::fs::write(&map, &bytes).unwrap();
    let err = Index::open(&dir, &OpenOptions::default())
        .err()
        .expect("must fail")
        .to_string();
    assert!(
        err.contains("map.bin") && err.contains("block of node 1"),
        "{err}"
    );
}

#[test]
fn records_larger_than_half_a_page_cannot_be_shuffled() {
    // 1024-d f32 records (4 KB+) leave no room for a second record.
    let (base, _) = synth(300, 1, 1024, 5);
    let tmp = tempdir();
    let err = stratavec::build_index(
        stratavec::data::Vectors::f32(&base, 1024).unwrap(),
        "test data",
        &tmp.path().join("s"),
        &starling_params(),
        1,
        &stratavec::progress::Silent,
    )
    .expect_err("must fail")
    .to_string();
    assert!(
        err.contains("shuffle") && err.contains("page-size"),
        "{err}"
    );
}

#[test]
fn navigation_graph_is_loaded_counted_and_searchable() {
    let (base, queries) = synth(N, 50, DIM, 21);
    let gt = gt_f32(&base, &queries, DIM, Metric::L2, 10);
    let tmp = tempdir();
    let dir = tmp.path().join("nav");
    let params = stratavec::BuildParams {
        nav_sample: 0.05,
        nav_degree: 16,
        ..starling_params()
    };
    build_f32(&dir, &base, DIM, &params, 2);
    let index = Index::open(&dir, &OpenOptions::default()).unwrap();
    // 150 sampled vectors of 16 floats plus their ids and lists.
    assert!(
        index.memory().get("nav") >= 150 * (16 * 4 + 4),
        "{}",
        index.memory()
    );
    let res = index
        .search_batch(&queries, DIM, &params_for_nav())
        .unwrap();
    assert!(recall_of(&res, &gt, 10) >= 0.9);
}

fn params_for_nav() -> SearchParams {
    params(40, true)
}

/// Block search and the pipeline give the same answer however the reads
/// complete: one query at a time on one thread, or many in flight on two.
/// The pipeline changes only when the non-routing work is done, so its
/// recall stays with block search's.
#[test]
fn block_search_and_pipeline_do_not_depend_on_scheduling() {
    let (base, queries) = synth(N, 100, DIM, 12);
    let gt = gt_f32(&base, &queries, DIM, Metric::L2, 10);
    let tmp = tempdir();
    let dir = tmp.path().join("starling");
    build_f32(&dir, &base, DIM, &starling_params(), 2);
    let s = Index::open(&dir, &OpenOptions::default()).unwrap();
    for pipeline in [false, true] {
        let run = |threads, in_flight| {
            let p = SearchParams {
                threads,
                in_flight,
                pipeline,
                ..params(30, true)
            };
            s.search_batch(&queries, DIM, &p).unwrap()
        };
        let (serial, parallel) = (run(1, 1), run(2, 16));
        assert_eq!(serial.ids, parallel.ids, "pipeline {pipeline}");
        assert_eq!(serial.dists, parallel.dists, "pipeline {pipeline}");
        assert_eq!(serial.total().reads, parallel.total().reads);
        let recall = recall_of(&parallel, &gt, 10);
        assert!(recall >= 0.9, "pipeline {pipeline}: recall {recall}");
        check_results(&parallel, &base, &queries, DIM, Metric::L2);
    }
    let plain = s.search_batch(&queries, DIM, &params(30, true)).unwrap();
    let piped = s
        .search_batch(
            &queries,
            DIM,
            &SearchParams {
                pipeline: true,
                ..params(30, true)
            },
        )
        .unwrap();
    let (r_plain, r_piped) = (recall_of(&plain, &gt, 10), recall_of(&piped, &gt, 10));
    assert!(
        (r_plain - r_piped).abs() <= 0.03,
        "block search recall {r_plain}, with pipeline {r_piped}"
    );
    // 30 neighbours per page: beam candidates often share a page, which is
    // then read once for all of them.
    assert!(piped.total().shared_reads > 0);
}

/// Relayout of a diskann-profile index writes exactly the pages and map a
/// starling build with the same parameters writes, leaves its source alone,
/// and refuses an index that is already shuffled.
#[test]
fn relayout_equals_a_starling_build() {
    let (base, queries) = synth(N, 50, DIM, 13);
    let tmp = tempdir();
    let (d_dir, s_dir, r_dir) = (
        tmp.path().join("diskann"),
        tmp.path().join("starling"),
        tmp.path().join("relayout"),
    );
    build_f32(&d_dir, &base, DIM, &small_params(Metric::L2), 2);
    build_f32(&s_dir, &base, DIM, &starling_params(), 2);
    let before = std::fs::read(d_dir.join("pages.bin")).unwrap();
    let sp = starling_params();
    let shuffle = sp.shuffle_params();
    let report = stratavec::index::relayout::relayout(&d_dir, &r_dir, &shuffle, None, 2).unwrap();
    // Blocks of many small records: placed by the nearest nodes, which
    // build and relayout must rank alike.
    assert_eq!(
        report.shuffle.as_ref().map(|s| s.nearest),
        Some(stratavec::layout::shuffle::NEAREST_K)
    );
    for f in ["pages.bin", "map.bin", "codes.bin"] {
        assert!(
            std::fs::read(s_dir.join(f)).unwrap() == std::fs::read(r_dir.join(f)).unwrap(),
            "{f} differs from the starling build's"
        );
    }
    assert_eq!(std::fs::read(d_dir.join("pages.bin")).unwrap(), before);
    let open = |dir| Index::open(dir, &OpenOptions::default()).unwrap();
    let (s, r) = (open(&s_dir), open(&r_dir));
    assert_eq!(r.manifest.profile, "starling");
    assert_eq!(r.manifest.layout, "blocked");
    let (a, b) = (
        s.search_batch(&queries, DIM, &params(30, true)).unwrap(),
        r.search_batch(&queries, DIM, &params(30, true)).unwrap(),
    );
    assert_eq!(a.ids, b.ids);

    let again = tmp.path().join("again");
    let err = stratavec::index::relayout::relayout(&s_dir, &again, &shuffle, None, 2)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("manifest.json") && err.contains("layout") && err.contains("blocked"),
        "{err}"
    );
    assert!(!again.exists());
}

/// The build report's stages partition the build: the shuffle and the
/// navigation graph run inside the write stage and must not be counted in
/// it again, so the stages add up to no more than the whole build.
#[test]
fn build_stages_add_up_to_the_build() {
    let (base, _) = synth(N, 1, DIM, 22);
    let tmp = tempdir();
    let params = stratavec::BuildParams {
        nav_sample: 0.05,
        nav_degree: 16,
        ..starling_params()
    };
    let report = stratavec::build_index(
        stratavec::data::Vectors::f32(&base, DIM).unwrap(),
        "test data",
        &tmp.path().join("s"),
        &params,
        2,
        &stratavec::progress::Silent,
    )
    .unwrap();
    let names: Vec<&str> = report.stages.iter().map(|s| s.0.as_str()).collect();
    for want in ["graph", "shuffle", "nav", "write"] {
        assert_eq!(names.iter().filter(|&&n| n == want).count(), 1, "{names:?}");
    }
    let sum: f64 = report.stages.iter().map(|s| s.1).sum();
    assert!(
        report.stages.iter().all(|s| s.1 >= 0.0),
        "{:?}",
        report.stages
    );
    assert!(
        sum <= report.total_s + 1e-6,
        "stages {:?} add up to {sum} s, the build took {} s",
        report.stages,
        report.total_s
    );
}
