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

use super::beam::BeamSearch;
use super::context::SearchContext;

/// The part of block search that routes the search (done before the next
/// reads go out): the page's other records are claimed, so no later hop
/// reads this page again for them, and the targets' neighbours enter the
/// candidate list. Claiming comes first, so whether a record counts as
/// "listed" does not depend on the order of records in the page.
pub fn claim_and_route(
    s: &mut BeamSearch,
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
    s.list_claimed(ctx, claimed);
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
pub fn explore_others(
    s: &mut BeamSearch,
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
    // Listed by the caller, with the other pages' (`run_deferred`).
}
