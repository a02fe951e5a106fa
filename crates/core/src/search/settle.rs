//! Settling the top k from estimates with error bounds, reading only the
//! candidates the bounds leave open (issue #57 item 2; the bound is
//! extended RaBitQ's, `quant::exrabitq`).
//!
//! A candidate's exact distance lies in `[est − err, est + err]` (or is
//! known, once read). It is certainly **in** the top k of the pool when
//! fewer than k others can be closer (fewer than k others have a lower end
//! below its upper end), and certainly **out** when k others are surely
//! closer (k others have an upper end below its lower end). Only the rest
//! — **open** — need a read; each read shrinks one interval to a point and
//! may settle others, so the refinement reads in small waves, the open
//! candidates with the best estimates first.
//!
//! Why the answer is the same as reading all: an in candidate's upper end
//! is at most every out candidate's lower end (were it above, the k
//! candidates surely closer than that out one would all have lower ends
//! below it, and it could not be in), so ranking in candidates by estimate
//! and the rest by exact distance keeps every in above every out. With
//! every interval true, the top k is the one full reads give; the bound
//! fails on ≤ 0.1% of pairs, which the tests measure as recall.

/// One candidate of the refinement.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bounded {
    pub id: u32,
    pub est: f32,
    pub err: f32,
    /// Its exact distance, once read (or seen on the way).
    pub exact: Option<f32>,
}

impl Bounded {
    fn lower(&self) -> f32 {
        self.exact.unwrap_or(self.est - self.err)
    }
    fn upper(&self) -> f32 {
        self.exact.unwrap_or(self.est + self.err)
    }
    /// What it is ranked by: the exact distance, else the estimate.
    pub fn value(&self) -> f32 {
        self.exact.unwrap_or(self.est)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    In,
    Out,
    Open,
}

/// Scratch for [`classify`], kept by a search across queries.
#[derive(Default)]
pub struct Settle {
    lowers: Vec<f32>,
    uppers: Vec<f32>,
    pub verdicts: Vec<Verdict>,
}

impl Settle {
    /// Which of the candidates may join the pool a refinement settles: those
    /// the bounds, shrunk to `reach` of their width, do not leave certainly
    /// out of the top `k` (fewer than `k` others' shrunk upper ends lie below
    /// the candidate's shrunk lower end). The pool is then settled at the full
    /// bounds ([`Settle::classify`]), so it holds its exact top k; the reach
    /// decides how far past the k-th estimate a candidate may sit and still
    /// be read. At `reach` 1 nothing surely out of the pool is dropped; at
    /// the usual L the default is far smaller (`SearchParams::settle_reach`,
    /// `two_stage::reach`): a candidate admitted costs reads, where recall
    /// bought with L costs estimates in RAM. The shrunk bound keeps the pool
    /// wide where the codes are loose (few dimensions) and near k where they
    /// rank well.
    pub fn admit(&mut self, est: &[f32], err: &[f32], k: usize, reach: f32, keep: &mut Vec<bool>) {
        keep.clear();
        self.uppers.clear();
        self.uppers
            .extend(est.iter().zip(err).map(|(&e, &b)| e + reach * b));
        let edge = match k.min(self.uppers.len()) {
            0 => f32::NEG_INFINITY,
            k => *self.uppers.select_nth_unstable_by(k - 1, f32::total_cmp).1,
        };
        keep.extend(est.iter().zip(err).map(|(&e, &b)| e - reach * b <= edge));
    }

    /// Each candidate's verdict for the top `k` of `pool` (into
    /// `self.verdicts`); true when none is open and unread.
    pub fn classify(&mut self, pool: &[Bounded], k: usize) -> bool {
        self.lowers.clear();
        self.lowers.extend(pool.iter().map(Bounded::lower));
        self.lowers.sort_unstable_by(f32::total_cmp);
        self.uppers.clear();
        self.uppers.extend(pool.iter().map(Bounded::upper));
        self.uppers.sort_unstable_by(f32::total_cmp);
        self.verdicts.clear();
        let mut settled = true;
        for c in pool {
            let (lo, up) = (c.lower(), c.upper());
            // Others whose lower end is below this upper end (itself
            // counted when its own interval is open).
            let below = self.lowers.partition_point(|&l| l < up) - usize::from(lo < up);
            let surely_closer = self.uppers.partition_point(|&u| u < lo);
            let v = if below < k {
                Verdict::In
            } else if surely_closer >= k {
                Verdict::Out
            } else {
                Verdict::Open
            };
            settled &= v != Verdict::Open || c.exact.is_some();
            self.verdicts.push(v);
        }
        settled
    }

    /// Up to `wave` open, unread candidates, best estimate first (indexes
    /// into the pool last classified).
    pub fn next_reads(&self, pool: &[Bounded], wave: usize, out: &mut Vec<usize>) {
        out.clear();
        out.extend(
            (0..pool.len())
                .filter(|&i| self.verdicts[i] == Verdict::Open && pool[i].exact.is_none()),
        );
        out.sort_unstable_by(|&a, &b| pool[a].est.total_cmp(&pool[b].est));
        out.truncate(wave);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::rng::Rng;
    use proptest::prelude::*;

    /// The settle loop against the exact top k: reads open candidates one
    /// wave at a time until none is open, then ranks by value.
    fn settle(pool: &mut [Bounded], truth: &[f32], k: usize, wave: usize) -> (Vec<u32>, usize) {
        let mut s = Settle::default();
        let mut reads = 0;
        let mut next = Vec::new();
        while !s.classify(pool, k) {
            s.next_reads(pool, wave, &mut next);
            assert!(!next.is_empty());
            for &i in &next {
                pool[i].exact = Some(truth[i]);
                reads += 1;
            }
        }
        let mut ranked: Vec<&Bounded> = pool
            .iter()
            .zip(&s.verdicts)
            .filter(|(_, v)| **v != Verdict::Out)
            .map(|(c, _)| c)
            .collect();
        ranked.sort_by(|a, b| a.value().total_cmp(&b.value()));
        (ranked.iter().take(k).map(|c| c.id).collect(), reads)
    }

    proptest! {
        /// With every interval true, settling gives the exact top k, and
        /// reads no more than reading everything would.
        #[test]
        fn true_bounds_give_the_exact_top_k(
            n in 1usize..60, k in 1usize..12, wave in 1usize..6, seed in 0u64..10_000,
            spread in 0.0f32..3.0,
        ) {
            let mut rng = Rng::new(seed);
            let truth: Vec<f32> = (0..n).map(|_| rng.unit_f32() * 10.0).collect();
            let mut pool: Vec<Bounded> = truth.iter().enumerate().map(|(i, &t)| {
                let err = rng.unit_f32() * spread;
                // The estimate anywhere within err of the truth.
                let est = t + (rng.unit_f32() * 2.0 - 1.0) * err;
                Bounded { id: i as u32, est, err, exact: None }
            }).collect();
            let (got, reads) = settle(&mut pool, &truth, k, wave);
            let mut order: Vec<usize> = (0..n).collect();
            order.sort_by(|&a, &b| truth[a].total_cmp(&truth[b]));
            let kth = truth[order[k.min(n) - 1]];
            // Ties at the k-th distance may go either way.
            prop_assert_eq!(got.len(), k.min(n));
            for id in &got {
                prop_assert!(truth[*id as usize] <= kth, "{:?} {}", got, kth);
            }
            prop_assert!(reads <= n);
        }
    }

    proptest! {
        /// Admission against a plain count: a candidate is kept exactly
        /// when fewer than k others' shrunk upper ends are below its
        /// shrunk lower end (ties kept); at least k are kept, and a wider
        /// reach keeps a superset.
        #[test]
        fn admission_keeps_what_is_not_surely_out(
            n in 0usize..40, k in 1usize..12, seed in 0u64..10_000, reach in 0.0f32..1.5,
        ) {
            let mut rng = Rng::new(seed);
            let est: Vec<f32> = (0..n).map(|_| (rng.unit_f32() * 20.0).round() / 4.0).collect();
            let err: Vec<f32> = (0..n).map(|_| rng.unit_f32() * 2.0).collect();
            let (mut s, mut keep) = (Settle::default(), Vec::new());
            s.admit(&est, &err, k, reach, &mut keep);
            prop_assert_eq!(keep.len(), n);
            for i in 0..n {
                let lo = est[i] - reach * err[i];
                let closer = (0..n).filter(|&j| j != i && est[j] + reach * err[j] < lo).count();
                prop_assert_eq!(keep[i], closer < k, "i {} closer {}", i, closer);
            }
            prop_assert!(keep.iter().filter(|&&x| x).count() >= k.min(n));
            let mut wider = Vec::new();
            s.admit(&est, &err, k, reach + 0.5, &mut wider);
            for i in 0..n {
                prop_assert!(!keep[i] || wider[i]);
            }
        }
    }

    #[test]
    fn exact_intervals_read_nothing_and_tight_ones_little() {
        let truth: Vec<f32> = (0..40).map(|i| i as f32).collect();
        let mut pool: Vec<Bounded> = truth
            .iter()
            .enumerate()
            .map(|(i, &t)| Bounded {
                id: i as u32,
                est: t,
                err: 0.0,
                exact: None,
            })
            .collect();
        let (got, reads) = settle(&mut pool, &truth, 10, 4);
        assert_eq!(got, (0..10).collect::<Vec<u32>>());
        assert_eq!(reads, 0);
        // Intervals of ±0.6 overlap only their neighbours': only those
        // around the 10th need a read.
        for c in &mut pool {
            c.err = 0.6;
            c.exact = None;
        }
        let (got, reads) = settle(&mut pool, &truth, 10, 1);
        assert_eq!(got, (0..10).collect::<Vec<u32>>());
        assert!(reads <= 2, "{reads}");
    }
}
