//! 4-bit fast-scan: packing round-trips, follows the documented layout,
//! and every supported level gives exactly the scalar reference, which
//! matches a naive sum over the unpacked codes.

use proptest::prelude::*;
use stratavec_simd::fastscan::{
    pack_group, packed_len, scan_group, scan_group_scalar, unpack_group, GROUP, MAX_M,
};
use stratavec_simd::{Kernels, Level};

/// Kernel sets this CPU can run (always at least scalar).
fn levels() -> Vec<&'static Kernels> {
    Level::ALL
        .iter()
        .filter(|l| l.is_supported())
        .map(|l| l.kernels().unwrap())
        .collect()
}

/// `out[v] = sum_k luts[16k + codes[v*m + k]]` over 32 unpacked rows.
fn naive(rows: &[u8], luts: &[u8], m: usize) -> [u16; 32] {
    let mut out = [0u16; 32];
    for (v, o) in out.iter_mut().enumerate() {
        let sum: u32 = (0..m)
            .map(|k| u32::from(luts[16 * k + rows[v * m + k] as usize]))
            .sum();
        *o = u16::try_from(sum).unwrap();
    }
    out
}

/// The n rows, then zero rows up to 32.
fn padded(codes: &[u8], m: usize) -> Vec<u8> {
    let mut rows = codes.to_vec();
    rows.resize(GROUP * m, 0);
    rows
}

fn pack(codes: &[u8], n: usize, m: usize) -> Vec<u8> {
    let mut packed = vec![0xa5; packed_len(m)];
    pack_group(codes, n, m, &mut packed);
    packed
}

/// Even m: mostly 2..=64 (neighbour codes in a node's record), some up to
/// the 256 limit.
fn even_m() -> impl Strategy<Value = usize> {
    prop_oneof![
        4 => (1usize..=32).prop_map(|h| 2 * h),
        1 => (33usize..=MAX_M / 2).prop_map(|h| 2 * h),
    ]
}

/// (m, n, n rows of m codes, luts); a third of the cases have all-255
/// tables, which give the largest sums.
fn case() -> impl Strategy<Value = (usize, usize, Vec<u8>, Vec<u8>)> {
    (even_m(), 1usize..=GROUP, 0u8..3).prop_flat_map(|(m, n, kind)| {
        let luts = if kind == 0 {
            Just(vec![255u8; 16 * m]).boxed()
        } else {
            prop::collection::vec(any::<u8>(), 16 * m).boxed()
        };
        (
            Just(m),
            Just(n),
            prop::collection::vec(0u8..16, n * m),
            luts,
        )
    })
}

/// Every level's sums for one packed group, checked against the reference
/// and the naive sum; the dispatched `scan_group` too.
fn check_all_levels(packed: &[u8], luts: &[u8], m: usize) -> Result<(), TestCaseError> {
    let mut rows = vec![0u8; GROUP * m];
    unpack_group(packed, m, &mut rows);
    let want = naive(&rows, luts, m);
    let mut reference = [u16::MAX; 32];
    scan_group_scalar(packed, luts, m, &mut reference);
    prop_assert_eq!(reference, want, "scalar vs naive");
    for k in levels() {
        let mut got = [u16::MAX; 32];
        (k.fastscan_group)(packed, luts, m, &mut got);
        prop_assert_eq!(got, want, "{:?}", k.level);
    }
    let mut got = [u16::MAX; 32];
    scan_group(packed, luts, m, &mut got);
    prop_assert_eq!(got, want, "dispatched");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn unpack_inverts_pack_with_zero_padding((m, n, codes, _luts) in case()) {
        let packed = pack(&codes, n, m);
        let mut rows = vec![0xffu8; GROUP * m];
        unpack_group(&packed, m, &mut rows);
        prop_assert_eq!(rows, padded(&codes, m));
    }

    #[test]
    fn every_level_matches_scalar_and_naive_sum((m, n, codes, luts) in case()) {
        let packed = pack(&codes, n, m);
        check_all_levels(&packed, &luts, m)?;
        if luts.iter().all(|&x| x == 255) {
            prop_assert_eq!(scan_max(&packed, m), [255 * m as u16; 32]);
        }
    }

    /// Arbitrary bytes are a valid packed group (every nibble is a code),
    /// so the kernels must agree on any of them, not only on packed rows.
    #[test]
    fn every_level_matches_on_arbitrary_packed_bytes(
        (m, packed, luts) in even_m().prop_flat_map(|m| (
            Just(m),
            prop::collection::vec(any::<u8>(), packed_len(m)),
            prop::collection::vec(any::<u8>(), 16 * m),
        )),
    ) {
        check_all_levels(&packed, &luts, m)?;
        // Packing the unpacked rows gives the same bytes back.
        let mut rows = vec![0u8; GROUP * m];
        unpack_group(&packed, m, &mut rows);
        prop_assert_eq!(pack(&rows, GROUP, m), packed);
    }
}

/// Sums with all-255 tables.
fn scan_max(packed: &[u8], m: usize) -> [u16; 32] {
    let mut out = [0u16; 32];
    scan_group(packed, &vec![255u8; 16 * m], m, &mut out);
    out
}

/// The largest sum, 256 * 255 = 65280, at every level and for every nibble
/// value (both nibbles of every byte set to 15, then to 0).
#[test]
fn largest_sums_are_exact_at_m_256() {
    let m = MAX_M;
    let luts = vec![255u8; 16 * m];
    for byte in [0xffu8, 0x00, 0x0f, 0xf0] {
        let packed = vec![byte; packed_len(m)];
        for k in levels() {
            let mut out = [0u16; 32];
            (k.fastscan_group)(&packed, &luts, m, &mut out);
            assert_eq!(out, [65280u16; 32], "{:?} byte {byte:#x}", k.level);
        }
    }
}

/// m = 0 is even: nothing to look up, every sum is 0.
#[test]
fn empty_code_gives_zero_sums() {
    let mut rows = [];
    unpack_group(&[], 0, &mut rows);
    for k in levels() {
        let mut out = [7u16; 32];
        (k.fastscan_group)(&[], &[], 0, &mut out);
        assert_eq!(out, [0u16; 32], "{:?}", k.level);
    }
}

/// The bytes are where the module docs say: pair p, sub-quantizer 2p in
/// bytes 32p..32p+16, 2p+1 in the next 16; vector j in the low nibble of
/// byte j, vector j+16 in the high nibble.
#[test]
fn packed_bytes_follow_documented_layout() {
    let (n, m) = (GROUP, 6);
    let code = |v: usize, k: usize| ((v * 7 + k * 3) % 16) as u8;
    let codes: Vec<u8> = (0..n * m).map(|i| code(i / m, i % m)).collect();
    let packed = pack(&codes, n, m);
    for p in 0..m / 2 {
        for half in 0..2 {
            for j in 0..16 {
                let k = 2 * p + half;
                let want = code(j, k) | code(j + 16, k) << 4;
                assert_eq!(
                    packed[32 * p + 16 * half + j],
                    want,
                    "p {p} half {half} j {j}"
                );
            }
        }
    }
}

/// A distinct value per table entry shows each vector reads its own code
/// from its own sub-quantizer's table, in vector order.
#[test]
fn each_vector_reads_its_own_entries() {
    let (n, m) = (GROUP, 4);
    // Vector v has code v % 16 in sub-quantizer 0, 15 - v % 16 in 1, and
    // (v / 16) in 2 and 3.
    let mut codes = vec![0u8; n * m];
    for v in 0..n {
        codes[v * m] = (v % 16) as u8;
        codes[v * m + 1] = 15 - (v % 16) as u8;
        codes[v * m + 2] = (v / 16) as u8;
        codes[v * m + 3] = (v / 16) as u8;
    }
    let luts: Vec<u8> = (0..16 * m).map(|i| i as u8).collect();
    let packed = pack(&codes, n, m);
    let want: [u16; 32] = core::array::from_fn(|v| {
        let c = |k: usize| (16 * k + codes[v * m + k] as usize) as u16;
        c(0) + c(1) + c(2) + c(3)
    });
    for k in levels() {
        let mut out = [0u16; 32];
        (k.fastscan_group)(&packed, &luts, m, &mut out);
        assert_eq!(out, want, "{:?}", k.level);
    }
}

/// Every level rejects bad arguments before touching memory.
#[test]
fn every_level_rejects_bad_lengths_and_m() {
    let bad: [(usize, usize, usize); 5] = [
        (3, packed_len(3), 48),           // odd m
        (258, packed_len(258), 16 * 258), // m above MAX_M
        (4, packed_len(4) - 1, 64),       // packed too short
        (4, packed_len(4), 63),           // luts too short
        (4, packed_len(4) + 32, 64 + 32), // both too long
    ];
    for k in levels() {
        for &(m, plen, llen) in &bad {
            let (packed, luts) = (vec![0u8; plen], vec![0u8; llen]);
            let r = std::panic::catch_unwind(|| {
                let mut out = [0u16; 32];
                (k.fastscan_group)(&packed, &luts, m, &mut out);
            });
            assert!(
                r.is_err(),
                "{:?} accepted m {m}, {plen} / {llen} bytes",
                k.level
            );
        }
    }
}

#[test]
#[should_panic(expected = "must be even")]
fn pack_rejects_odd_m() {
    let mut out = vec![0u8; packed_len(3)];
    pack_group(&[0; 3], 1, 3, &mut out);
}

#[test]
#[should_panic(expected = "above 15")]
fn pack_rejects_codes_above_15() {
    let mut out = vec![0u8; packed_len(2)];
    pack_group(&[3, 16], 1, 2, &mut out);
}

#[test]
#[should_panic(expected = "at most 32")]
fn pack_rejects_more_than_32_rows() {
    let mut out = vec![0u8; packed_len(2)];
    pack_group(&[0; 66], 33, 2, &mut out);
}

#[test]
#[should_panic(expected = "codes length")]
fn pack_rejects_wrong_codes_length() {
    let mut out = vec![0u8; packed_len(2)];
    pack_group(&[0; 5], 3, 2, &mut out);
}

#[test]
#[should_panic(expected = "16 * m bytes")]
fn pack_rejects_wrong_output_length() {
    let mut out = vec![0u8; packed_len(2) + 1];
    pack_group(&[0; 2], 1, 2, &mut out);
}

#[test]
#[should_panic(expected = "must be even")]
fn unpack_rejects_odd_m() {
    let mut out = vec![0u8; 32 * 3];
    unpack_group(&[0; 48], 3, &mut out);
}

#[test]
#[should_panic(expected = "16 * m bytes")]
fn unpack_rejects_wrong_packed_length() {
    let mut out = vec![0u8; 32 * 2];
    unpack_group(&[0; 31], 2, &mut out);
}

#[test]
#[should_panic(expected = "32 * m bytes")]
fn unpack_rejects_wrong_output_length() {
    let mut out = vec![0u8; 32 * 2 - 1];
    unpack_group(&[0; 32], 2, &mut out);
}

#[test]
#[should_panic(expected = "must be even")]
fn scan_rejects_odd_m() {
    scan_group(&[0; 48], &[0; 48], 3, &mut [0; 32]);
}

#[test]
#[should_panic(expected = "above 256")]
fn scan_rejects_m_above_256() {
    scan_group(&vec![0; 16 * 258], &vec![0; 16 * 258], 258, &mut [0; 32]);
}

#[test]
#[should_panic(expected = "packed group must be 16 * m bytes")]
fn scan_rejects_wrong_packed_length() {
    scan_group(&[0; 33], &[0; 32], 2, &mut [0; 32]);
}

#[test]
#[should_panic(expected = "luts must be 16 * m bytes")]
fn scan_rejects_wrong_luts_length() {
    scan_group(&[0; 32], &[0; 31], 2, &mut [0; 32]);
}

#[test]
#[should_panic(expected = "luts must be 16 * m bytes")]
fn scalar_scan_rejects_wrong_luts_length() {
    scan_group_scalar(&[0; 32], &[0; 33], 2, &mut [0; 32]);
}

/// What a table byte stands for: the nearest step to `t · inv` (halves up),
/// clamped to a byte, a NaN to 0, computed in f64 from the f32 product and
/// sum the kernels round.
fn table_byte(t: f32, inv: f32) -> u8 {
    let x = f64::from(t * inv + 0.5);
    if x.is_nan() {
        0
    } else {
        x.floor().clamp(0.0, 255.0) as u8
    }
}

proptest! {
    /// Every level quantizes tables to the reference's bytes, and those
    /// are the nearest steps (lengths around the 16- and 32-value steps;
    /// values beyond the range, negative and NaN).
    #[test]
    fn table_bytes_are_the_nearest_steps_at_every_level(
        src in prop::collection::vec(
            prop_oneof![8 => 0f32..2.0, 1 => -1f32..0.0, 1 => 2f32..4.0, 1 => Just(f32::NAN)],
            0..200,
        ),
        widest in 0.01f32..2.0,
    ) {
        let inv = 255.0 / widest;
        let mut want = vec![0u8; src.len()];
        stratavec_simd::fastscan::quantize_table_scalar(&src, inv, &mut want);
        for (&t, &b) in src.iter().zip(&want) {
            prop_assert_eq!(b, table_byte(t, inv), "{}", t);
        }
        for k in levels() {
            let mut got = vec![0xa5u8; src.len()];
            (k.fastscan_quantize)(&src, inv, &mut got);
            prop_assert_eq!(&got, &want, "{:?}", k.level);
        }
    }
}
