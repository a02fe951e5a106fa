//! The layouts an index can be written in, by name, and the one place a
//! pages file's header is turned into the layout that reads it.

use super::header::Expected;
use super::{
    csr, ivf, position_map, BlockedLayout, CoupledLayout, CsrLayout, IvfLayout, LaserLayout,
    Layout, PagesHeader, ReplicatedLayout, SeparatedLayout,
};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LayoutKind {
    /// DiskANN: records in id order, none straddling a page.
    Coupled,
    /// Starling: packed records shuffled into blocks (needs a shuffle).
    Blocked,
    /// Gorgeous §3.4: one block per node with its neighbours' lists.
    Replicated,
    /// Gorgeous §3.4 Figure 7(b): graph blocks, then vector pages.
    Separated,
    /// AlayaLaser §3.2: coupled records that carry their neighbours'
    /// fast-scan codes.
    Laser,
    /// Paper 002 §5: packed records back to back, an offsets array; for
    /// byte-granular tiers.
    Csr,
    /// Paper 002 §6: vectors stored once, clusters as groups and address
    /// lists (the ivf profile; not a graph).
    Ivf,
}

pub const KINDS: &[(LayoutKind, &str)] = &[
    (LayoutKind::Coupled, "coupled"),
    (LayoutKind::Blocked, "blocked"),
    (LayoutKind::Replicated, "replicated"),
    (LayoutKind::Separated, "separated"),
    (LayoutKind::Laser, "laser"),
    (LayoutKind::Csr, "csr"),
    (LayoutKind::Ivf, "ivf"),
];

impl LayoutKind {
    pub fn name(self) -> &'static str {
        KINDS.iter().find(|k| k.0 == self).expect("every kind").1
    }

    /// The layout records get: `layout` where given, else what the
    /// shuffle implies (id order without one, blocks with one).
    pub fn implied(layout: Option<LayoutKind>, shuffle: super::shuffle::Shuffle) -> LayoutKind {
        match (layout, shuffle) {
            (Some(kind), _) => kind,
            (None, super::shuffle::Shuffle::None) => LayoutKind::Coupled,
            (None, _) => LayoutKind::Blocked,
        }
    }

    /// Whether a page read brings whole node records, adjacency included:
    /// the layouts OR(G) describes (OctopusANN §3). Replicated blocks
    /// (Gorgeous), CSR records and clusters are read for other things.
    pub fn reads_graph_pages(self) -> bool {
        matches!(
            self,
            LayoutKind::Coupled | LayoutKind::Blocked | LayoutKind::Laser
        )
    }

    /// Whether the layout keeps one copy of each list (the coupled and
    /// blocked layouts) rather than replicating lists into other blocks.
    pub fn replicates(self) -> bool {
        matches!(self, LayoutKind::Replicated | LayoutKind::Separated)
    }
}

impl std::fmt::Display for LayoutKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for LayoutKind {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        KINDS.iter().find(|k| k.1 == s).map(|k| k.0).ok_or_else(|| {
            let names: Vec<&str> = KINDS.iter().map(|k| k.1).collect();
            format!("expected one of {}, found {s:?}", names.join(", "))
        })
    }
}

/// The layout `header` describes, once it agrees with what the manifest
/// says the pages file holds (`want`): nothing is sized from the header
/// before that. `file(name)` is the path of another file of the index,
/// checked against the manifest: the blocked layout's id → block map
/// (`map.bin`), the CSR layout's offsets, the IVF layout's clusters; read
/// only for those.
pub fn from_header(
    header: &PagesHeader,
    pages_path: &Path,
    want: &Expected,
    file: impl FnOnce(&str) -> Result<std::path::PathBuf>,
) -> Result<Box<dyn Layout>> {
    let kind: LayoutKind = header
        .layout
        .parse()
        .map_err(|e: String| Error::index(pages_path, "layout", "a known layout", e))?;
    header.check(pages_path, want)?;
    let bad = |e: String| Error::index(pages_path, "header", format!("a {kind} layout"), e);
    let layout: Box<dyn Layout> = match kind {
        LayoutKind::Coupled => Box::new(CoupledLayout::from_header(header).map_err(bad)?),
        LayoutKind::Blocked => {
            // `check` tied the page count to the file's size.
            let blocks = (header.pages - 1) as usize;
            let block_of = position_map::read(&file(position_map::MAP_FILE)?, want.n, blocks)?;
            Box::new(BlockedLayout::new(
                header.page_size as usize,
                header.dim as usize,
                header.dtype,
                header.max_degree as usize,
                block_of,
                blocks,
            ))
        }
        LayoutKind::Replicated => {
            Box::new(ReplicatedLayout::from_header(header).map_err(|e| bad(e.to_string()))?)
        }
        LayoutKind::Separated => {
            Box::new(SeparatedLayout::from_header(header).map_err(|e| bad(e.to_string()))?)
        }
        LayoutKind::Laser => Box::new(LaserLayout::from_header(header).map_err(bad)?),
        LayoutKind::Csr => Box::new(CsrLayout::open(header, &file(csr::OFFSETS_FILE)?)?),
        LayoutKind::Ivf => Box::new(IvfLayout::open(header, &file(ivf::CLUSTERS_FILE)?)?),
    };
    if layout.file_bytes() != want.file_bytes {
        // The CSR and IVF layouts' sizes come from their other file too.
        let from = match kind {
            LayoutKind::Csr => format!("the header and {}", csr::OFFSETS_FILE),
            LayoutKind::Ivf => format!("the header and {}", ivf::CLUSTERS_FILE),
            _ => "the header".into(),
        };
        return Err(Error::index(
            pages_path,
            "file size",
            format!(
                "{} bytes (the {kind} layout of {from})",
                layout.file_bytes()
            ),
            format!("{} bytes (manifest)", want.file_bytes),
        ));
    }
    Ok(layout)
}
