//! From a trial's measurements to a prediction, and the choice (issue
//! #57). Throughput: a query needs `reads / R` of the device (R its
//! sustained random-read rate at the search's depth) and `cpu / threads`
//! of the processors; whichever is longer bounds the rate, since the
//! searches overlap reads with CPU but neither can run past its own
//! ceiling (REFERENCE.md's device table; gorgeous at 20% of wordnet-minilm
//! ran at 57-80k reads/s with its CPU half idle, hnswlib's CPU-bound).
//! Latency: the trial's own median at one query a thread.

use super::trial::Trial;
use super::Objective;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

/// Reads a second assumed where the device cannot be probed (no trial
/// built a pages file, or the probe failed): REFERENCE.md's sustained
/// 4 KiB rate at depth on this class of disk.
pub const ASSUMED_READS_PER_S: f64 = 80_000.0;

/// How long the probe reads (after a warm-up of half as long).
const PROBE: Duration = Duration::from_millis(600);

/// Reads in flight a thread while probing: what the batch searches keep
/// outstanding (`search::READ_SLOTS` slots a worker, ~half of them busy).
const PROBE_DEPTH: usize = 32;

/// The device as the planner counts it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Device {
    /// Sustained random 4 KiB reads a second at the searches' depth.
    pub reads_per_s: f64,
    /// Where the figure came from: "given", "probed FILE" or "assumed".
    pub source: String,
}

impl Device {
    /// The rate `given`, else probed on `file` with `threads` readers,
    /// else [`ASSUMED_READS_PER_S`].
    pub fn probe(file: Option<PathBuf>, threads: usize, given: Option<f64>) -> Device {
        if let Some(r) = given.filter(|r| *r > 0.0) {
            return Device {
                reads_per_s: r,
                source: "given".into(),
            };
        }
        let probed = file.and_then(|f| {
            let mut p =
                stratavec_io::probe::ProbeParams::new(4096, PROBE_DEPTH, threads.max(1), PROBE);
            p.warmup = PROBE / 2;
            let r = stratavec_io::probe::random_reads(&f, &p).ok()?;
            Some(Device {
                reads_per_s: r.reads_per_s,
                source: format!("probed {} ({})", f.display(), r.backend),
            })
        });
        probed.filter(|d| d.reads_per_s > 0.0).unwrap_or(Device {
            reads_per_s: ASSUMED_READS_PER_S,
            source: "assumed".into(),
        })
    }
}

/// A candidate's predicted figures at the target recall.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    /// Queries a second with the caller's threads.
    pub qps: f64,
    /// What bounds it: "device" or "cpu".
    pub bound: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_us: Option<f64>,
}

/// `trial`'s prediction on `device` with `threads` searching.
pub fn predict(trial: &Trial, device: &Device, threads: usize) -> Prediction {
    let io_s = trial.reads / device.reads_per_s;
    let cpu_s = trial.cpu_us * 1e-6 / threads.max(1) as f64;
    let (per_query, bound) = match io_s >= cpu_s {
        true => (io_s, "device"),
        false => (cpu_s, "cpu"),
    };
    Prediction {
        qps: 1.0 / per_query.max(1e-9),
        bound: bound.into(),
        p50_us: trial.p50_us,
    }
}

/// `c`'s score for `objective` (higher is better); `None` without a
/// prediction.
fn score(c: &super::Candidate, objective: Objective) -> Option<f64> {
    let p = c.predicted.as_ref()?;
    match objective {
        Objective::Throughput => Some(p.qps),
        Objective::Latency => p.p50_us.map(|l| -l),
    }
}

/// Whether `a` scores above `b` (a prediction beats none).
pub fn better(a: &super::Candidate, b: &super::Candidate, objective: Objective) -> bool {
    match (score(a, objective), score(b, objective)) {
        (Some(x), Some(y)) => x > y,
        (Some(_), None) => true,
        _ => false,
    }
}

/// The candidate `objective` favours, and why in words.
pub fn pick(
    candidates: &[super::Candidate],
    objective: Objective,
    target: f64,
) -> (String, String) {
    let mut ranked: Vec<(&super::Candidate, f64)> = candidates
        .iter()
        .filter_map(|c| score(c, objective).map(|s| (c, s)))
        .collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
    let Some(&(best, _)) = ranked.first() else {
        return (
            crate::profile::DEFAULT.to_string(),
            format!("no candidate reached R@10 {target} on the sample: the default profile"),
        );
    };
    let figure = |c: &super::Candidate| -> String {
        let (p, t) = (c.predicted.as_ref().unwrap(), c.trial.as_ref().unwrap());
        let head = match objective {
            Objective::Throughput => format!("{:.0} QPS ({}-bound)", p.qps, p.bound),
            Objective::Latency => format!("p50 {:.0} µs", p.p50_us.unwrap_or(0.0)),
        };
        let mut pq = match (t.pq_bytes, t.exrabitq_bits) {
            (_, Some(b)) => format!(" ({b}-bit extended RaBitQ)"),
            (Some(m), None) => format!(" ({m} PQ bytes)"),
            (None, None) => String::new(),
        };
        if t.pipelined {
            pq.push_str(" with the pipelined refinement");
        }
        format!(
            "{}{pq} {head} at L {:.0}, {:.1} reads and {:.0} µs CPU a query",
            c.profile, t.complexity, t.reads, t.cpu_us
        )
    };
    let mut why = format!(
        "best predicted at R@10 {target} on the sample: {}",
        figure(best)
    );
    if let Some(&(second, _)) = ranked.get(1) {
        why.push_str(&format!("; next {}", figure(second)));
    }
    (best.profile.clone(), why)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::autoplan::Candidate;

    fn trial(reads: f64, cpu_us: f64, p50: Option<f64>) -> Trial {
        Trial {
            pq_bytes: None,
            exrabitq_bits: None,
            pipelined: false,
            complexity: 30.0,
            reads,
            cpu_us,
            p50_us: p50,
            build_s: 1.0,
            search_s: 1.0,
            points: Vec::new(),
        }
    }

    fn device(r: f64) -> Device {
        Device {
            reads_per_s: r,
            source: "given".into(),
        }
    }

    #[test]
    fn the_slower_of_the_device_and_the_threads_bounds_a_query() {
        // 10 reads at 100k/s: 100 µs; 300 µs of CPU over 2 threads: 150.
        let p = predict(&trial(10.0, 300.0, None), &device(100_000.0), 2);
        assert_eq!(p.bound, "cpu");
        assert!((p.qps - 1e6 / 150.0).abs() < 1e-6);
        let p = predict(&trial(30.0, 300.0, None), &device(100_000.0), 2);
        assert_eq!(p.bound, "device");
        assert!((p.qps - 1e6 / 300.0).abs() < 1e-6);
    }

    #[test]
    fn the_choice_follows_the_objective() {
        let d = device(100_000.0);
        let cand = |name: &str, t: Trial| Candidate {
            profile: name.into(),
            predicted: Some(predict(&t, &d, 2)),
            trial: Some(t),
            skipped: None,
        };
        let cs = vec![
            cand("diskann", trial(30.0, 200.0, Some(900.0))),
            cand("gorgeous", trial(12.0, 250.0, Some(700.0))),
            cand("pipeann", trial(32.0, 220.0, Some(500.0))),
            Candidate {
                profile: "laser".into(),
                trial: None,
                predicted: None,
                skipped: Some("failed".into()),
            },
        ];
        assert_eq!(pick(&cs, Objective::Throughput, 0.95).0, "gorgeous");
        assert_eq!(pick(&cs, Objective::Latency, 0.95).0, "pipeann");
        let none = pick(&cs[3..], Objective::Throughput, 0.95);
        assert_eq!(none.0, crate::profile::DEFAULT);
    }
}
