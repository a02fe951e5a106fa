//! Where a query starts (the fourth of the five questions).

use super::files::IndexFiles;
use crate::entry::clusters::ENTRY_FILE;
use crate::entry::{ClusterEntries, EntryPoints, NavGraph};
use crate::error::Result;
use serde::{Deserialize, Serialize};

/// The navigation graph's file (`entry::nav_graph`).
pub const NAV_FILE: &str = "nav.bin";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryPart {
    /// The graph's medoid (DiskANN).
    Medoid,
    /// A search of an in-memory graph over a sample (Starling §4.3,
    /// PipeANN's `mem_L`; `nav.bin`).
    NavGraph,
    /// The vectors nearest k-means centres, the nearest few of them a
    /// query (AlayaLaser §4.1; `entry.bin`).
    Clusters,
}

impl EntryPart {
    /// Reads the part, if it holds anything (the medoid is in the pages
    /// header). The memory planner decides after whether it stays.
    pub fn open(self, files: &IndexFiles) -> Result<Option<Box<dyn EntryPoints>>> {
        let m = files.manifest;
        Ok(match self {
            EntryPart::Medoid => None,
            EntryPart::NavGraph => Some(Box::new(NavGraph::read(
                &files.path(NAV_FILE)?,
                m.n,
                m.dim,
                m.metric,
            )?)),
            EntryPart::Clusters => Some(Box::new(ClusterEntries::read(
                &files.path(ENTRY_FILE)?,
                m.n,
                m.dim,
                m.metric,
            )?)),
        })
    }
}
