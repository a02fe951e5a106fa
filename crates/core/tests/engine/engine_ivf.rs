//! The `ivf` profile (paper 002 §6): probing every cluster scores every
//! vector exactly once, so the answer is the exact one, whatever the
//! replication and grouping and whatever reads the records (SSD reads
//! widened to pages, memory tiers); grouping cuts the small reads;
//! replicated ids resolve to their one stored vector; bad parameters are
//! refused by name.

use crate::common;

use common::*;
use stratavec::data::Metric;
use stratavec::layout::ivf_assign::Grouping;
use stratavec::layout::LayoutKind;
use stratavec::{Backend, BuildParams, Index, SearchParams};

const N: usize = 3000;
const NQ: usize = 40;
const DIM: usize = 24;

fn params(replicas: usize, grouping: Grouping) -> BuildParams {
    BuildParams {
        profile: "ivf".into(),
        layout: Some(LayoutKind::Ivf),
        ivf_clusters: Some(30),
        ivf_replicas: replicas,
        ivf_closure: 0.5,
        ivf_grouping: grouping,
        ..small_params(Metric::L2)
    }
}

fn probe(index: &Index, queries: &[f32], nprobe: usize) -> stratavec::BatchResult {
    let p = SearchParams {
        complexity: nprobe,
        ..search_params(10, nprobe)
    };
    index.search_batch(queries, DIM, &p).unwrap()
}

#[test]
fn probing_every_cluster_is_exact_and_grouping_cuts_small_reads() {
    let tmp = tempdir();
    let (base, queries) = synth(N, NQ, DIM, 41);
    let gt = gt_f32(&base, &queries, DIM, Metric::L2, 10);
    let mut small = Vec::new();
    for (replicas, grouping) in [
        (1, Grouping::Primary),
        (4, Grouping::None),
        (4, Grouping::Primary),
        (4, Grouping::Frequency),
    ] {
        let dir = tmp.path().join(format!("r{replicas}-{grouping}"));
        build_f32(&dir, &base, DIM, &params(replicas, grouping), 2);
        for io in [
            Backend::Auto,
            Backend::Buffered,
            Backend::Mmap,
            "simulated:300".parse().unwrap(),
        ] {
            let index = open_with_io(&dir, io);
            assert_eq!(index.profile.name, "ivf");
            let all = probe(&index, &queries, 30);
            assert_eq!(recall_of(&all, &gt, 10), 1.0, "r{replicas} {grouping} {io}");
            check_results(&all, &base, &queries, DIM, Metric::L2);
            // Every vector scored once: no id twice in an answer.
            for ids in id_lists(&all) {
                let mut s = ids.clone();
                s.sort_unstable();
                s.dedup();
                assert_eq!(s.len(), ids.len());
            }
        }
        let index = open(&dir);
        let few = probe(&index, &queries, 10);
        let reads: u64 = few.stats.iter().map(|s| s.small_reads).sum();
        small.push((replicas, grouping, reads, recall_of(&few, &gt, 10)));
    }
    eprintln!("(replicas, grouping, small reads, recall at nprobe 10): {small:?}");
    let get = |r, g| small.iter().find(|s| s.0 == r && s.1 == g).unwrap();
    // Without replication and grouped by primary: a cluster is its group.
    assert_eq!(get(1, Grouping::Primary).2, 0);
    // §6.2: the greedy issues far fewer small reads than id order.
    assert!(
        get(4, Grouping::Frequency).2 * 5 < get(4, Grouping::None).2,
        "{small:?}"
    );
    // Replication widens what a probe sees.
    assert!(
        get(4, Grouping::Frequency).3 >= get(1, Grouping::Primary).3,
        "{small:?}"
    );
}

/// IVF-PQ (`ivf_codes`): re-ranking every probed member is the plain
/// cluster search's answer exactly (each member scored once, whatever the
/// replication); at the default factor a query reads 4·k vectors, no
/// more, and finds nearly as much; codes and members are charged to RAM.
#[test]
fn ivf_pq_reranks_the_best_members_and_all_of_them_is_exact() {
    let tmp = tempdir();
    let (base, queries) = synth(N, NQ, DIM, 43);
    let gt = gt_f32(&base, &queries, DIM, Metric::L2, 10);
    for replicas in [1, 4] {
        let dir = tmp.path().join(format!("pq-r{replicas}"));
        let p = BuildParams {
            ivf_codes: true,
            pq_bytes: 8,
            pq_sample: N,
            ..params(replicas, Grouping::Frequency)
        };
        build_f32(&dir, &base, DIM, &p, 2);
        let index = open(&dir);
        let mem = index.memory();
        assert!(
            mem.get("codes") >= N * 8 && mem.get("members") >= 4 * N,
            "{mem}"
        );
        let with = |nprobe: usize, factor: f32| {
            let p = SearchParams {
                complexity: nprobe,
                rerank_factor: factor,
                ..search_params(10, nprobe)
            };
            index.search_batch(&queries, DIM, &p).unwrap()
        };
        for nprobe in [10, 20] {
            let plain = with(nprobe, 0.0);
            // 1e6 x k is more than any probe holds: every member re-ranked.
            let all = with(nprobe, 1e6);
            assert_eq!(
                id_lists(&all),
                id_lists(&plain),
                "r{replicas} nprobe {nprobe}"
            );
            check_results(&all, &base, &queries, DIM, Metric::L2);
            let best = with(nprobe, 4.0);
            assert_eq!(best.failed(), 0);
            check_results(&best, &base, &queries, DIM, Metric::L2);
            for s in &best.stats {
                assert!(s.reads <= 40 && s.exact <= 40, "{s:?}");
                assert_eq!(s.small_reads, 0);
            }
            let (rb, rp) = (recall_of(&best, &gt, 10), recall_of(&plain, &gt, 10));
            assert!(rb >= rp - 0.1, "r{replicas} nprobe {nprobe}: {rb} vs {rp}");
            // (Reads are not fewer here: a 24-d group of 100 is one read.)
            assert!(best.total().exact * 10 < plain.total().exact);
        }
    }
    // A bad factor is refused by name.
    let index = open(&tmp.path().join("pq-r1"));
    let p = SearchParams {
        rerank_factor: -1.0,
        ..search_params(10, 10)
    };
    let e = index
        .search_batch(&queries, DIM, &p)
        .unwrap_err()
        .to_string();
    assert_mentions(&e, &["rerank_factor", "-1"]);
}

#[test]
fn bad_ivf_parameters_are_refused_by_name() {
    let tmp = tempdir();
    let (base, _) = synth(500, 1, DIM, 5);
    for (p, words) in [
        (
            BuildParams {
                ivf_replicas: 9,
                ..params(1, Grouping::Frequency)
            },
            vec!["ivf_replicas", "1..=8", "9"],
        ),
        (
            BuildParams {
                ivf_clusters: Some(0),
                ..params(1, Grouping::Frequency)
            },
            vec!["ivf_clusters", "0"],
        ),
        (
            BuildParams {
                ivf_sample_nprobe: 0,
                ..params(1, Grouping::Frequency)
            },
            vec!["ivf_sample_nprobe", "at least 1", "0"],
        ),
        (
            BuildParams {
                metric: Metric::InnerProduct,
                ..params(1, Grouping::Frequency)
            },
            vec!["metric", "ivf"],
        ),
    ] {
        let e = stratavec::build_index(
            stratavec::data::Vectors::f32(&base, DIM).unwrap(),
            "test data",
            &tmp.path().join("x"),
            &p,
            1,
            &stratavec::progress::Silent,
        )
        .unwrap_err()
        .to_string();
        assert_mentions(&e, &words);
        assert!(!tmp.path().join("x").exists());
    }
}

/// Byte vectors are stored as bytes (the records once held their f32
/// bytes cut to a quarter of the row): probing every cluster is exact.
#[test]
fn u8_and_i8_vectors_probed_in_full_are_exact() {
    let tmp = tempdir();
    let (base_f, queries_f) = synth(800, 20, DIM, 44);
    let lo = base_f.iter().copied().fold(f32::INFINITY, f32::min);
    let hi = base_f.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let to_byte = |x: f32| ((x - lo) / (hi - lo) * 255.0).round().clamp(0.0, 255.0) as u8;
    let base: Vec<u8> = base_f.iter().map(|&x| to_byte(x)).collect();
    let queries: Vec<u8> = queries_f.iter().map(|&x| to_byte(x)).collect();
    let signed = |v: &[u8]| -> Vec<i8> { v.iter().map(|&x| (x as i16 - 128) as i8).collect() };
    let (base_i, queries_i) = (signed(&base), signed(&queries));
    let cases = [
        (
            "u8",
            stratavec::data::Vectors::u8(&base, DIM).unwrap(),
            stratavec::data::Vectors::u8(&queries, DIM).unwrap(),
        ),
        (
            "i8",
            stratavec::data::Vectors::i8(&base_i, DIM).unwrap(),
            stratavec::data::Vectors::i8(&queries_i, DIM).unwrap(),
        ),
    ];
    for (name, b, q) in cases {
        let dir = tmp.path().join(name);
        let gt = stratavec::data::brute_force_knn(&b, &q, Metric::L2, 10, 2).unwrap();
        stratavec::build_index(
            b,
            name,
            &dir,
            &params(2, Grouping::Frequency),
            2,
            &stratavec::progress::Silent,
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        let index = open(&dir);
        assert_eq!(index.manifest.dtype.as_str(), name);
        let qf: Vec<f32> = match name {
            "u8" => queries.iter().map(|&x| x as f32).collect(),
            _ => queries_i.iter().map(|&x| x as f32).collect(),
        };
        let all = probe(&index, &qf, 30);
        assert_eq!(recall_of(&all, &gt, 10), 1.0, "{name}");
    }
}
