//! Times `pq_adc_rows_u16` as a graph search calls it: batches of 37 rows
//! (a 384-d expansion's new neighbours) of 117k rows of codes (wordnet's
//! size), at m = 48 and 128, with the rows in cache (one batch again and
//! again), scattered (every batch new rows), and scattered with the caller
//! asking for the whole batch first (`prefetch_rows`, as the searches do).
//! The figures at `ROWS_AHEAD` in `lut16.rs` come from it:
//!
//! `cargo run --release -p stratavec-simd --example rows_time`
//!
//! A timing, not a test: the best of 5 passes of 20,000 batches, on a
//! shared machine.

use std::time::Instant;

fn main() {
    let (n, per, batches) = (116_707usize, 37usize, 20_000usize);
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        state >> 24
    };
    println!("level {}", stratavec_simd::kernel_name());
    for m in [48usize, 128] {
        let codes: Vec<u8> = (0..n * m).map(|_| next() as u8).collect();
        let table: Vec<u16> = (0..256 * m + 1).map(|_| (next() % 4096) as u16).collect();
        let ids: Vec<u32> = (0..batches * per)
            .map(|_| (next() % n as u64) as u32)
            .collect();
        let mut out = vec![0u32; per];
        let mut sink = 0u64;
        for mode in ["in cache", "scattered", "scattered, batch asked for first"] {
            let mut best = f64::MAX;
            for _ in 0..5 {
                let start = Instant::now();
                for b in 0..batches {
                    let batch = match mode {
                        "in cache" => &ids[..per],
                        _ => &ids[b * per..(b + 1) * per],
                    };
                    if mode.ends_with("first") {
                        stratavec_simd::prefetch_rows(&codes, m, batch);
                    }
                    stratavec_simd::pq_adc_rows_u16(&table, &codes, m, batch, &mut out);
                    sink = sink.wrapping_add(u64::from(out[0]));
                }
                best = best.min(start.elapsed().as_nanos() as f64 / (batches * per) as f64);
            }
            println!("m = {m:3}  {mode:34} {best:6.1} ns a row");
        }
        std::hint::black_box(sink);
    }
}
