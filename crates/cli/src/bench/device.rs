//! The device ceiling for a bench run: 4 KiB random reads on the index's file
//! system at the queue depths a search keeps, with as many threads as search.

use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;
use stratavec_io::probe::{random_reads, ProbeParams};
use stratavec_io::Backend;

pub fn measure(
    file: &Path,
    dataset: &str,
    threads: usize,
    block: usize,
    seconds: f64,
) -> anyhow::Result<Vec<Value>> {
    let mut rows = Vec::new();
    // Per thread, as a search worker: 64 is what a worker keeps at most
    // (`search::READ_SLOTS`); 128 shows whether the device had more to give.
    for depth in [1, 4, 16, 64, 128] {
        let r = random_reads(
            file,
            &ProbeParams {
                block_bytes: block,
                depth,
                threads,
                duration: Duration::from_secs_f64(seconds),
                backend: Backend::Auto,
                seed: 7,
            },
        )?;
        rows.push(json!({
            "kind": "device", "system": "device", "dataset": dataset, "block_bytes": block, "depth": depth,
            "threads": threads, "reads_per_s": r.reads_per_s, "mb_per_s": r.mb_per_s,
            "p50_us": r.p50_us, "p99_us": r.p99_us, "backend": r.backend,
            "file": file.display().to_string(),
        }));
    }
    Ok(rows)
}

/// The best read rate measured (the ceiling any search can approach).
pub fn best_rate(rows: &[Value]) -> Option<f64> {
    rows.iter()
        .filter(|r| r["kind"] == "device")
        .filter_map(|r| r["reads_per_s"].as_f64())
        .max_by(f64::total_cmp)
}
