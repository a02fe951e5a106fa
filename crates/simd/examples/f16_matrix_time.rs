//! Times `F16Matrix::apply_many` at the laser start's shape (the 696 × 768
//! codes' map and 342 × 768 cluster entries of wordnet-mpnet, as one
//! matrix) for 1, 8 and 16 vectors, in each holding this CPU has (f16,
//! AMX tiles, and `I8Matrix`, the map's holding without tiles), with the
//! matrix left in cache and with 64 MB streamed between calls (as a search
//! between two starts). The figures in `amx.rs` come from it:
//!
//! `cargo run --release -p stratavec-simd --example f16_matrix_time`
//!
//! A timing, not a test: the median of 300 calls, on a shared machine.

use std::time::Instant;
use stratavec_simd::{F16Matrix, I8Matrix};

type Apply = Box<dyn Fn(&[f32], &mut [f32])>;

fn main() {
    let (n, rows) = (768usize, 696 + 342);
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    };
    let values: Vec<f32> = (0..rows * n).map(|_| 0.1 * next()).collect();
    let mut bytes = vec![0u8; 2 * values.len()];
    stratavec_simd::half::encode_f16(&values, &mut bytes);
    let xs: Vec<f32> = (0..16 * n).map(|_| next()).collect();
    let f16 = F16Matrix::from_f16_bytes(bytes.clone(), n);
    let i8m = I8Matrix::quantize(&values, n);
    let mut holdings: Vec<(&str, Apply)> = vec![
        ("f16", Box::new(move |x, o| f16.apply_many(x, o))),
        ("i8", Box::new(move |x, o| i8m.apply_many(x, o))),
    ];
    let tiles = F16Matrix::from_f16_bytes_on_tiles(bytes, n);
    if tiles.on_amx() {
        holdings.push(("tiles", Box::new(move |x, o| tiles.apply_many(x, o))));
    } else {
        println!("no AMX here (or STRATAVEC_AMX=off): no tiles");
    }
    let mut junk = vec![0u8; 64 << 20];
    for q in [1usize, 8, 16] {
        for evict in [false, true] {
            for (name, m) in &holdings {
                let mut out = vec![0f32; q * rows];
                let mut times: Vec<f64> = (0..300)
                    .map(|_| {
                        if evict {
                            junk.iter_mut()
                                .step_by(64)
                                .for_each(|b| *b = b.wrapping_add(1));
                        }
                        let t = Instant::now();
                        m(&xs[..q * n], &mut out);
                        t.elapsed().as_secs_f64() * 1e6
                    })
                    .collect();
                times.sort_by(f64::total_cmp);
                let median = times[times.len() / 2];
                println!(
                    "{name:5} {q:2} vectors, matrix {}: {median:7.1} µs a call, {:6.1} a vector",
                    if evict { "evicted" } else { "in cache" },
                    median / q as f64
                );
            }
        }
    }
    std::hint::black_box(&junk);
}
