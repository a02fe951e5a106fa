//! `collection.json`: what a collection directory holds — its segments
//! (each a stratavec index whose ids are the collection's global ids), how
//! vectors were assigned to them, and the memory budget they share.

use crate::data::{DType, Metric};
use crate::error::{Error, FileContext, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub const COLLECTION_FILE: &str = "collection.json";
/// k-means partitions: one centroid a segment, f32 `.fbin`.
pub const CENTROIDS_FILE: &str = "centroids.fbin";
pub const COLLECTION_VERSION: u32 = 1;

/// How vectors were assigned to segments.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Partition {
    /// Consecutive rows: every query searches every segment.
    Range,
    /// Balanced k-means over the vectors (as the ivf profile's clusters):
    /// a query may search only the segments whose centroids are nearest
    /// (`probe`).
    Kmeans,
}

impl std::str::FromStr for Partition {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Partition, String> {
        match s {
            "range" => Ok(Partition::Range),
            "kmeans" => Ok(Partition::Kmeans),
            _ => Err(format!("expected range or kmeans, found {s:?}")),
        }
    }
}

impl std::fmt::Display for Partition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Partition::Range => "range",
            Partition::Kmeans => "kmeans",
        })
    }
}

/// One segment: an index directory inside the collection's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SegmentEntry {
    /// Directory name, relative to the collection (`seg-0000`, ...).
    pub dir: String,
    pub n: usize,
    /// This segment's share of the collection's budget (bytes), in
    /// proportion to its vectors; the shares add up to the budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_budget: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CollectionManifest {
    pub format: String,
    pub format_version: u32,
    pub n: usize,
    pub dim: usize,
    pub metric: Metric,
    pub dtype: DType,
    /// The segments' profile (all segments share it).
    pub profile: String,
    pub partition: Partition,
    /// The total memory budget (bytes) the segments were built for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_budget: Option<u64>,
    pub segments: Vec<SegmentEntry>,
}

/// The name of segment `i`'s directory.
pub fn segment_dir_name(i: usize) -> String {
    format!("seg-{i:04}")
}

/// Splits `total` bytes over segments in proportion to their vectors, the
/// last taking what rounding leaves, so the shares add up to `total`.
pub fn budget_shares(total: u64, sizes: &[usize]) -> Vec<u64> {
    let n: u128 = sizes.iter().map(|&s| s as u128).sum::<u128>().max(1);
    let mut shares: Vec<u64> = sizes
        .iter()
        .map(|&s| (total as u128 * s as u128 / n) as u64)
        .collect();
    let given: u64 = shares.iter().sum();
    if let Some(last) = shares.last_mut() {
        *last += total - given;
    }
    shares
}

/// Whether `dir` holds a collection (rather than an index).
pub fn is_collection(dir: &Path) -> bool {
    dir.join(COLLECTION_FILE).is_file()
}

impl CollectionManifest {
    pub fn read(dir: &Path) -> Result<CollectionManifest> {
        let path = dir.join(COLLECTION_FILE);
        if !path.is_file() {
            return Err(Error::index(
                &path,
                "manifest",
                "a stratavec collection (collection.json)",
                "no collection.json: not a collection, or a build that did not finish",
            ));
        }
        let text = std::fs::read_to_string(&path).at("read", &path)?;
        let value: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| Error::index(&path, "JSON", "a valid collection manifest", e))?;
        crate::index::manifest::check_version(&path, &value, COLLECTION_VERSION)?;
        let m: CollectionManifest = serde_json::from_value(value)
            .map_err(|e| Error::index(&path, "fields", "a valid collection manifest", e))?;
        m.check(&path)?;
        Ok(m)
    }

    /// The sums and names a manifest must keep consistent.
    fn check(&self, path: &Path) -> Result<()> {
        if self.segments.is_empty() {
            return Err(Error::index(path, "segments", "at least one", "none"));
        }
        let sum: usize = self.segments.iter().map(|s| s.n).sum();
        if sum != self.n {
            return Err(Error::index(
                path,
                "segments[].n",
                format!("vectors adding up to n = {}", self.n),
                sum,
            ));
        }
        for (i, s) in self.segments.iter().enumerate() {
            if s.dir.contains('/') || s.dir.contains("..") || s.dir.is_empty() {
                return Err(Error::index(
                    path,
                    format!("segments[{i}].dir"),
                    "a directory name inside the collection",
                    &s.dir,
                ));
            }
        }
        Ok(())
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("collection manifest serialises") + "\n"
    }

    /// Segment `i`'s index directory.
    pub fn segment_path(&self, dir: &Path, i: usize) -> PathBuf {
        dir.join(&self.segments[i].dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn budget_shares_add_up_and_follow_sizes(
            total in 0u64..1u64 << 40,
            sizes in prop::collection::vec(1usize..1_000_000, 1..16),
        ) {
            let shares = budget_shares(total, &sizes);
            prop_assert_eq!(shares.iter().sum::<u64>(), total);
            let n: usize = sizes.iter().sum();
            for (s, &size) in shares.iter().zip(&sizes).take(sizes.len() - 1) {
                let exact = total as f64 * size as f64 / n as f64;
                prop_assert!((*s as f64 - exact).abs() <= 1.0);
            }
        }
    }
}
