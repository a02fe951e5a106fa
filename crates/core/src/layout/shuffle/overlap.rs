//! The overlap ratio (Starling eq. 5): OR(u) = |B(u) ∩ N(u)| / (|B(u)| - 1)
//! when the block holds more than u, else 0; OR(G) is the mean over nodes.

use super::assignment::BlockAssignment;
use rayon::prelude::*;

/// OR(u) for one node.
pub fn node_overlap(lists: &[Vec<u32>], a: &BlockAssignment, u: u32) -> f64 {
    let b = a.block_of[u as usize];
    let size = a.members[b as usize].len();
    if size <= 1 {
        return 0.0;
    }
    let shared = lists[u as usize]
        .iter()
        .filter(|&&v| v != u && a.block_of[v as usize] == b)
        .count();
    shared as f64 / (size - 1) as f64
}

/// OR(G). Summed in fixed chunks, so the value is the same for any number of
/// threads.
pub fn overlap_ratio(lists: &[Vec<u32>], a: &BlockAssignment) -> f64 {
    let n = lists.len();
    if n == 0 {
        return 0.0;
    }
    let partial: Vec<f64> = (0..n as u32)
        .collect::<Vec<_>>()
        .par_chunks(4096)
        .map(|c| c.iter().map(|&u| node_overlap(lists, a, u)).sum::<f64>())
        .collect();
    partial.iter().sum::<f64>() / n as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hand computation of eq. 5 on a five-node graph.
    #[test]
    fn matches_a_hand_computation() {
        // Nodes 0..4, one block of 4 = {0, 1, 2, 3} and one of {4}.
        // N(0) = {1, 2, 3}, N(1) = {0, 2}, N(2) = {0, 1}, N(3) = {0, 4}, N(4) = {3}.
        let lists = vec![vec![1, 2, 3], vec![0, 2], vec![0, 1], vec![0, 4], vec![3]];
        let a = BlockAssignment::id_order(5, super::super::Capacity::slots(4));
        // OR(0) = 3/3, OR(1) = 2/3, OR(2) = 2/3, OR(3) = 1/3, OR(4) = 0 (alone).
        let want = (1.0 + 2.0 / 3.0 + 2.0 / 3.0 + 1.0 / 3.0 + 0.0) / 5.0;
        assert!((overlap_ratio(&lists, &a) - want).abs() < 1e-12);
        assert!((node_overlap(&lists, &a, 3) - 1.0 / 3.0).abs() < 1e-12);
    }
}
