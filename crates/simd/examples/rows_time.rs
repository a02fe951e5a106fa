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
//! shared machine. With `-- sizes` it times one call by its number of rows
//! instead (rows in cache and scattered, m = 128): where a kernel that
//! works on whole batches pays for a partial one.

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
    if std::env::args().nth(1).as_deref() == Some("sizes") {
        return sizes(&mut next);
    }
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

/// ns a call by rows a call, m = 128: rows in cache, and scattered.
fn sizes(next: &mut impl FnMut() -> u64) {
    let (n, m, calls) = (116_707usize, 128usize, 20_000usize);
    let codes: Vec<u8> = (0..n * m).map(|_| next() as u8).collect();
    let table: Vec<u16> = (0..256 * m + 1).map(|_| (next() % 4096) as u16).collect();
    let ids: Vec<u32> = (0..calls * 64)
        .map(|_| (next() % n as u64) as u32)
        .collect();
    let mut out = vec![0u32; 64];
    let mut sink = 0u64;
    println!("rows a call   in cache (ns a call)   scattered (ns a call)");
    for per in [4usize, 8, 12, 16, 20, 24, 28, 31, 32, 36, 40, 48, 56, 64] {
        let mut best = [f64::MAX; 2];
        for (k, scattered) in [false, true].into_iter().enumerate() {
            for _ in 0..5 {
                let start = Instant::now();
                for c in 0..calls {
                    let at = if scattered { c * 64 } else { 0 };
                    let batch = &ids[at..at + per];
                    stratavec_simd::pq_adc_rows_u16(&table, &codes, m, batch, &mut out[..per]);
                    sink = sink.wrapping_add(u64::from(out[0]));
                }
                best[k] = best[k].min(start.elapsed().as_nanos() as f64 / calls as f64);
            }
        }
        println!("{per:11}   {:20.0}   {:21.0}", best[0], best[1]);
    }
    std::hint::black_box(sink);
}
