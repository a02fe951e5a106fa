//! One writer at a time (issue #55): a process that inserts, deletes,
//! merges or rebuilds an index holds an exclusive `flock` on `writer.lock`
//! in its directory for as long as it writes. A second writer — another
//! process, or another handle in this one (flock belongs to the open file,
//! not the process) — is refused at once with the holder's pid and command,
//! which the holder writes into the file. Readers never take the lock and
//! are never blocked. The kernel drops the lock when its holder dies, so a
//! SIGKILLed writer leaves nothing to clean up (the file and its stale
//! text stay; the text is rewritten by the next holder). A holder that
//! lets go removes the file first, so a failed build leaves the index
//! directory as it found it; a process that opened the file just before
//! and locks it after finds the path gone (or another file) and tries again.

use crate::error::{Error, FileContext, Result};
use std::fs::{File, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The lock's name in an index directory.
pub const LOCK_FILE: &str = "writer.lock";

/// The writer lock of one index directory, held until dropped.
#[derive(Debug)]
pub struct WriterLock {
    file: File,
    path: PathBuf,
}

impl WriterLock {
    /// Takes the writer lock of the index at `dir`, or says who holds it.
    pub fn acquire(dir: &Path, what: &str) -> Result<WriterLock> {
        let path = dir.join(LOCK_FILE);
        // A merge or rebuild switches `dir` to a new directory (with its
        // own lock, taken before the switch): a lock won on the old one
        // after the switch guards nothing, so try again on the new one.
        for _ in 0..16 {
            let lock = WriterLock::try_once(&path, what)?;
            if same_file(&lock.file, &path) {
                return Ok(lock);
            }
        }
        Err(Error::index(
            &path,
            "writer lock",
            "a lock file that stays in place",
            "the index directory switched 16 times while locking",
        ))
    }

    /// Locks `path` (the lock file of a directory not yet published, such
    /// as a merge's staging directory), creating it.
    pub fn acquire_file(path: &Path, what: &str) -> Result<WriterLock> {
        WriterLock::try_once(path, what)
    }

    fn try_once(path: &Path, what: &str) -> Result<WriterLock> {
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem => {
                    Error::index(
                        path,
                        "index directory",
                        "a directory this process may write (to take the writer lock)",
                        format!("read-only ({e})"),
                    )
                }
                _ => Error::file("open writer lock", path, e),
            })?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                let holder = if holder.is_empty() {
                    "another writer (it has not said who yet)"
                } else {
                    holder
                };
                return Err(Error::index(
                    path,
                    "writer lock",
                    format!("no other writer, to {what}"),
                    format!("held by {holder}; one writer at a time (readers are not blocked)"),
                ));
            }
            Err(TryLockError::Error(e)) => return Err(Error::file("lock", path, e)),
        }
        let me = format!(
            "pid {} ({}), since {}",
            std::process::id(),
            command(),
            unix_seconds()
        );
        file.set_len(0).at("write writer lock", path)?;
        file.seek(SeekFrom::Start(0))
            .at("write writer lock", path)?;
        file.write_all(me.as_bytes())
            .at("write writer lock", path)?;
        Ok(WriterLock {
            file,
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The lock's path after its directory was published under another
    /// name (a merge's staging directory switched into place).
    pub fn moved_to(&mut self, dir: &Path) {
        self.path = dir.join(LOCK_FILE);
    }
}

impl Drop for WriterLock {
    fn drop(&mut self) {
        // Only while the path is still this file: after a publish it names
        // the new directory's lock, which may be another writer's.
        if same_file(&self.file, &self.path) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Whether `file` is the file `path` names now.
fn same_file(file: &File, path: &Path) -> bool {
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => false,
    }
}

/// This process's command line, for the holder's line (at most 200 bytes).
fn command() -> String {
    let raw = std::fs::read("/proc/self/cmdline").unwrap_or_default();
    let mut s: String = String::from_utf8_lossy(&raw)
        .split('\0')
        .filter(|a| !a.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    if s.len() > 200 {
        let mut cut = 200;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push('…');
    }
    s
}

fn unix_seconds() -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format!("unix time {t}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_writer_is_refused_with_the_holder_named() {
        let tmp = tempfile::tempdir().unwrap();
        let first = WriterLock::acquire(tmp.path(), "insert").unwrap();
        let msg = WriterLock::acquire(tmp.path(), "merge")
            .unwrap_err()
            .to_string();
        let pid = format!("pid {}", std::process::id());
        assert!(
            msg.contains(LOCK_FILE) && msg.contains("to merge") && msg.contains(&pid),
            "{msg}"
        );
        assert!(msg.contains("one writer at a time"), "{msg}");
        drop(first);
        assert!(
            !tmp.path().join(LOCK_FILE).exists(),
            "a released lock leaves no file"
        );
        let again = WriterLock::acquire(tmp.path(), "merge").unwrap();
        assert_eq!(again.path(), tmp.path().join(LOCK_FILE));
    }

    #[test]
    fn a_lock_is_won_on_the_directory_in_place_not_a_switched_one() {
        let tmp = tempfile::tempdir().unwrap();
        let (dir, next) = (tmp.path().join("idx"), tmp.path().join("next"));
        std::fs::create_dir(&dir).unwrap();
        std::fs::create_dir(&next).unwrap();
        // The holder of the next generation's lock, switched into place.
        let staged = WriterLock::acquire_file(&next.join(LOCK_FILE), "merge").unwrap();
        assert!(
            stratavec_io::exchange(&next, &dir).unwrap_or(false) || {
                std::fs::remove_dir(&dir).unwrap();
                std::fs::rename(&next, &dir).unwrap();
                true
            }
        );
        let msg = WriterLock::acquire(&dir, "insert").unwrap_err().to_string();
        assert!(msg.contains("held by"), "{msg}");
        drop(staged);
        WriterLock::acquire(&dir, "insert").unwrap();
    }

    #[test]
    fn a_read_only_directory_is_named_as_such() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("ro");
        std::fs::create_dir(&dir).unwrap();
        let mut perms = std::fs::metadata(&dir).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o555);
        std::fs::set_permissions(&dir, perms).unwrap();
        // root ignores permissions: nothing to check then.
        if std::fs::write(dir.join("probe"), b"").is_ok() {
            eprintln!("skipped: running as root, a 0555 directory is still writable");
            return;
        }
        let msg = WriterLock::acquire(&dir, "insert").unwrap_err().to_string();
        assert!(msg.contains("read-only"), "{msg}");
    }
}
