//! In-memory greedy search used while building (Vamana paper, Algorithm 1).

use super::space::BuildSpace;
use crate::util::candidates::CandidateList;
use crate::util::visited::VisitedSet;

/// Per-thread scratch, reused across searches.
#[derive(Default)]
pub struct Scratch {
    pub list: CandidateList,
    pub visited: VisitedSet,
    /// Every expanded node with its distance to the target: the pool that
    /// robust prune chooses neighbours from.
    pub expanded: Vec<(f32, u32)>,
}

/// Searches `lists` from `start` towards point `target` with list size `l`;
/// fills `scratch.expanded`.
pub fn search_to_point(
    space: &BuildSpace,
    lists: &[Vec<u32>],
    start: u32,
    target: u32,
    l: usize,
    scratch: &mut Scratch,
) {
    let Scratch {
        list,
        visited,
        expanded,
    } = scratch;
    list.reset(l);
    visited.clear();
    expanded.clear();
    visited.insert(start);
    list.insert(start, space.dist(target, start));
    while let Some(c) = list.pop_closest_unexpanded() {
        expanded.push((c.dist, c.id));
        for &nb in &lists[c.id as usize] {
            if visited.insert(nb) {
                list.insert(nb, space.dist(target, nb));
            }
        }
    }
}
