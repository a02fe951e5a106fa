//! Progress bars with ETA on stderr; indicatif hides them when stderr is not
//! a terminal, so logs and pipes stay clean.

use indicatif::{ProgressBar, ProgressState, ProgressStyle};
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Default)]
pub struct Bars {
    bar: Mutex<Option<ProgressBar>>,
}

impl stratavec::progress::Progress for Bars {
    fn stage(&self, name: &str, total: u64) {
        let bar = if total > 0 {
            let b = ProgressBar::new(total);
            b.set_style(
                ProgressStyle::with_template("{msg:>12} [{bar:40}] {pos}/{len} ({smooth_eta})")
                    .expect("template")
                    .with_key("smooth_eta", SmoothEta::default())
                    .progress_chars("=> "),
            );
            // Redrawn every second, so the ETA counts down between updates.
            b.enable_steady_tick(Duration::from_secs(1));
            b
        } else {
            let b = ProgressBar::new_spinner();
            b.set_style(
                ProgressStyle::with_template("{msg:>12} {spinner} {elapsed}").expect("template"),
            );
            b.enable_steady_tick(std::time::Duration::from_millis(200));
            b
        };
        bar.set_message(name.to_string());
        if let Ok(mut g) = self.bar.lock() {
            *g = Some(bar);
        }
    }

    fn set(&self, done: u64) {
        if let Ok(g) = self.bar.lock() {
            if let Some(b) = g.as_ref() {
                b.set_position(done);
            }
        }
    }

    fn finish(&self) {
        if let Ok(mut g) = self.bar.lock() {
            if let Some(b) = g.take() {
                b.finish_and_clear();
            }
        }
    }

    fn note(&self, msg: &str) {
        // Above a bar that may be drawing, and on stderr like the bars, so
        // stdout (the report, --json) stays clean.
        match self.bar.lock().ok().as_ref().and_then(|g| g.as_ref()) {
            Some(b) => b.suspend(|| eprintln!("note: {msg}")),
            None => eprintln!("note: {msg}"),
        }
    }
    /// Set by the SIGINT/SIGTERM handler that `build` installs
    /// (`stratavec_io::signals`); never true for commands that install none.
    fn cancelled(&self) -> bool {
        stratavec_io::signals::caught().is_some()
    }
}

/// Ends a build stopped by a signal: one line, and the shell's status for
/// death by that signal (128 + its number: 130 for SIGINT, 143 for SIGTERM).
/// The build has already removed its staging directory.
pub fn exit_interrupted(index_dir: &Path) -> ! {
    let sig = stratavec_io::signals::caught().unwrap_or(2);
    let name = match sig {
        2 => "SIGINT",
        15 => "SIGTERM",
        _ => "a signal",
    };
    eprintln!(
        "stratavec: build stopped by {name}; nothing was written to {} (a previous index there is unchanged)",
        index_dir.display()
    );
    std::process::exit(128 + sig)
}

/// The ETA as a steady rate predicts it. indicatif's own estimate is wild
/// at the start of a stage: the first graph batches are tiny and fast (the
/// batches double from one point), the first pages write to the page cache.
/// So the rate is an exponential moving average (time constant `TAU_S`)
/// over samples at least `SAMPLE_S` apart that start after the first
/// `WARMUP_S` (an average that began with the fast start would take many
/// time constants to forget it), and no ETA is shown until the stage has
/// run `STEADY_S` and done `STEADY_FRACTION` of its work.
#[derive(Clone, Debug, Default)]
pub struct Eta {
    /// (seconds into the stage, position) of the last sample.
    last: Option<(f64, u64)>,
    /// Smoothed units per second.
    rate: Option<f64>,
    total: u64,
}

const SAMPLE_S: f64 = 0.5;
const WARMUP_S: f64 = 1.5;
const TAU_S: f64 = 5.0;
const STEADY_S: f64 = 3.0;
const STEADY_FRACTION: f64 = 0.03;

impl Eta {
    /// Position `pos` of `total` at `t` seconds into the stage.
    pub fn observe(&mut self, t: f64, pos: u64, total: u64) {
        self.total = total;
        let Some((t0, p0)) = self.last else {
            self.last = Some((t, pos));
            return;
        };
        let dt = t - t0;
        if dt < SAMPLE_S {
            return;
        }
        if t0 >= WARMUP_S {
            let inst = pos.saturating_sub(p0) as f64 / dt;
            // The weight of a sample grows with the time it spans, so the
            // average does not depend on how often the bar is drawn.
            let w = 1.0 - (-dt / TAU_S).exp();
            self.rate = Some(self.rate.map_or(inst, |r| r + w * (inst - r)));
        }
        self.last = Some((t, pos));
    }

    /// Seconds left at `t`, once the rate is steady.
    pub fn remaining(&self, t: f64) -> Option<f64> {
        let ((t0, p0), rate) = (self.last?, self.rate?);
        if t < STEADY_S || (p0 as f64) < STEADY_FRACTION * self.total as f64 || rate <= 0.0 {
            return None;
        }
        let left = self.total.saturating_sub(p0) as f64 / rate - (t - t0);
        Some(left.max(0.0))
    }
}

/// "1h 05m", "3m 20s", "45s".
fn human(secs: f64) -> String {
    let s = secs.round() as u64;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m {:02}s", s / 60, s % 60),
        _ => format!("{}h {:02}m", s / 3600, s % 3600 / 60),
    }
}

/// The `{smooth_eta}` template key.
#[derive(Clone, Default)]
struct SmoothEta {
    eta: Eta,
}

impl indicatif::style::ProgressTracker for SmoothEta {
    fn clone_box(&self) -> Box<dyn indicatif::style::ProgressTracker> {
        Box::new(self.clone())
    }

    fn tick(&mut self, state: &ProgressState, _now: Instant) {
        let total = state.len().unwrap_or(0);
        self.eta
            .observe(state.elapsed().as_secs_f64(), state.pos(), total);
    }

    fn reset(&mut self, _state: &ProgressState, _now: Instant) {
        self.eta = Eta::default();
    }

    fn write(&self, state: &ProgressState, w: &mut dyn std::fmt::Write) {
        let _ = match self.eta.remaining(state.elapsed().as_secs_f64()) {
            Some(s) => write!(w, "{} left", human(s)),
            None => write!(w, "estimating time left"),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stage at 100 units/s whose first second ran 20x faster (tiny
    /// first batches): no ETA while unsteady, then one near the truth that
    /// converges, never the wild 1/20th the first second suggests.
    #[test]
    fn eta_waits_for_a_steady_rate_then_smooths_it() {
        let total = 10_000u64;
        let pos_at = |t: f64| -> u64 {
            if t <= 1.0 {
                (2000.0 * t) as u64
            } else {
                2000 + (100.0 * (t - 1.0)) as u64
            }
        };
        let mut eta = Eta::default();
        let mut t = 0.0;
        while t <= 60.0 {
            eta.observe(t, pos_at(t), total);
            let truth = (total - pos_at(t)) as f64 / 100.0;
            match eta.remaining(t) {
                None => assert!(t < STEADY_S + 0.5, "no ETA at {t} s"),
                Some(left) => {
                    assert!(t >= STEADY_S, "ETA {left} shown at {t} s");
                    // Never below half the truth, and within 10% once the
                    // fast start has decayed (a few time constants).
                    assert!(left > 0.5 * truth, "at {t} s: {left} vs {truth}");
                    if t > 20.0 {
                        assert!(
                            (left - truth).abs() < 0.1 * truth,
                            "at {t} s: {left} vs {truth}"
                        );
                    }
                }
            }
            t += 0.25;
        }
    }

    #[test]
    fn no_eta_before_a_few_percent_or_without_progress() {
        let mut eta = Eta::default();
        for i in 0..20 {
            eta.observe(i as f64, i, 10_000);
        }
        assert_eq!(eta.remaining(19.0), None, "0.2% done after 19 s");
        let mut stalled = Eta::default();
        for i in 0..20 {
            stalled.observe(i as f64, 5_000, 10_000);
        }
        assert_eq!(stalled.remaining(19.0), None, "no progress: no rate");
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(human(44.6), "45s");
        assert_eq!(human(200.0), "3m 20s");
        assert_eq!(human(3900.0), "1h 05m");
    }
}
