//! The checks a build makes of its parameters and its data before any
//! work: each names the parameter (or row and component), what it accepts
//! and what it was given.

use super::build::BuildParams;
use crate::data::{DType, Metric};
use crate::error::{Error, Result};
use crate::layout::shuffle::Shuffle;
use crate::layout::LayoutKind;

pub(crate) fn check_params(p: &BuildParams, n: usize, dim: usize, dtype: DType) -> Result<()> {
    let arg = |what: &str, expected: &str, found: &dyn ToString| {
        Err(Error::argument(what, expected, found.to_string()))
    };
    crate::profile::get(&p.profile)?;
    if p.layout.is_some_and(|k| k.replicates()) && p.shuffle != Shuffle::None {
        return arg(
            "shuffle",
            &format!(
                "none with the {} layout (it keeps id order)",
                p.layout_kind()
            ),
            &p.shuffle,
        );
    }
    if p.layout_kind() == LayoutKind::Ivf {
        if p.shuffle != Shuffle::None {
            return arg("shuffle", "none with the ivf layout", &p.shuffle);
        }
        if !super::build_ivf::supports(p.metric) {
            return arg(
                "metric",
                "l2 or cosine for the ivf layout (clusters are ranked by L2 to their centroids)",
                &p.metric,
            );
        }
        if !(1..=8).contains(&p.ivf_replicas) {
            return arg("ivf_replicas", "1..=8", &p.ivf_replicas);
        }
        if p.ivf_sample_nprobe == 0 {
            return arg("ivf_sample_nprobe", "at least 1", &0);
        }
        if p.ivf_clusters == Some(0) {
            return arg("ivf_clusters", "at least 1", &0);
        }
        if !(p.ivf_closure >= 0.0 && p.ivf_closure.is_finite()) {
            return arg("ivf_closure", "a finite number >= 0", &p.ivf_closure);
        }
    }
    if p.layout_kind() == LayoutKind::Csr && p.shuffle != Shuffle::None {
        return arg(
            "shuffle",
            "none with the csr layout (it keeps id order)",
            &p.shuffle,
        );
    }
    if p.layout_kind() == LayoutKind::Laser {
        if p.shuffle != Shuffle::None {
            return arg(
                "shuffle",
                "none with the laser layout (it keeps id order)",
                &p.shuffle,
            );
        }
        if p.metric == Metric::InnerProduct {
            return arg(
                "metric",
                "l2 or cosine for the laser layout (its codes estimate Euclidean distances)",
                &p.metric,
            );
        }
    }
    if p.layout == Some(LayoutKind::Blocked) && p.shuffle == Shuffle::None {
        return arg(
            "shuffle",
            "bnp, bnf or bns for the blocked layout",
            &p.shuffle,
        );
    }
    if p.graph_degree == 0 || p.graph_degree > 1024 {
        return arg("graph_degree (R)", "1..=1024", &p.graph_degree);
    }
    if p.complexity < p.graph_degree.min(n) || p.complexity == 0 {
        return arg(
            "complexity (L_build)",
            &format!("at least graph_degree = {}", p.graph_degree.min(n)),
            &p.complexity,
        );
    }
    if !(p.alpha >= 1.0 && p.alpha <= 4.0) {
        return arg("alpha", "1.0..=4.0", &p.alpha);
    }
    if p.pq_bytes == 0 || p.pq_bytes > dim {
        return arg(
            "pq_bytes",
            &format!("1..={dim} (the dimension)"),
            &p.pq_bytes,
        );
    }
    if let Some(bits) = p.exrabitq_bits {
        if !crate::quant::exrabitq::BITS.contains(&bits) || dim < 2 {
            return arg(
                "exrabitq_bits",
                "1..=8 (and a dimension of 2 or more)",
                &bits,
            );
        }
        let codes = crate::profile::plan(p).map(|plan| plan.codes);
        if codes.ok() != Some(crate::plan::CodesPart::ExRabitq) {
            return arg(
                "exrabitq_bits",
                "unset on a laser or ivf layout (their codes are their own)",
                &bits,
            );
        }
    }
    if let Some(k) = p.exrabitq_centres {
        if p.exrabitq_bits.is_none() || !(1..=crate::quant::exrabitq_centres::LIMIT).contains(&k) {
            return arg("exrabitq_centres", "1..=65536, with --exrabitq-bits", &k);
        }
    }
    if p.pipelined_refinement && !crate::profile::two_stage(p) {
        return arg(
            "pipelined_refinement",
            "false on a profile without the two-stage search (only gorgeous refines)",
            &p.pipelined_refinement,
        );
    }
    if ![4096, 8192, 16384].contains(&p.page_size) {
        return arg("page_size", "4096, 8192 or 16384", &p.page_size);
    }
    if !(0.0..=0.5).contains(&p.nav_sample) {
        return arg("nav_sample", "a fraction in 0..=0.5", &p.nav_sample);
    }
    if p.nav_sample > 0.0 && (p.nav_degree == 0 || p.nav_degree > 256) {
        return arg("nav_degree", "1..=256", &p.nav_degree);
    }
    if p.passes == 0 || p.passes > 4 {
        return arg("passes", "1..=4", &p.passes);
    }
    if !(p.visits_sample > 0.0 && p.visits_sample <= 1.0) {
        return arg("visits_sample", "a fraction in (0, 1]", &p.visits_sample);
    }
    if !(p.max_batch_fraction > 0.0 && p.max_batch_fraction <= 1.0) {
        return arg("max_batch_fraction", "in (0, 1]", &p.max_batch_fraction);
    }
    stored_dtype(p.store, dtype)?;
    if dtype != DType::F32 && p.metric != Metric::L2 {
        return arg(
            "metric",
            &format!("l2 for {} data", dtype.as_str()),
            &p.metric,
        );
    }
    if n >= u32::MAX as usize {
        return arg("number of vectors", "fewer than 2^32 - 1", &n);
    }
    Ok(())
}

pub(crate) fn check_finite(data: &[f32], dim: usize, source: &str) -> Result<()> {
    use rayon::prelude::*;
    if let Some(i) = data.par_iter().position_first(|x| !x.is_finite()) {
        return Err(Error::argument(
            format!("{source}: row {}, component {}", i / dim, i % dim),
            "a finite number",
            data[i],
        ));
    }
    Ok(())
}

/// The element type records hold when vectors of type `source` are stored
/// as `store` (`BuildParams::store`): the source's own type, or f16 from
/// f32; anything else is an error. Shared by the build and `relayout`.
pub(crate) fn stored_dtype(store: Option<DType>, source: DType) -> Result<DType> {
    match store {
        None => Ok(source),
        Some(s) if s == source => Ok(s),
        Some(DType::F16) if source == DType::F32 => Ok(DType::F16),
        Some(s) => Err(Error::argument(
            "store",
            format!("f16 (from f32 vectors) or the vectors' own type {source}"),
            s,
        )),
    }
}

/// The largest finite f16.
pub(crate) const F16_MAX: f32 = 65504.0;
/// Magnitudes from here on round to an infinite f16.
pub(crate) const F16_LIMIT: f32 = 65520.0;

/// f16 storage needs every component to round to a finite half.
pub(crate) fn check_f16_range(data: &[f32], dim: usize, source: &str) -> Result<()> {
    use rayon::prelude::*;
    if let Some(i) = data.par_iter().position_first(|x| x.abs() >= F16_LIMIT) {
        return Err(Error::argument(
            format!(
                "{source}: row {}, component {} (--store f16)",
                i / dim,
                i % dim
            ),
            format!("a magnitude of at most {F16_MAX}"),
            data[i],
        ));
    }
    Ok(())
}
