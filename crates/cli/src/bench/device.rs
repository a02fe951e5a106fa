//! The device ceiling of a bench run: random 4 KiB O_DIRECT reads on the
//! first index's own file, with as many threads as the searches.
//!
//! A virtual disk gives bursts: a 2-second probe once said 94k reads/s at
//! depth 64 while a search sustained 61k and the disk, alone a minute later,
//! 75-82k (issue #25). So the ceiling is measured in phases, before the
//! systems, between rounds and after them, each time as a short burst probe
//! and a long sustained one (after a warm-up, counted per second), and the
//! report's "above the ceiling" check uses the sustained rate.

use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use stratavec_io::probe::{random_reads, ProbeParams};

/// The depth a search worker keeps at most (`search::READ_SLOTS`): where
/// burst and sustained rates are compared.
pub const DEPTH: usize = 64;

pub struct Ceiling {
    pub file: PathBuf,
    pub dataset: String,
    pub threads: usize,
    pub block: usize,
    /// Seconds of each burst probe (and of each depth of the scan).
    pub burst_s: f64,
    /// Seconds of the sustained probe, counted after `warmup_s`.
    pub sustained_s: f64,
    pub warmup_s: f64,
}

impl Ceiling {
    fn probe(
        &self,
        phase: &str,
        mode: &str,
        depth: usize,
        p: ProbeParams,
    ) -> anyhow::Result<Value> {
        let started = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let r = random_reads(&self.file, &p)?;
        Ok(json!({
            "kind": "device", "system": "device", "dataset": self.dataset, "phase": phase,
            "mode": mode, "block_bytes": self.block, "depth": depth, "threads": r.threads,
            "seconds": p.duration.as_secs_f64(), "warmup_s": p.warmup.as_secs_f64(),
            "reads_per_s": r.reads_per_s, "mb_per_s": r.mb_per_s,
            "p50_us": r.p50_us, "p99_us": r.p99_us, "backend": r.backend,
            "per_s": r.per_interval, "unix_time": started,
            "file": self.file.display().to_string(),
        }))
    }

    /// One phase: with `scan`, burst probes at depths 1 to 128 (what each
    /// depth gives); else a burst probe at [`DEPTH`]; then the sustained
    /// probe at [`DEPTH`]. Returns one row a probe.
    pub fn phase(&self, phase: &str, scan: bool) -> anyhow::Result<Vec<Value>> {
        let mut rows = Vec::new();
        if self.burst_s > 0.0 {
            let depths: &[usize] = if scan { &[1, 4, 16, 64, 128] } else { &[DEPTH] };
            for &depth in depths {
                let p = ProbeParams::new(
                    self.block,
                    depth,
                    self.threads,
                    Duration::from_secs_f64(self.burst_s),
                );
                rows.push(self.probe(phase, "burst", depth, p)?);
            }
        }
        if self.sustained_s > 0.0 {
            let p = ProbeParams {
                warmup: Duration::from_secs_f64(self.warmup_s),
                interval: Some(Duration::from_secs(1)),
                ..ProbeParams::new(
                    self.block,
                    DEPTH,
                    self.threads,
                    Duration::from_secs_f64(self.sustained_s),
                )
            };
            rows.push(self.probe(phase, "sustained", DEPTH, p)?);
        }
        Ok(rows)
    }

    pub fn enabled(&self) -> bool {
        self.burst_s > 0.0 || self.sustained_s > 0.0
    }
}

/// The rates of one mode ("burst" at [`DEPTH`] or "sustained") over a run's
/// phases, in the order measured.
pub fn rates(rows: &[Value], mode: &str) -> Vec<f64> {
    rows.iter()
        .filter(|r| r["kind"] == "device" && r["mode"] == mode)
        .filter(|r| r["depth"].as_u64() == Some(DEPTH as u64))
        .filter_map(|r| r["reads_per_s"].as_f64())
        .collect()
}

/// The ceiling a search is held to: the median sustained rate of the run,
/// else (sustained probe off) the best burst rate at any depth.
pub fn ceiling(rows: &[Value]) -> Option<(f64, &'static str)> {
    let sustained = rates(rows, "sustained");
    if !sustained.is_empty() {
        return Some((super::stats::median(&sustained), "sustained"));
    }
    rows.iter()
        .filter(|r| r["kind"] == "device")
        .filter_map(|r| r["reads_per_s"].as_f64())
        .max_by(f64::total_cmp)
        .map(|c| (c, "burst"))
}
