//! Robust prune (Vamana paper, Algorithm 2) with DiskANN's progressive alpha:
//! candidates are taken in distance order; a candidate `c` is occluded by an
//! already chosen `s` when `alpha * d(s, c) <= d(p, c)` (and, in a
//! label-aware build, `s` carries every label `p` and `c` share:
//! `BuildSpace::covers`). DiskANN first fills
//! the list with alpha = 1 and then relaxes alpha by 1.2x steps up to the
//! requested value, so long edges are added only while there is room.

use super::space::BuildSpace;

/// DiskANN's cap on the candidate pool (`maxc`).
pub const MAX_CANDIDATES: usize = 750;

/// Scratch for [`robust_prune`], reused across calls.
#[derive(Default)]
pub struct PruneScratch {
    /// Per candidate: the largest d(p, c) / d(s, c) over the chosen s seen so far.
    factor: Vec<f32>,
    /// Per candidate: how many entries of `chosen` have been checked.
    checked: Vec<u32>,
    /// Pool positions chosen, in the order they were chosen.
    chosen: Vec<u32>,
    is_chosen: Vec<bool>,
}

/// Chooses at most `r` out-neighbours for `p` from `pool` (distance to `p`,
/// id). `pool` is sorted, deduplicated and stripped of `p` here.
///
/// DiskANN computes occlusion eagerly: each time it chooses a node it
/// computes that node's distance to every later candidate. This version is
/// lazy: a candidate computes its distances to the chosen nodes only when the
/// scan reaches it, and stops at the first one that occludes it. Most
/// candidates are occluded by one of the first few chosen nodes, so it does a
/// fraction of the distance computations, and the chosen list is the same
/// (the test below checks it against the eager form).
pub fn robust_prune(
    space: &BuildSpace,
    p: u32,
    pool: &mut Vec<(f32, u32)>,
    alpha: f32,
    r: usize,
    s: &mut PruneScratch,
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
    let n = pool.len();
    s.factor.clear();
    s.factor.resize(n, 0.0);
    s.checked.clear();
    s.checked.resize(n, 0);
    s.is_chosen.clear();
    s.is_chosen.resize(n, false);
    s.chosen.clear();
    let mut cur_alpha = 1.0f32;
    loop {
        for j in 0..n {
            if out.len() == r {
                return;
            }
            if s.is_chosen[j] || s.factor[j] > cur_alpha {
                continue;
            }
            let mut occluded = false;
            while (s.checked[j] as usize) < s.chosen.len() {
                let i = s.chosen[s.checked[j] as usize] as usize;
                s.checked[j] += 1;
                // Only nodes chosen ahead of j in distance order occlude it,
                // as in DiskANN's eager form.
                if i > j {
                    continue;
                }
                // A label-aware build: only a node carrying every label p
                // and j share occludes j (`BuildSpace::covers`).
                if !space.covers(p, pool[i].1, pool[j].1) {
                    continue;
                }
                let d_ij = space.dist(pool[i].1, pool[j].1);
                let f = if d_ij > 0.0 {
                    pool[j].0 / d_ij
                } else {
                    f32::MAX
                };
                if f > s.factor[j] {
                    s.factor[j] = f;
                }
                if s.factor[j] > cur_alpha {
                    occluded = true;
                    break;
                }
            }
            if !occluded {
                s.is_chosen[j] = true;
                s.chosen.push(j as u32);
                out.push(pool[j].1);
            }
        }
        if out.len() == r || cur_alpha >= alpha {
            return;
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
        let (mut sc, mut out) = (PruneScratch::default(), vec![]);
        robust_prune(&space, 0, &mut pool, 1.0, 3, &mut sc, &mut out);
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
        let (mut sc, mut out) = (PruneScratch::default(), vec![]);
        robust_prune(&space, 7, &mut pool, 1.2, 16, &mut sc, &mut out);
        assert!(out.len() <= 16 && !out.is_empty());
        assert!(!out.contains(&7));
        let mut s = out.clone();
        s.sort();
        s.dedup();
        assert_eq!(s.len(), out.len());
    }

    /// DiskANN's eager occlusion (`occlude_list`), the reference; with
    /// labels, FilteredVamana's (a chosen node occludes only the
    /// candidates whose labels shared with `p` it carries).
    fn eager(space: &BuildSpace, p: u32, pool: &[(f32, u32)], alpha: f32, r: usize) -> Vec<u32> {
        let mut out = vec![];
        if pool.len() <= r {
            return pool.iter().map(|e| e.1).collect();
        }
        let mut occlusion = vec![0.0f32; pool.len()];
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
                    if occlusion[j] > alpha || !space.covers(p, pool[i].1, pool[j].1) {
                        continue;
                    }
                    let d = space.dist(pool[i].1, pool[j].1);
                    let f = if d > 0.0 { pool[j].0 / d } else { f32::MAX };
                    occlusion[j] = occlusion[j].max(f);
                }
            }
            if cur_alpha >= alpha {
                break;
            }
            cur_alpha = (cur_alpha * 1.2).min(alpha);
        }
        out
    }

    proptest::proptest! {
        #[test]
        fn lazy_equals_eager(seed in 0u64..10_000, n in 2usize..300, r in 1usize..40,
                             alpha in proptest::sample::select(vec![1.0f32, 1.2, 1.5, 2.0]),
                             dups in proptest::bool::ANY, labelled in proptest::bool::ANY) {
            let mut rng = crate::util::rng::Rng::new(seed);
            let dim = 6;
            let mut data: Vec<f32> = (0..n * dim).map(|_| rng.normal()).collect();
            if dups {
                // Exact duplicates: zero distances between candidates.
                for i in (0..n).step_by(5) {
                    let (a, b) = data.split_at_mut(i * dim);
                    if i > 0 { b[..dim].copy_from_slice(&a[..dim]); }
                }
            }
            // Up to 3 of 5 labels a point (some none).
            let rows: Vec<Vec<u32>> = (0..n)
                .map(|_| (0..5).filter(|_| rng.unit_f32() < 0.3).collect())
                .collect();
            let labels = crate::labels::LabelSets::from_rows(rows.iter().map(|r| r.as_slice()), 5);
            let space = BuildSpace::new(&data, dim, Metric::L2)
                .with_labels(Some(&labels).filter(|_| labelled));
            let mut pool: Vec<(f32, u32)> = (1..n as u32).map(|i| (space.dist(0, i), i)).collect();
            let (mut sc, mut out) = (PruneScratch::default(), vec![]);
            robust_prune(&space, 0, &mut pool, alpha, r, &mut sc, &mut out);
            // `pool` is now sorted and deduplicated: the eager form's input.
            proptest::prop_assert_eq!(out, eager(&space, 0, &pool, alpha, r));
        }
    }
}
