//! Reading figures off recall–QPS curves the way ann-benchmarks does: a
//! point is on the Pareto front when no other point of the same system has
//! both higher recall and higher QPS; "QPS at recall r" is the highest QPS
//! among the front's points with recall >= r (no interpolation, so every
//! figure is a measured run).

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

/// Points of one system from JSON rows (`recall_at_10`, `qps`, ...).
pub fn points_of(rows: &[Value], system: &str) -> Vec<Point> {
    rows.iter()
        .filter(|r| r["system"] == system && r["kind"] == "search")
        .filter_map(|r| {
            Some(Point {
                recall: r["recall_at_10"].as_f64()?,
                qps: r["qps"].as_f64()?,
                reads: r["reads_per_query"].as_f64(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
