//! Filtered search (issue #56): each query comes with the rows its filter
//! matches (a bitmap, `labels::Expr::rows`), and goes one of three ways,
//! chosen per query from the filter's selectivity and a cost model:
//!
//! - **pre-filter** (`search::prefilter`): rank the matches on their codes
//!   in RAM and read the best few exactly. Its cost grows with the
//!   matches, not the index: the way for selective filters.
//! - **in-search** ("in-graph"): the index's own search listing only
//!   matches, looking two hops through the lists held in RAM where most of
//!   a node's neighbours fail and routing through failing nodes where it
//!   cannot (ACORN-1, `search::acorn`); its list grown by the share of
//!   routes it expects (at most [`GROWTH_CAP`]×, as DiskANN Rust's 2026
//!   filtered search raises its list adaptively up to 16×), and only
//!   matches admitted into the result (`search::batch`'s `allowed`). A
//!   cluster index probes more clusters and filters inside them.
//! - **post-filter**: the unfiltered search at the caller's list size,
//!   asked for k / selectivity results, those that do not match dropped
//!   (every row it scored a candidate, as in-search): for broad filters,
//!   where the other two only add work.
//!
//! A filter that matches nothing answers at once (no read); one that
//! matches every row is the unfiltered search, whose answers it gives
//! exactly. Each query's statistics say which way it went.

pub use super::filter_costs::FilterCosts;
use super::filter_costs::{selectivity_class, Measured};
use super::open::Index;
use crate::error::{Error, Result};
use crate::search::batch::{Admit, BatchResult};
use crate::search::prefilter::PreFilter;
use crate::search::{QueryStats, SearchParams};
use roaring::RoaringBitmap;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// A query's allowed rows; `None`: no filter.
pub type Allowed = Option<Arc<RoaringBitmap>>;

/// Most a filtered search grows its list (DiskANN Rust's cap).
pub const GROWTH_CAP: usize = 16;

/// Selectivity from which the post-filter is chosen over growing the list
/// (half the rows match: the caller's list already holds ~L/2 matches).
pub const POST_FROM: f64 = 0.5;

/// Which way filtered queries go: `auto` chooses per query; the others
/// force one way on every filtered query (to compare them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum FilterWay {
    #[default]
    Auto,
    Pre,
    #[value(name = "in-search")]
    #[serde(rename = "in-search")]
    InSearch,
    Post,
}

/// How one query is searched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Way {
    /// Its filter matches no row: empty, no read.
    Empty,
    /// Its filter matches every row, or it has none: the plain search.
    Plain,
    Pre {
        rerank: usize,
    },
    InSearch {
        complexity: usize,
    },
    Post {
        k: usize,
    },
}

/// A query's way for `matches` of `n` rows at the caller's `k` and list
/// size `l`.
pub fn plan_query(
    matches: u64,
    n: usize,
    k: usize,
    l: usize,
    force: FilterWay,
    costs: &FilterCosts,
) -> Way {
    let (ranks, graph) = (costs.ranks, costs.graph);
    let l = l.max(k);
    if matches == 0 {
        return Way::Empty;
    }
    if matches as usize >= n {
        return Way::Plain;
    }
    let s = matches as f64 / n as f64;
    let rerank = match ranks {
        true => l.min(matches as usize),
        false => matches as usize,
    };
    let grown =
        ((l as f64 / in_list_share(s, costs.held)).ceil() as usize).clamp(l, GROWTH_CAP * l);
    let post_k = ((1.5 * k as f64 / s).ceil() as usize)
        .clamp(k, GROWTH_CAP * l)
        .min(n);
    let pre = Way::Pre { rerank };
    let in_search = Way::InSearch { complexity: grown };
    let post = Way::Post { k: post_k };
    match force {
        FilterWay::Pre if graph => pre,
        FilterWay::Pre | FilterWay::InSearch => in_search,
        FilterWay::Post => post,
        // The choice keeps the recall of the pre-filter at `l`: an
        // in-graph search chosen instead runs with the longer list that
        // reaches it, and is chosen if that costs less.
        FilterWay::Auto => {
            let complexity = costs.equal_recall_list(grown).min(GROWTH_CAP * l);
            let (pre_ns, in_ns) = costs.scaled(matches, n, rerank, complexity);
            // The margin is the in-graph search's: a filter of half the
            // rows or more goes to the post-filter once the pre-filter
            // costs more at all.
            let stays = match s >= POST_FROM {
                true => pre_ns <= in_ns,
                false => keeps_pre(pre_ns, in_ns),
            };
            if graph && stays {
                pre
            } else if s >= POST_FROM {
                post
            } else {
                Way::InSearch { complexity }
            }
        }
    }
}

/// How much cheaper the in-graph search must be predicted to be before
/// a query leaves the pre-filter. The pre-filter's recall at `l` is the
/// one the caller asked for; the in-graph search's equal-recall list is a
/// fitted factor ([`super::filter_costs::IN_SEARCH_RECALL_COST`]), and its
/// measured scale is an average over list sizes. At the crossover the two
/// costs are within that error of each other, and the choice flipped from
/// round to round: on wordnet-minilm (gorgeous, 10% of the rows matching,
/// L 16) auto sent 0-76% of the queries in-search where the pre-filter was
/// measured 1.16× cheaper, and still 5-30% with a margin of 15% (0.95× the
/// pre-filter's QPS). Where the in-graph search wins it wins by far (2.8×
/// at a third of the rows), so the margin costs little.
pub const SWITCH_MARGIN: f64 = 0.25;

/// Whether a query stays with the pre-filter predicted to cost `pre_ns`
/// against an in-graph search's `in_ns`.
fn keeps_pre(pre_ns: f64, in_ns: f64) -> bool {
    in_ns >= pre_ns * (1.0 - SWITCH_MARGIN)
}

/// The share of an in-graph search's list that matches, for a filter of
/// selectivity `s` over an index holding the share `held` of its lists in
/// RAM: where a list is held the search lists only matches (ACORN-1's
/// two-hop look, `search::acorn`), elsewhere the route through a failing
/// node takes a slot as often as the filter fails. The list grows by its
/// inverse so it holds about as many matches as an unfiltered list holds
/// candidates.
fn in_list_share(s: f64, held: f64) -> f64 {
    s + held * (1.0 - s)
}

/// Most a query's in-search list is lengthened to share a sub-batch with
/// others (`coarsen`).
const GROUP_SLACK: f64 = 1.19;

/// Merges the in-search list sizes of a batch's queries into a few
/// sub-batches: sorted, each group runs at its longest, and a size joins
/// the group of the smallest one it exceeds by at most [`GROUP_SLACK`].
/// Queries whose lists differ by little (a band of similar selectivities)
/// then search together, and queries that want the same list keep it
/// exactly (a fixed grid would lengthen them up to its step).
fn coarsen(ways: &mut [Way]) {
    let mut sizes: Vec<usize> = ways
        .iter()
        .filter_map(|w| match w {
            Way::InSearch { complexity } => Some(*complexity),
            _ => None,
        })
        .collect();
    sizes.sort_unstable();
    sizes.dedup();
    // (smallest, run at) of each group, in order.
    let mut groups: Vec<(usize, usize)> = Vec::new();
    for c in sizes {
        match groups.last_mut() {
            Some(g) if c as f64 <= g.0 as f64 * GROUP_SLACK => g.1 = c,
            _ => groups.push((c, c)),
        }
    }
    for w in ways.iter_mut() {
        if let Way::InSearch { complexity } = w {
            let g = groups.iter().rev().find(|g| g.0 <= *complexity);
            *complexity = g.map_or(*complexity, |g| g.1);
        }
    }
}

impl Index {
    /// Searches `queries` (row-major, `dim` wide), query i returning only
    /// rows of `filters[i]` (`None`: any row), each filtered query by the
    /// way `way` asks (`auto`: per query, see the module). Results as
    /// [`Index::search_batch`]'s: rows, padded where fewer match.
    pub fn search_filtered(
        &self,
        queries: &[f32],
        dim: usize,
        params: &SearchParams,
        filters: &[Allowed],
        way: FilterWay,
    ) -> Result<BatchResult> {
        if dim != self.dim() {
            return Err(Error::argument(
                "query dimension",
                format!("{} (the index dimension)", self.dim()),
                dim,
            ));
        }
        // Every check a search makes, before any query is planned (a batch
        // whose filters all match nothing still gets its queries checked).
        let (nq, _) = self.check_queries(queries, params)?;
        if filters.len() != nq {
            return Err(Error::argument(
                "filters",
                format!("one a query ({nq}), or none"),
                filters.len(),
            ));
        }
        if params.radius.is_some() && filters.iter().any(Option::is_some) {
            return Err(Error::argument(
                "filter",
                "a k-nearest search (a range search takes no filter yet)",
                "a radius",
            ));
        }
        // The costs are made (the first time, an estimate timed on this
        // query) only for a filter that leaves a choice: one that matches
        // nothing or everything answers without them, at once.
        let t0 = std::time::Instant::now();
        let n = self.len();
        let costs = std::cell::OnceCell::new();
        let matches: Vec<u64> = filters
            .iter()
            .map(|f| {
                f.as_ref()
                    .map_or(0, |rows| rows.range_cardinality(0..n as u32))
            })
            .collect();
        let mut ways: Vec<Way> = filters
            .iter()
            .zip(&matches)
            .enumerate()
            .map(|(qi, (f, &m))| match f {
                None => Way::Plain,
                Some(_) if m == 0 => Way::Empty,
                Some(_) if m as usize >= n => Way::Plain,
                Some(rows) => {
                    let q = &queries[qi * dim..(qi + 1) * dim];
                    let c = costs.get_or_init(|| FilterCosts::of(self, params, q, rows));
                    plan_query(m, n, params.k, params.complexity, way, c)
                }
            })
            .collect();
        coarsen(&mut ways);
        // What the model predicts each query's way costs, for the index to
        // set beside what its sub-batch measured (`Calibration::record_way`).
        let model: Vec<f64> = ways
            .iter()
            .zip(&matches)
            .map(|(w, &m)| match (w, costs.get()) {
                (Way::Pre { rerank }, Some(c)) => c.pre(m, *rerank),
                (Way::InSearch { complexity }, Some(c)) => {
                    c.in_search(*complexity, m as f64 / n as f64)
                }
                _ => 0.0,
            })
            .collect();
        let mut out = empty_result(nq, params.k);
        let mut groups: Vec<(Way, Vec<usize>)> = Vec::new();
        for (qi, w) in ways.iter().enumerate() {
            match groups.iter_mut().find(|g| g.0 == *w) {
                Some(g) => g.1.push(qi),
                None => groups.push((*w, vec![qi])),
            }
        }
        let req = Request {
            queries,
            dim,
            params,
            filters,
            matches: &matches,
            model: &model,
        };
        for (w, members) in groups {
            self.run_group(&req, w, &members, &mut out)?;
        }
        // The whole call: planning and the queries answered without a
        // search (an empty filter's) count too.
        out.wall_s = t0.elapsed().as_secs_f64();
        Ok(out)
    }

    /// Runs the queries `members` of one way as a sub-batch and puts their
    /// answers in `out`.
    fn run_group(
        &self,
        req: &Request,
        w: Way,
        members: &[usize],
        out: &mut BatchResult,
    ) -> Result<()> {
        let Request {
            queries,
            dim,
            params,
            filters,
            matches,
            model,
        } = *req;
        let k = params.k;
        let mut stats = QueryStats::default();
        if w == Way::Empty {
            for &qi in members {
                out.stats[qi] = stats;
            }
            return Ok(());
        }
        let sub: Vec<f32> = members
            .iter()
            .flat_map(|&qi| queries[qi * dim..(qi + 1) * dim].iter().copied())
            .collect();
        let allowed: Vec<Allowed> = members.iter().map(|&qi| filters[qi].clone()).collect();
        let mut p = params.clone();
        let rows = allowed.as_slice();
        let (admit, pre) = match w {
            Way::Empty | Way::Plain => (None, None),
            Way::Pre { rerank } => {
                stats.filter_pre = 1;
                let ranks = self.plan.codes.in_ram();
                let admit = Admit {
                    rows,
                    in_graph: false,
                };
                (Some(admit), Some(PreFilter { rerank, ranks }))
            }
            Way::InSearch { complexity } => {
                stats.filter_graph = 1;
                p.complexity = complexity;
                (
                    Some(Admit {
                        rows,
                        in_graph: true,
                    }),
                    None,
                )
            }
            // Every row the wider search scored is a candidate, not only its
            // top k': a post-filter at least as good as filtering the
            // unfiltered top k' (which some strategies fill with fewer
            // than k' exact distances), so the comparison is fair to it.
            Way::Post { k: wide } => {
                stats.filter_post = 1;
                p.k = wide;
                p.complexity = p.complexity.max(wide);
                (
                    Some(Admit {
                        rows,
                        in_graph: false,
                    }),
                    None,
                )
            }
        };
        let graph_search = pre.is_none();
        let r = self.search_batch_with(&sub, dim, &p, admit, pre)?;
        if graph_search {
            self.calibration.record(&r.stats);
        }
        // The sub-batch's thread time against the model's prediction.
        let measured = match w {
            Way::Pre { .. } => Some(Measured::Pre),
            Way::InSearch { .. } => Some(Measured::InSearch),
            _ => None,
        };
        if let Some(m) = measured {
            let threads = p.threads.max(1).min(members.len()) as f64;
            let predicted: f64 = members.iter().map(|&qi| model[qi]).sum();
            // A sub-batch's filters are of similar selectivity (one way,
            // one list size): their mean's class.
            let mean =
                members.iter().map(|&qi| matches[qi] as f64).sum::<f64>() / members.len() as f64;
            let class = selectivity_class(mean / self.len().max(1) as f64);
            let spent = r.wall_s * threads * 1e9;
            self.calibration
                .record_way(m, class, members.len(), predicted, spent);
        }
        for (j, &qi) in members.iter().enumerate() {
            let rows = &r.ids[j * r.k..(j + 1) * r.k];
            let dists = &r.dists[j * r.k..(j + 1) * r.k];
            let kept = rows
                .iter()
                .zip(dists)
                .filter(|(&row, _)| row != u32::MAX)
                .take(k);
            for (slot, (&row, &d)) in kept.enumerate() {
                out.ids[qi * k + slot] = row;
                out.dists[qi * k + slot] = d;
            }
            let mut st = r.stats[j];
            st.filter_pre = stats.filter_pre;
            st.filter_graph = stats.filter_graph;
            st.filter_post = stats.filter_post;
            st.filter_matches = matches[qi];
            out.stats[qi] = st;
            out.errors[qi] = r.errors[j].clone();
        }
        out.wall_s += r.wall_s;
        out.io_wait_s += r.io_wait_s;
        out.proc_read_bytes = match (out.proc_read_bytes, r.proc_read_bytes) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        out.io_backend = r.io_backend;
        Ok(())
    }
}

/// A filtered batch as the caller gave it, with each query's matches and
/// its way's predicted cost.
#[derive(Clone, Copy)]
struct Request<'a> {
    queries: &'a [f32],
    dim: usize,
    params: &'a SearchParams,
    filters: &'a [Allowed],
    matches: &'a [u64],
    model: &'a [f64],
}

fn empty_result(nq: usize, k: usize) -> BatchResult {
    BatchResult {
        k,
        ids: vec![u32::MAX; nq * k],
        dists: vec![f32::INFINITY; nq * k],
        stats: vec![QueryStats::default(); nq],
        errors: vec![None; nq],
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn costs(ranks: bool, graph: bool) -> FilterCosts {
        FilterCosts {
            read_ns: 20_000.0,
            estimate_ns: 30.0,
            lookup_ns: 15.0,
            reads_per_hop: 1.0,
            degree: 48.0,
            held: 0.0,
            exact_share: 1.0,
            pre_scale: [1.0; 10],
            in_scale: [1.0; 10],
            ranks,
            graph,
        }
    }

    #[test]
    fn close_list_sizes_share_a_sub_batch_at_the_longest() {
        let ins = |c| Way::InSearch { complexity: c };
        let mut ways = vec![
            ins(40),
            Way::Empty,
            ins(100),
            ins(45),
            ins(47),
            ins(40),
            ins(119),
            ins(120),
            ins(57),
        ];
        coarsen(&mut ways);
        let got: Vec<Way> = ways;
        let want = vec![
            ins(47),
            Way::Empty,
            ins(119),
            ins(47),
            ins(47),
            ins(47),
            ins(119),
            ins(120),
            ins(57),
        ];
        assert_eq!(got, want);
        // The same size for every query is kept exactly.
        let mut same = vec![ins(40); 5];
        coarsen(&mut same);
        assert_eq!(same, vec![ins(40); 5]);
    }

    #[test]
    fn the_pre_filter_is_left_only_for_a_clearly_cheaper_search() {
        assert!(keeps_pre(100.0, 100.0));
        assert!(keeps_pre(100.0, 80.0), "20% cheaper: within the margin");
        assert!(!keeps_pre(100.0, 70.0));
        // Scaled so the in-graph search is predicted 20% cheaper than the
        // pre-filter of a third of the rows: still the pre-filter.
        let base = FilterCosts {
            held: 1.0,
            reads_per_hop: 0.4,
            exact_share: 0.5,
            ..costs(true, true)
        };
        let (m, n) = (34_000, 100_000);
        let (pre, ins) = base.scaled(m, n, 40, 100);
        let mut near = base;
        near.in_scale[selectivity_class(0.34)] = 0.8 * pre / ins;
        assert_eq!(
            plan_query(m, n, 10, 40, FilterWay::Auto, &near),
            Way::Pre { rerank: 40 }
        );
        near.in_scale[selectivity_class(0.34)] = 0.6 * pre / ins;
        assert_eq!(
            plan_query(m, n, 10, 40, FilterWay::Auto, &near),
            Way::InSearch { complexity: 100 }
        );
    }

    #[test]
    fn the_way_follows_the_selectivity() {
        let plan = |m: u64, f| plan_query(m, 100_000, 10, 40, f, &costs(true, true));
        assert_eq!(plan(0, FilterWay::Auto), Way::Empty);
        assert_eq!(plan(100_000, FilterWay::Auto), Way::Plain);
        assert_eq!(plan(150, FilterWay::Auto), Way::Pre { rerank: 40 });
        assert_eq!(plan(30, FilterWay::Auto), Way::Pre { rerank: 30 });
        // Ranking 20% of 100k rows on their codes costs less than a graph
        // search that reads at every hop through a list grown 5× for the
        // routes and 1.25× for the recall it gives up; ranking 60% costs
        // more than the plain search (grown 1.7×), which the post-filter
        // runs; over 10M rows the graph search takes a 20% filter.
        assert_eq!(plan(20_000, FilterWay::Auto), Way::Pre { rerank: 40 });
        assert_eq!(plan(60_000, FilterWay::Auto), Way::Post { k: 25 });
        let big = plan_query(
            6_000_000,
            10_000_000,
            10,
            40,
            FilterWay::Auto,
            &costs(true, true),
        );
        assert_eq!(big, Way::Post { k: 25 });
        let mid = plan_query(
            2_000_000,
            10_000_000,
            10,
            40,
            FilterWay::Auto,
            &costs(true, true),
        );
        assert_eq!(mid, Way::InSearch { complexity: 250 });
        // Forced, the list is the grown one alone.
        assert_eq!(
            plan_query(
                2_000_000,
                10_000_000,
                10,
                40,
                FilterWay::InSearch,
                &costs(true, true)
            ),
            Way::InSearch { complexity: 200 }
        );
        // Every list in RAM (Gorgeous): the in-graph search lists only
        // matches, so its list does not grow, and two-fifths of the rows
        // matching cost clearly less to search than to rank (by more than
        // the margin); a hundredth, whose
        // two-hop look meets a hundred failures a match, do not.
        let gorgeous = FilterCosts {
            held: 1.0,
            reads_per_hop: 0.4,
            exact_share: 0.5,
            ..costs(true, true)
        };
        let plan_held = |m| plan_query(m, 100_000, 10, 40, FilterWay::Auto, &gorgeous);
        assert_eq!(plan_held(40_000), Way::InSearch { complexity: 100 });
        assert_eq!(plan_held(1_000), Way::Pre { rerank: 40 });
        // Forced: the grown list, never past the cap.
        assert_eq!(
            plan(20_000, FilterWay::InSearch),
            Way::InSearch { complexity: 200 }
        );
        assert_eq!(
            plan(10, FilterWay::InSearch),
            Way::InSearch { complexity: 640 }
        );
        assert_eq!(plan(10, FilterWay::Post), Way::Post { k: 640 });
        // A cluster index cannot pre-filter.
        let ivf = plan_query(10, 100_000, 10, 40, FilterWay::Pre, &costs(true, false));
        assert_eq!(ivf, Way::InSearch { complexity: 640 });
        // Without codes in RAM every match is read: only few go there.
        let no_codes = |m| plan_query(m, 100_000, 10, 40, FilterWay::Auto, &costs(false, true));
        assert_eq!(no_codes(100), Way::Pre { rerank: 100 });
        assert!(matches!(no_codes(20_000), Way::InSearch { .. }));
    }
}
