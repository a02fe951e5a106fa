//! How distances are estimated before a record is read (the third of the
//! five questions): the part that holds codes in RAM, or none.

use super::files::IndexFiles;
use crate::error::FileContext;
use crate::error::Result;
use crate::layout::ivf_members::{ClusterMembers, MEMBERS_FILE};
use crate::layout::Layout;
use crate::quant::exrabitq::ExRabitQ;
use crate::quant::record_codes::{RecordCodes, RECORD_CODES_FILE};
use crate::quant::record_scorer::RecordScorer;
use crate::quant::{pq_file, NoCodes, Quantizer};
use serde::{Deserialize, Serialize};

/// PQ's codes file (`quant::pq_file`).
pub const PQ_FILE: &str = "codes.bin";

/// Extended RaBitQ's rotation, factors and codes (`quant::exrabitq`).
pub const EXRABITQ_FILE: &str = "exrabitq.bin";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CodesPart {
    /// PQ codes of every vector in RAM (DiskANN; `codes.bin`).
    Pq,
    /// Each record carries its neighbours' RaBitQ codes; RAM holds only
    /// the per-index rotation and factors (AlayaLaser §3.2; `rabitq.bin`).
    Records,
    /// PQ codes and each cluster's members in RAM, so a cluster index
    /// scores its probed members before it reads (IVF-PQ; `codes.bin`,
    /// `members.bin`).
    IvfPq,
    /// No estimates: a cluster index that reads every probed member.
    None,
    /// Extended-RaBitQ codes of every vector in RAM, estimates with error
    /// bounds (`exrabitq.bin`); PQ's stay on disk for merges
    /// (`codes.bin`).
    ExRabitq,
}

/// The codes part of an open index.
pub struct OpenedCodes {
    pub quantizer: Box<dyn Quantizer>,
    pub record_codes: Option<RecordScorer>,
    pub members: Option<ClusterMembers>,
}

impl OpenedCodes {
    /// Bytes the codes hold in RAM, and the cluster members' apart.
    pub fn resident_bytes(&self) -> (usize, usize) {
        let codes = self.quantizer.resident_bytes()
            + self.record_codes.as_ref().map_or(0, |c| c.resident_bytes());
        (
            codes,
            self.members.as_ref().map_or(0, |m| m.resident_bytes()),
        )
    }
}

impl CodesPart {
    /// Whether searches estimate from codes of every vector held in RAM
    /// (what range search and the beam search need).
    pub fn in_ram(self) -> bool {
        matches!(self, CodesPart::Pq | CodesPart::IvfPq | CodesPart::ExRabitq)
    }

    /// Reads this part's files for the index `files` describes.
    pub fn open(self, files: &IndexFiles, layout: &dyn Layout) -> Result<OpenedCodes> {
        let m = files.manifest;
        let pq = || -> Result<Box<dyn Quantizer>> {
            let (codebook, codes) = pq_file::read(&files.path(PQ_FILE)?, m.n, m.dim)?;
            Ok(Box::new(crate::quant::PqQuantizer::new(
                codebook, codes, m.metric,
            )))
        };
        let mut opened = OpenedCodes {
            quantizer: Box::new(NoCodes),
            record_codes: None,
            members: None,
        };
        match self {
            CodesPart::Pq => opened.quantizer = pq()?,
            CodesPart::Records => {
                let rc = RecordCodes::read(&files.path(RECORD_CODES_FILE)?, m.dim, m.metric)?;
                opened.record_codes = Some(RecordScorer::new(&rc));
            }
            CodesPart::IvfPq => {
                opened.quantizer = pq()?;
                let clusters = layout.clusters().map_or(0, |c| c.clusters.len());
                opened.members = Some(ClusterMembers::read(
                    &files.path(MEMBERS_FILE)?,
                    m.n,
                    clusters,
                )?);
            }
            CodesPart::ExRabitq => {
                let path = files.path(EXRABITQ_FILE)?;
                let mut r = std::io::BufReader::new(std::fs::File::open(&path).at("open", &path)?);
                let ex = ExRabitQ::read(&mut r, m.n, m.dim, m.metric).at("read", &path)?;
                opened.quantizer = Box::new(ex);
            }
            CodesPart::None => {}
        }
        Ok(opened)
    }
}
