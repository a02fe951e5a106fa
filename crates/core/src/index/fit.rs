//! Defaults that fit the data, and the checks that the parameters can work,
//! both before the first expensive stage.
//!
//! A fixed default breaks on some data: 32 PQ bytes on a 16-d set, 4 KB
//! pages for the starling profile on 768-d float records (3.2 KB each, one
//! a page, while a block must hold two). The parameters the caller left
//! unset ([`Unset`]) are chosen here from n, the dimension and the record
//! size, each choice said once (stderr, `build_report.json` and the
//! manifest's `chosen`); the parameters the caller did set are checked
//! against the same data, so a build that cannot work fails in
//! milliseconds instead of after its graph.

use super::build::{stored_dtype, BuildParams};
use crate::data::DType;
use crate::error::{Error, Result};
use crate::layout::shuffle::Shuffle;
use crate::layout::{blocked, LaserLayout, LayoutKind};
use std::collections::BTreeMap;

/// The build parameters the caller did not give (`--pq-bytes`, `--page-size`,
/// `--complexity` absent; `None` in Python): the build picks them to fit the
/// data. Default: every parameter given (the values in `BuildParams` are
/// used as they are).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Unset {
    pub pq_bytes: bool,
    pub page_size: bool,
    pub complexity: bool,
    /// `pipelined_refinement` not given: with the latency objective, the
    /// build measures which refinement its index answers sooner with
    /// (`stages::refinement`).
    pub pipelined_refinement: bool,
}

impl Unset {
    /// Every parameter that can be fitted is left to the build.
    pub fn all() -> Self {
        Unset {
            pq_bytes: true,
            page_size: true,
            complexity: true,
            pipelined_refinement: true,
        }
    }
}

/// PQ bytes when the caller gives none: 32, DiskANN's usual figure (32
/// bytes a vector in RAM: 3.2 GB per 100 M vectors), but never more than
/// the dimension. A sub-space cannot be narrower than one component, and at
/// one byte a component (256 centroids each) the codes of a low-dimensional
/// set are as fine as PQ gets while still a quarter of f32 vectors. DiskANN
/// derives its figure from a memory budget, capped at the dimension the same
/// way; the build has no budget, so the figure is fixed.
pub fn default_pq_bytes(dim: usize) -> usize {
    32.min(dim).max(1)
}

/// Page sizes the layouts support, smallest first.
pub const PAGE_SIZES: [usize; 3] = [4096, 8192, 16384];

/// The parameters the build will use on `n` vectors of `dim` x `dtype`: the
/// unset ones chosen for the data, the set ones checked against it. Returns
/// them with `unset` cleared and, for each value that differs from the plain
/// default, why it was chosen (field -> reason).
pub fn fit(
    p: &BuildParams,
    n: usize,
    dim: usize,
    dtype: DType,
) -> Result<(BuildParams, BTreeMap<String, String>)> {
    let mut out = BuildParams {
        unset: Unset::default(),
        ..p.clone()
    };
    let mut chosen = BTreeMap::new();
    if p.unset.pq_bytes {
        out.pq_bytes = default_pq_bytes(dim);
        if out.pq_bytes != p.pq_bytes {
            chosen.insert(
                "pq_bytes".into(),
                format!(
                    "{}: one byte a dimension ({dim}-d data cannot take the default {})",
                    out.pq_bytes, p.pq_bytes
                ),
            );
        }
    }
    if p.unset.complexity && out.complexity < out.graph_degree {
        // The build list must hold a full neighbour list.
        chosen.insert(
            "complexity".into(),
            format!(
                "{}: the graph degree (the default {} is below it)",
                out.graph_degree, out.complexity
            ),
        );
        out.complexity = out.graph_degree;
    }
    if out.shuffle != Shuffle::None {
        let stored = stored_dtype(out.store, dtype)?;
        fit_page_size(&mut out, p.unset.page_size, n, dim, stored, &mut chosen)?;
    }
    if out.layout_kind() == LayoutKind::Laser {
        if out.store.is_none() && dtype == DType::F32 {
            // Half-size vectors leave the codes more of the page: on
            // wordnet-minilm 20k, 280-d codes in a 4 KB page instead of
            // 184-d, R@10 at L = 50 0.963 instead of 0.921 (exact distances
            // are then to the rounded vectors: 2^-11 relative per component).
            out.store = Some(DType::F16);
            chosen.insert(
                "store".into(),
                "f16: laser records keep half-size vectors so the neighbour codes get more \
                 of the page (give --store f32 to keep full floats)"
                    .into(),
            );
        }
        let stored = stored_dtype(out.store, dtype)?;
        fit_laser(&mut out, p.unset.page_size, dim, stored, &mut chosen)?;
    }
    Ok((out, chosen))
}

/// The fewest principal dimensions laser codes cover when fitted: two
/// thirds of the dimension, at least 64. One bit a dimension is a coarse
/// code, and the list a search needs grows fast as it covers less: on
/// wordnet-mpnet 20k (768-d), 184-d codes in a 4 KB record reached R@10
/// 0.863 at L = 30, 504-d codes in an 8 KB one 0.963 (diskann, 48-byte PQ:
/// 0.855), so a larger page for more dimensions pays.
fn min_code_dim(dim: usize) -> usize {
    (dim * 2 / 3 / 8 * 8).max(64)
}

/// Principal dimensions the codes can cover: the dimension rounded down to
/// a multiple of 8 (the fast-scan kernel takes 4-dimension sub-codes in
/// pairs), at least 8.
fn max_code_dim(dim: usize) -> usize {
    (dim / 8 * 8).max(8)
}

/// The laser record (vector, ids, neighbour codes) must fit a page. Left
/// unset, the page is the smallest that holds a record with codes over two
/// thirds of the dimensions, and the codes then take every dimension that
/// page still holds (AlayaLaser
/// §3.2: more principal dimensions, better estimates, and the bytes would
/// otherwise be padding): on wordnet-minilm 20k, 128-d codes reached R@10
/// 0.84 at L = 50 against 0.96 for 256-d codes, at the same reads.
fn fit_laser(
    p: &mut BuildParams,
    unset_page: bool,
    dim: usize,
    stored: DType,
    chosen: &mut BTreeMap<String, String>,
) -> Result<()> {
    let record = |cd: usize| LaserLayout::record_bytes_for(dim, stored, p.graph_degree, cd);
    let top = max_code_dim(dim);
    if let Some(cd) = p.code_dim {
        if cd == 0 || !cd.is_multiple_of(8) || cd > top {
            return Err(Error::argument(
                "code_dim",
                format!("a multiple of 8 from 8 to {top} (the dimension {dim} rounded down to 8)"),
                cd,
            ));
        }
    }
    let wanted = p.code_dim.unwrap_or(min_code_dim(dim).min(top));
    let what = format!(
        "laser records of {} bytes ({dim} x {stored}, {} neighbour slots, {wanted}-d codes)",
        record(wanted),
        p.graph_degree.next_multiple_of(32)
    );
    if record(wanted) > p.page_size {
        match PAGE_SIZES.into_iter().find(|&s| s >= record(wanted)) {
            Some(size) if unset_page => {
                chosen.insert(
                    "page_size".into(),
                    format!("{size}: a {}-byte page cannot hold {what}", p.page_size),
                );
                p.page_size = size;
            }
            fits => {
                return Err(Error::argument(
                    "page_size",
                    format!(
                        "a page that holds {what}: {}",
                        fits.map_or(
                            "none does (use --store f16, a smaller --code-dim or --graph-degree)"
                                .into(),
                            |s| format!("{s} or more")
                        )
                    ),
                    p.page_size,
                ))
            }
        }
    }
    if p.code_dim.is_none() {
        let cd = (wanted..=top)
            .step_by(8)
            .take_while(|&cd| record(cd) <= p.page_size)
            .last()
            .unwrap_or(wanted);
        chosen.insert(
            "code_dim".into(),
            format!(
                "{cd}: the principal dimensions whose neighbour codes fit the {}-byte page",
                p.page_size
            ),
        );
        p.code_dim = Some(cd);
    }
    Ok(())
}

/// Shuffled blocks must hold two records each. The largest record has
/// min(R, n - 1) neighbours: a Vamana graph over more than R vectors has
/// nodes at full degree, and no node links to itself.
fn fit_page_size(
    p: &mut BuildParams,
    unset: bool,
    n: usize,
    dim: usize,
    stored: DType,
    chosen: &mut BTreeMap<String, String>,
) -> Result<()> {
    let degree = p.graph_degree.min(n.saturating_sub(1));
    let largest = blocked::largest_entry(dim, stored, n, degree);
    if blocked::holds_two(p.page_size, largest) {
        return Ok(());
    }
    let record =
        format!("shuffled records of {largest} bytes ({dim} x {stored} and {degree} neighbours)");
    let fits = PAGE_SIZES
        .into_iter()
        .find(|&s| blocked::holds_two(s, largest));
    match fits {
        Some(size) if unset => {
            chosen.insert(
                "page_size".into(),
                format!(
                    "{size}: a {}-byte page holds fewer than 2 {record}",
                    p.page_size
                ),
            );
            p.page_size = size;
            Ok(())
        }
        Some(size) => Err(Error::argument(
            "page_size",
            format!(
                "pages that hold at least 2 {record}: {size} or more \
                 (leave --page-size unset and the profile picks it)"
            ),
            format!(
                "{} per {}-byte page",
                per_page(p.page_size, largest),
                p.page_size
            ),
        )),
        None => {
            let f16 = if stored == DType::F32 {
                "--store f16, "
            } else {
                ""
            };
            Err(Error::argument(
                "page_size",
                format!(
                    "pages that hold at least 2 {record}; no page size does \
                     (use {f16}a smaller --graph-degree, or --shuffle none / --profile diskann)"
                ),
                format!("{} per {}-byte page", per_page(16384, largest), 16384),
            ))
        }
    }
}

fn per_page(page_size: usize, largest: usize) -> usize {
    (page_size - 2) / largest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pq_bytes_follow_a_small_dimension() {
        assert_eq!(default_pq_bytes(16), 16);
        assert_eq!(default_pq_bytes(1), 1);
        assert_eq!(default_pq_bytes(96), 32);
        assert_eq!(default_pq_bytes(768), 32);
    }

    #[test]
    fn starling_on_768_d_floats_picks_8_kb_pages() {
        let p = BuildParams {
            unset: Unset::all(),
            ..BuildParams::for_profile("starling")
        };
        let (fitted, chosen) = fit(&p, 48_000, 768, DType::F32).unwrap();
        assert_eq!(fitted.page_size, 8192);
        assert_eq!(fitted.unset, Unset::default());
        assert!(
            chosen["page_size"].starts_with("8192: a 4096-byte page"),
            "{chosen:?}"
        );
        // The same page size given by the caller is refused before any work.
        let set = BuildParams::for_profile("starling");
        let e = fit(&set, 48_000, 768, DType::F32).unwrap_err().to_string();
        assert!(e.contains("page_size") && e.contains("8192"), "{e}");
        // f16 records fit 4 KB pages: nothing to choose.
        let half = BuildParams {
            store: Some(DType::F16),
            ..p.clone()
        };
        let (fitted, chosen) = fit(&half, 48_000, 768, DType::F32).unwrap();
        assert_eq!(fitted.page_size, 4096);
        assert!(chosen.is_empty());
    }

    #[test]
    fn records_too_large_for_any_page_are_refused() {
        let p = BuildParams {
            unset: Unset::all(),
            ..BuildParams::for_profile("starling")
        };
        let e = fit(&p, 1000, 4096, DType::F32).unwrap_err().to_string();
        assert!(
            e.contains("no page size does") && e.contains("--store f16"),
            "{e}"
        );
    }
}
