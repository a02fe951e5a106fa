//! Round-robin timing: every system at one sweep point, then the next point,
//! for R rounds, with the device ceiling measured before, between and after
//! the rounds.
//!
//! On a shared virtual disk the rate moves from minute to minute (issue
//! #25: the same command gave 2.90x and 1.60x of DiskANN's QPS). Timing all
//! systems at a point back to back puts them in the same spell of the
//! device, so a per-round ratio cancels it; the median and range over
//! rounds say how far a figure can be trusted. The order of the systems
//! rotates from point to point and round to round, so none is always the
//! one that runs first after a probe or after the previous point's
//! heaviest system.

use super::device::Ceiling;
use super::peers::Peer;
use super::run::Opened;
use anyhow::{Context, Result};
use serde_json::Value;

/// One system of a bench run, opened and ready to time a sweep point.
pub enum System<'a> {
    Stratavec(Box<Opened<'a>>),
    Peer(Peer),
}

impl System<'_> {
    pub fn name(&self) -> &str {
        match self {
            System::Stratavec(o) => &o.s.system,
            System::Peer(p) => &p.name,
        }
    }

    fn point(&mut self, l: usize, round: usize) -> Result<Value> {
        match self {
            System::Stratavec(o) => o.point(l, round),
            System::Peer(p) => p.point(l, round),
        }
    }
}

/// The order systems run in at point `j` of round `round`: rotated by one
/// each point and each round.
pub fn order(systems: usize, round: usize, j: usize) -> Vec<usize> {
    (0..systems).map(|i| (i + round + j) % systems).collect()
}

/// Runs `rounds` rounds over `ls` and hands every row (search and device)
/// to `emit` as soon as it is measured.
pub fn run(
    systems: &mut [System],
    ls: &[usize],
    rounds: usize,
    ceiling: Option<&Ceiling>,
    emit: &mut dyn FnMut(Vec<Value>) -> Result<()>,
) -> Result<()> {
    let rounds = rounds.max(1);
    let probe =
        |phase: &str, scan: bool, emit: &mut dyn FnMut(Vec<Value>) -> Result<()>| match ceiling
            .filter(|c| c.enabled())
        {
            Some(c) => {
                eprintln!("bench: device ceiling, {phase}");
                emit(c.phase(phase, scan)?)
            }
            None => Ok(()),
        };
    probe("before", true, emit)?;
    for round in 0..rounds {
        eprintln!(
            "bench: round {} of {rounds}: {} system(s) at each of {} points",
            round + 1,
            systems.len(),
            ls.len()
        );
        for (j, &l) in ls.iter().enumerate() {
            for i in order(systems.len(), round, j) {
                let s = &mut systems[i];
                let row = s.point(l, round).with_context(|| {
                    format!("timing {} at L={l} in round {}", s.name(), round + 1)
                })?;
                emit(vec![row])?;
            }
        }
        if round + 1 < rounds {
            probe(
                &format!("between rounds {} and {}", round + 1, round + 2),
                false,
                emit,
            )?;
        }
    }
    probe("after", false, emit)
}

#[cfg(test)]
mod tests {
    use super::order;

    #[test]
    fn every_system_leads_in_turn() {
        assert_eq!(order(3, 0, 0), vec![0, 1, 2]);
        assert_eq!(order(3, 0, 1), vec![1, 2, 0]);
        assert_eq!(order(3, 1, 1), vec![2, 0, 1]);
        for round in 0..2 {
            for j in 0..4 {
                let mut o = order(3, round, j);
                o.sort_unstable();
                assert_eq!(o, vec![0, 1, 2], "each system once a point");
            }
        }
        assert!(order(0, 1, 1).is_empty());
    }
}
