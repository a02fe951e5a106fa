//! Range search rows of a bench run (Starling §4.4): for each L, range
//! search's average precision (AP), recall and reads against exact range
//! ground truth; and the baseline it replaces, k-NN repeated with doubling k
//! until the k-th result falls outside the radius (every round's reads
//! counted), for a few list-size multipliers.

use anyhow::{Context, Result};
use serde_json::{json, Value};
use stratavec::data::{range_scores, RangeGroundTruth};
use stratavec::{Index, SearchParams};

pub struct RangeSpec {
    pub radius: f32,
    pub gt: RangeGroundTruth,
    pub phi: f32,
}

/// Range search at each starting window L, then the doubling-k baseline at
/// L = max(mult·k, 16) for each multiplier.
pub fn sweep(
    index: &Index,
    queries: &[f32],
    base: &SearchParams,
    ls: &[usize],
    spec: &RangeSpec,
    row: &dyn Fn(Value) -> Value,
) -> Result<Vec<Value>> {
    let nq = spec.gt.nq();
    let mut rows = Vec::new();
    for &l in ls {
        let params = SearchParams {
            k: 1,
            complexity: l,
            radius: Some(spec.radius),
            range_phi: spec.phi,
            ..base.clone()
        };
        let res = index
            .search_batch(queries, index.dim(), &params)
            .with_context(|| format!("range search at L={l}"))?;
        let lists = res.range_ids();
        let t = res.total();
        rows.push(row(scored(
            "range",
            l,
            &lists,
            &spec.gt,
            nq as f64 / res.wall_s,
            t.reads as f64 / nq as f64,
            json!({"widenings_per_query": t.widenings as f64 / nq as f64, "failed": res.failed()}),
        )));
    }
    for mult in [1usize, 2, 4] {
        rows.push(row(doubling(index, queries, base, spec, mult)?));
    }
    Ok(rows)
}

/// k-NN with k = 10, 20, 40, ... for the queries whose k results all lie
/// within the radius (the others are finished), as a user without range
/// search would do it.
fn doubling(
    index: &Index,
    queries: &[f32],
    base: &SearchParams,
    spec: &RangeSpec,
    mult: usize,
) -> Result<Value> {
    let (dim, nq) = (index.dim(), spec.gt.nq());
    let mut found: Vec<Vec<u32>> = vec![Vec::new(); nq];
    let mut reads = 0u64;
    let mut wall = 0.0;
    let mut todo: Vec<usize> = (0..nq).collect();
    let mut k = 10usize;
    let mut failed = 0;
    while !todo.is_empty() && k <= index.len() {
        let batch: Vec<f32> = todo
            .iter()
            .flat_map(|&q| queries[q * dim..(q + 1) * dim].iter().copied())
            .collect();
        let params = SearchParams {
            k,
            complexity: (mult * k).max(16),
            ..base.clone()
        };
        let res = index.search_batch(&batch, dim, &params)?;
        reads += res.total().reads;
        wall += res.wall_s;
        failed += res.failed();
        let mut again = Vec::new();
        for (j, &q) in todo.iter().enumerate() {
            let (ids, dists) = (&res.ids[j * k..(j + 1) * k], &res.dists[j * k..(j + 1) * k]);
            found[q] = ids
                .iter()
                .zip(dists)
                .filter(|(&id, &d)| id != u32::MAX && d <= spec.radius)
                .map(|(&id, _)| id)
                .collect();
            if found[q].len() == k {
                again.push(q);
            }
        }
        todo = again;
        k *= 2;
    }
    Ok(scored(
        "knn-doubling",
        mult,
        &found,
        &spec.gt,
        nq as f64 / wall,
        reads as f64 / nq as f64,
        json!({"L_per_k": mult, "failed": failed}),
    ))
}

fn scored(
    method: &str,
    l: usize,
    lists: &[Vec<u32>],
    gt: &RangeGroundTruth,
    qps: f64,
    reads: f64,
    extra: Value,
) -> Value {
    let (ap, recall, precision) = range_scores(lists, gt);
    let results = lists.iter().map(Vec::len).sum::<usize>() as f64 / lists.len().max(1) as f64;
    let mut v = json!({
        "kind": "range", "method": method, "L": l, "ap": ap, "recall": recall,
        "precision": precision, "qps": qps, "reads_per_query": reads,
        "results_per_query": results,
    });
    if let (Some(o), Value::Object(e)) = (v.as_object_mut(), extra) {
        o.extend(e);
    }
    v
}
