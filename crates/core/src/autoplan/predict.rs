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
    /// Reads a second at the larger page sizes the trials read in, probed
    /// the same way (`probe_pages`); a size without one is counted by its
    /// bytes ([`Device::rate`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pages: Vec<(usize, f64)>,
}

impl Device {
    /// The rate `given`, else probed on `file` with `threads` readers,
    /// else [`ASSUMED_READS_PER_S`].
    pub fn probe(file: Option<PathBuf>, threads: usize, given: Option<f64>) -> Device {
        if let Some(r) = given.filter(|r| *r > 0.0) {
            return Device {
                reads_per_s: r,
                source: "given".into(),
                pages: Vec::new(),
            };
        }
        let probed = file.and_then(|f| {
            let (rate, backend) = probe_at(&f, 4096, threads)?;
            Some(Device {
                reads_per_s: rate,
                source: format!("probed {} ({backend})", f.display()),
                pages: Vec::new(),
            })
        });
        probed.unwrap_or(Device {
            reads_per_s: ASSUMED_READS_PER_S,
            source: "assumed".into(),
            pages: Vec::new(),
        })
    }

    /// Probes the rate at each `(page size, file)` above 4 KiB, where the
    /// 4 KiB rate was probed too (a given or assumed rate is not
    /// measured, so the larger sizes are counted by their bytes).
    pub fn probe_pages(&mut self, files: &[(usize, PathBuf)], threads: usize) {
        if !self.source.starts_with("probed") {
            return;
        }
        for (page, file) in files {
            let known = self.pages.iter().any(|(p, _)| p == page);
            if *page <= 4096 || known {
                continue;
            }
            if let Some((rate, _)) = probe_at(file, *page, threads) {
                self.pages.push((*page, rate));
            }
        }
    }

    /// Reads a second of `page_size` bytes: the probed rate at that size,
    /// else the 4 KiB rate scaled by the bytes (at depth a device moves
    /// about the same bytes a second whatever the read's size, so an
    /// unprobed 8 KB read is counted as two of 4 KB).
    pub fn rate(&self, page_size: usize) -> f64 {
        if page_size <= 4096 {
            return self.reads_per_s;
        }
        match self.pages.iter().find(|(p, _)| *p == page_size) {
            Some(&(_, r)) => r,
            None => self.reads_per_s * 4096.0 / page_size as f64,
        }
    }
}

/// Random reads a second of `page` bytes from `file` at the searches'
/// depth, and the backend that read them; `None` when it cannot be read.
fn probe_at(file: &std::path::Path, page: usize, threads: usize) -> Option<(f64, String)> {
    let mut p = stratavec_io::probe::ProbeParams::new(page, PROBE_DEPTH, threads.max(1), PROBE);
    p.warmup = PROBE / 2;
    let r = stratavec_io::probe::random_reads(file, &p).ok()?;
    (r.reads_per_s > 0.0).then(|| (r.reads_per_s, r.backend.to_string()))
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
    let io_s = trial.reads / device.rate(trial.page_size);
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
        if !t.layout.is_default() {
            pq.push_str(&format!(" in {} pages", layout_words(t)));
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

/// A trial's layout in words: "8192-byte", "f16 4096-byte", "shuffled f16 4096-byte".
fn layout_words(t: &Trial) -> String {
    let shuffled = if t.layout.blocks { "shuffled " } else { "" };
    match t.layout.store {
        Some(s) => format!("{shuffled}{s} {}-byte", t.page_size),
        None => format!("{shuffled}{}-byte", t.page_size),
    }
}

/// `c`'s figure as a share of the best candidate's (1 for the best; QPS
/// over the best QPS, or the best p50 over its p50); `None` without a
/// prediction.
pub fn share_of_best(
    c: &super::Candidate,
    candidates: &[super::Candidate],
    objective: Objective,
) -> Option<f64> {
    let mine = score(c, objective)?;
    let best = candidates
        .iter()
        .filter_map(|o| score(o, objective))
        .fold(f64::NEG_INFINITY, f64::max);
    Some(match objective {
        Objective::Throughput => mine / best,
        // Scores are negated latencies.
        Objective::Latency => best / mine,
    })
}

/// Says of each candidate but `chosen` why it was not chosen: its
/// predicted figure against the chosen one's, and what bounds it (its
/// reads at the device's rate, or its CPU) — or why it had no figure.
pub fn why_not(candidates: &mut [super::Candidate], chosen: &str, objective: Objective) {
    let shares: Vec<Option<f64>> = candidates
        .iter()
        .map(|c| share_of_best(c, candidates, objective))
        .collect();
    for (c, share) in candidates.iter_mut().zip(shares) {
        if c.profile == chosen {
            continue;
        }
        c.why_not = Some(match (&c.trial, &c.predicted, share) {
            (Some(t), Some(p), Some(share)) => {
                let figure = match objective {
                    Objective::Throughput => format!("{:.0} QPS", p.qps),
                    Objective::Latency => format!("p50 {:.0} µs", p.p50_us.unwrap_or(0.0)),
                };
                format!(
                    "predicted {figure}, {share:.2}x the chosen's: {}-bound at {:.1} reads of {} bytes and {:.0} µs CPU a query ({})",
                    p.bound, t.reads, t.page_size, t.cpu_us, t.label()
                )
            }
            _ => c.skipped.clone().unwrap_or_else(|| "no prediction".into()),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::autoplan::Candidate;

    fn trial(reads: f64, cpu_us: f64, p50: Option<f64>) -> Trial {
        Trial {
            page_size: 4096,
            complexity: 30.0,
            reads,
            cpu_us,
            p50_us: p50,
            build_s: 1.0,
            search_s: 1.0,
            ..Trial::default()
        }
    }

    fn device(r: f64) -> Device {
        Device {
            reads_per_s: r,
            source: "given".into(),
            pages: Vec::new(),
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
            why_not: None,
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
                why_not: None,
            },
        ];
        assert_eq!(pick(&cs, Objective::Throughput, 0.95).0, "gorgeous");
        assert_eq!(pick(&cs, Objective::Latency, 0.95).0, "pipeann");
        let none = pick(&cs[3..], Objective::Throughput, 0.95);
        assert_eq!(none.0, crate::profile::DEFAULT);
        // Every other candidate says why not, against the chosen one.
        let mut cs = cs;
        let (chosen, _) = pick(&cs, Objective::Throughput, 0.95);
        why_not(&mut cs, &chosen, Objective::Throughput);
        for c in &cs {
            assert_eq!(c.why_not.is_none(), c.profile == chosen, "{c:?}");
        }
        let diskann = cs[0].why_not.as_deref().unwrap();
        // 30 reads at 100k/s: 3,333 QPS against gorgeous's 8,000.
        assert!(diskann.contains("0.42x the chosen's"), "{diskann}");
        assert!(diskann.contains("device-bound at 30.0 reads of 4096 bytes"));
        assert_eq!(cs[3].why_not.as_deref(), Some("failed"));
        let share = share_of_best(&cs[2], &cs, Objective::Latency).unwrap();
        assert!((share - 1.0).abs() < 1e-12);
        let share = share_of_best(&cs[1], &cs, Objective::Latency).unwrap();
        assert!((share - 500.0 / 700.0).abs() < 1e-12);
    }

    /// A read of a larger page is counted at the rate probed for its size,
    /// else as its bytes' worth of 4 KiB reads.
    #[test]
    fn a_larger_page_is_counted_at_its_probed_rate_else_by_its_bytes() {
        let mut d = device(100_000.0);
        assert_eq!(d.rate(4096), 100_000.0);
        assert_eq!(d.rate(8192), 50_000.0);
        d.pages.push((8192, 70_000.0));
        assert_eq!(d.rate(8192), 70_000.0);
        assert_eq!(d.rate(16384), 25_000.0);
        let mut t = trial(14.0, 100.0, None);
        t.page_size = 8192;
        // 14 reads at 70k/s: 200 µs, above the CPU's 50.
        let p = predict(&t, &d, 2);
        assert!((p.qps - 5_000.0).abs() < 1e-6, "{p:?}");
        // A given rate is not probed further.
        d.probe_pages(&[(16384, PathBuf::from("/nonexistent"))], 1);
        assert_eq!(d.pages.len(), 1);
    }
}
