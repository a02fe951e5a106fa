//! The files of an index directory, as its manifest lists them: a part
//! asks for its own file by name and gets its path only if the manifest
//! lists it and its size on disk is the size recorded.

use crate::error::{Error, Result};
use crate::index::manifest::{Manifest, MANIFEST};
use std::path::{Path, PathBuf};

pub struct IndexFiles<'a> {
    pub dir: &'a Path,
    pub manifest: &'a Manifest,
}

impl IndexFiles<'_> {
    /// The path of `name`, checked against the manifest's entry for it.
    pub fn path(&self, name: &str) -> Result<PathBuf> {
        let path = self.dir.join(name);
        let entry = self.manifest.files.get(name).ok_or_else(|| {
            Error::index(&self.dir.join(MANIFEST), "files", name, "missing entry")
        })?;
        let meta = std::fs::metadata(&path).map_err(|e| {
            Error::index(
                &path,
                "file",
                format!("{} bytes", entry.bytes),
                format!("cannot stat: {e}"),
            )
        })?;
        if meta.len() != entry.bytes {
            return Err(Error::index(
                &path,
                "size",
                format!("{} bytes (manifest)", entry.bytes),
                format!("{} bytes (truncated or replaced)", meta.len()),
            ));
        }
        Ok(path)
    }
}
