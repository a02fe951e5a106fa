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
    let in_search = Way::InSearch {
        complexity: bucket(grown, l),
    };
    let post = Way::Post { k: post_k };
    match force {
        FilterWay::Pre if graph => pre,
        FilterWay::Pre | FilterWay::InSearch => in_search,
        FilterWay::Post => post,
        // The choice keeps the recall of the pre-filter at `l`: an
        // in-graph search chosen instead runs with the longer list that
        // reaches it, and is chosen if that costs less.
        FilterWay::Auto => {
            let complexity = bucket(costs.equal_recall_list(grown), l);
            if graph && costs.pre(matches, rerank) <= costs.in_search(complexity, s) {
                pre
            } else if s >= POST_FROM {
                post
            } else {
                Way::InSearch { complexity }
            }
        }
    }
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

/// `want` rounded up to `l` times a power of √2, so the grown lists of a
/// batch fall in a few sub-batches (at most 9: 1, 1.41, 2, ... 16 × l)
/// while none runs more than 1.41× the list it needs.
fn bucket(want: usize, l: usize) -> usize {
    let cap = GROWTH_CAP * l;
    let (mut b, mut step) = (l, 0);
    while b < want && b < cap {
        step += 1;
        let base = l << (step / 2);
        b = match step % 2 {
            0 => base,
            _ => (base as f64 * std::f64::consts::SQRT_2).ceil() as usize,
        };
    }
    b.min(cap)
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
        let ways: Vec<Way> = filters
            .iter()
            .enumerate()
            .map(|(qi, f)| match f {
                None => Way::Plain,
                Some(rows) => {
                    let m = rows.range_cardinality(0..n as u32);
                    if m == 0 || m as usize >= n {
                        return if m == 0 { Way::Empty } else { Way::Plain };
                    }
                    let q = &queries[qi * dim..(qi + 1) * dim];
                    let c = costs.get_or_init(|| FilterCosts::of(self, params, q, rows));
                    plan_query(m, n, params.k, params.complexity, way, c)
                }
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
            st.filter_matches = allowed[j]
                .as_ref()
                .map_or(0, |a| a.range_cardinality(0..self.len() as u32));
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

/// A filtered batch as the caller gave it.
#[derive(Clone, Copy)]
struct Request<'a> {
    queries: &'a [f32],
    dim: usize,
    params: &'a SearchParams,
    filters: &'a [Allowed],
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
            ranks,
            graph,
        }
    }

    #[test]
    fn buckets_are_half_powers_of_two_up_to_the_cap() {
        let got: Vec<usize> = [10, 11, 15, 20, 28, 29, 100, 160, 1000]
            .iter()
            .map(|&w| bucket(w, 10))
            .collect();
        assert_eq!(got, [10, 15, 15, 20, 29, 29, 114, 160, 160]);
    }

    #[test]
    fn the_way_follows_the_selectivity() {
        let plan = |m: u64, f| plan_query(m, 100_000, 10, 40, f, &costs(true, true));
        assert_eq!(plan(0, FilterWay::Auto), Way::Empty);
        assert_eq!(plan(100_000, FilterWay::Auto), Way::Plain);
        assert_eq!(plan(150, FilterWay::Auto), Way::Pre { rerank: 40 });
        assert_eq!(plan(30, FilterWay::Auto), Way::Pre { rerank: 30 });
        // Broad filters: ranking 20% or 60% of 100k rows on their codes
        // costs less than a graph search that reads at every hop through
        // a list grown for the routes (5×, 1.7×) and for the recall it
        // gives up (1.25×); over 10M rows it does not, and the post-filter
        // takes the broadest.
        assert_eq!(plan(20_000, FilterWay::Auto), Way::Pre { rerank: 40 });
        assert_eq!(plan(60_000, FilterWay::Auto), Way::Pre { rerank: 40 });
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
        assert_eq!(mid, Way::InSearch { complexity: 320 });
        // Forced, the list is the grown one (200 in its bucket of 227).
        assert_eq!(
            plan_query(
                2_000_000,
                10_000_000,
                10,
                40,
                FilterWay::InSearch,
                &costs(true, true)
            ),
            Way::InSearch { complexity: 227 }
        );
        // Every list in RAM (Gorgeous): the in-graph search lists only
        // matches, so its list does not grow, and a third of the rows
        // matching cost less to search than to rank; a hundredth, whose
        // two-hop look meets a hundred failures a match, do not.
        let gorgeous = FilterCosts {
            held: 1.0,
            reads_per_hop: 0.4,
            exact_share: 0.5,
            ..costs(true, true)
        };
        let plan_held = |m| plan_query(m, 100_000, 10, 40, FilterWay::Auto, &gorgeous);
        assert_eq!(plan_held(34_000), Way::InSearch { complexity: 114 });
        assert_eq!(plan_held(1_000), Way::Pre { rerank: 40 });
        // Forced: the grown list in its bucket, never past the cap.
        assert_eq!(
            plan(20_000, FilterWay::InSearch),
            Way::InSearch { complexity: 227 }
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
