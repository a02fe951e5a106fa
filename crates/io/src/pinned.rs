//! A file held open for as long as its holder lives. An index directory can
//! be switched to a new generation under an open handle (a rebuild, a merge:
//! issue #55); the handle's new readers must keep reading the generation it
//! opened, never the file that the path names now. So the handle opens the
//! pages file once and every later reader reopens *that* file through
//! `/proc/self/fd/N`, which names the open file (even once its path is
//! gone) and, unlike `dup`, gives a new open file description, so a reader
//! can still choose O_DIRECT or not for itself.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use crate::open::open_reader_as;
use crate::{BlockReader, IoError, ReaderOptions};

#[derive(Debug)]
pub struct Pinned {
    file: File,
    path: PathBuf,
}

impl Pinned {
    /// Opens `path` read-only and holds it.
    pub fn open(path: &Path) -> Result<Pinned, IoError> {
        let file = File::open(path).map_err(|cause| IoError::File {
            op: "open",
            path: path.to_path_buf(),
            cause,
        })?;
        Ok(Pinned {
            file,
            path: path.to_path_buf(),
        })
    }

    /// The path the file had when it was opened (what errors name).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file held open.
    pub fn file(&self) -> &File {
        &self.file
    }

    /// A path that opens the held file itself. Without a `/proc` (a
    /// container that hides it) this is the original path: readers then
    /// open whatever the path names, as before pinning existed.
    pub fn source(&self) -> PathBuf {
        let fd = PathBuf::from(format!("/proc/self/fd/{}", self.file.as_raw_fd()));
        match std::fs::metadata(&fd) {
            Ok(_) => fd,
            Err(_) => self.path.clone(),
        }
    }
}

/// A block reader over the file `pinned` holds, whatever its path names now.
pub fn open_pinned_reader(
    pinned: &Pinned,
    opts: &ReaderOptions,
) -> Result<Box<dyn BlockReader>, IoError> {
    open_reader_as(&pinned.source(), &pinned.path, opts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Backend, ReadRequest};

    fn read_first(reader: &mut dyn BlockReader) -> Vec<u8> {
        reader
            .push(ReadRequest {
                offset: 0,
                len: 4096,
                slot: 0,
                tag: 7,
            })
            .unwrap();
        reader.submit().unwrap();
        let mut done = Vec::new();
        while done.is_empty() {
            reader.reap(1, &mut done).unwrap();
        }
        let n = *done[0].result.as_ref().unwrap() as usize;
        reader.slot(0)[..n].to_vec()
    }

    /// A reader opened after the path was replaced and the old file
    /// deleted still reads the old file, with every backend; errors name
    /// the original path.
    #[test]
    fn readers_read_the_held_file_after_its_path_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pages.bin");
        std::fs::write(&path, vec![1u8; 8192]).unwrap();
        let pinned = Pinned::open(&path).unwrap();
        let other = dir.path().join("new.bin");
        std::fs::write(&other, vec![2u8; 8192]).unwrap();
        std::fs::rename(&other, &path).unwrap();
        for backend in [
            Backend::Auto,
            Backend::Buffered,
            Backend::Ram,
            Backend::Mmap,
        ] {
            let opts = ReaderOptions {
                backend,
                slots: 1,
                ..Default::default()
            };
            let mut r = open_pinned_reader(&pinned, &opts).unwrap();
            assert_eq!(read_first(&mut *r), vec![1u8; 4096], "{backend}");
            let mut fresh = crate::open_reader(&path, &opts).unwrap();
            assert_eq!(read_first(&mut *fresh), vec![2u8; 4096], "{backend}");
        }
        let e = IoError::File {
            op: "open",
            path: pinned.source(),
            cause: std::io::Error::from_raw_os_error(libc::ENOENT),
        }
        .with_path(pinned.path());
        assert!(e.to_string().contains(&*path.to_string_lossy()), "{e}");
    }
}
