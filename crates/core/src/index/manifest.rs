//! `manifest.json`: what an index directory holds and how it was built.
//! Written last, so a directory without one is not an index. Deterministic
//! (no timings): two builds of the same data with the same parameters and one
//! thread produce byte-identical manifests; timings go to `build_report.json`.

use crate::data::{DType, Metric};
use crate::error::{Error, FileContext, Result};
use crate::index::build::BuildParams;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// Bumped whenever a file's layout changes; an index from a newer version is
/// refused, older versions keep opening.
pub const FORMAT_VERSION: u32 = 1;

/// The revision of the build's own decisions: bumped whenever the same
/// parameters on the same data start to build a different index (a planner
/// rule, a fit, a cache rank), though every file still reads as before.
/// `stratavec bench` reuses a cached index only at this revision, so a
/// table is never measured on an index that today's build would not make.
/// 0: indexes from before it was recorded. 1: the navigation graph kept by
/// its search-stage cost (`memory::nav_plan`, Gorgeous §4.1 ②).
pub const BUILD_REVISION: u32 = 1;
pub const MANIFEST: &str = "manifest.json";

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct FileEntry {
    pub bytes: u64,
    pub sha256: String,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Manifest {
    pub format_version: u32,
    /// [`BUILD_REVISION`] of the build that made this index.
    #[serde(default)]
    pub build_revision: u32,
    pub profile: String,
    pub dtype: DType,
    pub dim: usize,
    pub n: usize,
    pub metric: Metric,
    /// Every build parameter, as used: given, or fitted to the data where
    /// left unset (`chosen` says which and why).
    pub build: BuildParams,
    pub layout: String,
    pub page_size: usize,
    pub quantizer: String,
    pub medoid: u32,
    pub graph_mean_degree: f64,
    pub files: BTreeMap<String, FileEntry>,
    /// The parts the build wrote (`plan::Plan`); absent in indexes built
    /// before it was recorded, whose plan `plan::plan_of` works out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<crate::plan::Plan>,
    /// Build parameters chosen to fit the data because the caller left them
    /// unset (`index::fit`), with why; absent when the defaults fit.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub chosen: BTreeMap<String, String>,
    /// The last update-log record this generation holds (`update::wal`):
    /// 0 for a build; a merge's new log starts after it (issue #55).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub update_seq: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// Refuses a manifest (`value`, read from `path`) without a
/// `format_version`, or with one newer than `supported`, before its other
/// fields are parsed: a newer file gets "upgrade", not a parse error about
/// a field this version does not know.
pub fn check_version(path: &Path, value: &serde_json::Value, supported: u32) -> Result<()> {
    match value.get("format_version").and_then(|v| v.as_u64()) {
        Some(v) if v > supported as u64 => Err(Error::index(
            path,
            "format_version",
            format!("<= {supported} (this stratavec)"),
            format!("{v}: written by a newer stratavec; upgrade to open it"),
        )),
        Some(_) => Ok(()),
        None => Err(Error::index(
            path,
            "format_version",
            "an integer",
            "missing",
        )),
    }
}

/// Refuses a manifest (read from `path`) whose page size, dimension or
/// vector count no index can have, before anything sizes a buffer from
/// them: a page size near 4 GiB would size 64 reader slots of it at open.
/// The same ranges the pages header is held to (`layout::header`).
pub fn check_sizes(path: &Path, m: &Manifest) -> Result<()> {
    use crate::layout::header::{self, MAX_DIM, MAX_PAGE_SIZE, MIN_PAGE_SIZE};
    if !header::page_size_ok(m.page_size) {
        return Err(Error::index(
            path,
            "page_size",
            format!("a power of two in {MIN_PAGE_SIZE}..={MAX_PAGE_SIZE}"),
            m.page_size,
        ));
    }
    if !header::n_ok(m.n as u64) {
        return Err(Error::index(path, "n", "1..4294967295", m.n));
    }
    if !header::dim_ok(m.dim) {
        return Err(Error::index(path, "dim", format!("1..={MAX_DIM}"), m.dim));
    }
    Ok(())
}

impl Manifest {
    pub fn read(dir: &Path) -> Result<Manifest> {
        if !dir.is_dir() {
            return Err(Error::index(
                dir,
                "index directory",
                "an existing directory",
                "nothing there",
            ));
        }
        let path = dir.join(MANIFEST);
        if !path.is_file() {
            return Err(Error::index(
                &path,
                "manifest",
                "a stratavec index (manifest.json)",
                "no manifest.json: not an index, or a build that did not finish",
            ));
        }
        let text = std::fs::read_to_string(&path).at("read", &path)?;
        // Check the version before the rest, so a newer index gets the right
        // message rather than a parse error about a field we do not know.
        let value: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| Error::index(&path, "JSON", "a valid manifest", e))?;
        check_version(&path, &value, FORMAT_VERSION)?;
        if let Some(v) = value.pointer("/plan/version").and_then(|v| v.as_u64()) {
            if v > crate::plan::PLAN_VERSION as u64 {
                return Err(Error::index(
                    &path,
                    "plan.version",
                    format!("<= {} (this stratavec)", crate::plan::PLAN_VERSION),
                    format!("{v}: written by a newer stratavec; upgrade to open it"),
                ));
            }
        }
        let m: Manifest = serde_json::from_value(value)
            .map_err(|e| Error::index(&path, "manifest fields", "a valid manifest", e))?;
        check_sizes(&path, &m)?;
        Ok(m)
    }

    /// Whether this index is the one `asked` (a build request, with the
    /// parameters it leaves unset marked so) would build on data of
    /// `dtype`: what a bench asks before it reuses a cached index. What
    /// the request leaves unset is compared as today's fit chooses it for
    /// this data, not as the old index has it; what the build chose after
    /// the graph (the planner's PQ bytes, the measured refinement) and,
    /// for `auto`, every part the planner chose (`chosen`) count as asked.
    /// The build revision is the caller's to check.
    pub fn built_as_asked(&self, asked: &BuildParams, dtype: DType) -> Result<bool> {
        let (mut fitted, _) = crate::index::fit::fit(asked, self.n, self.dim, dtype)?;
        fitted.unset.pq_bytes = asked.unset.pq_bytes;
        fitted.unset.pipelined_refinement = asked.unset.pipelined_refinement;
        if asked.profile == crate::autoplan::AUTO && self.chosen.contains_key("profile") {
            fitted = fitted
                .with_profile(&self.build.profile)
                .with_chosen(&self.build, self.chosen.keys());
        }
        Ok(self.build.builds_same_index(&fitted))
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("manifest serialises") + "\n"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A manifest whose sizes no index has is refused naming manifest.json,
    /// the field and both values, before anything sizes a buffer from it.
    #[test]
    fn read_refuses_sizes_no_index_has() {
        let dir = tempfile::tempdir().unwrap();
        let good = Manifest {
            format_version: FORMAT_VERSION,
            build_revision: BUILD_REVISION,
            profile: "diskann".into(),
            dtype: DType::F32,
            dim: 8,
            n: 100,
            metric: Metric::L2,
            build: Default::default(),
            layout: "coupled".into(),
            page_size: 4096,
            quantizer: "pq".into(),
            medoid: 0,
            graph_mean_degree: 4.0,
            plan: None,
            files: BTreeMap::new(),
            chosen: BTreeMap::new(),
            update_seq: 0,
        };
        let read_with = |m: &Manifest| {
            std::fs::write(dir.path().join(MANIFEST), m.to_json()).unwrap();
            Manifest::read(dir.path()).map_err(|e| e.to_string())
        };
        assert_eq!(read_with(&good).unwrap(), good);
        for (m, want) in [
            (
                Manifest {
                    page_size: 4_294_963_200,
                    ..good.clone()
                },
                "page_size: expected a power of two in 4096..=16384, found 4294963200",
            ),
            (
                Manifest {
                    page_size: 0,
                    ..good.clone()
                },
                "page_size",
            ),
            (
                Manifest {
                    n: 0,
                    ..good.clone()
                },
                "n: expected 1..4294967295, found 0",
            ),
            (
                Manifest {
                    n: usize::MAX,
                    ..good.clone()
                },
                "n:",
            ),
            (
                Manifest {
                    dim: 0,
                    ..good.clone()
                },
                "dim: expected 1..=1048576, found 0",
            ),
        ] {
            let e = read_with(&m).unwrap_err();
            assert!(e.contains("manifest.json") && e.contains(want), "{e}");
        }
    }
}
