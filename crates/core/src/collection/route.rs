//! Which segments a query searches: all of them, or (k-means partitions)
//! the `probe` whose centroids are nearest it — the skip that makes a
//! partitioned collection cheaper than searching every segment.

use super::manifest::Partition;
use crate::data::{normalize_f32, Metric};
use crate::error::{Error, Result};

/// For each of `segments`, the rows of `queries` (row-major, `dim` wide)
/// it searches. `probe` of `None` (or ≥ segments), or a range partition,
/// sends every query everywhere; otherwise each query goes to its `probe`
/// nearest centroids (ties by segment number).
pub fn route(
    partition: Partition,
    centroids: Option<&[f32]>,
    segments: usize,
    metric: Metric,
    queries: &[f32],
    dim: usize,
    probe: Option<usize>,
) -> Result<Vec<Vec<u32>>> {
    let nq = queries.len() / dim.max(1);
    if probe == Some(0) {
        return Err(Error::argument("probe", "1 or more segments", 0));
    }
    let all = || vec![(0..nq as u32).collect::<Vec<u32>>(); segments];
    let probe = match probe {
        Some(p) if p < segments => p,
        _ => return Ok(all()),
    };
    let centroids = match (partition, centroids) {
        (Partition::Kmeans, Some(c)) => c,
        // A range partition has no centroids: every segment may hold a
        // query's neighbours.
        _ => return Ok(all()),
    };
    let mut out = vec![Vec::new(); segments];
    let mut q = vec![0f32; dim];
    let mut order: Vec<(f32, u32)> = Vec::with_capacity(segments);
    for (i, row) in queries.chunks_exact(dim).enumerate() {
        q.copy_from_slice(row);
        if metric == Metric::Cosine {
            normalize_f32(&mut q);
        }
        order.clear();
        order.extend(
            centroids
                .chunks_exact(dim)
                .enumerate()
                .map(|(s, c)| (stratavec_simd::l2_sq_f32(&q, c), s as u32)),
        );
        order.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        for &(_, s) in &order[..probe] {
            out[s as usize].push(i as u32);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_goes_to_its_nearest_centroids() {
        // Centroids at 0, 10, 20 on a line; queries at 1 and 19.
        let c = [0.0, 10.0, 20.0];
        let q = [1.0, 19.0];
        let r = route(Partition::Kmeans, Some(&c), 3, Metric::L2, &q, 1, Some(2)).unwrap();
        assert_eq!(r, vec![vec![0], vec![0, 1], vec![1]]);
        let r = route(Partition::Kmeans, Some(&c), 3, Metric::L2, &q, 1, None).unwrap();
        assert_eq!(r, vec![vec![0, 1]; 3]);
        let r = route(Partition::Range, None, 3, Metric::L2, &q, 1, Some(1)).unwrap();
        assert_eq!(r, vec![vec![0, 1]; 3]);
        assert!(route(Partition::Kmeans, Some(&c), 3, Metric::L2, &q, 1, Some(0)).is_err());
    }
}
