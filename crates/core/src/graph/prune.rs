//! Robust prune (Vamana paper, Algorithm 2) with DiskANN's progressive alpha:
//! candidates are taken in distance order; a candidate `c` is occluded by an
//! already chosen `s` when `alpha * d(s, c) <= d(p, c)`. DiskANN first fills
//! the list with alpha = 1 and then relaxes alpha by 1.2x steps up to the
//! requested value, so long edges are added only while there is room.

use super::space::BuildSpace;

/// DiskANN's cap on the candidate pool (`maxc`).
pub const MAX_CANDIDATES: usize = 750;

/// Chooses at most `r` out-neighbours for `p` from `pool` (distance to `p`,
/// id). `pool` is sorted, deduplicated and stripped of `p` here.
pub fn robust_prune(
    space: &BuildSpace,
    p: u32,
    pool: &mut Vec<(f32, u32)>,
    alpha: f32,
    r: usize,
    occlusion: &mut Vec<f32>,
    out: &mut Vec<u32>,
) {
    out.clear();
    pool.retain(|&(_, id)| id != p);
    pool.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    pool.dedup_by_key(|e| e.1);
    pool.truncate(MAX_CANDIDATES);
    if pool.len() <= r {
        out.extend(pool.iter().map(|e| e.1));
        return;
    }
    occlusion.clear();
    occlusion.resize(pool.len(), 0.0);
    let mut cur_alpha = 1.0f32;
    while out.len() < r {
        for i in 0..pool.len() {
            if occlusion[i] > cur_alpha {
                continue;
            }
            occlusion[i] = f32::MAX;
            out.push(pool[i].1);
            if out.len() == r {
                break;
            }
            for j in i + 1..pool.len() {
                if occlusion[j] > alpha {
                    continue;
                }
                let d_ij = space.dist(pool[i].1, pool[j].1);
                let factor = if d_ij > 0.0 {
                    pool[j].0 / d_ij
                } else {
                    f32::MAX
                };
                occlusion[j] = occlusion[j].max(factor);
            }
        }
        if cur_alpha >= alpha {
            break;
        }
        cur_alpha = (cur_alpha * 1.2).min(alpha);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Metric;

    #[test]
    fn alpha_one_on_a_line_keeps_only_the_nearest_side() {
        // Points on a line at 1, 2, 3, 4 from p = 0: with alpha = 1 the first
        // neighbour occludes all the others on the same side.
        let data = [0.0f32, 1.0, 2.0, 3.0, 4.0, -1.0];
        let space = BuildSpace::new(&data, 1, Metric::L2);
        let mut pool: Vec<(f32, u32)> = (1..6).map(|i| (space.dist(0, i), i)).collect();
        let (mut occ, mut out) = (vec![], vec![]);
        robust_prune(&space, 0, &mut pool, 1.0, 3, &mut occ, &mut out);
        assert_eq!(out, vec![1, 5]);
    }

    #[test]
    fn never_more_than_r_and_never_self_or_duplicates() {
        let mut rng = crate::util::rng::Rng::new(5);
        let dim = 8;
        let data: Vec<f32> = (0..200 * dim).map(|_| rng.normal()).collect();
        let space = BuildSpace::new(&data, dim, Metric::L2);
        let mut pool: Vec<(f32, u32)> = (0..200u32).map(|i| (space.dist(7, i), i)).collect();
        pool.extend(pool.clone());
        let (mut occ, mut out) = (vec![], vec![]);
        robust_prune(&space, 7, &mut pool, 1.2, 16, &mut occ, &mut out);
        assert!(out.len() <= 16 && !out.is_empty());
        assert!(!out.contains(&7));
        let mut s = out.clone();
        s.sort();
        s.dedup();
        assert_eq!(s.len(), out.len());
    }
}
