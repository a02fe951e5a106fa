//! Block Neighbour Padding (Starling §4.1, Algorithm I): scan ids in
//! ascending order; an unassigned node opens (or continues) the current block
//! and pads it with its own unassigned neighbours while there is room (with
//! records of different sizes, a neighbour that does not fit is passed over
//! for the next).

use super::assignment::{BlockAssignment, Capacity};

pub fn bnp(lists: &[Vec<u32>], capacity: Capacity) -> BlockAssignment {
    let n = lists.len();
    let mut a = BlockAssignment::empty(n, capacity);
    let mut cur = 0u32;
    for u in 0..n as u32 {
        if a.block_of[u as usize] != u32::MAX {
            continue;
        }
        if !a.fits(u, cur) {
            cur += 1;
        }
        a.put(u, cur);
        for &v in &lists[u as usize] {
            if a.room(cur) == 0 {
                break;
            }
            if a.block_of[v as usize] == u32::MAX && a.fits(v, cur) {
                a.put(v, cur);
            }
        }
    }
    a.drop_empty();
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
        let a = bnp(&lists, Capacity::slots(4));
        a.validate().unwrap();
        assert_eq!(a.members[0], vec![0, 5, 6, 7]);
        assert_eq!(a.members[1], vec![1, 2, 3, 4]);
    }
}
