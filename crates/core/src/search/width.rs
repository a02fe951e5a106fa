//! How many reads a query keeps outstanding, its width W, as the search goes
//! (OctopusANN §4.3.1, "Dynamic Width"). A search has an approach phase,
//! where it walks towards the query and extra reads rarely pay (their nodes
//! fall out of the list before they are expanded: "read but unexplored"),
//! and a converge phase, where the candidates near the top of the list are
//! all worth reading and a wider front finishes sooner. Every policy is
//! capped at the caller's W (`--beam-width`):
//!
//! - `fixed`: W from the first read (DiskANN).
//! - `schedule`: a static schedule by progress, the number of settled
//!   entries at the top of the list (PipeANN's `STATIC_POLICY`: 1/8, 1/4,
//!   1/2, 3/4 and all of W, each for 10 settled entries).
//! - `double`: 1, 2, 4, ... reads, doubling each time as many reads as the
//!   current width have arrived (AlayaLaser §4.2's adaptive beam).
//! - `adaptive`: waste-driven (PipeANN's default): start at 4; once the top
//!   5 entries are settled, grow by one for each arrival while at most 10%
//!   of the reads that arrived since then were wasted (their node no longer
//!   ranks within the list).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WidthPolicy {
    #[default]
    Fixed,
    Schedule,
    Double,
    Adaptive,
}

impl WidthPolicy {
    pub const ALL: [WidthPolicy; 4] = [
        WidthPolicy::Fixed,
        WidthPolicy::Schedule,
        WidthPolicy::Double,
        WidthPolicy::Adaptive,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            WidthPolicy::Fixed => "fixed",
            WidthPolicy::Schedule => "schedule",
            WidthPolicy::Double => "double",
            WidthPolicy::Adaptive => "adaptive",
        }
    }
}

impl fmt::Display for WidthPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for WidthPolicy {
    type Err = crate::Error;
    fn from_str(s: &str) -> crate::Result<Self> {
        WidthPolicy::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| {
                crate::Error::argument("width", "fixed, schedule, double or adaptive", s)
            })
    }
}

/// PipeANN's static schedule, in eighths of W, by settled entries / 5.
const SCHEDULE_EIGHTHS: [usize; 9] = [1, 1, 2, 2, 4, 4, 6, 6, 8];
/// Width the adaptive policy starts at (PipeANN: 4 "before converge").
const ADAPTIVE_START: usize = 4;
/// Settled entries from which the adaptive policy counts waste.
const ADAPTIVE_CONVERGED: usize = 5;
/// The share of wasted arrivals under which the adaptive policy grows.
const ADAPTIVE_WASTE: f64 = 0.1;

/// One query's width under a policy.
#[derive(Clone, Debug)]
pub struct Width {
    policy: WidthPolicy,
    max: usize,
    cur: usize,
    /// `double`: arrivals at the current width.
    arrivals: usize,
    /// `adaptive`: arrivals since convergence, and the useful ones.
    seen: u32,
    useful: u32,
}

impl Width {
    pub fn new(policy: WidthPolicy, max: usize) -> Self {
        let max = max.max(1);
        let cur = match policy {
            WidthPolicy::Fixed => max,
            WidthPolicy::Schedule => schedule(max, 0),
            WidthPolicy::Double => 1,
            WidthPolicy::Adaptive => ADAPTIVE_START.min(max),
        };
        Width {
            policy,
            max,
            cur,
            arrivals: 0,
            seen: 0,
            useful: 0,
        }
    }

    /// Reads the query may have outstanding now.
    pub fn current(&self) -> usize {
        self.cur
    }

    /// A read arrived. `useful`: its node still ranks within the list;
    /// `progress`: entries settled at the top of the list (expanded or
    /// read), PipeANN's marker; asked only by the policies that use it
    /// (finding it scans the list, on every read).
    pub fn on_arrival(&mut self, useful: bool, progress: impl FnOnce() -> usize) {
        match self.policy {
            WidthPolicy::Fixed => {}
            WidthPolicy::Schedule => self.cur = self.cur.max(schedule(self.max, progress())),
            WidthPolicy::Double => {
                self.arrivals += 1;
                if self.arrivals >= self.cur {
                    self.arrivals = 0;
                    self.cur = (self.cur * 2).min(self.max);
                }
            }
            WidthPolicy::Adaptive => {
                if progress() < ADAPTIVE_CONVERGED {
                    return;
                }
                self.seen += 1;
                self.useful += useful as u32;
                let waste = (self.seen - self.useful) as f64 / self.seen as f64;
                if waste <= ADAPTIVE_WASTE {
                    self.cur = (self.cur + 1).min(self.max);
                }
            }
        }
    }
}

fn schedule(max: usize, progress: usize) -> usize {
    let eighths = SCHEDULE_EIGHTHS[(progress / 5).min(SCHEDULE_EIGHTHS.len() - 1)];
    (max * eighths).div_ceil(8).clamp(1, max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_ones_are_refused() {
        for p in WidthPolicy::ALL {
            assert_eq!(p.as_str().parse::<WidthPolicy>().unwrap(), p);
        }
        let e = "wide".parse::<WidthPolicy>().unwrap_err().to_string();
        assert!(e.contains("adaptive") && e.contains("wide"), "{e}");
    }

    #[test]
    fn fixed_never_moves_and_every_policy_stays_within_one_and_the_cap() {
        for p in WidthPolicy::ALL {
            for max in [1, 2, 4, 8, 16, 64] {
                let mut w = Width::new(p, max);
                let mut last = w.current();
                for i in 0..200 {
                    w.on_arrival(i % 7 != 0, || i / 2);
                    let c = w.current();
                    assert!((1..=max).contains(&c), "{p} max {max}: {c}");
                    assert!(c >= last, "{p} never narrows");
                    last = c;
                }
                if p == WidthPolicy::Fixed {
                    assert_eq!(last, max);
                }
            }
        }
    }

    #[test]
    fn double_goes_one_two_four_by_arrivals() {
        let mut w = Width::new(WidthPolicy::Double, 8);
        let mut seen = vec![w.current()];
        for _ in 0..10 {
            w.on_arrival(true, || 0);
            seen.push(w.current());
        }
        assert_eq!(seen, [1, 2, 2, 4, 4, 4, 4, 8, 8, 8, 8]);
    }

    #[test]
    fn schedule_follows_progress() {
        let mut w = Width::new(WidthPolicy::Schedule, 16);
        assert_eq!(w.current(), 2);
        w.on_arrival(true, || 12);
        assert_eq!(w.current(), 4);
        w.on_arrival(true, || 40);
        assert_eq!(w.current(), 16);
    }

    #[test]
    fn adaptive_grows_only_after_convergence_and_while_waste_is_low() {
        let mut w = Width::new(WidthPolicy::Adaptive, 16);
        assert_eq!(w.current(), 4);
        w.on_arrival(true, || 2);
        assert_eq!(w.current(), 4, "approach phase: no change");
        for _ in 0..4 {
            w.on_arrival(true, || 6);
        }
        assert_eq!(w.current(), 8);
        // One waste in 5 arrivals (20%) stops the growth...
        w.on_arrival(false, || 6);
        assert_eq!(w.current(), 8);
        // ... until useful arrivals bring the share back to 10% (1 in 10).
        for _ in 0..4 {
            w.on_arrival(true, || 7);
        }
        assert_eq!(w.current(), 8);
        w.on_arrival(true, || 7);
        assert_eq!(w.current(), 9);
    }
}
