//! Extended RaBitQ against plain references: the packing against a level
//! array, the kernels against a plain sum, the rescaling against a fine
//! search, the estimate against the decoded vector, and the bound against
//! exact distances of Gaussian and real pairs (≥ 99.9% must hold).

use super::*;
use crate::util::rng::Rng;
use proptest::prelude::*;

fn gaussian(n: usize, dim: usize, seed: u64) -> Vec<f32> {
    let mut rng = Rng::new(seed);
    (0..n * dim).map(|_| rng.normal()).collect()
}

fn l2(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

proptest! {
    #[test]
    fn packed_levels_read_back_and_dot_as_a_plain_sum(
        bits in 1usize..=8,
        dim in 1usize..70,
        seed in 0u64..1000,
    ) {
        let mut rng = Rng::new(seed);
        let levels: Vec<u32> = (0..dim).map(|_| rng.below(1 << bits) as u32).collect();
        let q: Vec<f32> = (0..dim).map(|_| rng.normal()).collect();
        let mut code = vec![0u8; code_bytes(dim, bits)];
        for (i, &k) in levels.iter().enumerate() {
            set_level(&mut code, bits, i, k);
        }
        for (i, &k) in levels.iter().enumerate() {
            prop_assert_eq!(level(&code, bits, i), k);
        }
        let want: f32 = levels.iter().zip(&q).map(|(&k, &x)| k as f32 * x).sum();
        let got = dot_levels(&code, bits, &q);
        prop_assert!((got - want).abs() <= 1e-4 * (1.0 + want.abs()), "{got} vs {want}");
    }
}

/// `⟨ō_n, u⟩` of the levels in `code`.
fn cos_of(code: &[u8], bits: usize, u: &[f32]) -> f32 {
    let h = half(bits);
    let o: Vec<f32> = (0..u.len())
        .map(|i| level(code, bits, i) as f32 - h)
        .collect();
    dot(&o, u) / dot(&o, &o).sqrt()
}

#[test]
fn the_rescaling_is_near_the_best_and_one_bit_is_the_sign_code() {
    let dim = 96;
    let rows = gaussian(50, dim, 7);
    for u in rows.chunks(dim) {
        let n = dot(u, u).sqrt();
        let u: Vec<f32> = u.iter().map(|v| v / n).collect();
        // One bit: the signs, whose cosine is ‖u‖₁/√D.
        let mut code = vec![0u8; code_bytes(dim, 1)];
        let (cos, _) = quantize_unit(&u, 1, &mut code);
        let l1: f32 = u.iter().map(|v| v.abs()).sum();
        assert!((cos - l1 / (dim as f32).sqrt()).abs() < 1e-5);
        for (i, &v) in u.iter().enumerate() {
            assert_eq!(level(&code, 1, i) == 1, v >= 0.0);
        }
        for bits in 2..=8 {
            let mut code = vec![0u8; code_bytes(dim, bits)];
            let (cos, onorm) = quantize_unit(&u, bits, &mut code);
            assert!((cos - cos_of(&code, bits, &u)).abs() < 1e-5);
            let h = half(bits);
            let o2: f32 = (0..dim)
                .map(|i| (level(&code, bits, i) as f32 - h).powi(2))
                .sum();
            assert!((onorm - o2.sqrt()).abs() < 1e-3 * onorm);
            // A search over 4,000 rescalings finds at most 1e-3 more.
            let max = u.iter().fold(0f32, |m, v| m.max(v.abs()));
            let top = ((1u32 << bits) - 1) as f32;
            let best = (1..4000)
                .map(|s| {
                    let t = h / max * (0.25 + 6.0 * s as f32 / 4000.0);
                    let o: Vec<f32> = u
                        .iter()
                        .map(|&v| (v * t + h).round().clamp(0.0, top) - h)
                        .collect();
                    dot(&o, &u) / dot(&o, &o).sqrt()
                })
                .fold(f32::MIN, f32::max);
            assert!(cos >= best - 1e-3, "bits {bits}: {cos} against {best}");
        }
    }
}

/// Share of pairs whose exact distance lies outside the bound, and the
/// mean signed error relative to the mean distance.
fn violations(q: &ExRabitQ, base: &[f32], queries: &[f32]) -> (f64, f64) {
    let dim = q.dim;
    let (mut out, mut total, mut err, mut mean) = (0usize, 0usize, 0f64, 0f64);
    let mut t = QueryTable::default();
    for qv in queries.chunks(dim) {
        q.prepare(qv, &mut t);
        for (i, x) in base.chunks(dim).enumerate() {
            let exact = match q.metric {
                Metric::InnerProduct => -dot(qv, x),
                _ => l2(qv, x),
            };
            let (est, bound) = q.estimate_bound(&t, i as u32, EPSILON0);
            out += usize::from((est - exact).abs() > bound);
            total += 1;
            err += (est - exact) as f64;
            mean += exact.abs() as f64;
        }
    }
    (out as f64 / total as f64, err / mean)
}

#[test]
fn the_bound_holds_on_gaussian_pairs_for_both_metrics() {
    let dim = 64;
    let base = gaussian(1_500, dim, 1);
    let queries = gaussian(40, dim, 2);
    for metric in [Metric::L2, Metric::InnerProduct] {
        for bits in [1, 3, 4, 8] {
            let q = ExRabitQ::train(&base, dim, bits, metric, 3);
            let (out, bias) = violations(&q, &base, &queries);
            assert!(
                out <= 0.001,
                "{metric:?} bits {bits}: {:.4}% outside",
                out * 100.0
            );
            assert!(bias.abs() < 0.01, "{metric:?} bits {bits}: bias {bias}");
        }
    }
}

#[test]
fn the_estimate_is_the_formula_on_the_decoded_vector() {
    let dim = 32;
    let base = gaussian(200, dim, 4);
    let queries = gaussian(5, dim, 5);
    // Three bits runs the float loop, four and eight the integer kernels
    // on a rounded query; one centre, and eight.
    for bits in [3, 4, 8] {
        for centres in [1, 8] {
            formula_holds(&base, &queries, dim, bits, centres);
        }
    }
}

/// The estimate is `‖y‖² + ‖r‖² − 2‖r‖⟨ō, y⟩/⟨ō, r'⟩` with `r = P(o − c) −
/// off`, `y = P(q − c) − off` and `off` the vector's centre's offset as held.
fn formula_holds(base: &[f32], queries: &[f32], dim: usize, bits: usize, centres: usize) {
    let q = ExRabitQ::train_with(base, dim, bits, Metric::L2, 6, centres);
    assert_eq!(q.centre_count(), centres);
    let offsets: Vec<f32> = q
        .centres
        .halves()
        .into_iter()
        .map(stratavec_simd::half::f16_to_f32)
        .collect();
    let cb = code_bytes(dim, bits);
    let mut t = QueryTable::default();
    for qv in queries.chunks(dim) {
        q.prepare(qv, &mut t);
        let qc: Vec<f32> = qv.iter().zip(&q.centre).map(|(a, c)| a - c).collect();
        let qn = dot(&qc, &qc).sqrt();
        let qr: Vec<f32> = q.rotation.rows().map(|r| dot(r, &qc) / qn).collect();
        for i in 0..q.len() {
            let code = &q.codes[i * cb..(i + 1) * cb];
            let o: Vec<f32> = (0..dim)
                .map(|j| level(code, bits, j) as f32 - half(bits))
                .collect();
            let on = dot(&o, &o).sqrt();
            let x = &base[i * dim..(i + 1) * dim];
            let xc: Vec<f32> = x.iter().zip(&q.centre).map(|(a, c)| a - c).collect();
            let off = &offsets[q.factors[i].centre() * dim..][..dim];
            let r: Vec<f32> = q
                .rotation
                .rows()
                .zip(off)
                .map(|(row, o)| dot(row, &xc) - o)
                .collect();
            let rn = dot(&r, &r).sqrt();
            let rr: Vec<f32> = r.iter().map(|v| v / rn).collect();
            // ⟨q − c_i, r⟩ estimated at q − c_i (the code's estimator is
            // linear in the query); ‖q − c_i‖² from the rotated query.
            let y: Vec<f32> = qr.iter().zip(off).map(|(q, o)| qn * q - o).collect();
            let ip = rn * (dot(&o, &y) / on) / (dot(&o, &rr) / on);
            let want = dot(&y, &y) + rn * rn - 2.0 * ip;
            let (got, _) = q.estimate_bound(&t, i as u32, EPSILON0);
            // The i8 query at four bits moves an estimate by ~1e-3 of it;
            // the i16 one at eight bits by far less (`prepare_shorts`).
            let tolerance = if bits == 4 { 1e-2 } else { 1e-3 };
            assert!(
                (got - want).abs() <= tolerance * (1.0 + want.abs()),
                "bits {bits}: {got} vs {want}"
            );
            let mut many = [0f32];
            q.estimate_many(&t, &[i as u32], &mut many);
            assert_eq!(many[0], got);
        }
    }
}

#[test]
fn more_bits_estimate_closer() {
    let dim = 64;
    let base = gaussian(800, dim, 8);
    let queries = gaussian(20, dim, 9);
    let mut t = QueryTable::default();
    let mean_err = |bits| {
        let q = ExRabitQ::train(&base, dim, bits, Metric::L2, 3);
        let mut sum = 0f64;
        for qv in queries.chunks(dim) {
            q.prepare(qv, &mut t);
            for (i, x) in base.chunks(dim).enumerate() {
                sum += (q.estimate_bound(&t, i as u32, 0.0).0 - l2(qv, x)).abs() as f64;
            }
        }
        sum
    };
    let errs: Vec<f64> = (1..=6).map(mean_err).collect();
    for w in errs.windows(2) {
        assert!(w[1] < w[0] * 0.75, "{errs:?}");
    }
}

#[test]
fn round_trip_and_errors_name_the_field() {
    let dim = 16;
    let base = gaussian(100, dim, 10);
    let q = ExRabitQ::train_with(&base, dim, 3, Metric::L2, 1, 4);
    let mut bytes = Vec::new();
    q.write(&mut bytes).unwrap();
    let back = ExRabitQ::read(&mut bytes.as_slice(), 100, dim, Metric::L2).unwrap();
    assert_eq!(back, q);
    assert_eq!(back.centre_count(), 4);
    // A centre count of 0, and a vector's centre past the count.
    let header = 8 + 4 * 4 + 4;
    let mut bad = bytes.clone();
    bad[header..header + 4].copy_from_slice(&0u32.to_le_bytes());
    let e = ExRabitQ::read(&mut bad.as_slice(), 100, dim, Metric::L2).unwrap_err();
    assert!(
        e.to_string().contains("centres is 0, expected 1 to 65536"),
        "{e}"
    );
    let ids = header + 4 + 4 * dim + 4 * dim * dim + 2 * 4 * dim + 16 * 100;
    let mut bad = bytes.clone();
    bad[ids + 2 * 7..ids + 2 * 8].copy_from_slice(&9u16.to_le_bytes());
    let e = ExRabitQ::read(&mut bad.as_slice(), 100, dim, Metric::L2).unwrap_err();
    assert!(
        e.to_string()
            .contains("centre of vector 7 is 9, expected below 4"),
        "{e}"
    );
    let e = ExRabitQ::read(&mut bytes.as_slice(), 101, dim, Metric::L2).unwrap_err();
    assert!(e.to_string().contains("n is 100, expected 101"), "{e}");
    let e = ExRabitQ::read(&mut bytes.as_slice(), 100, 17, Metric::L2).unwrap_err();
    assert!(e.to_string().contains("dim is 16, expected 17"), "{e}");
    let e = ExRabitQ::read(&mut &bytes[..bytes.len() - 1], 100, dim, Metric::L2).unwrap_err();
    assert!(e.to_string().contains("codes"), "{e}");
    // An insert's code is the one a full encode gives.
    let mut grown = q.clone();
    grown.push(&base[..dim]);
    assert_eq!(grown.factors[100], q.factors[0]);
    let cb = code_bytes(dim, 3);
    assert_eq!(grown.codes[100 * cb..], q.codes[..cb]);
}

/// A version 2 file of `q` (one centre): the header without a centre
/// count, factors `[‖o − c‖, multiplier, unit]`, no centre ids.
fn version_2_bytes(q: &ExRabitQ) -> Vec<u8> {
    let mut out = b"STRVXRQ2".to_vec();
    let metric = u32::from(q.metric == Metric::InnerProduct);
    for v in [q.dim as u32, q.bits as u32, metric, q.len() as u32] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&q.eps.to_le_bytes());
    write_f32s(&mut out, &q.centre).unwrap();
    write_f32s(&mut out, &q.rotation.values).unwrap();
    for f in &q.factors {
        let [add, _, scale, err] = f.get();
        let norm = add.sqrt();
        write_f32s(&mut out, &[norm, scale / norm, err]).unwrap();
    }
    out.extend_from_slice(&q.codes);
    out
}

#[test]
fn version_1_and_2_files_read_as_one_centre_and_a_bad_eps_is_named() {
    let dim = 16;
    let base = gaussian(100, dim, 10);
    let mut q = ExRabitQ::train_with(&base, dim, 3, Metric::L2, 1, 1);
    q.eps = 2.5;
    let v2 = version_2_bytes(&q);
    // Version 1: its magic, and no ε₀ after the five header words.
    let header = 8 + 4 * 4;
    let mut v1 = b"STRVXRQ1".to_vec();
    v1.extend_from_slice(&v2[8..header]);
    v1.extend_from_slice(&v2[header + 4..]);
    let mut t = QueryTable::default();
    let mut u = QueryTable::default();
    for (bytes, eps) in [(&v2, 2.5), (&v1, EPSILON0)] {
        let back = ExRabitQ::read(&mut bytes.as_slice(), 100, dim, Metric::L2).unwrap();
        assert_eq!((back.eps, back.centre_count()), (eps, 1));
        assert_eq!(back.codes, q.codes);
        // The same estimates, up to ‖r‖ read as ‖o − c‖ (they differ by
        // the rounded rotation) and the multiplier rounded twice.
        for qv in base.chunks(dim).take(5) {
            q.prepare(qv, &mut t);
            back.prepare(qv, &mut u);
            for i in 0..100 {
                let (a, _) = q.estimate_bound(&t, i, 1.0);
                let (b, _) = back.estimate_bound(&u, i, 1.0);
                assert!((a - b).abs() <= 2e-3 * (1.0 + a.abs()), "{a} vs {b}");
            }
        }
    }
    let mut bad = v2.clone();
    bad[header..header + 4].copy_from_slice(&f32::NAN.to_le_bytes());
    let e = ExRabitQ::read(&mut bad.as_slice(), 100, dim, Metric::L2).unwrap_err();
    assert!(e.to_string().contains("eps is NaN"), "{e}");
}

/// The share of each query's `near` nearest rows of `base` whose exact
/// distance falls outside the estimate's bound at the quantizer's own ε₀.
fn near_violations(q: &ExRabitQ, base: &[f32], queries: &[f32], near: usize) -> f64 {
    near_pairs(q, base, queries, near).0
}

/// [`near_violations`], and the mean width of the bounds at the
/// quantizer's own ε₀.
fn near_pairs(q: &ExRabitQ, base: &[f32], queries: &[f32], near: usize) -> (f64, f64) {
    let dim = q.dim;
    let (mut out, mut total, mut width) = (0usize, 0usize, 0f64);
    let mut t = QueryTable::default();
    for qv in queries.chunks(dim) {
        q.prepare(qv, &mut t);
        let mut d: Vec<(f32, usize)> = base
            .chunks(dim)
            .enumerate()
            .map(|(i, x)| (l2(qv, x), i))
            .collect();
        d.sort_by(|a, b| a.0.total_cmp(&b.0));
        for &(exact, i) in &d[..near] {
            let (est, bound) = q.estimate_bound(&t, i as u32, q.eps);
            out += usize::from((est - exact).abs() > bound);
            width += bound as f64;
            total += 1;
        }
    }
    (out as f64 / total as f64, width / total as f64)
}

#[test]
fn the_measured_eps_holds_on_near_gaussian_pairs() {
    let dim = 64;
    let base = gaussian(4_000, dim, 5);
    let queries = gaussian(100, dim, 6);
    for bits in [2, 4] {
        let q = ExRabitQ::train(&base, dim, bits, Metric::L2, 3);
        let (lo, hi) = super::super::exrabitq_eps::RANGE;
        assert!((lo..=hi).contains(&q.eps), "bits {bits}: eps {}", q.eps);
        let out = near_violations(&q, &base, &queries, 50);
        assert!(
            out <= 0.001,
            "bits {bits} eps {}: {:.4}%",
            q.eps,
            out * 100.0
        );
    }
    // Too little data to measure: the default stands.
    let small = ExRabitQ::train(&base[..30 * dim], dim, 4, Metric::L2, 3);
    assert_eq!(small.eps, EPSILON0);
}

/// wordnet-minilm (20k or full, `STRATAVEC_WORDNET_DIR`): the bound holds
/// on ≥ 99.9% of pairs of its queries and 5,000 of its vectors at the bits
/// the planner tries.
#[test]
fn the_bound_holds_on_real_embeddings() {
    use stratavec_testkit::Need;
    let Some(dir) = std::env::var_os("STRATAVEC_WORDNET_DIR").map(std::path::PathBuf::from) else {
        stratavec_testkit::skipped(
            "the_bound_holds_on_real_embeddings",
            Need::Wordnet,
            "no STRATAVEC_WORDNET_DIR (scripts/wordnet.sh 20k makes it)",
        );
        return;
    };
    let file = crate::data::open(dir.join("base.fbin")).expect("open base.fbin");
    let dim = file.dim();
    let all = file.as_f32().expect("f32 base");
    let base = &all[..5_000 * dim];
    let qfile = crate::data::open(dir.join("query.fbin")).expect("open query.fbin");
    let queries = &qfile.as_f32().expect("f32 queries")[..100 * dim];
    for bits in [2, 4, 8] {
        let q = ExRabitQ::train(base, dim, bits, Metric::L2, 1);
        let (out, bias) = violations(&q, base, queries);
        println!(
            "wordnet bits {bits}: {:.4}% outside, bias {bias:.5}",
            out * 100.0
        );
        assert!(out <= 0.001, "bits {bits}: {:.4}% outside", out * 100.0);
        assert!(bias.abs() < 0.01);
    }
    // The ε₀ measured on the rows (exrabitq_eps) holds on ≥ 99.9% of the
    // pairs a settled refinement decides: each real query's 100 nearest.
    let n = (all.len() / dim).min(40_000);
    let data = &all[..n * dim];
    let queries = &qfile.as_f32().expect("f32 queries")[..200 * dim];
    // With the mean alone and as trained (centres where the rows' bounds
    // came out narrower): the real pairs' bounds are no wider than the
    // mean's beyond the noise.
    let mut widths = vec![];
    for q in [
        ExRabitQ::train_with(data, dim, 4, Metric::L2, 1, 1),
        ExRabitQ::train(data, dim, 4, Metric::L2, 1),
    ] {
        let (out, width) = near_pairs(&q, data, queries, 100);
        let centres = q.centre_count();
        println!(
            "wordnet near pairs, {centres} centres, eps {:.3}: {:.4}% outside, mean bound {width:.5}",
            q.eps,
            out * 100.0
        );
        assert!(q.eps < EPSILON0, "eps {}", q.eps);
        assert!(out <= 0.001, "eps {}: {:.4}% outside", q.eps, out * 100.0);
        widths.push(width);
    }
    assert!(widths[1] <= 1.02 * widths[0], "{widths:?}");
}
