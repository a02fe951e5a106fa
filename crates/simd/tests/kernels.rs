//! Every supported level against f64 / exact-integer references.

use proptest::prelude::*;
use stratavec_simd::{Kernels, Level};

/// Kernel sets this CPU can run (always at least scalar).
fn levels() -> Vec<&'static Kernels> {
    Level::ALL.iter().filter_map(|l| l.kernels()).collect()
}

/// The bits of each float: answers that must be the same, compared exactly.
fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// `got` is within 1e-4 * sum|terms| + 1e-5 of the f64 reference.
fn close(got: f32, want: f64, abs_terms: f64) -> bool {
    (got as f64 - want).abs() <= 1e-4 * abs_terms + 1e-5
}

fn l2_ref(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| (x as f64 - y as f64).powi(2))
        .sum()
}

fn dot_ref(a: &[f32], b: &[f32]) -> (f64, f64) {
    let terms = a.iter().zip(b).map(|(&x, &y)| x as f64 * y as f64);
    (terms.clone().sum(), terms.map(f64::abs).sum())
}

fn int_ref<T: Copy + Into<i64>>(a: &[T], b: &[T]) -> f32 {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| (x.into() - y.into()).pow(2) as u64)
        .sum::<u64>() as f32
}

fn adc_ref(table: &[f32], code: &[u8]) -> (f64, f64) {
    let terms = code
        .iter()
        .enumerate()
        .map(|(j, &c)| table[j * 256 + c as usize] as f64);
    (terms.clone().sum(), terms.map(f64::abs).sum())
}

fn f32_pair() -> impl Strategy<Value = (Vec<f32>, Vec<f32>)> {
    (0usize..1100).prop_flat_map(|n| {
        (
            prop::collection::vec(-100.0f32..100.0, n),
            prop::collection::vec(-100.0f32..100.0, n),
        )
    })
}

fn byte_pair() -> impl Strategy<Value = (Vec<u8>, Vec<u8>)> {
    (0usize..1100).prop_flat_map(|n| {
        (
            prop::collection::vec(any::<u8>(), n),
            prop::collection::vec(any::<u8>(), n),
        )
    })
}

/// (m, table, n codes of m bytes).
fn pq_case() -> impl Strategy<Value = (usize, Vec<f32>, Vec<u8>, usize)> {
    (0usize..100, 0usize..20).prop_flat_map(|(m, n)| {
        (
            Just(m),
            prop::collection::vec(-50.0f32..50.0, 256 * m),
            prop::collection::vec(any::<u8>(), m * n),
            Just(n),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn f32_kernels_match_reference((a, b) in f32_pair()) {
        let want_l2 = l2_ref(&a, &b);
        let (want_dot, dot_abs) = dot_ref(&a, &b);
        let (want_norm, _) = dot_ref(&a, &a);
        for k in levels() {
            let got = (k.l2_sq_f32)(&a, &b);
            prop_assert!(close(got, want_l2, want_l2), "{:?} l2 {got} vs {want_l2}", k.level);
            let got = (k.dot_f32)(&a, &b);
            prop_assert!(close(got, want_dot, dot_abs), "{:?} dot {got} vs {want_dot}", k.level);
            let got = (k.norm_sq_f32)(&a);
            prop_assert!(close(got, want_norm, want_norm), "{:?} norm {got}", k.level);
        }
    }

    /// f16 kernels: the stored vector is `b` rounded to f16; every level
    /// matches the f64 distance to the decoded halves, and the decoded
    /// halves are within 2^-11 (relative) of `b`.
    #[test]
    fn f16_kernels_match_reference((a, b) in f32_pair()) {
        let mut stored = vec![0u8; 2 * b.len()];
        stratavec_simd::half::encode_f16(&b, &mut stored);
        let decoded: Vec<f32> = stored
            .chunks_exact(2)
            .map(|h| stratavec_simd::half::f16_to_f32(u16::from_le_bytes([h[0], h[1]])))
            .collect();
        for (&x, &y) in b.iter().zip(&decoded) {
            prop_assert!((x - y).abs() <= x.abs() * 2f32.powi(-11) + 2f32.powi(-25), "{x} -> {y}");
        }
        let want_l2 = l2_ref(&a, &decoded);
        let (want_dot, dot_abs) = dot_ref(&a, &decoded);
        for k in levels() {
            let got = (k.l2_sq_f16)(&a, &stored);
            prop_assert!(close(got, want_l2, want_l2), "{:?} l2 {got} vs {want_l2}", k.level);
            let got = (k.dot_f16)(&a, &stored);
            prop_assert!(close(got, want_dot, dot_abs), "{:?} dot {got} vs {want_dot}", k.level);
        }
    }

    /// The f16 matrix–vector product: every level's row equals the f64
    /// dot product of `x` with the decoded row (row counts around the
    /// kernels' 4-row blocks, widths around their 16/32-lane steps).
    #[test]
    fn matvec_f16_matches_reference(
        (x, m, rows) in (0usize..100, 0usize..11).prop_flat_map(|(n, rows)| (
            prop::collection::vec(-10.0f32..10.0, n),
            prop::collection::vec(-10.0f32..10.0, n * rows),
            Just(rows),
        ))
    ) {
        let mut stored = vec![0u8; 2 * m.len()];
        stratavec_simd::half::encode_f16(&m, &mut stored);
        let decoded: Vec<f32> = stored
            .chunks_exact(2)
            .map(|h| stratavec_simd::half::f16_to_f32(u16::from_le_bytes([h[0], h[1]])))
            .collect();
        for k in levels() {
            let mut out = vec![f32::NAN; rows];
            (k.matvec_f16)(&stored, &x, &mut out);
            for (r, &got) in out.iter().enumerate() {
                let row = &decoded[r * x.len()..(r + 1) * x.len()];
                let (want, abs) = dot_ref(&x, row);
                prop_assert!(close(got, want, abs), "{:?} row {r}: {got} vs {want}", k.level);
            }
        }
    }

    /// Several vectors at once: every level's answer for each vector is
    /// bit for bit its `matvec_f16` answer (groups around the kernels'
    /// 8-vector passes, rows around the 4-row blocks, widths around the
    /// 16/32-lane steps).
    #[test]
    fn matmat_f16_equals_matvec_exactly(
        (xs, m, n, rows) in (1usize..80, 0usize..11, 1usize..20).prop_flat_map(|(n, rows, v)| (
            prop::collection::vec(-10.0f32..10.0, n * v),
            prop::collection::vec(-10.0f32..10.0, n * rows),
            Just(n),
            Just(rows),
        ))
    ) {
        let mut stored = vec![0u8; 2 * m.len()];
        stratavec_simd::half::encode_f16(&m, &mut stored);
        for k in levels() {
            let mut out = vec![f32::NAN; xs.len() / n * rows];
            (k.matmat_f16)(&stored, &xs, n, &mut out);
            for (j, x) in xs.chunks_exact(n).enumerate() {
                let mut one = vec![f32::NAN; rows];
                (k.matvec_f16)(&stored, x, &mut one);
                let got = &out[j * rows..(j + 1) * rows];
                prop_assert!(
                    got.iter().zip(&one).all(|(a, b)| a.to_bits() == b.to_bits()),
                    "{:?} vector {j}: {got:?} vs {one:?}", k.level
                );
            }
        }
    }

    #[test]
    fn byte_kernels_are_exact((a, b) in byte_pair()) {
        let (ia, ib): (Vec<i8>, Vec<i8>) =
            (a.iter().map(|&x| x as i8).collect(), b.iter().map(|&x| x as i8).collect());
        let (want_u8, want_i8) = (int_ref(&a, &b), int_ref(&ia, &ib));
        for k in levels() {
            prop_assert_eq!((k.l2_sq_u8)(&a, &b), want_u8, "{:?} u8", k.level);
            prop_assert_eq!((k.l2_sq_i8)(&ia, &ib), want_i8, "{:?} i8", k.level);
        }
    }

    #[test]
    fn pq_kernels_match_reference((m, table, codes, n) in pq_case()) {
        for k in levels() {
            let mut out = vec![f32::NAN; n];
            (k.pq_adc_batch)(&table, &codes, m, &mut out);
            for (i, &got_batch) in out.iter().enumerate() {
                let code = &codes[i * m..(i + 1) * m];
                let (want, abs) = adc_ref(&table, code);
                let got = (k.pq_adc)(&table, code);
                prop_assert!(close(got, want, abs), "{:?} adc {got} vs {want}", k.level);
                prop_assert!(close(got_batch, want, abs), "{:?} batch {got_batch}", k.level);
            }
        }
    }

    /// Every level quantizes a table to the same u16 values, each within
    /// half a step of the float it stands for.
    #[test]
    fn quantize_u16_is_identical_at_every_level_and_within_half_a_step(
        src in prop::collection::vec(-1e4f32..1e4, 0..3000),
        constant in any::<bool>(),
    ) {
        let src = if constant { vec![src.first().copied().unwrap_or(3.5); src.len()] } else { src };
        let (mut want, mut got) = (vec![0u16; src.len()], vec![0u16; src.len()]);
        let (off, scale) = (Level::Scalar.kernels().unwrap().quantize_u16)(&src, &mut want);
        for &x in &src {
            prop_assert!(off <= x);
        }
        for (&x, &q) in src.iter().zip(&want) {
            let back = off as f64 + scale as f64 * q as f64;
            // Half a step, plus f32 rounding of x - offset and of the scaling.
            let slack = 1e-6 * (x.abs() as f64 + off.abs() as f64);
            prop_assert!((back - x as f64).abs() <= 0.5 * scale as f64 * (1.0 + 1e-3) + slack,
                "{x} -> {q} -> {back} (offset {off}, scale {scale})");
        }
        // A table with two distinct values spans the whole u16 range (a
        // random one of one element, or of equal ones, is constant too).
        if src.iter().any(|&x| x != src[0]) {
            prop_assert_eq!(*want.iter().max().unwrap(), 65535);
            prop_assert_eq!(*want.iter().min().unwrap(), 0);
        }
        for k in levels() {
            got.fill(7);
            let r = (k.quantize_u16)(&src, &mut got);
            prop_assert_eq!(r, (off, scale), "{:?}", k.level);
            prop_assert_eq!(&got, &want, "{:?}", k.level);
        }
    }

    /// The same for whole batches of 32 rows with m a multiple of 8, where
    /// the AVX-512 level looks rows up in registers instead of gathering:
    /// batch and tail, table entries up to u16::MAX, rows anywhere.
    #[test]
    fn pq_rows_u16_in_register_batches_are_exact_sums(
        m8 in 1usize..13,
        n in 1usize..300,
        count in 0usize..140,
        seed in any::<u64>(),
    ) {
        let m = 8 * m8;
        let mut x = seed | 1;
        let mut next = move || { x ^= x << 13; x ^= x >> 7; x ^= x << 17; x };
        let mut table: Vec<u16> = (0..256 * m).map(|_| next() as u16).collect();
        for j in 0..m {
            table[j * 256 + 255] = u16::MAX;
        }
        table.push(u16::MAX);
        let codes: Vec<u8> = (0..m * n).map(|_| next() as u8).collect();
        let ids: Vec<u32> = (0..count).map(|_| (next() % n as u64) as u32).collect();
        let mut reference = vec![0u32; ids.len()];
        (Level::Scalar.kernels().unwrap().pq_adc_rows_u16)(&table, &codes, m, &ids, &mut reference);
        for k in levels() {
            let mut out = vec![u32::MAX; ids.len()];
            (k.pq_adc_rows_u16)(&table, &codes, m, &ids, &mut out);
            prop_assert_eq!(&out, &reference, "{:?}", k.level);
        }
    }

    /// u16 estimates are exact integer sums at every level, for rows out of
    /// order and repeated, with the table's padding entry as large as can be
    /// (a gather that kept the neighbour entry's bits would show it).
    #[test]
    fn pq_rows_u16_are_exact_sums(
        (m, n) in (0usize..100, 1usize..20),
        seed in any::<u64>(),
        stride in 1usize..17,
    ) {
        let mut x = seed | 1;
        let mut next = move || { x ^= x << 13; x ^= x >> 7; x ^= x << 17; x };
        let mut table: Vec<u16> = (0..256 * m).map(|_| next() as u16).collect();
        table.push(u16::MAX);
        let codes: Vec<u8> = (0..m * n).map(|_| next() as u8).collect();
        let ids: Vec<u32> = (0..2 * n).map(|i| ((i * stride + 3) % n) as u32).collect();
        for k in levels() {
            let mut out = vec![u32::MAX; ids.len()];
            (k.pq_adc_rows_u16)(&table, &codes, m, &ids, &mut out);
            for (&id, &got) in ids.iter().zip(&out) {
                let row = &codes[id as usize * m..(id as usize + 1) * m];
                let want: u32 = row.iter().enumerate().map(|(j, &c)| table[j * 256 + c as usize] as u32).sum();
                prop_assert_eq!(got, want, "{:?} row {}", k.level, id);
            }
        }
        let mut out = vec![0u32; ids.len()];
        stratavec_simd::pq_adc_rows_u16(&table, &codes, m, &ids, &mut out);
        let mut reference = vec![0u32; ids.len()];
        (Level::Scalar.kernels().unwrap().pq_adc_rows_u16)(&table, &codes, m, &ids, &mut reference);
        prop_assert_eq!(&out, &reference);
        // A prefetch is only a hint: rows past the codes (a search's guess
        // may name any id) are skipped, and nothing it does changes a sum.
        let past: Vec<u32> = ids.iter().map(|&i| i + n as u32).chain([u32::MAX]).collect();
        stratavec_simd::prefetch_rows(&codes, m, &past);
        stratavec_simd::prefetch_rows(&codes, m, &ids);
        let mut again = vec![0u32; ids.len()];
        stratavec_simd::pq_adc_rows_u16(&table, &codes, m, &ids, &mut again);
        prop_assert_eq!(again, reference);
    }
}

#[test]
#[should_panic(expected = "256 * m + 1")]
fn u16_table_without_padding_panics() {
    let mut out = [0u32; 1];
    stratavec_simd::pq_adc_rows_u16(&[0u16; 512], &[0, 0], 2, &[0], &mut out);
}

#[test]
#[should_panic(expected = "outside the codes")]
fn u16_rows_out_of_bounds_panic() {
    let mut out = [0u32; 1];
    stratavec_simd::pq_adc_rows_u16(&[0u16; 513], &[0, 0], 2, &[1], &mut out);
}

#[test]
fn empty_and_single_element() {
    for k in levels() {
        assert_eq!((k.l2_sq_f32)(&[], &[]), 0.0);
        assert_eq!((k.dot_f32)(&[], &[]), 0.0);
        assert_eq!((k.norm_sq_f32)(&[]), 0.0);
        assert_eq!((k.l2_sq_u8)(&[], &[]), 0.0);
        assert_eq!((k.l2_sq_i8)(&[], &[]), 0.0);
        assert_eq!((k.pq_adc)(&[], &[]), 0.0);
        let mut out = [1.0f32; 3];
        (k.pq_adc_batch)(&[], &[], 0, &mut out);
        assert_eq!(out, [0.0; 3]);

        assert_eq!((k.l2_sq_f32)(&[1.5], &[-0.5]), 4.0);
        assert_eq!((k.dot_f32)(&[1.5], &[-2.0]), -3.0);
        assert_eq!((k.norm_sq_f32)(&[3.0]), 9.0);
        assert_eq!((k.l2_sq_u8)(&[7], &[2]), 25.0);
        assert_eq!((k.l2_sq_i8)(&[-3], &[4]), 49.0);
        let mut table = vec![0.0f32; 256];
        table[200] = 2.5;
        assert_eq!((k.pq_adc)(&table, &[200]), 2.5);
    }
}

#[test]
fn byte_extremes_do_not_overflow() {
    for n in [4096, 4096 + 37, 100_000] {
        let (zeros, full) = (vec![0u8; n], vec![255u8; n]);
        let (lo, hi) = (vec![i8::MIN; n], vec![i8::MAX; n]);
        let want_u8 = (n as u64 * 255 * 255) as f32;
        let want_i8 = (n as u64 * 255 * 255) as f32;
        for k in levels() {
            assert_eq!((k.l2_sq_u8)(&zeros, &full), want_u8, "{:?} n={n}", k.level);
            assert_eq!((k.l2_sq_u8)(&full, &zeros), want_u8, "{:?} n={n}", k.level);
            assert_eq!((k.l2_sq_i8)(&lo, &hi), want_i8, "{:?} n={n}", k.level);
            assert_eq!((k.l2_sq_i8)(&hi, &lo), want_i8, "{:?} n={n}", k.level);
        }
    }
}

#[test]
fn every_tail_length_of_f32() {
    // Lengths around every unroll boundary, with integer values so the sums
    // are exact in f32 at every level.
    for n in 0..200 {
        let a: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
        let b: Vec<f32> = (0..n).map(|i| (i % 5) as f32 - 2.0).collect();
        let want_l2: f32 = a.iter().zip(&b).map(|(x, y)| (x - y) * (x - y)).sum();
        let want_dot: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        for k in levels() {
            assert_eq!((k.l2_sq_f32)(&a, &b), want_l2, "{:?} n={n}", k.level);
            assert_eq!((k.dot_f32)(&a, &b), want_dot, "{:?} n={n}", k.level);
        }
    }
}

#[test]
fn unaligned_inputs() {
    let a: Vec<f32> = (0..400).map(|i| i as f32 * 0.25).collect();
    let b: Vec<f32> = (0..400).map(|i| 100.0 - i as f32 * 0.5).collect();
    let bytes: Vec<u8> = (0..400).map(|i| (i * 37 % 256) as u8).collect();
    for k in levels() {
        for off in 1..4 {
            let (x, y) = (&a[off..off + 384], &b[off + 1..off + 385]);
            let want = l2_ref(x, y);
            assert!(
                close((k.l2_sq_f32)(x, y), want, want),
                "{:?} off={off}",
                k.level
            );
            let (x, y) = (&bytes[off..off + 383], &bytes[..383]);
            assert_eq!((k.l2_sq_u8)(x, y), int_ref(x, y), "{:?} off={off}", k.level);
        }
    }
}

#[test]
#[should_panic]
fn mismatched_lengths_panic() {
    stratavec_simd::l2_sq_f32(&[1.0, 2.0], &[1.0]);
}

#[test]
#[should_panic]
fn wrong_table_size_panics() {
    stratavec_simd::pq_adc(&[0.0; 255], &[0]);
}

#[test]
fn dispatcher_uses_a_supported_level() {
    let name = stratavec_simd::kernel_name();
    assert!(
        Level::ALL.iter().any(|l| name.starts_with(l.name())),
        "{name}"
    );
    let a = [1.0f32, 2.0, 3.0];
    assert_eq!(stratavec_simd::l2_sq_f32(&a, &[0.0; 3]), 14.0);
    assert_eq!(stratavec_simd::norm_sq_f32(&a), 14.0);
    assert_eq!(stratavec_simd::dot_f32(&a, &a), 14.0);
}

/// Guards against a silently narrower dispatch on the development machine:
/// when the CPU has AVX-512 and nothing is forced, that is what must run.
#[test]
fn dispatcher_picks_best_level_when_not_forced() {
    if std::env::var_os("STRATAVEC_SIMD").is_none() {
        assert_eq!(stratavec_simd::kernel_name(), Level::best().name());
    }
}

/// Runs this test binary again with `STRATAVEC_SIMD` set (it is read once per
/// process) and checks the name the child reports.
#[test]
fn env_var_forces_level() {
    let best = Level::best();
    let mut cases = vec![
        ("scalar", "scalar".to_string()),
        (
            "bogus",
            format!("{} (STRATAVEC_SIMD=bogus not recognised", best.name()),
        ),
    ];
    for (request, level) in [("avx2", Level::Avx2), ("avx512", Level::Avx512)] {
        let want = if level.is_supported() {
            level.name().to_string()
        } else {
            format!("{} (STRATAVEC_SIMD={request} not supported", best.name())
        };
        cases.push((request, want));
    }
    let exe = std::env::current_exe().unwrap();
    for (request, want) in cases {
        let out = std::process::Command::new(&exe)
            .args([
                "--exact",
                "env_child_reports_name",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("STRATAVEC_SIMD", request)
            .env("STRATAVEC_SIMD_CHILD", "1")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{request}: {stdout}");
        let line = stdout
            .lines()
            .find_map(|l| l.split_once("KERNEL_NAME=").map(|(_, name)| name))
            .unwrap_or("");
        assert!(
            line.starts_with(&want),
            "{request}: got {line:?}, want {want:?}"
        );
    }
}

#[test]
fn env_child_reports_name() {
    if std::env::var_os("STRATAVEC_SIMD_CHILD").is_some() {
        println!("KERNEL_NAME={}", stratavec_simd::kernel_name());
        // The forced kernels must still be right.
        assert_eq!(stratavec_simd::l2_sq_u8(&[0; 100], &[255; 100]), 6502500.0);
    }
}

proptest::proptest! {
    /// Every level's transposed kernel equals a plain loop over centroids.
    #[test]
    fn l2_sq_transposed_matches_reference(dim in 0usize..20, k in 0usize..300, seed in 0u32..1000) {
        let val = |i: usize| ((i as u32).wrapping_mul(2654435761).wrapping_add(seed) % 2000) as f32 / 100.0 - 10.0;
        let point: Vec<f32> = (0..dim).map(val).collect();
        let ct: Vec<f32> = (0..dim * k).map(|i| val(i + 7777)).collect();
        for kern in levels() {
            let mut out = vec![f32::NAN; k];
            (kern.l2_sq_transposed)(&point, &ct, &mut out);
            for c in 0..k {
                let want: f64 = (0..dim).map(|j| { let t = point[j] as f64 - ct[j * k + c] as f64; t * t }).sum();
                proptest::prop_assert!((out[c] as f64 - want).abs() <= 1e-4 * (1.0 + want), "{:?} c={} {} vs {}", kern.level, c, out[c], want);
            }
        }
    }
}

proptest::proptest! {
    /// Every level's nearest-centroid kernel picks a centroid at the minimum
    /// distance (the first on ties), for k with and without a 16-lane tail.
    #[test]
    fn nearest_transposed_matches_reference(dim in 1usize..12, k in 1usize..300, seed in 0u32..1000, ties in proptest::bool::ANY) {
        let val = |i: usize| ((i as u32).wrapping_mul(2654435761).wrapping_add(seed) % 97) as f32 / 10.0;
        let point: Vec<f32> = (0..dim).map(val).collect();
        // With `ties`, centroids repeat every 7, so equal minima occur.
        let ct: Vec<f32> = (0..dim * k).map(|i| { let c = i % k; let c = if ties { c % 7 } else { c }; val(c * 31 + i / k + 5) }).collect();
        for kern in levels() {
            let mut scratch = vec![0.0; k];
            let got = (kern.nearest_transposed)(&point, &ct, &mut scratch);
            let mut want = vec![0.0; k];
            (kern.l2_sq_transposed)(&point, &ct, &mut want);
            let first_min = (0..k).fold(0, |b, c| if want[c] < want[b] { c } else { b });
            proptest::prop_assert_eq!(got, first_min, "{:?}", kern.level);
        }
    }
}

mod f16_matrix {
    use proptest::prelude::*;
    use stratavec_simd::F16Matrix;

    /// f64 product of the f16 matrix with each vector, and Σ|m_i x_i| a row.
    fn reference(m: &F16Matrix, xs: &[f32]) -> Vec<(f64, f64)> {
        let n = m.cols();
        xs.chunks_exact(n)
            .flat_map(|x| {
                (0..m.rows()).map(move |r| {
                    (0..n).fold((0f64, 0f64), |(s, a), d| {
                        let p = m.get(r, d) as f64 * x[d] as f64;
                        (s + p, a + p.abs())
                    })
                })
            })
            .collect()
    }

    fn matrix(rows: usize, n: usize, seed: u32) -> Vec<u8> {
        let values: Vec<f32> = (0..rows * n)
            .map(|i| ((i as u32).wrapping_mul(2_654_435_761) ^ seed) as f32 / u32::MAX as f32 - 0.5)
            .collect();
        let mut bytes = vec![0u8; values.len() * 2];
        stratavec_simd::half::encode_f16(&values, &mut bytes);
        bytes
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        /// The f16 kernels are within 2^-14 of Σ|m_i x_i| of the exact
        /// product of the f16 values, the tiles (where this process has
        /// AMX; the matrix in bf16) within 2^-8 more, and a vector's answers are
        /// the same bits alone as in its group (groups around the tiles' 16
        /// vectors; rows and columns around their 16 and 32).
        #[test]
        fn products_are_within_their_bounds_and_grouping_changes_no_bit(
            rows in 1usize..50, n in 1usize..100, vectors in 1usize..20, seed: u32,
        ) {
            let xs: Vec<f32> = (0..vectors * n)
                .map(|i| (((i as u32) ^ seed).wrapping_mul(40503) % 2001) as f32 / 1000.0 - 1.0)
                .collect();
            let bytes = matrix(rows, n, seed);
            for m in [
                F16Matrix::from_f16_bytes_on_tiles(bytes.clone(), n),
                F16Matrix::from_f16_bytes(bytes.clone(), n),
            ] {
                let mut out = vec![0f32; vectors * rows];
                m.apply_many(&xs, &mut out);
                let bound = f64::from(m.error_bound());
                prop_assert_eq!(bound, if m.on_amx() { 2f64.powi(-8) + 2f64.powi(-14) } else { 2f64.powi(-14) });
                for (got, (want, mag)) in out.iter().zip(reference(&m, &xs)) {
                    prop_assert!((*got as f64 - want).abs() <= mag * bound + 1e-30,
                        "amx {}: {got} against {want} (magnitude {mag})", m.on_amx());
                }
                for (x, o) in xs.chunks_exact(n).zip(out.chunks_exact(rows)) {
                    let mut one = vec![0f32; rows];
                    m.apply(x, &mut one);
                    prop_assert_eq!(super::bits(&one), super::bits(o));
                }
            }
        }
    }

    /// Says which holding ran: a machine without AMX checked the f16 one
    /// twice.
    #[test]
    fn reports_whether_tiles_ran() {
        let m = F16Matrix::from_f16_bytes_on_tiles(matrix(3, 5, 1), 5);
        assert!(!F16Matrix::from_f16_bytes(matrix(3, 5, 1), 5).on_amx());
        assert_eq!(m.on_amx(), stratavec_simd::amx::active());
        if !m.on_amx() {
            stratavec_testkit::skipped(
                "reports_whether_tiles_ran: AMX tiles",
                stratavec_testkit::Need::Hardware,
                "no AMX-BF16 here, refused, or STRATAVEC_AMX=off; the f16 holding was tested",
            );
        }
        // 3 × 5 f16 values, and one block of tiles (16 rows × 32 columns
        // of bf16) where they ran.
        let want = 3 * 5 * 2 + if m.on_amx() { 16 * 32 * 2 } else { 0 };
        assert_eq!(m.resident_bytes(), want);
    }
}

mod i8_matrix {
    use super::levels;
    use proptest::prelude::*;
    use stratavec_simd::I8Matrix;

    fn reference(m: &[i8], xs: &[u8], n: usize) -> Vec<i32> {
        let rows = m.len() / n;
        xs.chunks_exact(n)
            .flat_map(|x| {
                m.chunks_exact(n).map(move |r| {
                    r.iter()
                        .zip(x)
                        .map(|(&a, &b)| i32::from(a) * i32::from(b))
                        .sum()
                })
            })
            .take(xs.len() / n * rows)
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Every level's integer product equals the plain sum exactly,
        /// including at the extremes where a saturating pair sum would
        /// show (-128 against 127, which `extreme` makes common).
        #[test]
        fn u8i8_products_are_exact_at_every_level(
            rows in 1usize..40, n in 1usize..130, vectors in 1usize..11,
            seed: u32, extreme: bool,
        ) {
            let pick = |i: usize, salt: u32| ((i as u32).wrapping_mul(2_654_435_761) ^ seed ^ salt).rotate_left(7);
            let m: Vec<i8> = (0..rows * n)
                .map(|i| if extreme && pick(i, 1) % 2 == 0 { -128 } else { pick(i, 2) as u8 as i8 })
                .collect();
            let xs: Vec<u8> = (0..vectors * n)
                .map(|i| if extreme { 127 } else { (pick(i, 3) % 128) as u8 })
                .collect();
            let want = reference(&m, &xs, n);
            for k in levels() {
                let mut got = vec![0i32; vectors * rows];
                (k.matmat_u8i8)(&m, &xs, n, &mut got);
                prop_assert_eq!(&got, &want, "{:?}", k.level);
            }
        }

        /// The product is within `error_bound` of the exact product of the
        /// held values, and within half a row step times ‖x‖₁ more of the
        /// given ones; a vector's answers are the same bits alone as in its
        /// group.
        #[test]
        fn i8_matrix_is_within_its_bound_and_grouping_changes_no_bit(
            rows in 1usize..40, n in 1usize..130, vectors in 1usize..11, seed: u32,
        ) {
            let val = |i: usize, salt: u32| {
                ((i as u32).wrapping_mul(40503) ^ seed ^ salt) % 2001
            } as f32 / 1000.0 - 1.0;
            let values: Vec<f32> = (0..rows * n).map(|i| val(i, 0x9e37) * 0.1).collect();
            let xs: Vec<f32> = (0..vectors * n).map(|i| val(i, 0x51ed) * 3.0).collect();
            let m = I8Matrix::quantize(&values, n);
            let mut out = vec![0f32; vectors * rows];
            m.apply_many(&xs, &mut out);
            for (x, o) in xs.chunks_exact(n).zip(out.chunks_exact(rows)) {
                let l1: f64 = x.iter().map(|v| f64::from(v.abs())).sum();
                for (r, &got) in o.iter().enumerate() {
                    let held: f64 = (0..n).map(|d| f64::from(m.get(r, d)) * f64::from(x[d])).sum();
                    let given: f64 = (0..n).map(|d| f64::from(values[r * n + d]) * f64::from(x[d])).sum();
                    let bound = f64::from(m.error_bound(r, x)) * (1.0 + 1e-5) + 1e-6;
                    let top = (0..n).fold(0f64, |a, d| a.max(f64::from(values[r * n + d].abs())));
                    prop_assert!((f64::from(got) - held).abs() <= bound,
                        "row {r}: {got} against {held} (bound {bound})");
                    // The O(1) bound a scan uses: the one above plus half
                    // the row's step times ‖x‖₁.
                    let x_l1: f32 = x.iter().map(|v| v.abs()).sum();
                    let to_given = f64::from(m.source_error_bound(r, I8Matrix::vector_step(x), x_l1));
                    let want = f64::from(m.error_bound(r, x)) + top / 127.0 / 2.0 * l1;
                    prop_assert!((to_given - want).abs() <= 1e-4 * want + 1e-7, "{to_given} against {want}");
                    prop_assert!((f64::from(got) - given).abs() <= to_given * (1.0 + 1e-5) + 1e-6,
                        "row {r}: {got} against the given values' {given}");
                }
                let mut one = vec![0f32; rows];
                m.apply(x, &mut one);
                prop_assert_eq!(super::bits(&one), super::bits(o));
            }
        }
    }

    /// A zero vector maps to zero, a zero row answers zero, and the
    /// holding counts its bytes.
    #[test]
    fn zeros_map_to_zero() {
        let m = I8Matrix::quantize(&[0.0, 0.0, 0.5, -1.0], 2);
        let mut out = [1f32; 2];
        m.apply(&[0.0, 0.0], &mut out);
        assert_eq!(out, [0.0, 0.0]);
        m.apply(&[1.0, 2.0], &mut out);
        assert_eq!(out[0], 0.0);
        assert!((out[1] - (0.5 - 2.0)).abs() < 0.05, "{out:?}");
        assert_eq!(m.resident_bytes(), 4 + 2 * 4 * 3);
    }
}
