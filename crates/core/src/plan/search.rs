//! In what order reads are issued and processed (the fifth of the five
//! questions): the search a plan runs by default, and the one place a
//! search call's strategy is chosen (docs/architecture.md, "How a plan
//! becomes running parts").

use super::CodesPart;
use crate::data::Metric;
use crate::error::{Error, Result};
use crate::search::ivf::Ivf;
use crate::search::ivf_pq::IvfPq;
use crate::search::query::internal_distance;
use crate::search::{Beam, Laser, Pipe, RangeRule, SearchParams, TwoStage, WidthPolicy};
use serde::{Deserialize, Serialize};

/// The search a plan runs unless the caller switches it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum SearchPart {
    /// DiskANN's beam search: W reads a hop, a hop at a time.
    Beam { width: WidthPolicy },
    /// Starling's block search (§4.2): every record of a block read is
    /// used; with the I/O–computation pipeline when `pipeline`.
    Block { pipeline: bool, width: WidthPolicy },
    /// Gorgeous's two-stage search (§4.2): estimates over the graph cache,
    /// then exact distances for the best; with `pipelined`, the settled
    /// candidates' vectors are read while the search stage goes on (issue
    /// #22's composition; what the planner chooses for one query a thread,
    /// issue #57). Indexes built before the field read false.
    TwoStage {
        #[serde(default)]
        pipelined: bool,
    },
    /// PipeANN's pipelined search (OctopusANN §4.3.2): reads outstanding
    /// up to the width, each expanded as it arrives.
    Pipelined { width: WidthPolicy },
    /// AlayaLaser's search (§4.2–4.3): neighbour codes read with the record.
    Laser,
    /// A cluster index read cluster by cluster (paper 002 §6); its members
    /// scored on codes first when the codes part holds them (IVF-PQ).
    Clusters,
}

impl SearchPart {
    /// The search parameters this part runs with by default.
    pub fn defaults(self) -> SearchParams {
        let d = SearchParams::default();
        match self {
            SearchPart::Beam { width } => SearchParams { width, ..d },
            SearchPart::Block { pipeline, width } => SearchParams {
                page_search: true,
                pipeline,
                width,
                ..d
            },
            SearchPart::TwoStage { pipelined } => SearchParams {
                two_stage: true,
                pipelined,
                ..d
            },
            SearchPart::Pipelined { width } => SearchParams {
                pipelined: true,
                width,
                ..d
            },
            SearchPart::Laser | SearchPart::Clusters => d,
        }
    }
}

/// The strategies a search can run, each a part of its own.
pub enum Chosen {
    Beam(Beam),
    TwoStage(TwoStage),
    Laser(Laser),
    Pipe(Pipe),
    Ivf(Ivf),
    IvfPq(IvfPq),
    /// A filtered query's brute force over its matches (issue #56): never
    /// chosen from the switches, only by a filtered search's plan.
    Pre(crate::search::prefilter::PreFilter),
}

/// The strategy `params` ask for of an index searched by `search` with
/// `codes`. A cluster index and a laser index have one search each; a
/// graph index with codes in RAM runs the one the caller's switches ask for.
pub fn choose(
    search: SearchPart,
    codes: CodesPart,
    params: &SearchParams,
    metric: Metric,
) -> Chosen {
    match search {
        // -L is the clusters probed (paper 002 §6). With codes, the probed
        // members are scored on them and only the best few vectors read
        // (IVF-PQ), unless the caller asks for every member read (rerank
        // factor 0).
        SearchPart::Clusters if codes == CodesPart::IvfPq && params.rerank_factor > 0.0 => {
            Chosen::IvfPq(IvfPq {
                nprobe: params.complexity,
                rerank: (params.rerank_factor as f64 * params.k as f64).ceil() as usize,
            })
        }
        SearchPart::Clusters => Chosen::Ivf(Ivf {
            nprobe: params.complexity,
        }),
        // Records that carry the codes, none in RAM: only the laser search
        // can estimate their neighbours.
        SearchPart::Laser => Chosen::Laser(Laser {
            complexity: params.complexity,
            beam_width: params.beam_width,
            adaptive_beam: params.adaptive_beam,
            dispatch_ratio: params.dispatch_ratio,
        }),
        _ => choose_graph(params, metric),
    }
}

/// The searches of a graph index with codes in RAM, as switched.
fn choose_graph(params: &SearchParams, metric: Metric) -> Chosen {
    if params.two_stage && params.radius.is_none() {
        return Chosen::TwoStage(TwoStage {
            complexity: params.complexity,
            beam_width: params.beam_width,
            refine_ratio: params.refine_ratio,
            pipelined: params.pipelined,
            k: params.k,
            settle: params.settle.then_some(params.settle_wave.max(1)),
            settle_reach: params.settle_reach,
        });
    }
    if params.pipelined && params.radius.is_none() {
        return Chosen::Pipe(Pipe {
            complexity: params.complexity,
            beam_width: params.beam_width,
            width: params.width,
            page_search: params.page_search.then_some(params.prune_ratio),
        });
    }
    Chosen::Beam(Beam {
        complexity: params.complexity,
        beam_width: params.beam_width,
        width: params.width,
        pipeline: params.pipeline,
        page_search: params.page_search.then_some(params.prune_ratio),
        range: params.radius.map(|r| RangeRule {
            radius: internal_distance(metric, r),
            phi: params.range_phi,
            max_window: params.range_max_complexity,
        }),
    })
}

/// Whether the chosen strategy can search this index: a range search needs
/// a graph and codes in RAM, and a layout whose records hold no vectors
/// only the two-stage search (which reads vectors apart). `dir` and
/// `profile` name the index in the error.
pub fn check(
    chosen: &Chosen,
    search: SearchPart,
    layout: &dyn crate::layout::Layout,
    params: &SearchParams,
    dir: &std::path::Path,
    profile: &str,
) -> Result<()> {
    if params.radius.is_some() && matches!(search, SearchPart::Clusters | SearchPart::Laser) {
        let why = match search {
            SearchPart::Clusters => "range search is not built for the cluster index",
            _ => "range search needs codes in RAM",
        };
        return Err(Error::argument(
            format!("search of {} (profile {profile})", dir.display()),
            format!("a k-NN search ({why})"),
            "a radius",
        ));
    }
    if !matches!(chosen, Chosen::TwoStage(_)) && !layout.records_hold_vectors() {
        return Err(Error::argument(
            format!("search of {} (layout {})", dir.display(), layout.name()),
            "the two-stage search (--two-stage true; k-NN only): its graph blocks hold no vectors",
            if params.radius.is_some() {
                "a range search"
            } else {
                "the beam search"
            },
        ));
    }
    Ok(())
}
