//! The in-graph filter's neighbour rule (issue #56, strategy (b)): which of
//! an expanded node's new neighbours a filtered query lists.
//!
//! ACORN (Patel et al., SIGMOD'24, §5.2 "ACORN-1") searches the subgraph
//! the predicate induces: only matching nodes enter the candidate list, so
//! the list's L slots hold L matches instead of L·s, and where a node's
//! neighbours mostly fail the predicate it looks one hop further, through
//! the failing neighbours' lists, for matches (the two-hop expansion,
//! truncated to the node's degree). Those lists must be at hand without a
//! read: Gorgeous holds every adjacency list in RAM (§4.1's graph cache),
//! DiskANN only its cached nodes'.
//!
//! A failing neighbour whose list is not in RAM cannot be looked through
//! without a read. It is listed as a route (read and expanded like any
//! candidate, its own distance never returned) while the expansion is
//! short of matches — where matches are sparse a disk graph still has to
//! walk through the rest to reach them (Filtered-DiskANN §3's observation
//! that the unfiltered graph's routes pass through non-matching nodes).
//! Once an expansion has found matches enough, the failing neighbours are
//! dropped: they would fill the list with nodes the query cannot return.

use super::context::SearchContext;
use crate::layout::NodeView;
use crate::util::visited::VisitedSet;
use roaring::RoaringBitmap;

/// Narrows `fresh`, the new neighbours (marked visited) of nodes whose
/// lists held `degree` ids in all, to what a query allowed only `allowed`
/// lists (module docs). `bridges` is scratch. Returns the lists looked
/// through for a second hop.
pub fn admit_matches(
    ctx: &SearchContext,
    allowed: &RoaringBitmap,
    degree: usize,
    fresh: &mut Vec<u32>,
    visited: &mut VisitedSet,
    bridges: &mut Vec<u32>,
) -> u64 {
    bridges.clear();
    let offered = fresh.len();
    fresh.retain(|&id| match allowed.contains(id) {
        true => true,
        false => {
            bridges.push(id);
            false
        }
    });
    // The neighbourhood mostly passes: its matches are the expansion.
    let want = degree.max(1);
    if 2 * fresh.len() >= offered {
        return 0;
    }
    let mut looked = 0;
    let mut routes = 0;
    for i in 0..bridges.len() {
        if fresh.len() >= want {
            break;
        }
        let id = bridges[i];
        match list_in_ram(ctx, id) {
            Some(list) => {
                looked += 1;
                second_hop(ctx, allowed, &list, want, fresh, visited);
            }
            // Kept (swapped to the front) as a route unless the matches
            // suffice by the end.
            None => {
                bridges.swap(routes, i);
                routes += 1;
            }
        }
    }
    // An expansion that found no match at all routes through every
    // failing neighbour, looked through or not: a search must not end
    // at its start because the matches lie beyond two hops.
    match fresh.is_empty() {
        true => fresh.extend_from_slice(bridges),
        false if 2 * fresh.len() < offered => fresh.extend_from_slice(&bridges[..routes]),
        false => {}
    }
    looked
}

/// Matches an in-graph filtered search samples for extra starts.
pub const SAMPLED_STARTS: usize = 64;

/// Lists a filtered query's matches sampled evenly over its rows as extra
/// starts, those that rank within `list` at their estimates (marked
/// visited), and returns them in `sampled` with their estimates in `est`.
/// Filtered-DiskANN starts a query at its labels' own entry points (§3.2,
/// FilteredVamana's per-label start nodes) so that it begins among
/// matches rather than at a medoid the filter may exclude, with no match
/// within reach; a sample of the matches themselves does that for any
/// expression (an OR, a NOT) without a table kept per label, for 64
/// estimates. A selective filter's sample covers a large share of its
/// matches, so the search starts at the best of them.
pub fn sample_starts(
    ctx: &SearchContext,
    table: &crate::quant::QueryTable,
    allowed: &RoaringBitmap,
    visited: &mut VisitedSet,
    list: &mut crate::util::candidates::CandidateList,
    sampled: &mut Vec<u32>,
    est: &mut Vec<f32>,
) -> u64 {
    sampled.clear();
    let m = allowed.len();
    let step = (m / SAMPLED_STARTS as u64).max(1);
    let picks = (0..m.min(SAMPLED_STARTS as u64)).filter_map(|i| allowed.select((i * step) as u32));
    sampled.extend(picks.filter(|&id| (id as usize) < ctx.n && !visited.contains(id)));
    est.resize(sampled.len(), 0.0);
    ctx.quantizer.estimate_many(table, sampled, est);
    let mut kept = 0;
    for i in 0..sampled.len() {
        let (id, e) = (sampled[i], est[i]);
        if list.admits(e) && visited.insert(id) {
            list.insert(id, e);
            sampled[kept] = id;
            est[kept] = e;
            kept += 1;
        }
    }
    let estimated = sampled.len() as u64;
    sampled.truncate(kept);
    est.truncate(kept);
    estimated
}

/// Node `id`'s adjacency list if RAM holds it: the graph cache's, or a
/// cached record's.
fn list_in_ram<'a>(ctx: &SearchContext<'a>, id: u32) -> Option<NodeView<'a>> {
    if let Some(list) = ctx.adjacency.get(id) {
        return Some(list);
    }
    ctx.cache.get(id).map(|r| ctx.layout.parse(r))
}

/// Appends the matching unvisited ids of `list` to `fresh` (marking them
/// visited) until it holds `want`. A list from the graph cache comes
/// sorted by id (`util::elias_fano`), so where more match than are wanted
/// the ones kept are any of them, not the nearest: ACORN-1 keeps its
/// neighbours' lists whole, and `want` only caps the estimates. A failing id is left unvisited: another
/// node may reach it as a neighbour and look through it.
fn second_hop(
    ctx: &SearchContext,
    allowed: &RoaringBitmap,
    list: &NodeView<'_>,
    want: usize,
    fresh: &mut Vec<u32>,
    visited: &mut VisitedSet,
) {
    for nb in list.neighbors() {
        if fresh.len() >= want {
            return;
        }
        // A corrupt id is the expansion's to report when the node itself
        // is expanded; here it is skipped.
        if (nb as usize) < ctx.n && allowed.contains(nb) && visited.insert(nb) {
            fresh.push(nb);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::testing::{open_in_ram, open_uncached, small_index};
    use crate::synthetic::SyntheticSpec;
    use crate::BuildParams;

    fn small() -> tempfile::TempDir {
        let spec = SyntheticSpec {
            n: 600,
            queries: 1,
            dim: 16,
            clusters: 6,
            seed: 56,
        };
        let params = BuildParams {
            graph_degree: 12,
            complexity: 24,
            pq_bytes: 2,
            pq_sample: 600,
            ..BuildParams::for_profile("diskann")
        };
        small_index(&spec, &params).0
    }

    /// The sampled starts are matches spread over the rows, each listed
    /// and marked visited only if it ranks in the list; a filter with
    /// fewer matches than the sample offers every one.
    #[test]
    fn sampled_starts_are_spread_matches_that_rank() {
        let dir = small();
        let index = open_in_ram(dir.path(), Some(1 << 30));
        let sp = crate::SearchParams::default();
        let ctx = index.context(&sp);
        let mut table = crate::quant::QueryTable::default();
        let query: Vec<f32> = (0..16).map(|i| i as f32 * 0.1).collect();
        ctx.quantizer.prepare(&query, &mut table);
        for (allowed, capacity) in [
            (
                (0..600u32)
                    .filter(|i| i % 3 == 0)
                    .collect::<RoaringBitmap>(),
                8,
            ),
            ((0..600u32).filter(|i| i % 3 == 0).collect(), 1000),
            ([5u32, 77, 300].into_iter().collect(), 1000),
        ] {
            let mut visited = VisitedSet::for_ids_below(600, 64);
            visited.insert(0);
            let mut list = crate::util::candidates::CandidateList::new(capacity);
            let (mut sampled, mut est) = (Vec::new(), Vec::new());
            let estimated = sample_starts(
                &ctx,
                &table,
                &allowed,
                &mut visited,
                &mut list,
                &mut sampled,
                &mut est,
            );
            let offered = allowed.len().min(SAMPLED_STARTS as u64) - u64::from(allowed.contains(0));
            assert_eq!(estimated, offered);
            assert!(sampled
                .iter()
                .all(|&id| allowed.contains(id) && visited.contains(id)));
            assert_eq!(list.len(), sampled.len().min(capacity));
            for (&id, &e) in sampled.iter().zip(&est) {
                assert_eq!(e, ctx.quantizer.estimate(&table, id));
            }
            // The list holds the best of them (a small one pushed some of
            // the early ones out again, as a search's list does).
            assert!(list.as_slice().iter().all(|c| sampled.contains(&c.id)));
            if capacity == 1000 {
                assert_eq!(sampled.len() as u64, offered, "every offered match ranks");
                assert_eq!(list.len(), sampled.len());
                // Spread: the sample reaches the last third of the rows.
                assert!(sampled.iter().any(|&id| id >= 300));
            }
        }
    }

    /// Without lists in RAM nothing is looked through: the matches are
    /// listed, and the failing neighbours too (as routes) only where the
    /// matches are under half.
    #[test]
    fn failing_neighbours_route_only_where_matches_are_few() {
        let dir = small();
        let (index, _) = open_uncached(dir.path());
        let sp = crate::SearchParams::default();
        let ctx = index.context(&sp);
        assert!(list_in_ram(&ctx, 0).is_none());
        let offered: Vec<u32> = (0..12).collect();
        for (modulus, routes) in [
            (1u32, false),
            (2, false),
            (3, true),
            (12, true),
            (100, true),
        ] {
            let allowed: RoaringBitmap = (0..600u32).filter(|i| i % modulus == 0).collect();
            let mut fresh = offered.clone();
            let mut visited = VisitedSet::for_ids_below(600, 64);
            let mut bridges = Vec::new();
            let looked = admit_matches(&ctx, &allowed, 12, &mut fresh, &mut visited, &mut bridges);
            assert_eq!(looked, 0);
            let want: Vec<u32> = match routes {
                true => offered.clone(),
                false => offered
                    .iter()
                    .copied()
                    .filter(|&i| i % modulus == 0)
                    .collect(),
            };
            fresh.sort_unstable();
            assert_eq!(fresh, want, "1 in {modulus} matching");
        }
    }

    /// Against a plain reference: every id listed matches or is a route
    /// the rule allows; every match among the neighbours is listed; the
    /// second hop adds only matching, previously unvisited neighbours of
    /// failing ones, and never past the degree.
    #[test]
    fn lists_matches_and_looks_through_failing_neighbours() {
        let dir = small();
        let index = open_in_ram(dir.path(), Some(1 << 30));
        let sp = crate::SearchParams::default();
        let ctx = index.context(&sp);
        for (modulus, node) in [(2u32, 5u32), (7, 11), (50, 3), (600, 1)] {
            let allowed: RoaringBitmap = (0..600u32).filter(|i| i % modulus == 0).collect();
            let list = list_in_ram(&ctx, node).expect("every list cached");
            let nbs: Vec<u32> = list.neighbors().collect();
            let mut visited = VisitedSet::for_ids_below(600, 64);
            let mut fresh = Vec::new();
            for &nb in &nbs {
                if visited.insert(nb) {
                    fresh.push(nb);
                }
            }
            let offered = fresh.clone();
            let mut bridges = Vec::new();
            admit_matches(
                &ctx,
                &allowed,
                nbs.len(),
                &mut fresh,
                &mut visited,
                &mut bridges,
            );
            let direct: Vec<u32> = offered
                .iter()
                .copied()
                .filter(|&i| allowed.contains(i))
                .collect();
            assert!(direct.iter().all(|i| fresh.contains(i)), "a match dropped");
            // No match within two hops: every neighbour is a route.
            if fresh.iter().any(|&i| !allowed.contains(i)) {
                let (mut a, mut b) = (fresh.clone(), offered.clone());
                a.sort_unstable();
                b.sort_unstable();
                assert_eq!(a, b, "routes only when nothing matched");
                continue;
            }
            assert!(fresh.len() <= nbs.len().max(direct.len()));
            let mut seen = fresh.clone();
            seen.sort_unstable();
            seen.dedup();
            assert_eq!(seen.len(), fresh.len(), "an id listed twice");
            for &i in fresh.iter().filter(|i| !direct.contains(i)) {
                assert!(!offered.contains(&i), "a second-hop id was offered");
                let via = offered.iter().any(|&b| {
                    !allowed.contains(b)
                        && list_in_ram(&ctx, b).unwrap().neighbors().any(|x| x == i)
                });
                assert!(via, "{i} is no neighbour of a failing neighbour");
                assert!(visited.contains(i));
            }
            // A neighbourhood that mostly fails was looked through: it
            // found more than its direct matches unless none were left.
            if 2 * direct.len() < offered.len() && !fresh.is_empty() {
                let left = offered.iter().any(|&b| {
                    !allowed.contains(b)
                        && list_in_ram(&ctx, b)
                            .unwrap()
                            .neighbors()
                            .any(|x| allowed.contains(x) && !direct.contains(&x) && x != node)
                });
                assert!(!left || fresh.len() > direct.len());
            }
        }
    }
}
