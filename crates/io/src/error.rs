//! The one error type of the crate. Every variant names the file and the
//! request (offset, length, slot) it is about, so a failed query can be traced
//! to the byte range of the index that failed without a debugger.

use std::path::PathBuf;

/// Errors of block readers. A failed *read* reaches the caller as a
/// [`crate::Completion`] carrying one of these; `push`/`submit`/`reap` return
/// one only for a malformed request or a broken backend.
///
/// The OS error (`cause`) is part of the message and deliberately not a
/// `source()`: a chain printer (anyhow's `{:#}`) would print it twice
/// ("No such file or directory (os error 2): No such file or directory (os
/// error 2)"), and callers that print only the message (Python, per-query
/// errors) would lose it if it were only a source.
#[derive(Debug, thiserror::Error)]
pub enum IoError {
    /// The operating system refused a read (or a ring operation on its behalf).
    #[error("{op} of {len} bytes at offset {offset} of {}: {cause}", path.display())]
    Io {
        /// What was attempted, e.g. "pread", "io_uring read", "read (injected fault)".
        op: &'static str,
        path: PathBuf,
        offset: u64,
        len: u64,
        cause: std::io::Error,
    },

    /// A whole-file operation failed: open, size query, reading a file into RAM.
    #[error("{op} {}: {cause}", path.display())]
    File {
        op: &'static str,
        path: PathBuf,
        cause: std::io::Error,
    },

    /// A read starting at or past the end of the file: there is no byte to
    /// return, which always means a wrong offset (a read that merely *crosses*
    /// the end returns the short count instead).
    #[error(
        "read of {len} bytes at offset {offset} of {}: offset is at or past the end of \
         the file ({file_size} bytes)",
        path.display()
    )]
    UnexpectedEof {
        path: PathBuf,
        offset: u64,
        len: u64,
        file_size: u64,
    },

    /// `push` refused a malformed request; nothing was queued. `problem` says
    /// what was expected and what was found.
    #[error(
        "read of {len} bytes at offset {offset} into slot {slot} of {}: {problem}",
        path.display()
    )]
    BadRequest {
        path: PathBuf,
        offset: u64,
        len: u64,
        slot: u32,
        problem: String,
    },

    /// Reader options that cannot work (zero slots, slot size not a multiple
    /// of the alignment, unknown `STRATAVEC_IO` value, ...).
    #[error("reader options for {}: {what}: expected {expected}, found {found}", path.display())]
    InvalidOptions {
        path: PathBuf,
        what: &'static str,
        expected: String,
        found: String,
    },

    /// The backend cannot run here: io_uring setup refused (seccomp, sysctl,
    /// old kernel), O_DIRECT refused by the filesystem, ... `open_reader` in
    /// `auto` mode falls back on this; an explicitly chosen backend reports it.
    #[error("{backend} unavailable for {}: {reason}", path.display())]
    Unsupported {
        backend: &'static str,
        path: PathBuf,
        reason: String,
    },
}

impl IoError {
    /// The OS error number behind this error, if there is one (EIO, EINVAL, ...).
    pub fn raw_os_error(&self) -> Option<i32> {
        match self {
            IoError::Io { cause, .. } | IoError::File { cause, .. } => cause.raw_os_error(),
            _ => None,
        }
    }

    /// The same error naming `path` as its file: a reader opened through
    /// another name for the file (`/proc/self/fd/N`, see `Pinned`) reports
    /// the path the user knows.
    pub fn with_path(mut self, name: &std::path::Path) -> IoError {
        match &mut self {
            IoError::Io { path, .. }
            | IoError::File { path, .. }
            | IoError::UnexpectedEof { path, .. }
            | IoError::BadRequest { path, .. }
            | IoError::InvalidOptions { path, .. }
            | IoError::Unsupported { path, .. } => *path = name.to_path_buf(),
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_path_offset_and_expectation() {
        let e = IoError::BadRequest {
            path: PathBuf::from("/x/pages.bin"),
            offset: 12289,
            len: 4096,
            slot: 3,
            problem: "offset not a multiple of the 4096-byte alignment".into(),
        };
        assert_eq!(
            e.to_string(),
            "read of 4096 bytes at offset 12289 into slot 3 of /x/pages.bin: \
             offset not a multiple of the 4096-byte alignment"
        );
        let e = IoError::Io {
            op: "pread",
            path: PathBuf::from("/x/pages.bin"),
            offset: 8192,
            len: 4096,
            cause: std::io::Error::from_raw_os_error(libc::EIO),
        };
        assert!(e
            .to_string()
            .starts_with("pread of 4096 bytes at offset 8192 of /x/pages.bin: "));
        assert_eq!(e.raw_os_error(), Some(libc::EIO));
    }

    #[test]
    fn is_send_sync_static() {
        fn check<T: Send + Sync + 'static>() {}
        check::<IoError>();
    }
}
