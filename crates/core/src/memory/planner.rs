//! The memory planner (docs/architecture.md, "How a plan becomes running
//! parts"; Gorgeous §4.1 ②–④, generalised): given a byte budget and what
//! each part of an open index would hold, decide how many bytes each gets.
//! The parts every search needs (codes, I/O buffers, the layout's map) come
//! first and must fit; then the profile's parts, in its order, each taking
//! what it can of what is left. The loaders then fill each part up to its
//! grant, so the sum held never exceeds the budget.

use crate::error::{Error, Result};
use serde::Serialize;

/// A part of an open index the planner may keep in RAM.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Part {
    /// Compressed vectors and codebooks (every search estimates from them).
    Codes,
    /// Read buffers reserved for the searches the index was opened for.
    Buffers,
    /// The layout's id → block map (blocked layouts).
    Map,
    /// The navigation graph (Starling §4.3): all of it or none.
    Nav,
    /// Adjacency lists only (Gorgeous §4.1, graph cache), best-ranked first.
    Adjacency,
    /// Whole records (DiskANN's node cache), nearest the entry first.
    Nodes,
}

impl Part {
    /// The name reports use ("codes", "cache", ...).
    pub fn name(self) -> &'static str {
        match self {
            Part::Codes => "codes",
            Part::Buffers => "buffers",
            Part::Map => "map",
            Part::Nav => "nav",
            Part::Adjacency => "adjacency",
            Part::Nodes => "cache",
        }
    }

    /// What the part is, in words (for messages).
    pub fn label(self) -> &'static str {
        match self {
            Part::Codes => "PQ codes",
            Part::Buffers => "I/O buffers",
            Part::Map => "id map",
            Part::Nav => "navigation graph",
            Part::Adjacency => "adjacency lists",
            Part::Nodes => "node cache",
        }
    }

    /// Whether the part can be held in part (a cache) or only whole.
    fn divisible(self) -> bool {
        matches!(self, Part::Adjacency | Part::Nodes)
    }

    /// Whether every search needs the part: it must fit the budget.
    fn required(self) -> bool {
        matches!(self, Part::Codes | Part::Buffers | Part::Map)
    }
}

/// What a part would hold if it had room for all of it.
#[derive(Clone, Copy, Debug)]
pub struct Demand {
    pub part: Part,
    pub bytes: usize,
}

/// The bytes a part may hold, and why it got less than it asked for.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Grant {
    pub part: Part,
    pub asked: usize,
    pub bytes: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Grants bytes to `demands` (required parts first, then the rest in the
/// order given) within `budget`. Without a budget the required parts and
/// the whole parts (the navigation graph) are granted and the caches get
/// nothing, as an index opened without a budget has always held.
pub fn plan(budget: Option<usize>, demands: &[Demand]) -> Result<Vec<Grant>> {
    let required: usize = demands
        .iter()
        .filter(|d| d.part.required())
        .map(|d| d.bytes)
        .sum();
    if let Some(b) = budget {
        if b < required {
            let parts: Vec<String> = demands
                .iter()
                .filter(|d| d.part.required())
                .map(|d| format!("{} {:.2} MB", d.part.label(), d.bytes as f64 / 1e6))
                .collect();
            return Err(Error::argument(
                "memory budget",
                format!(
                    "at least {:.2} MB ({})",
                    required as f64 / 1e6,
                    parts.join(" + ")
                ),
                format!("{:.2} MB ({b} bytes)", b as f64 / 1e6),
            ));
        }
    }
    let mut left = budget.map(|b| b - required);
    let mut grants: Vec<Grant> = Vec::with_capacity(demands.len());
    for d in demands.iter().filter(|d| d.part.required()) {
        grants.push(Grant {
            part: d.part,
            asked: d.bytes,
            bytes: d.bytes,
            note: None,
        });
    }
    for d in demands.iter().filter(|d| !d.part.required()) {
        let (bytes, note) = match left {
            None if d.part.divisible() => (0, Some("no memory budget given".to_string())),
            None => (d.bytes, None),
            Some(l) if d.bytes <= l => (d.bytes, None),
            Some(l) if d.part.divisible() => (l, Some(format!("{:.2} MB left", l as f64 / 1e6))),
            Some(l) => (
                0,
                Some(format!(
                    "needs {:.2} MB, {:.2} MB left",
                    d.bytes as f64 / 1e6,
                    l as f64 / 1e6
                )),
            ),
        };
        if let Some(l) = left.as_mut() {
            *l -= bytes;
        }
        grants.push(Grant {
            part: d.part,
            asked: d.bytes,
            bytes,
            note,
        });
    }
    Ok(grants)
}

/// The grant of `part` (0 if it was not asked for).
pub fn granted(grants: &[Grant], part: Part) -> usize {
    grants
        .iter()
        .filter(|g| g.part == part)
        .map(|g| g.bytes)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn demands(codes: usize, nav: usize, adj: usize, nodes: usize) -> Vec<Demand> {
        vec![
            Demand {
                part: Part::Nodes,
                bytes: nodes,
            },
            Demand {
                part: Part::Codes,
                bytes: codes,
            },
            Demand {
                part: Part::Buffers,
                bytes: 4096,
            },
            Demand {
                part: Part::Nav,
                bytes: nav,
            },
            Demand {
                part: Part::Adjacency,
                bytes: adj,
            },
        ]
    }

    proptest! {
        /// Over any budget: the grants never sum past it, required parts
        /// get all they ask, no part gets more than it asks, whole parts get
        /// all or nothing, and a budget below the required parts is refused.
        #[test]
        fn never_past_the_budget(budget in 0usize..3_000_000, codes in 0usize..1_000_000,
                                 nav in 0usize..600_000, adj in 0usize..2_000_000,
                                 nodes in 0usize..2_000_000) {
            let d = demands(codes, nav, adj, nodes);
            match plan(Some(budget), &d) {
                Err(e) => prop_assert!(budget < codes + 4096, "{}", e),
                Ok(g) => {
                    prop_assert!(g.iter().map(|g| g.bytes).sum::<usize>() <= budget);
                    for g in &g {
                        prop_assert!(g.bytes <= g.asked);
                        if g.part.required() { prop_assert_eq!(g.bytes, g.asked); }
                        if g.part == Part::Nav { prop_assert!(g.bytes == 0 || g.bytes == nav); }
                    }
                    // Order: once a cache got less than it asked, the budget
                    // is spent and every later part gets nothing.
                    let optional: Vec<&Grant> = g.iter().filter(|g| !g.part.required()).collect();
                    prop_assert_eq!(optional.iter().map(|g| g.part).collect::<Vec<_>>(),
                                    vec![Part::Nodes, Part::Nav, Part::Adjacency]);
                    if let Some(i) = optional.iter().position(|g| g.part.divisible() && g.bytes < g.asked) {
                        prop_assert!(optional[i + 1..].iter().all(|g| g.bytes == 0));
                    }
                }
            }
        }
    }

    #[test]
    fn the_profile_order_decides_who_fills_first() {
        let d = vec![
            Demand {
                part: Part::Codes,
                bytes: 100,
            },
            Demand {
                part: Part::Adjacency,
                bytes: 1000,
            },
            Demand {
                part: Part::Nodes,
                bytes: 1000,
            },
        ];
        let g = plan(Some(1600), &d).unwrap();
        assert_eq!(granted(&g, Part::Adjacency), 1000);
        assert_eq!(granted(&g, Part::Nodes), 500);
        let g = plan(None, &d).unwrap();
        assert_eq!(
            (granted(&g, Part::Codes), granted(&g, Part::Nodes)),
            (100, 0)
        );
        let e = plan(Some(50), &d).unwrap_err().to_string();
        assert!(e.contains("at least 0.00 MB (PQ codes 0.00 MB)"), "{e}");
    }
}
