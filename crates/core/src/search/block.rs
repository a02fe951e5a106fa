//! Block search (Starling §4.2): a page read for one target node holds other
//! records too. All of them get an exact distance (they are candidates for
//! the result), and besides the target the neighbours of the closest
//! ⌈(ε−1)·σ⌉ of them are explored (ε records per page, pruning ratio σ;
//! the paper finds σ = 0.3 best). Records already waiting in the candidate
//! list are expanded here too, since that costs no read. No record of a page
//! that was read becomes a candidate later, so a page is never read twice for
//! records it already delivered.
//!
//! The claimed records also stand in the candidate list, as expanded entries
//! at their PQ estimate ("both sets are updated with the block search
//! outcome", §5.2): otherwise the list keeps worse candidates in their place
//! and reads them before it converges.
//!
//! On a shuffled layout (BNF) the other records are mostly the target's
//! neighbours, which is where the saving comes from; on id order they are
//! unrelated nodes and block search only adds distance computations.

use super::context::SearchContext;
use super::expansion::{visited_capacity, Expansion};

/// What a search does with a page it read, the rule the beam and the
/// pipelined search both plug in: DiskANN's one record per read, or
/// Starling's block search over every record of the page. Decided once a
/// page, never per neighbour.
#[derive(Clone, Copy, Debug)]
pub enum PageRule {
    /// Only the records the page was read for.
    Record,
    /// Block search with pruning ratio σ (in [0, 1]).
    Block { sigma: f32 },
}

impl PageRule {
    /// Block search when `prune_ratio` is given (clamped to [0, 1]).
    pub fn new(prune_ratio: Option<f32>) -> Self {
        match prune_ratio {
            Some(r) => PageRule::Block {
                sigma: r.clamp(0.0, 1.0),
            },
            None => PageRule::Record,
        }
    }

    /// Sizes a query's core for the rule: block search expands the target
    /// and a few records of each page it reads, and a visited set that
    /// stays within L1 (32 KB at 2,048 x 1.5 ids) is worth the rare grow.
    pub fn size(self, core: &mut Expansion, complexity: usize) {
        if let PageRule::Block { .. } = self {
            core.reserve_visited(visited_capacity(complexity) * 3 / 2);
        }
    }

    /// The part of a page that routes the search: the neighbours of
    /// `targets` (the nodes it was read for) collected into `core`, and
    /// with block search the page's other records claimed into `claimed`
    /// ([`claim_and_route`]). The caller lists what was collected.
    pub fn route(
        self,
        core: &mut Expansion,
        ctx: &SearchContext,
        span: &[u8],
        targets: &[u32],
        claimed: &mut Vec<(u32, bool)>,
    ) {
        match self {
            PageRule::Block { .. } => claim_and_route(core, ctx, span, targets, claimed),
            PageRule::Record => {
                for &t in targets {
                    core.collect_neighbors(ctx, t, ctx.layout.record_slice(t, span));
                }
            }
        }
    }

    /// The rest of a page, which need not precede the next reads: the
    /// targets' exact distances, and with block search (if the page was
    /// `routed`) the claimed records' ([`explore_others`]). The caller
    /// lists what was collected.
    pub fn settle(
        self,
        core: &mut Expansion,
        ctx: &SearchContext,
        span: &[u8],
        targets: &[u32],
        claimed: &[(u32, bool)],
        routed: bool,
    ) {
        for &t in targets {
            core.add_exact(ctx, t, ctx.layout.record_slice(t, span));
        }
        if let (PageRule::Block { sigma }, true) = (self, routed) {
            explore_others(core, ctx, span, claimed, sigma);
        }
    }
}

/// The part of block search that routes the search (done before the next
/// reads go out): the page's other records are claimed, so no later hop
/// reads this page again for them, and the targets' neighbours enter the
/// candidate list. Claimed records stand in the list as expanded entries
/// at their estimates ([`Expansion::list_held`]): they push out the
/// candidates they beat, which would otherwise be read before the list
/// converged (Starling §5.2: both sets are updated with the block search
/// outcome). Estimates, not exact distances: PQ estimates run low by the
/// quantisation error (a centroid is its cell's mean), so an exact distance
/// ranks behind estimates it should beat; at 384-d with 8 dimensions per
/// sub-space that kept the list from converging. Claiming comes first, so
/// whether a record counts as "listed" does not depend on the order of
/// records in the page.
fn claim_and_route(
    s: &mut Expansion,
    ctx: &SearchContext,
    span: &[u8],
    targets: &[u32],
    claimed: &mut Vec<(u32, bool)>,
) {
    let mut records = Vec::with_capacity(16);
    ctx.layout.block_records(targets[0], span, &mut records);
    claimed.clear();
    for &(id, _) in &records {
        if targets.contains(&id) {
            continue;
        }
        if s.mark_visited(id) {
            claimed.push((id, false));
        } else if s.take_from_list(id) {
            claimed.push((id, true));
        }
    }
    s.list_held(ctx, claimed);
    for &t in targets {
        s.collect_neighbors(ctx, t, record_of(ctx, &records, t, span));
    }
    s.list_collected(ctx);
}

/// Node `id`'s record among a page's `records` (a blocked page's records
/// are found by walking its directory, so the walk is done once per page).
fn record_of<'a>(
    ctx: &'a SearchContext,
    records: &[(u32, &'a [u8])],
    id: u32,
    span: &'a [u8],
) -> &'a [u8] {
    match records.iter().find(|r| r.0 == id) {
        Some(&(_, rec)) => rec,
        None => ctx.layout.record_slice(id, span),
    }
}

/// The rest (deferred by the pipeline): exact distances of the claimed
/// records, then the neighbours of the closest ⌈(ε−1)·σ⌉ of them and of every
/// one that was waiting in the candidate list.
fn explore_others(
    s: &mut Expansion,
    ctx: &SearchContext,
    span: &[u8],
    claimed: &[(u32, bool)],
    sigma: f32,
) {
    let Some(&(first, _)) = claimed.first() else {
        return;
    };
    let mut records = Vec::with_capacity(16);
    ctx.layout.block_records(first, span, &mut records);
    let per_page = records.len();
    let mut others: Vec<(f32, u32, bool, &[u8])> = claimed
        .iter()
        .map(|&(id, listed)| {
            let rec = record_of(ctx, &records, id, span);
            (s.add_exact(ctx, id, rec), id, listed, rec)
        })
        .collect();
    others.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let keep = (per_page.saturating_sub(1) as f32 * sigma).ceil() as usize;
    for (i, &(_, id, listed, rec)) in others.iter().enumerate() {
        // A listed record was marked expanded when claimed, so it must be
        // expanded here or its neighbours would never be seen.
        if i < keep || listed {
            s.collect_neighbors(ctx, id, rec);
        }
    }
    // Listed by the caller, with the other pages'.
}
