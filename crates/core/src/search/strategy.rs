//! In what order a query's reads are issued and what is done with each (the
//! fifth question of docs/architecture.md): a [`Strategy`] makes one state
//! machine per query and reads its result. The batch code is generic over
//! it and never names a profile (COMPOSITION.md, example A).

use super::context::SearchContext;
use super::query::PreparedQuery;
use super::QueryState;

pub trait Strategy: Sync {
    type State: QueryState;
    /// The state machine of one query. `reuse` is a finished state of this
    /// strategy whose buffers the new query may take (a worker runs
    /// thousands of queries; allocating each one's tables afresh costs).
    fn start(
        &self,
        ctx: &SearchContext,
        query: PreparedQuery,
        reuse: Option<Self::State>,
    ) -> Self::State;
    /// The finished query's result, (internal distance, id) nearest first:
    /// the top `k`, or for a range search everything within its radius.
    fn finish(&self, state: &mut Self::State, k: usize, out: &mut Vec<(f32, u32)>);
    /// Whether a finished state may be handed back to `start` as `reuse`.
    fn reusable(&self, _state: &Self::State) -> bool {
        true
    }
    /// Queries a worker claims and starts together (`start_group`); 1,
    /// the default, starts each as it is claimed.
    fn group(&self) -> usize {
        1
    }
    /// Starts `queries` together, one state each into `out` in their
    /// order, taking finished states from `reuse`: a strategy whose
    /// set-up streams a large table (laser's query map) shares it across
    /// the group. Equal to `start` on each, which is the default.
    fn start_group(
        &self,
        ctx: &SearchContext,
        queries: Vec<PreparedQuery>,
        reuse: &mut Vec<Self::State>,
        out: &mut Vec<Self::State>,
    ) {
        for q in queries {
            let r = reuse.pop();
            out.push(self.start(ctx, q, r));
        }
    }
}
