//! Indexes that store their vectors as f16 (`BuildParams::store`): smaller
//! records (more per block), exact distances to the rounded vectors, recall
//! as good as the f32 index's up to the rounding, and clear errors for data
//! f16 cannot hold.

use crate::common;

use common::*;
use stratavec::data::{DType, Metric, Vectors};
use stratavec::layout::shuffle::Shuffle;
use stratavec::progress::Silent;
use stratavec::{build_index, BuildParams};
use stratavec_simd::half::{f16_to_f32, f32_to_f16};

const N: usize = 3000;
const NQ: usize = 60;
const DIM: usize = 40;
const K: usize = 10;
const L: usize = 48;

fn params(profile: &str, metric: Metric, store: Option<DType>) -> BuildParams {
    BuildParams {
        profile: profile.into(),
        shuffle: if profile == "starling" {
            Shuffle::Bnf
        } else {
            Shuffle::None
        },
        store,
        ..small_params(metric)
    }
}

fn rounded(v: &[f32]) -> Vec<f32> {
    v.iter().map(|&x| f16_to_f32(f32_to_f16(x))).collect()
}

fn pages_bytes(dir: &std::path::Path) -> u64 {
    std::fs::metadata(dir.join("pages.bin")).unwrap().len()
}

/// For both profiles and every metric: the manifest says f16, the pages
/// shrink, every reported distance is the exact distance to the f16-rounded
/// base row, and recall stays within 0.02 of the f32 index's.
#[test]
fn f16_indexes_search_like_f32_ones() {
    let tmp = tempdir();
    let (base, queries) = synth(N, NQ, DIM, 21);
    let base16 = rounded(&base);
    for profile in ["diskann", "starling"] {
        for metric in [Metric::L2, Metric::InnerProduct, Metric::Cosine] {
            let d32 = tmp.path().join(format!("{profile}-{metric}-f32"));
            let d16 = tmp.path().join(format!("{profile}-{metric}-f16"));
            build_f32(&d32, &base, DIM, &params(profile, metric, None), 2);
            build_f32(
                &d16,
                &base,
                DIM,
                &params(profile, metric, Some(DType::F16)),
                2,
            );
            let (i32_, i16_) = (open(&d32), open(&d16));
            assert_eq!(i16_.manifest.dtype, DType::F16);
            assert_eq!(i32_.manifest.dtype, DType::F32);
            assert!(
                pages_bytes(&d16) < pages_bytes(&d32),
                "{profile} {metric}: f16 pages {} vs f32 {}",
                pages_bytes(&d16),
                pages_bytes(&d32)
            );
            let gt = gt_f32(&base, &queries, DIM, metric, K);
            let (r32, r16) = (search(&i32_, &queries, K, L), search(&i16_, &queries, K, L));
            check_results(&r32, &base, &queries, DIM, metric);
            // Cosine stores normalised vectors, rounded after normalising.
            let stored: Vec<f32> = if metric == Metric::Cosine {
                let mut v = base.clone();
                v.chunks_mut(DIM).for_each(stratavec::data::normalize_f32);
                rounded(&v)
            } else {
                base16.clone()
            };
            check_results(&r16, &stored, &queries, DIM, metric);
            let (a, b) = (recall_of(&r32, &gt, K), recall_of(&r16, &gt, K));
            eprintln!("{profile} {metric}: recall@10 f32 {a:.4}, f16 {b:.4}");
            assert!(
                b >= a - 0.02,
                "{profile} {metric}: f16 recall {b} vs f32 {a}"
            );
            assert!(b >= 0.85, "{profile} {metric}: f16 recall {b}");
        }
    }
}

/// A starling block holds more f16 records than f32 ones.
#[test]
fn f16_blocks_hold_more_records() {
    let tmp = tempdir();
    let (base, _) = synth(N, 1, 128, 22);
    let (d32, d16) = (tmp.path().join("f32"), tmp.path().join("f16"));
    let p = |store| BuildParams {
        graph_degree: 16,
        complexity: 32,
        ..params("starling", Metric::L2, store)
    };
    build_f32(&d32, &base, 128, &p(None), 2);
    build_f32(&d16, &base, 128, &p(Some(DType::F16)), 2);
    let blocks = |d: &std::path::Path| pages_bytes(d) / 4096 - 1;
    let (b32, b16) = (blocks(&d32), blocks(&d16));
    // 128-d: f32 records of ~550 bytes (7 a block), f16 ~290 (13-14).
    assert!(
        (b16 as f64) < 0.65 * b32 as f64,
        "blocks: f16 {b16}, f32 {b32}"
    );
}

/// Values f16 cannot hold and data that is not float are refused with the
/// row, component, limit and value; nothing is left behind.
#[test]
fn f16_refuses_what_it_cannot_store() {
    let tmp = tempdir();
    let (mut base, _) = synth(500, 1, 8, 23);
    base[37 * 8 + 5] = 70000.0;
    let dir = tmp.path().join("big");
    let build_err = |data: Vectors<'_>, source: &str| {
        let p = params("diskann", Metric::L2, Some(DType::F16));
        let r = build_index(data, source, &dir, &p, 1, &Silent);
        r.map(|_| ()).unwrap_err().to_string()
    };
    let err = build_err(Vectors::f32(&base, 8).unwrap(), "big.fbin");
    assert_mentions(
        &err,
        &["big.fbin", "row 37", "component 5", "65504", "70000", "f16"],
    );
    assert!(!dir.exists(), "a failed build left {}", dir.display());

    let bytes = vec![3u8; 500 * 8];
    let err = build_err(Vectors::u8(&bytes, 8).unwrap(), "small.u8bin");
    assert_mentions(&err, &["store", "f16", "u8"]);
    assert!(!dir.exists());
}

/// Relayout of an f32 diskann index with `store` = f16 writes exactly the
/// pages a starling build with `--store f16` writes; a component f16 cannot
/// hold fails it with the node and component, and nothing is left behind.
#[test]
fn relayout_to_f16_equals_an_f16_starling_build() {
    use stratavec::index::relayout::relayout;
    let tmp = tempdir();
    let (mut base, _) = synth(N, 1, DIM, 24);
    let (d, s, r) = (
        tmp.path().join("d"),
        tmp.path().join("s"),
        tmp.path().join("r"),
    );
    build_f32(&d, &base, DIM, &params("diskann", Metric::L2, None), 2);
    let sp = params("starling", Metric::L2, Some(DType::F16));
    build_f32(&s, &base, DIM, &sp, 2);
    let shuffle = sp.shuffle_params();
    relayout(&d, &r, &shuffle, Some(DType::F16), 2).unwrap();
    for f in ["pages.bin", "map.bin", "codes.bin"] {
        assert!(
            std::fs::read(s.join(f)).unwrap() == std::fs::read(r.join(f)).unwrap(),
            "{f} differs from the f16 starling build's"
        );
    }
    assert_eq!(open(&r).manifest.dtype, DType::F16);
    assert_eq!(open(&r).manifest.build.store, Some(DType::F16));

    // u8 is not a storage type of an f32 index.
    let err = relayout(&d, &tmp.path().join("u8"), &shuffle, Some(DType::U8), 2)
        .unwrap_err()
        .to_string();
    assert_mentions(&err, &["store", "u8", "f32"]);

    base[123 * DIM + 7] = -1e5;
    let big = tmp.path().join("big");
    build_f32(&big, &base, DIM, &params("diskann", Metric::L2, None), 2);
    let out = tmp.path().join("big-f16");
    let err = relayout(&big, &out, &shuffle, Some(DType::F16), 2)
        .unwrap_err()
        .to_string();
    assert_mentions(
        &err,
        &["pages.bin", "node 123", "component 7", "65504", "100000"],
    );
    assert!(!out.exists(), "a failed relayout left {}", out.display());
}
