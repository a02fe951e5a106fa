//! Block Neighbour Padding (Starling §4.1, Algorithm I): scan ids in
//! ascending order; an unassigned node opens (or continues) the current block
//! and pads it with its own unassigned neighbours while there is room.

use super::assignment::BlockAssignment;

pub fn bnp(lists: &[Vec<u32>], per_block: usize) -> BlockAssignment {
    let n = lists.len();
    let mut a = BlockAssignment::empty(n, per_block);
    let mut cur = 0u32;
    for u in 0..n as u32 {
        if a.block_of[u as usize] != u32::MAX {
            continue;
        }
        if a.is_full(cur) {
            cur += 1;
        }
        a.put(u, cur);
        for &v in &lists[u as usize] {
            if a.is_full(cur) {
                break;
            }
            if a.block_of[v as usize] == u32::MAX {
                a.put(v, cur);
            }
        }
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pads_blocks_with_neighbours() {
        // 0's neighbours are 5, 6, 7: BNP puts them in 0's block.
        let mut lists = vec![vec![]; 8];
        lists[0] = vec![5, 6, 7];
        let a = bnp(&lists, 4);
        a.validate().unwrap();
        assert_eq!(a.members[0], vec![0, 5, 6, 7]);
        assert_eq!(a.members[1], vec![1, 2, 3, 4]);
    }
}
