//! Publishing a built index without ever leaving a half-written one at the
//! user's path: everything is written into a temporary sibling directory,
//! fsynced, and switched into place. A previous index at that path is
//! swapped out in one step (`renameat2(RENAME_EXCHANGE)`), so the path
//! never names nothing, and deleted after; handles that have it open keep
//! reading it (they hold its files open: `stratavec_io::Pinned`), and an
//! open racing the switch starts again on the new one (`open_consistent`).
//! Where the filesystem cannot exchange, the previous index is moved aside
//! first and the new one renamed in, as before (#55).

use super::manifest::{FileEntry, MANIFEST};
use crate::error::{Error, FileContext, Result};
use crate::progress::Stop;
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
    /// The writer lock of an index already at `target`, held until the new
    /// one is published: a build replaces the index and its update log,
    /// so it waits for no writer and no writer starts under it (#55).
    _lock: Option<crate::update::lock::WriterLock>,
}

fn target_name(target: &Path) -> String {
    target
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "index".into())
}

fn sibling(target: &Path, tag: &str) -> PathBuf {
    let name = target_name(target);
    // Process id and a per-process counter: two builds in one process (two
    // Python threads, say) never share a staging directory.
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let seq = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    target.with_file_name(format!(".{name}.{tag}-{}-{seq}", std::process::id()))
}

impl Staging {
    /// Checks that `target` is absent, an empty directory, or a stratavec
    /// index or collection (never overwrite anything else), and creates the
    /// staging dir.
    pub fn new(target: &Path) -> Result<Staging> {
        remove_stale(target);
        check_target(target)?;
        let lock = match target.join(MANIFEST).is_file() {
            true => Some(crate::update::lock::WriterLock::acquire(
                target,
                "rebuild it",
            )?),
            false => None,
        };
        Staging::with_lock(target, lock)
    }

    /// [`Staging::new`] for a caller that holds `target`'s writer lock
    /// itself (a merge: `update::live`).
    pub(crate) fn new_held(target: &Path) -> Result<Staging> {
        remove_stale(target);
        check_target(target)?;
        Staging::with_lock(target, None)
    }

    fn with_lock(target: &Path, lock: Option<crate::update::lock::WriterLock>) -> Result<Staging> {
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
            _lock: lock,
        })
    }

    /// fsyncs the staged files and the directory, then swaps it into place.
    pub fn commit(mut self) -> Result<()> {
        publish(&self.dir, &self.target)?;
        self.committed = true;
        Ok(())
    }
}

/// Refuses a `target` that is not absent, an empty directory, or a
/// stratavec index or collection: a build never overwrites anything else.
pub fn check_target(target: &Path) -> Result<()> {
    if !target.exists() {
        return Ok(());
    }
    let ours =
        target.join(MANIFEST).is_file() || crate::collection::manifest::is_collection(target);
    let is_empty_dir = target.is_dir()
        && std::fs::read_dir(target)
            .at("list", target)?
            .next()
            .is_none();
    if ours || is_empty_dir {
        return Ok(());
    }
    Err(Error::index(
        target,
        "output path",
        "a new path, an empty directory or an existing stratavec index or collection",
        "something else (refusing to overwrite it)",
    ))
}

/// fsyncs `staged` (its files and directories, one level down, and itself),
/// then swaps it into place at `target`: a previous index or collection
/// there is exchanged with it in one step and then deleted; without an
/// exchange, moved aside and deleted once the new one is in place (put back
/// if the rename fails).
pub fn publish(staged: &Path, target: &Path) -> Result<()> {
    for entry in std::fs::read_dir(staged).at("list", staged)? {
        let path = entry.at("list", staged)?.path();
        File::open(&path)
            .and_then(|f| f.sync_all())
            .at("fsync", &path)?;
    }
    File::open(staged)
        .and_then(|f| f.sync_all())
        .at("fsync", staged)?;
    super::interrupt::test_pause("publish");
    if target.exists()
        && stratavec_io::exchange(staged, target).at("switch staged index into place", target)?
    {
        sync_parent(target);
        super::interrupt::test_pause("published");
        // `staged` now names the previous index. Left behind by a kill here,
        // it is a dead build's staging directory: the next build removes it.
        std::fs::remove_dir_all(staged).at("remove previous index", staged)?;
        return Ok(());
    }
    let old = sibling(target, "previous");
    let had_old = target.exists();
    if had_old {
        if old.exists() {
            std::fs::remove_dir_all(&old).at("remove", &old)?;
        }
        std::fs::rename(target, &old).at("move previous index aside", target)?;
    }
    if let Err(e) = std::fs::rename(staged, target) {
        if had_old {
            let _ = std::fs::rename(&old, target);
        }
        return Err(Error::file("rename staged index into place", target, e));
    }
    sync_parent(target);
    if had_old {
        std::fs::remove_dir_all(&old).at("remove previous index", &old)?;
    }
    Ok(())
}

/// Makes the renames of `target`'s directory entry durable.
fn sync_parent(target: &Path) {
    if let Some(parent) = target.parent().filter(|p| !p.as_os_str().is_empty()) {
        let _ = File::open(parent).and_then(|f| f.sync_all());
    }
}

/// Opens what `dir` names with `open`, again if the directory was switched
/// to another generation while it ran (a rebuild or merge published under
/// it: its files could come from two generations, or vanish as the old one
/// is deleted). The same directory inode before and after means every file
/// came from one generation: a published directory is never changed in
/// place, only replaced. A path missing for a moment (the two-rename
/// fallback) is tried a few more times before its error stands.
pub fn open_consistent<T>(dir: &Path, open: impl Fn(&Path) -> Result<T>) -> Result<T> {
    use std::os::unix::fs::MetadataExt;
    let inode = |d: &Path| std::fs::metadata(d).ok().map(|m| (m.dev(), m.ino()));
    let mut last = None;
    for attempt in 0..64u32 {
        let before = inode(dir);
        let result = open(dir);
        let after = inode(dir);
        match (before, after) {
            (Some(b), Some(a)) if a == b => return result,
            (None, None) if attempt >= 3 => return result,
            _ => {}
        }
        last = Some(result);
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    last.expect("at least one attempt")
}

/// A file staged beside `target` for the length of a build (a table
/// imported as an `.fbin`): `.NAME.TAG-PID-N.EXT`, removed on drop, and by a
/// later build of `target` if this process was killed first.
pub struct StagedFile {
    pub path: PathBuf,
}

impl StagedFile {
    pub fn new(target: &Path, tag: &str, ext: &str) -> Result<StagedFile> {
        remove_stale(target);
        let mut path = sibling(target, tag).into_os_string();
        path.push(format!(".{ext}"));
        let path = PathBuf::from(path);
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).at("create directory", parent)?;
        }
        Ok(StagedFile { path })
    }
}

impl Drop for StagedFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Whether a process with this id exists. Errs towards "alive" (a zombie,
/// or an unrelated process that reused the id, keeps a stale directory a
/// while longer), never the other way. Linux, like the rest of the engine.
fn process_alive(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}

/// The process id in the name of a staging or set-aside sibling of
/// `target` (`.NAME.TAG-PID-N`), if `file` is one with `tag`.
fn sibling_pid(file: &str, name: &str, tag: &str) -> Option<u32> {
    let rest = file.strip_prefix(&format!(".{name}.{tag}-"))?;
    let (pid, seq) = rest.split_once('-')?;
    // A staged file (`StagedFile`) ends in its extension.
    let seq = seq.split_once('.').map_or(seq, |(seq, _ext)| seq);
    seq.parse::<u64>().ok()?;
    pid.parse().ok()
}

/// Cleans up after builds of `target` by processes that no longer exist
/// (killed, or a machine that went down): a build interrupted by a signal
/// removes its own staging directory, but SIGKILL leaves one, with a
/// partial pages.bin, that nothing else would ever remove. A set-aside
/// previous index of a dead process is the index that was in place when
/// its commit stopped between the two renames: it goes back to `target`
/// if nothing took its place, and is removed otherwise. Best effort: what
/// cannot be removed stays, and does no harm to this build.
fn remove_stale(target: &Path) {
    let name = target_name(target);
    let parent = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    let own = std::process::id();
    let mut stale: Vec<(PathBuf, bool)> = vec![];
    for entry in entries.flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        for (tag, previous) in [("building", false), ("previous", true), ("import", false)] {
            match sibling_pid(&file, &name, tag) {
                Some(pid) if pid != own && !process_alive(pid) => {
                    stale.push((entry.path(), previous))
                }
                _ => {}
            }
        }
    }
    for (path, previous) in stale {
        let publishable =
            path.join(MANIFEST).is_file() || crate::collection::manifest::is_collection(&path);
        if previous && !target.exists() && publishable {
            let _ = std::fs::rename(&path, target);
        } else if path.is_dir() {
            let _ = std::fs::remove_dir_all(&path);
        } else {
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// Size and sha256 of a file, streamed.
pub fn file_entry(path: &Path) -> Result<FileEntry> {
    Ok(file_entry_until(path, &crate::progress::never)?.expect("never stopped"))
}

/// [`file_entry`] that polls `stop` every MB read (a large pages.bin takes
/// seconds) and returns `None` when it says so.
pub(crate) fn file_entry_until(path: &Path, stop: &Stop) -> Result<Option<FileEntry>> {
    let mut f = File::open(path).at("open", path)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut bytes = 0u64;
    loop {
        if stop() {
            return Ok(None);
        }
        let k = f.read(&mut buf).at("read", path)?;
        if k == 0 {
            break;
        }
        h.update(&buf[..k]);
        bytes += k as u64;
    }
    let sha256 = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    Ok(Some(FileEntry { bytes, sha256 }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No process has this id (pid_max is at most 2^22).
    const DEAD: u32 = 4_000_000_000;

    #[test]
    fn stale_staging_of_dead_processes_is_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("idx");
        let dead = tmp.path().join(format!(".idx.building-{DEAD}-0"));
        let own = tmp
            .path()
            .join(format!(".idx.building-{}-99", std::process::id()));
        let other = tmp.path().join(format!(".other.building-{DEAD}-0"));
        for d in [&dead, &own, &other] {
            std::fs::create_dir(d).unwrap();
            std::fs::write(d.join("pages.bin"), b"partial").unwrap();
        }
        let staging = Staging::new(&target).unwrap();
        assert!(
            !dead.exists(),
            "a dead build's staging directory is removed"
        );
        assert!(own.exists(), "this process's builds are left alone");
        assert!(other.exists(), "another target's are left alone");
        drop(staging);
    }

    /// A commit killed between its two renames left the previous index
    /// aside and nothing at the target: the next build puts it back first.
    #[test]
    fn set_aside_index_of_a_dead_commit_goes_back() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("idx");
        let aside = tmp.path().join(format!(".idx.previous-{DEAD}-3"));
        std::fs::create_dir(&aside).unwrap();
        std::fs::write(aside.join(MANIFEST), b"{}").unwrap();
        let staging = Staging::new(&target).unwrap();
        assert!(target.join(MANIFEST).is_file());
        assert!(!aside.exists());
        drop(staging);
    }

    #[test]
    fn sibling_names_parse() {
        assert_eq!(
            sibling_pid(".idx.building-12-0", "idx", "building"),
            Some(12)
        );
        assert_eq!(sibling_pid(".idx.building-12", "idx", "building"), None);
        assert_eq!(sibling_pid(".idx2.building-12-0", "idx", "building"), None);
        assert_eq!(sibling_pid(".idx.previous-7-1", "idx", "previous"), Some(7));
    }
}
