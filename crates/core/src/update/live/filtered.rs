//! A live index's filtered search (issue #56): the generation searched
//! with each query's matching rows less the deleted ones
//! (`Index::search_filtered` picks each query's way), the delta's
//! matches compared in full (it holds at most its share of the budget,
//! a few thousand vectors), the two merged by distance.
//!
//! Inserted vectors carry the labels they were inserted with
//! (`LiveIndex::add_labelled`), or none: a filter matches a vector without
//! labels as it matches any empty set (`NOT pos:v` does, `pos:n` does not).

use super::*;
use crate::index::filtered::{Allowed, FilterWay};
use crate::labels::Expr;
use roaring::RoaringBitmap;
use std::sync::Arc;

impl LiveIndex {
    /// Searches as [`LiveIndex::search`] does, query i returning only the
    /// vectors `filters[i]` matches (`None`: any), each filtered query by
    /// the way `way` asks. The expressions must have been parsed against
    /// this index's labels ([`LiveIndex::parse_filter`]).
    pub fn search_filtered(
        &self,
        queries: &[f32],
        dim: usize,
        params: &SearchParams,
        filters: &[Option<Expr>],
        way: FilterWay,
    ) -> Result<LiveResult> {
        if filters.iter().all(Option::is_none) {
            return self.search(queries, dim, params);
        }
        self.maybe_refresh();
        let s = self.read();
        let Some(labels) = s.base.labels() else {
            return Err(no_labels(&self.dir));
        };
        let deleted: RoaringBitmap = s.deleted.rows().collect();
        let mut everything = RoaringBitmap::new();
        everything.insert_range(0..s.base.len() as u32);
        let live_rows = Arc::new(&everything - &deleted);
        let allowed: Vec<Allowed> = filters
            .iter()
            .map(|f| match f {
                Some(e) => Some(Arc::new(e.rows(labels) - &deleted)),
                None if deleted.is_empty() => None,
                None => Some(live_rows.clone()),
            })
            .collect();
        let base = s
            .base
            .search_filtered(queries, dim, params, &allowed, way)?;
        let (k, nq, metric) = (params.k, queries.len() / dim.max(1), s.base.metric());
        let delta_rows: Vec<u32> = (0..s.delta.rows() as u32)
            .filter(|&r| !s.delta.is_removed(r))
            .collect();
        let rows: Vec<Vec<(f32, i64)>> = (0..nq)
            .into_par_iter()
            .map(|qi| {
                let mut hits: Vec<(f32, i64)> = Vec::with_capacity(2 * k);
                for j in 0..k {
                    let row = base.ids[qi * k + j];
                    if row != u32::MAX {
                        let id = s.base.ids().map_or(row as i64, |m| m.get(row));
                        hits.push((base.dists[qi * k + j], id));
                    }
                }
                if !delta_rows.is_empty() {
                    let q = prepare(&queries[qi * dim..(qi + 1) * dim], metric);
                    let admits = |r: u32| {
                        filters[qi]
                            .as_ref()
                            .is_none_or(|e| e.matches(s.delta.labels(r)))
                    };
                    for &r in delta_rows.iter().filter(|&&r| admits(r)) {
                        let d = reported_distance(metric, s.delta.distance(&q, r));
                        hits.push((d, s.delta.id(r)));
                    }
                }
                nearest(hits, k)
            })
            .collect();
        Ok(LiveResult::of(k, rows, base))
    }

    /// `text` as a filter over this index's labels (names or ids), or the
    /// error naming the token and its position.
    pub fn parse_filter(&self, text: &str) -> Result<Expr> {
        self.with_base(|b| match b.labels() {
            Some(labels) => Expr::parse(text, labels),
            None => Err(no_labels(&self.dir)),
        })
    }

    /// Filters that AND the labels of each row of a filter-track query
    /// matrix (`query.filters.spmat`), one a query.
    pub fn filters_of(&self, rows: &crate::labels::LabelSets) -> Result<Vec<Option<Expr>>> {
        self.with_base(|b| {
            let labels = b.labels().ok_or_else(|| no_labels(&self.dir))?;
            if rows.n_labels > labels.n_labels() {
                let used = rows.indices.iter().copied().max().unwrap_or(0);
                return Err(Error::argument(
                    "filter matrix",
                    format!("label ids below the index's {}", labels.n_labels()),
                    used,
                ));
            }
            Ok((0..rows.len()).map(|r| Expr::all_of(rows.row(r))).collect())
        })
    }
}

fn no_labels(dir: &Path) -> Error {
    Error::argument(
        "filter",
        "an index built with labels (build --labels)",
        format!("{}, which has none", dir.display()),
    )
}
