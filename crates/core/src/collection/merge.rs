//! The exact top-k merge of segment results: the k smallest distances over
//! every segment a query searched, ties broken by id as a single index's
//! search breaks them, so a collection searched everywhere returns what
//! merging each segment's own answer returns.

/// One segment's answer: for each of `rows` (query numbers), `k` distances
/// and global ids, row-major; id -1 marks an empty slot.
pub struct Part<'a> {
    pub rows: &'a [u32],
    pub dists: &'a [f32],
    pub ids: &'a [i64],
}

/// The merged `nq x k` distances and ids (f32::INFINITY and -1 where a
/// query found fewer than `k`).
pub fn merge(nq: usize, k: usize, parts: &[Part<'_>]) -> (Vec<f32>, Vec<i64>) {
    let mut found: Vec<Vec<(f32, i64)>> = vec![Vec::new(); nq];
    for p in parts {
        for (j, &q) in p.rows.iter().enumerate() {
            let slot = j * k..(j + 1) * k;
            found[q as usize].extend(
                p.dists[slot.clone()]
                    .iter()
                    .zip(&p.ids[slot])
                    .filter(|(_, &id)| id >= 0)
                    .map(|(&d, &id)| (d, id)),
            );
        }
    }
    let mut dists = vec![f32::INFINITY; nq * k];
    let mut ids = vec![-1i64; nq * k];
    for (q, mut f) in found.into_iter().enumerate() {
        f.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        for (j, (d, id)) in f.into_iter().take(k).enumerate() {
            dists[q * k + j] = d;
            ids[q * k + j] = id;
        }
    }
    (dists, ids)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Scatter (distance, id) pairs over segments; each segment answers
        /// its own top k (as a segment search does). The merge equals the
        /// top k of all the pairs, computed plainly.
        #[test]
        fn merge_of_segment_top_k_is_the_global_top_k(
            pairs in prop::collection::vec((0u8..20, 0usize..4), 0..60),
            k in 1usize..8,
        ) {
            let segments = 4;
            // Distinct ids, distances with many ties.
            let all: Vec<(f32, i64, usize)> = pairs
                .iter()
                .enumerate()
                .map(|(i, &(d, s))| (d as f32, (i * 7 % 61) as i64 + 100 * i as i64, s))
                .collect();
            let mut reference: Vec<(f32, i64)> = all.iter().map(|&(d, id, _)| (d, id)).collect();
            reference.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap().then(a.1.cmp(&b.1)));
            reference.truncate(k);
            let mut answers = Vec::new();
            for s in 0..segments {
                let mut mine: Vec<(f32, i64)> =
                    all.iter().filter(|p| p.2 == s).map(|&(d, id, _)| (d, id)).collect();
                mine.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap().then(a.1.cmp(&b.1)));
                mine.truncate(k);
                let mut d = vec![f32::INFINITY; k];
                let mut i = vec![-1i64; k];
                for (j, &(dd, id)) in mine.iter().enumerate() {
                    d[j] = dd;
                    i[j] = id;
                }
                answers.push((d, i));
            }
            let rows = [0u32];
            let parts: Vec<Part> = answers
                .iter()
                .map(|(d, i)| Part { rows: &rows, dists: d, ids: i })
                .collect();
            let (d, i) = merge(1, k, &parts);
            for j in 0..k {
                match reference.get(j) {
                    Some(&(rd, rid)) => {
                        prop_assert_eq!(d[j], rd);
                        prop_assert_eq!(i[j], rid);
                    }
                    None => {
                        prop_assert_eq!(d[j], f32::INFINITY);
                        prop_assert_eq!(i[j], -1);
                    }
                }
            }
        }
    }
}
