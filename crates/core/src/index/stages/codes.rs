//! The codes stage (the plan's codes part): PQ trained and every vector
//! encoded, after the graph (the memory planner may size them by the graph
//! they must leave room for); or, for records that carry their neighbours'
//! codes, the RaBitQ rotation and every vector's code (AlayaLaser §3.2–3.3,
//! nothing per vector in RAM).

use super::{stopped_at, Build};
use crate::error::Result;
use crate::plan::codes::EXRABITQ_FILE;
use crate::plan::codes::PQ_FILE;
use crate::plan::CodesPart;
use crate::quant::exrabitq::ExRabitQ;
use crate::quant::pq::{PqCodebook, PqQuantizer, PqTrainParams};
use crate::quant::pq_file;
use crate::quant::record_codes::{RecordCodes, RECORD_CODES_FILE};
use std::time::Instant;

/// What the codes stage made.
pub(super) enum Codes {
    /// The codebook as trained (what codes.bin holds) and the quantizer
    /// (centroids transposed) that ranks by it.
    Pq(PqCodebook, PqQuantizer),
    /// The record codes' model and each vector's codes and factors.
    Records(RecordCodes, Vec<u8>, Vec<[f32; 3]>),
    None,
}

impl Codes {
    /// The PQ codes, where the plan has them (the shuffle's placement and
    /// the cache ranks estimate with them).
    pub fn pq(&self) -> Option<&PqQuantizer> {
        match self {
            Codes::Pq(_, q) => Some(q),
            _ => None,
        }
    }
}

pub(super) fn train(b: &mut Build) -> Result<Codes> {
    match b.plan.codes {
        CodesPart::Pq | CodesPart::IvfPq | CodesPart::ExRabitq => train_pq(b),
        CodesPart::Records => train_records(b),
        CodesPart::None => Ok(Codes::None),
    }
}

fn train_pq(b: &mut Build) -> Result<Codes> {
    b.checkpoint("pq")?;
    if let Some(codebook) = b.given.codebook.take() {
        return encode_with(b, codebook);
    }
    let t = Instant::now();
    b.progress.stage("train PQ", 0);
    let p = &b.params;
    let pq_params = PqTrainParams {
        m: p.pq_bytes,
        sample: p.pq_sample,
        iters: p.pq_iters,
        seed: p.seed,
    };
    let (data, dim, progress) = (b.data, b.dim, b.progress);
    let stop = || progress.cancelled();
    let trained = b.pool.install(|| {
        let cb = PqCodebook::train_until(data, dim, &pq_params, &stop)?;
        let codes = cb.encode_all_until(data, &stop)?;
        Some((cb, codes))
    });
    let (codebook, codes) = trained.ok_or_else(|| stopped_at(b.dir))?;
    Ok(pq_done(b, t, codebook, codes))
}

/// Ends the PQ stage: its time, and the codes with their quantizer.
fn pq_done(b: &mut Build, t: Instant, codebook: PqCodebook, codes: Vec<u8>) -> Codes {
    b.progress.finish();
    b.stage("pq", t, 0.0);
    let metric = b.params.metric;
    Codes::Pq(codebook.clone(), PqQuantizer::new(codebook, codes, metric))
}

/// Every vector encoded with a codebook the build was given (a merge's).
fn encode_with(b: &mut Build, codebook: PqCodebook) -> Result<Codes> {
    let t = Instant::now();
    b.progress.stage("encode PQ", 0);
    let (data, progress) = (b.data, b.progress);
    let stop = || progress.cancelled();
    let codes = b.pool.install(|| codebook.encode_all_until(data, &stop));
    let codes = codes.ok_or_else(|| stopped_at(b.dir))?;
    Ok(pq_done(b, t, codebook, codes))
}

fn train_records(b: &mut Build) -> Result<Codes> {
    let code_dim = b.params.code_dim.expect("fitted");
    b.checkpoint("codes")?;
    let (data, dim, metric, seed) = (b.data, b.dim, b.params.metric, b.params.seed);
    let (rc, (codes, factors)) = nested_stage(b, "train record codes", "codes", || {
        let rc = RecordCodes::train(data, dim, code_dim, metric, seed);
        let encoded = rc.encode_all(data, dim);
        (rc, encoded)
    });
    Ok(Codes::Records(rc, codes, factors))
}

/// Runs `work` on the build's threads as a stage nested in another
/// (`name` in the report, `label` on the progress line).
fn nested_stage<T: Send>(
    b: &mut Build,
    label: &str,
    name: &str,
    work: impl FnOnce() -> T + Send,
) -> T {
    let t = Instant::now();
    b.progress.stage(label, 0);
    let out = b.pool.install(work);
    b.progress.finish();
    b.nested += b.stage(name, t, 0.0);
    out
}

/// The record codes' model (`rabitq.bin`), where the plan has them.
pub(super) fn write_records(b: &mut Build, codes: &Codes) -> Result<()> {
    match codes {
        Codes::Records(rc, _, _) => b.write_file(RECORD_CODES_FILE, |w| rc.write(w)),
        _ => Ok(()),
    }
}

/// The PQ codebook and codes (`codes.bin`), where the plan has them, and
/// the extended-RaBitQ codes the search estimates with instead
/// (`exrabitq.bin`), where it asks for them.
pub(super) fn write_pq(b: &mut Build, codes: &Codes) -> Result<()> {
    if let Codes::Pq(codebook, pq) = codes {
        b.write_file(PQ_FILE, |w| pq_file::write(w, codebook, &pq.codes))?;
    }
    if b.plan.codes != CodesPart::ExRabitq {
        return Ok(());
    }
    let bits = b.params.exrabitq_bits.expect("checked");
    let (data, dim, metric, seed) = (b.data, b.dim, b.params.metric, b.params.seed);
    let centres = b.params.exrabitq_centres;
    let (ex, why) = nested_stage(b, "encode extended RaBitQ", "exrabitq", || match centres {
        Some(k) => (
            ExRabitQ::train_with(data, dim, bits, metric, seed, k),
            String::new(),
        ),
        None => ExRabitQ::train_choosing(data, dim, bits, metric, seed),
    });
    if !why.is_empty() {
        b.choose("exrabitq_centres", why);
    }
    b.write_file(EXRABITQ_FILE, |w| ex.write(w))
}
