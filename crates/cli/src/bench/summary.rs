//! Reading figures off recall–QPS curves the way ann-benchmarks does: a
//! point is on the Pareto front when no other point of the same system has
//! both higher recall and higher QPS; "QPS at recall r" is the highest QPS
//! among the front's points with recall >= r (no interpolation, so every
//! figure is a measured run). Rows carry the round they were timed in; a
//! front is read per round, and a figure over rounds is their median and
//! range (`stats`).

use serde_json::Value;

#[derive(Clone, Debug)]
pub struct Point {
    pub recall: f64,
    pub qps: f64,
    pub reads: Option<f64>,
}

pub fn pareto(points: &[Point]) -> Vec<Point> {
    let mut front: Vec<Point> = points
        .iter()
        .filter(|p| {
            !points.iter().any(|q| {
                q.recall >= p.recall && q.qps > p.qps || q.recall > p.recall && q.qps >= p.qps
            })
        })
        .cloned()
        .collect();
    front.sort_by(|a, b| a.recall.total_cmp(&b.recall));
    front
}

/// The fastest measured point reaching `target` recall.
pub fn at_recall(points: &[Point], target: f64) -> Option<Point> {
    pareto(points)
        .into_iter()
        // Recall is a mean of ratios: 0.9499999999 is 0.95 measured.
        .filter(|p| p.recall >= target - 1e-9)
        .max_by(|a, b| a.qps.total_cmp(&b.qps))
}

/// The round a row was timed in (rows of older runs have none: round 0).
pub fn round_of(r: &Value) -> u64 {
    r["round"].as_u64().unwrap_or(0)
}

/// The rounds present for `system`, ascending.
pub fn rounds_of(rows: &[Value], system: &str) -> Vec<u64> {
    let mut v: Vec<u64> = rows
        .iter()
        .filter(|r| r["system"] == system && r["kind"] == "search")
        .map(round_of)
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// Points of one system in one round from JSON rows (`recall_at_10`,
/// `qps`, ...).
pub fn points_of(rows: &[Value], system: &str, round: u64) -> Vec<Point> {
    rows.iter()
        .filter(|r| r["system"] == system && r["kind"] == "search" && round_of(r) == round)
        .filter_map(|r| {
            Some(Point {
                recall: r["recall_at_10"].as_f64()?,
                qps: r["qps"].as_f64()?,
                reads: r["reads_per_query"].as_f64(),
            })
        })
        .collect()
}

/// Per round, the fastest point of `system` reaching `target` (rounds
/// where none does are left out).
pub fn at_recall_by_round(rows: &[Value], system: &str, target: f64) -> Vec<(u64, Point)> {
    rounds_of(rows, system)
        .into_iter()
        .filter_map(|r| at_recall(&points_of(rows, system, r), target).map(|p| (r, p)))
        .collect()
}

/// QPS of `a` over QPS of `b` at `target`, one ratio per round both reach
/// it in: each round's systems ran back to back, so a slow spell of the
/// machine cancels in the ratio instead of landing on one system.
pub fn ratios_by_round(rows: &[Value], a: &str, b: &str, target: f64) -> Vec<f64> {
    let pb = at_recall_by_round(rows, b, target);
    at_recall_by_round(rows, a, target)
        .into_iter()
        .filter_map(|(r, pa)| {
            let (_, pb) = pb.iter().find(|(rb, _)| *rb == r)?;
            Some(pa.qps / pb.qps)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ratios_pair_rounds() {
        let row = |system: &str, round: u64, recall: f64, qps: f64| {
            json!({"kind": "search", "system": system, "round": round,
                   "recall_at_10": recall, "qps": qps})
        };
        let rows = vec![
            row("a", 0, 0.96, 300.0),
            row("a", 1, 0.96, 200.0),
            row("a", 0, 0.90, 900.0),
            row("b", 0, 0.97, 100.0),
            row("b", 1, 0.97, 50.0),
            row("b", 2, 0.97, 10.0), // no round 2 of a: no ratio
        ];
        assert_eq!(rounds_of(&rows, "b"), vec![0, 1, 2]);
        assert_eq!(ratios_by_round(&rows, "a", "b", 0.95), vec![3.0, 4.0]);
        // Round 0 of a reaches 0.90 faster at its other point.
        let by = at_recall_by_round(&rows, "a", 0.90);
        assert_eq!(by[0].1.qps, 900.0);
        assert!(ratios_by_round(&rows, "a", "b", 0.99).is_empty());
    }

    fn p(recall: f64, qps: f64) -> Point {
        Point {
            recall,
            qps,
            reads: None,
        }
    }

    #[test]
    fn front_and_targets() {
        let pts = vec![
            p(0.8, 1000.0),
            p(0.9, 800.0),
            p(0.85, 700.0),
            p(0.95, 500.0),
            p(0.99, 100.0),
        ];
        let f = pareto(&pts);
        assert_eq!(f.len(), 4); // (0.85, 700) is dominated by (0.9, 800)
        assert_eq!(at_recall(&pts, 0.9).unwrap().qps, 800.0);
        assert_eq!(at_recall(&pts, 0.95).unwrap().qps, 500.0);
        assert!(at_recall(&pts, 0.995).is_none());
    }
}
