//! The layouts a candidate is tried in beyond its profile's defaults
//! (issue #57 item 3): the stored type of its vectors and the page size.
//!
//! A profile's defaults were fitted to one data set: laser keeps f16
//! records in the smallest page that holds codes over two thirds of the
//! dimensions, which at 768-d is 8 KB. On wordnet-mpnet that won (diskann
//! read 47.8 a query there and was CPU-bound); on another 768-d set of
//! WordNet texts laser at those defaults did 0.76× diskann's QPS, reading
//! 19.1 pages of 8 KB against diskann's 18.8 of 4 KB near the device's
//! ceiling. So the planner does not take the defaults as given: each
//! candidate within [`CONTENDER_SHARE`] of the leader is tried again with
//! its stored type flipped (f16 halves a record: a block holds twice the
//! records and the node cache twice the nodes, at 2⁻¹¹ relative error a
//! component) and at the page sizes beside the one its fit chose (a
//! larger page holds more of a block or more of laser's code dimensions;
//! a smaller one is a cheaper read). The device's rate is probed at every
//! page size tried (`predict::Device`), so a larger page's reads are
//! counted at what they cost.
//!
//! One layout is chosen by rule, not by trial: a two-stage candidate
//! (gorgeous) whose trial held every adjacency list in RAM has its records
//! shuffled into blocks (Starling §4.1) instead of one replicated block a
//! node ([`blocks_when_cached`]). With every list in RAM the replicas are
//! never read, a refinement read costs one page either way, and a block
//! of graph neighbours brings the vectors of the candidates beside the one
//! read (`search::two_stage`, `block_mates`). At 20% of wordnet-minilm
//! (f16 records, four a 4 KB block) a query read 7.1 vectors at L 26
//! against 7.8 in replicated blocks, at the same recall. A sample cannot
//! show it: its refinement reads 2 vectors a query at the target, where
//! the whole index reads 8, so the two layouts tie there and timing noise
//! would pick.

use super::trial::Trial;
use crate::data::DType;
use crate::error::Result;
use crate::index::build::BuildParams;
use crate::index::fit::{fit, PAGE_SIZES};
use crate::layout::shuffle::Shuffle;
use crate::layout::{blocked, LaserLayout, LayoutKind};
use serde::{Deserialize, Serialize};

/// A candidate's layout where it is not the profile's default (every
/// field `None`: the default).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Layout {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_size: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<DType>,
    /// Laser's code dimensions, where a smaller page than its fit's must
    /// say how many it holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_dim: Option<usize>,
    /// Records shuffled into blocks (the blocked layout, BNF) instead of
    /// the profile's layout.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub blocks: bool,
}

impl Layout {
    /// The build parameters [`Self::apply`] sets (by their serialised
    /// names): a layout chosen means all of them were (`BuildParams::with_chosen`).
    pub const FIELDS: &'static [&'static str] =
        &["layout", "shuffle", "page_size", "store", "code_dim"];

    /// `params` laid out so (the fields of [`Self::FIELDS`]).
    pub fn apply(&self, params: &mut BuildParams) {
        if let Some(s) = self.page_size {
            params.page_size = s;
            params.unset.page_size = false;
        }
        if self.store.is_some() {
            params.store = self.store;
        }
        if self.code_dim.is_some() {
            params.code_dim = self.code_dim;
        }
        if self.blocks {
            params.layout = Some(LayoutKind::Blocked);
            params.shuffle = Shuffle::Bnf;
        }
    }

    pub fn is_default(&self) -> bool {
        *self == Layout::default()
    }

    /// In a few characters for a report's label (`f16`, `8K`).
    pub fn label(&self) -> String {
        let mut parts = Vec::new();
        if self.blocks {
            parts.push("blocks".to_string());
        }
        if let Some(s) = self.store {
            parts.push(s.to_string());
        }
        if let Some(p) = self.page_size {
            parts.push(format!("{}K", p / 1024));
        }
        if let Some(c) = self.code_dim {
            parts.push(format!("cd{c}"));
        }
        parts.join(" ")
    }
}

/// Candidates whose predicted figure is at least this share of the
/// leader's are tried in other layouts: a layout changed laser's QPS by
/// up to 1.3x across data sets (above), so one further behind would not
/// overtake the leader, and each variant is a trial build (~1 s).
pub const CONTENDER_SHARE: f64 = 0.75;

/// Principal dimensions laser codes cover at the fewest (`fit`'s rule
/// is two thirds of the dimension; a smaller page may hold fewer, but
/// never below this).
const MIN_LASER_CODE_DIM: usize = 64;

/// The layouts `profile` is tried in besides its default, on `n` sample
/// rows of `dim` f32 components: the stored type flipped, and the page
/// sizes next to its fitted one where its layout's records fill pages by
/// size (shuffled blocks, laser). Each is one [`fit`] accepts.
pub fn variants(profile: &str, base: &BuildParams, n: usize, dim: usize) -> Result<Vec<Layout>> {
    let params = base.with_profile(profile);
    let (fitted, _) = fit(&params, n, dim, DType::F32)?;
    let mut out = Vec::new();
    // A caller's own store or page size is kept.
    if base.store.is_none() {
        let flipped = match fitted.store {
            Some(DType::F16) => DType::F32,
            _ => DType::F16,
        };
        out.push(Layout {
            store: Some(flipped),
            ..Layout::default()
        });
    }
    let laser = fitted.layout_kind() == LayoutKind::Laser;
    let blocked = fitted.shuffle != Shuffle::None;
    if !base.unset.page_size || !(laser || blocked) {
        return Ok(out);
    }
    let at = PAGE_SIZES.iter().position(|&s| s == fitted.page_size);
    let Some(at) = at else { return Ok(out) };
    if let Some(&up) = PAGE_SIZES.get(at + 1) {
        out.push(Layout {
            page_size: Some(up),
            ..Layout::default()
        });
    }
    // A smaller page holds a block's two records only where the fit would
    // have chosen it; laser's records fit one with fewer code dimensions.
    if let (true, Some(&down)) = (laser, at.checked_sub(1).map(|i| &PAGE_SIZES[i])) {
        let stored = fitted.store.unwrap_or(DType::F32);
        let record = |cd| LaserLayout::record_bytes_for(dim, stored, params.graph_degree, cd);
        let code_dim = (MIN_LASER_CODE_DIM..=dim / 8 * 8)
            .step_by(8)
            .take_while(|&cd| record(cd) <= down)
            .last();
        if let Some(cd) = code_dim {
            out.push(Layout {
                page_size: Some(down),
                code_dim: Some(cd),
                ..Layout::default()
            });
        }
    }
    // Only those the fit takes (a flipped store may need a larger page
    // than a size tried here; the fit then says so, and it is not tried).
    out.retain(|l| {
        let mut p = params.clone();
        l.apply(&mut p);
        fit(&p, n, dim, DType::F32).is_ok()
    });
    Ok(out)
}

/// The layout `profile`'s best trial `t` is built in once its records are
/// shuffled into blocks (module docs), with why; `None` unless the profile
/// searches in two stages, the caller gave no layout, the trial held every
/// adjacency list, and a block of its page size holds two records of `n`
/// nodes of `dim` in its stored type.
pub fn blocks_when_cached(
    profile: &str,
    base: &BuildParams,
    t: &Trial,
    n: usize,
    dim: usize,
) -> Option<(Layout, String)> {
    let mut params = base.with_profile(profile);
    let replicated = params.layout_kind() == LayoutKind::Replicated;
    let held = t.lists_cached.unwrap_or(0.0) >= 1.0;
    if !crate::profile::two_stage(&params) || base.layout.is_some() || !replicated || !held {
        return None;
    }
    let layout = Layout {
        blocks: true,
        page_size: Some(t.page_size),
        ..t.layout
    };
    layout.apply(&mut params);
    let stored = params.store.unwrap_or(DType::F32);
    let largest = blocked::largest_entry(dim, stored, n, params.graph_degree);
    if !blocked::holds_two(t.page_size, largest) || fit(&params, n, dim, DType::F32).is_err() {
        return None;
    }
    let why = format!(
        "{}: {profile}'s trial held every adjacency list in the budget, so its replicas \
         would never be read; shuffled blocks of {} records bring a refinement read its \
         neighbours' vectors (autoplan::variants)",
        layout.label(),
        (t.page_size - blocked::COUNT_BYTES) / largest
    );
    Some((layout, why))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::Unset;

    fn base() -> BuildParams {
        BuildParams {
            unset: Unset::all(),
            ..BuildParams::for_profile(crate::autoplan::AUTO)
        }
    }

    /// `apply` sets the fields `FIELDS` names and no other, so a reused
    /// index's chosen layout is compared whole.
    #[test]
    fn apply_sets_exactly_its_fields() {
        let before = base();
        let mut after = before.clone();
        Layout {
            page_size: Some(8192),
            store: Some(DType::F16),
            code_dim: Some(100),
            blocks: true,
        }
        .apply(&mut after);
        let (a, b) = (
            serde_json::to_value(&before).unwrap(),
            serde_json::to_value(&after).unwrap(),
        );
        let keys: std::collections::BTreeSet<&String> = a
            .as_object()
            .unwrap()
            .keys()
            .chain(b.as_object().unwrap().keys())
            .collect();
        let changed: Vec<&str> = keys
            .into_iter()
            .filter(|k| a.get(k.as_str()) != b.get(k.as_str()))
            .map(|k| k.as_str())
            .collect();
        let mut fields = Layout::FIELDS.to_vec();
        fields.sort();
        let mut changed = changed;
        changed.sort();
        assert_eq!(changed, fields);
    }

    /// Every variant differs from the profile's fitted layout, is taken by
    /// the build's fit, and keeps laser's records within their page.
    #[test]
    fn every_variant_is_a_layout_the_build_takes() {
        for dim in [96, 384, 768, 1536] {
            for profile in crate::profile::planned() {
                let b = base();
                let vs = variants(profile, &b, 2_000, dim).unwrap();
                let (fitted, _) = fit(&b.with_profile(profile), 2_000, dim, DType::F32).unwrap();
                assert!(!vs.is_empty(), "{profile} at {dim}-d");
                for v in &vs {
                    assert!(!v.is_default());
                    let mut p = b.with_profile(profile);
                    v.apply(&mut p);
                    let (f, _) = fit(&p, 2_000, dim, DType::F32).unwrap();
                    let same = f.page_size == fitted.page_size
                        && f.store == fitted.store
                        && f.code_dim == fitted.code_dim
                        && f.layout_kind() == fitted.layout_kind();
                    assert!(!same, "{profile} {v:?} at {dim}-d is its default");
                    if let (Some(page), Some(cd)) = (v.page_size, v.code_dim) {
                        let stored = f.store.unwrap_or(DType::F32);
                        let bytes = LaserLayout::record_bytes_for(dim, stored, f.graph_degree, cd);
                        assert!(bytes <= page && cd >= MIN_LASER_CODE_DIM);
                    }
                }
            }
        }
    }

    /// A caller's store and page size are theirs: no variant changes them.
    #[test]
    fn a_callers_layout_is_kept() {
        let b = BuildParams {
            store: Some(DType::F32),
            page_size: 16384,
            unset: Unset {
                page_size: false,
                ..Unset::all()
            },
            ..base()
        };
        for profile in crate::profile::planned() {
            for v in variants(profile, &b, 2_000, 384).unwrap() {
                assert_eq!((v.store, v.page_size), (None, None), "{profile}");
            }
        }
    }

    /// A two-stage trial that held every list is built in shuffled blocks
    /// of its page size and stored type; not one that held fewer, not
    /// another profile's, not where the caller gave the layout, and not
    /// where a block would hold one record.
    #[test]
    fn gorgeous_holding_every_list_is_built_in_shuffled_blocks() {
        let trial = |cached: f64, store: Option<DType>| Trial {
            layout: Layout {
                store,
                ..Layout::default()
            },
            page_size: 4096,
            lists_cached: Some(cached),
            ..Trial::default()
        };
        let b = base();
        let (l, why) =
            blocks_when_cached("gorgeous", &b, &trial(1.0, Some(DType::F16)), 100_000, 384)
                .expect("blocks");
        assert_eq!(
            (l.blocks, l.store, l.page_size),
            (true, Some(DType::F16), Some(4096))
        );
        assert!(why.contains("blocks of 4 records"), "{why}");
        let mut p = b.with_profile("gorgeous");
        l.apply(&mut p);
        assert_eq!(p.layout_kind(), LayoutKind::Blocked);
        assert!(crate::profile::two_stage(&p));
        assert!(blocks_when_cached("gorgeous", &b, &trial(0.9, None), 100_000, 384).is_none());
        for profile in crate::profile::planned()
            .into_iter()
            .filter(|p| *p != "gorgeous")
        {
            assert!(blocks_when_cached(profile, &b, &trial(1.0, None), 100_000, 384).is_none());
        }
        let given = BuildParams {
            layout: Some(LayoutKind::Replicated),
            ..base()
        };
        assert!(blocks_when_cached("gorgeous", &given, &trial(1.0, None), 100_000, 384).is_none());
        // 768-d f32 records: one a 4 KB block.
        assert!(blocks_when_cached("gorgeous", &b, &trial(1.0, None), 100_000, 768).is_none());
        assert!(
            blocks_when_cached("gorgeous", &b, &trial(1.0, Some(DType::F16)), 100_000, 768)
                .is_some()
        );
    }

    /// Laser at 768-d fits 8 KB pages by default; its variants try f32
    /// records, 16 KB pages, and 4 KB pages with the code dimensions
    /// they hold.
    #[test]
    fn laser_at_768_d_is_tried_at_both_neighbouring_pages() {
        let vs = variants("laser", &base(), 2_000, 768).unwrap();
        assert!(vs.iter().any(|v| v.store == Some(DType::F32)));
        assert!(vs.iter().any(|v| v.page_size == Some(16384)));
        let small = vs.iter().find(|v| v.page_size == Some(4096)).unwrap();
        assert!(small.code_dim.unwrap() < 768 * 2 / 3);
    }
}
