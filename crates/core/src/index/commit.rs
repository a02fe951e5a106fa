//! Publishing a built index without ever leaving a half-written one at the
//! user's path: everything is written into a temporary sibling directory,
//! fsynced, and renamed into place; a previous index at that path is moved
//! aside first and deleted only after the new one is in place.

use super::manifest::{FileEntry, MANIFEST};
use crate::error::{Error, FileContext, Result};
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

/// A temporary directory next to `target` that is removed on drop unless
/// committed.
pub struct Staging {
    pub dir: PathBuf,
    target: PathBuf,
    committed: bool,
}

fn sibling(target: &Path, tag: &str) -> PathBuf {
    let name = target
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "index".into());
    // Process id and a per-process counter: two builds in one process (two
    // Python threads, say) never share a staging directory.
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let seq = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    target.with_file_name(format!(".{name}.{tag}-{}-{seq}", std::process::id()))
}

impl Staging {
    /// Checks that `target` is absent, an empty directory, or a stratavec
    /// index (never overwrite anything else), and creates the staging dir.
    pub fn new(target: &Path) -> Result<Staging> {
        if target.exists() {
            let is_index = target.join(MANIFEST).is_file();
            let is_empty_dir = target.is_dir()
                && std::fs::read_dir(target)
                    .at("list", target)?
                    .next()
                    .is_none();
            if !is_index && !is_empty_dir {
                return Err(Error::index(
                    target,
                    "output path",
                    "a new path, an empty directory or an existing stratavec index",
                    "something else (refusing to overwrite it)",
                ));
            }
        }
        let parent = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        std::fs::create_dir_all(&parent).at("create directory", &parent)?;
        let dir = sibling(target, "building");
        if dir.exists() {
            std::fs::remove_dir_all(&dir).at("remove stale staging directory", &dir)?;
        }
        std::fs::create_dir(&dir).at("create staging directory", &dir)?;
        Ok(Staging {
            dir,
            target: target.to_path_buf(),
            committed: false,
        })
    }

    /// fsyncs the staged files and the directory, then swaps it into place.
    pub fn commit(mut self) -> Result<()> {
        for entry in std::fs::read_dir(&self.dir).at("list", &self.dir)? {
            let path = entry.at("list", &self.dir)?.path();
            File::open(&path)
                .and_then(|f| f.sync_all())
                .at("fsync", &path)?;
        }
        File::open(&self.dir)
            .and_then(|f| f.sync_all())
            .at("fsync", &self.dir)?;
        let old = sibling(&self.target, "previous");
        let had_old = self.target.exists();
        if had_old {
            if old.exists() {
                std::fs::remove_dir_all(&old).at("remove", &old)?;
            }
            std::fs::rename(&self.target, &old).at("move previous index aside", &self.target)?;
        }
        if let Err(e) = std::fs::rename(&self.dir, &self.target) {
            if had_old {
                let _ = std::fs::rename(&old, &self.target);
            }
            return Err(Error::file(
                "rename staged index into place",
                &self.target,
                e,
            ));
        }
        self.committed = true;
        if let Some(parent) = self.target.parent().filter(|p| !p.as_os_str().is_empty()) {
            let _ = File::open(parent).and_then(|f| f.sync_all());
        }
        if had_old {
            std::fs::remove_dir_all(&old).at("remove previous index", &old)?;
        }
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Size and sha256 of a file, streamed.
pub fn file_entry(path: &Path) -> Result<FileEntry> {
    let mut f = File::open(path).at("open", path)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut bytes = 0u64;
    loop {
        let k = f.read(&mut buf).at("read", path)?;
        if k == 0 {
            break;
        }
        h.update(&buf[..k]);
        bytes += k as u64;
    }
    let sha256 = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    Ok(FileEntry { bytes, sha256 })
}
