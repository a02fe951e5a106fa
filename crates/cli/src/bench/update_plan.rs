//! What a runbook asks of every profile, worked out once before any of
//! them runs: the live set (tag -> data row) after every step, and for
//! each search step the exact top k over that live set, as tags (issue
//! #55's "recall against exact ground truth over the live set").
//!
//! A live set of rows under their own numbers (every churn runbook's)
//! takes its truth from the data set's own ground truth with the dead rows
//! filtered out, which is exact while each query keeps k live rows among
//! its listed ones (gt.ibin lists 100); otherwise, or for any other live
//! set, the truth is brute force over the live rows.

use super::runbook::{Live, Runbook, Step};
use anyhow::{bail, Result};
use stratavec::data::{brute_force_knn, GroundTruth, Metric, Vectors};

/// The data a plan is made from.
pub struct Data<'a> {
    /// Row-major f32 rows of the data set (the base file).
    pub rows: &'a [f32],
    pub dim: usize,
    pub queries: &'a [f32],
    /// The base file's own ground truth (row numbers).
    pub truth: &'a GroundTruth,
    pub metric: Metric,
    pub k: usize,
    pub threads: usize,
}

impl Data<'_> {
    pub fn n(&self) -> usize {
        self.rows.len() / self.dim
    }

    /// Row `r`'s vector.
    pub fn row(&self, r: usize) -> &[f32] {
        &self.rows[r * self.dim..(r + 1) * self.dim]
    }
}

/// One step and what is live after it.
pub struct Planned {
    pub step: Step,
    /// Its number in the runbook (the YAML's key; 1-based for churn).
    pub number: usize,
    /// (tag, row), by tag.
    pub live: Vec<(usize, usize)>,
    /// Search steps: the exact top k over `live`, as tags.
    pub truth: Option<GroundTruth>,
}

pub struct Plan {
    /// The first step's live set: what the index is built from.
    pub initial: Vec<(usize, usize)>,
    /// Every step after the first.
    pub steps: Vec<Planned>,
}

impl Plan {
    pub fn new(book: &Runbook, data: &Data) -> Result<Plan> {
        let n = data.n();
        let mut live = Live::default();
        let Some(Step::Insert { .. }) = book.steps.first() else {
            bail!("runbook {}: expected an insert as the first step (the index is built from it), found {:?}", book.dataset, book.steps.first());
        };
        let mut steps = Vec::new();
        let mut initial = Vec::new();
        for (i, step) in book.steps.iter().enumerate() {
            live.apply(i + 1, step).map_err(anyhow::Error::msg)?;
            if let Some((t, r)) = live.rows.iter().find(|e| *e.1 >= n) {
                bail!(
                    "runbook {}: step {}: tag {t} names data row {r}: expected rows < {n} (the data set's)",
                    book.dataset,
                    i + 1
                );
            }
            let now: Vec<(usize, usize)> = live.rows.iter().map(|(&t, &r)| (t, r)).collect();
            if i == 0 {
                initial = now;
                continue;
            }
            let truth = match step {
                Step::Search => Some(live_truth(&now, data)?),
                _ => None,
            };
            steps.push(Planned {
                step: step.clone(),
                number: i + 1,
                live: now,
                truth,
            });
        }
        Ok(Plan { initial, steps })
    }
}

/// The exact top k over `live` (tag, row), as tags.
pub fn live_truth(live: &[(usize, usize)], data: &Data) -> Result<GroundTruth> {
    let (n, k) = (data.n(), data.k);
    if live.len() < k {
        bail!(
            "a search step: expected at least k = {k} live vectors, found {}",
            live.len()
        );
    }
    if let Some(gt) = filtered(live, data, n) {
        return Ok(gt);
    }
    let mut rows = Vec::with_capacity(live.len() * data.dim);
    for &(_, r) in live {
        rows.extend_from_slice(data.row(r));
    }
    let gt = brute_force_knn(
        &Vectors::f32(&rows, data.dim)?,
        &Vectors::f32(data.queries, data.dim)?,
        data.metric,
        k,
        data.threads,
    )?;
    let ids = gt.ids.iter().map(|&p| live[p as usize].0 as u32).collect();
    Ok(GroundTruth::new(gt.nq, k, ids, None)?)
}

/// The base file's truth without the dead rows, when every live tag is its
/// own row and every query keeps k live rows among those listed.
fn filtered(live: &[(usize, usize)], data: &Data, n: usize) -> Option<GroundTruth> {
    if !live.iter().all(|&(t, r)| t == r) {
        return None;
    }
    let mut alive = vec![false; n];
    for &(_, r) in live {
        alive[r] = true;
    }
    let (full, k) = (data.truth, data.k);
    let mut ids = Vec::with_capacity(full.nq * k);
    for q in 0..full.nq {
        let list = &full.ids[q * full.k..(q + 1) * full.k];
        let before = ids.len();
        ids.extend(
            list.iter()
                .copied()
                .filter(|&r| (r as usize) < n && alive[r as usize])
                .take(k),
        );
        if ids.len() - before < k {
            return None;
        }
    }
    GroundTruth::new(full.nq, k, ids, None).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::runbook::churn;

    const DIM: usize = 3;

    /// Brute force over `live`'s rows, as tags: the plain reference.
    fn brute(rows: &[f32], queries: &[f32], live: &[(usize, usize)], k: usize) -> Vec<u32> {
        let mut sub = Vec::new();
        for &(_, r) in live {
            sub.extend_from_slice(&rows[r * DIM..(r + 1) * DIM]);
        }
        let gt = brute_force_knn(
            &Vectors::f32(&sub, DIM).unwrap(),
            &Vectors::f32(queries, DIM).unwrap(),
            Metric::L2,
            k,
            1,
        )
        .unwrap();
        gt.ids.iter().map(|&i| live[i as usize].0 as u32).collect()
    }

    /// Every search step's truth (filtered from the base's, or brute
    /// force where a query runs out of listed rows) equals brute force
    /// over its live set, tags and all.
    #[test]
    fn live_truth_is_brute_force_over_the_live_set() {
        let rows: Vec<f32> = (0..60 * DIM).map(|i| ((i * 37) % 101) as f32).collect();
        let queries: Vec<f32> = (0..4 * DIM).map(|i| ((i * 53) % 97) as f32).collect();
        let all: Vec<(usize, usize)> = (0..60).map(|r| (r, r)).collect();
        let truth = GroundTruth::new(4, 8, brute(&rows, &queries, &all, 8), None).unwrap();
        let data = Data {
            rows: &rows,
            dim: DIM,
            queries: &queries,
            truth: &truth,
            metric: Metric::L2,
            k: 5,
            threads: 1,
        };
        let plan = Plan::new(&churn("t", 60, 6, 0.1), &data).unwrap();
        assert_eq!(plan.initial, all);
        let searched: Vec<&Planned> = plan.steps.iter().filter(|p| p.truth.is_some()).collect();
        assert_eq!(searched.len(), 13);
        for p in searched {
            let got = &p.truth.as_ref().unwrap().ids;
            assert_eq!(
                got,
                &brute(&rows, &queries, &p.live, 5),
                "step {}",
                p.number
            );
        }
        // Two thirds gone: 8 listed leave a query fewer than 5 (brute
        // force), and tags that are not their rows (brute force).
        let third: Vec<(usize, usize)> = (0..60).filter(|r| r % 3 == 0).map(|r| (r, r)).collect();
        assert!(filtered(&third, &data, 60).is_none());
        let got = live_truth(&third, &data).unwrap();
        assert_eq!(got.ids, brute(&rows, &queries, &third, 5));
        let moved: Vec<(usize, usize)> = (0..30).map(|t| (t + 100, 2 * t)).collect();
        let got = live_truth(&moved, &data).unwrap();
        assert_eq!(got.ids, brute(&rows, &queries, &moved, 5));
    }
}
