//! Block search (Starling §4.2): a page read for one target node holds other
//! records too. All of them get an exact distance (they are candidates for
//! the result), and besides the target the neighbours of the closest
//! ⌈(ε−1)·σ⌉ of them are explored (ε records per page, pruning ratio σ;
//! the paper finds σ = 0.3 best). Records already waiting in the candidate
//! list are expanded here too, since that costs no read. No record of a page
//! that was read becomes a candidate later, so a page is never read twice for
//! records it already delivered.
//!
//! On a shuffled layout (BNF) the other records are mostly the target's
//! neighbours, which is where the saving comes from; on id order they are
//! unrelated nodes and block search only adds distance computations.

use super::beam::BeamSearch;
use super::context::SearchContext;

pub fn process_block(
    s: &mut BeamSearch,
    ctx: &SearchContext,
    target: u32,
    span: &[u8],
    sigma: f32,
) {
    let mut records = Vec::new();
    ctx.layout.block_records(target, span, &mut records);
    let per_page = records.len();
    // (exact distance, id, record, was waiting in the candidate list)
    let mut others: Vec<(f32, u32, &[u8], bool)> = Vec::with_capacity(per_page);
    for &(id, rec) in &records {
        if id == target {
            s.add_exact(ctx, id, rec);
            s.add_neighbors(ctx, id, rec);
        } else if s.mark_visited(id) {
            let d = s.add_exact(ctx, id, rec);
            others.push((d, id, rec, false));
        } else if s.take_from_list(id) {
            let d = s.add_exact(ctx, id, rec);
            others.push((d, id, rec, true));
        }
    }
    others.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let keep = (per_page.saturating_sub(1) as f32 * sigma).ceil() as usize;
    for (i, &(_, id, rec, listed)) in others.iter().enumerate() {
        // A listed record was marked expanded above, so it must be expanded
        // here or its neighbours would never be seen.
        if i < keep || listed {
            s.add_neighbors(ctx, id, rec);
        }
    }
}
