//! Block Neighbour Swap (Starling Appendix E, Algorithm 3): for every node u
//! and every pair (a, e) of its neighbours stored in different blocks, swap
//! the lowest-OR member of B(a) with the lowest-OR member of B(e) when that
//! raises OR(B(a)) + OR(B(e)). Every accepted swap raises OR(G) (Lemma 4.2),
//! at O(o^2 · ε · o) per node: much slower than BNF, as the paper finds.

use super::assignment::BlockAssignment;
use super::overlap::{node_overlap, overlap_ratio};
use crate::progress::Stop;

/// Sum of OR(v) over block `b`'s members.
fn block_or_sum(lists: &[Vec<u32>], a: &BlockAssignment, b: u32) -> f64 {
    a.members[b as usize]
        .iter()
        .map(|&v| node_overlap(lists, a, v))
        .sum()
}

/// The member of `b` with the lowest OR (first on ties), and its slot.
fn weakest(lists: &[Vec<u32>], a: &BlockAssignment, b: u32) -> Option<(usize, u32)> {
    let m = &a.members[b as usize];
    let mut best: Option<(usize, u32, f64)> = None;
    for (slot, &v) in m.iter().enumerate() {
        let or = node_overlap(lists, a, v);
        if best.is_none_or(|(_, _, o)| or < o) {
            best = Some((slot, v, or));
        }
    }
    best.map(|(s, v, _)| (s, v))
}

pub fn bns(
    lists: &[Vec<u32>],
    start: BlockAssignment,
    iterations: usize,
    gain: f64,
    stop: &Stop,
) -> BlockAssignment {
    let mut a = start;
    let mut or = overlap_ratio(lists, &a);
    for _ in 0..iterations {
        for u in 0..lists.len() {
            // A pass is long and serial: poll every 4096 nodes; the caller
            // discards a stopped result.
            if u % 4096 == 0 && stop() {
                return a;
            }
            let nbrs = &lists[u];
            for i in 0..nbrs.len() {
                for j in i + 1..nbrs.len() {
                    let (ba, be) = (a.block_of[nbrs[i] as usize], a.block_of[nbrs[j] as usize]);
                    if ba == be {
                        continue;
                    }
                    let (Some((sx, x)), Some((sy, y))) =
                        (weakest(lists, &a, ba), weakest(lists, &a, be))
                    else {
                        continue;
                    };
                    if !a.swap_fits(x, ba, y, be) {
                        continue;
                    }
                    let before = block_or_sum(lists, &a, ba) + block_or_sum(lists, &a, be);
                    a.swap(ba, sx, be, sy);
                    let after = block_or_sum(lists, &a, ba) + block_or_sum(lists, &a, be);
                    if after <= before {
                        a.swap(ba, sx, be, sy);
                    }
                }
            }
        }
        let next = overlap_ratio(lists, &a);
        let improved = next - or;
        or = next;
        if improved < gain {
            break;
        }
    }
    a
}

#[cfg(test)]
mod tests {
    use super::super::assignment::Capacity;
    use super::super::bnp::bnp;
    use super::*;
    use crate::util::rng::Rng;

    #[test]
    fn never_lowers_overlap_and_keeps_a_valid_layout() {
        let mut rng = Rng::new(3);
        let n = 120;
        let lists: Vec<Vec<u32>> = (0..n)
            .map(|u| {
                let mut l: Vec<u32> = (0..6)
                    .map(|_| rng.below(n) as u32)
                    .filter(|&v| v != u as u32)
                    .collect();
                l.sort_unstable();
                l.dedup();
                l
            })
            .collect();
        let start = bnp(&lists, Capacity::slots(5));
        let before = overlap_ratio(&lists, &start);
        let a = bns(&lists, start, 3, 0.0, &crate::progress::never);
        a.validate().unwrap();
        assert!(overlap_ratio(&lists, &a) >= before - 1e-12);
    }
}
