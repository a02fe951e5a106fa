//! The engine's error type. Every message names the file (or argument), the
//! field, and the expected and found values.

use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Data(#[from] crate::data::DataError),

    #[error(transparent)]
    Io(#[from] stratavec_io::IoError),

    /// An index file that is missing, truncated, corrupt or from another version.
    #[error("{}: {field}: expected {expected}, found {found}", path.display())]
    Index {
        path: PathBuf,
        field: String,
        expected: String,
        found: String,
    },

    /// A bad parameter or query.
    #[error("{what}: expected {expected}, found {found}")]
    Argument {
        what: String,
        expected: String,
        found: String,
    },

    /// A file-system operation on a whole file or directory failed.
    /// `cause` is in the message, not a `source()` (see `stratavec_io::IoError`:
    /// a chain printer would repeat it).
    #[error("{op} {}: {cause}", path.display())]
    File {
        op: &'static str,
        path: PathBuf,
        cause: std::io::Error,
    },

    /// The caller asked the work to stop (`Progress::cancelled`: Ctrl-C,
    /// SIGTERM); nothing it had staged is left behind.
    #[error("{what}: stopped on request (interrupt or termination signal) before it finished; the previous index, if any, is untouched")]
    Cancelled { what: String },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What kind of failure an [`Error`] is, for bindings that map errors to
/// their own exception types (Python: FileNotFoundError, ValueError, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// A file or directory that should exist does not.
    NotFound,
    /// The output path holds something that must not be overwritten.
    AlreadyExists,
    /// A bad parameter, query or data value.
    InvalidArgument,
    /// An index or data file that is truncated, corrupt or from another version.
    Corrupt,
    /// The operating system failed a read, write or other call.
    Io,
    /// The caller asked the work to stop.
    Cancelled,
}

impl Error {
    pub fn kind(&self) -> ErrorKind {
        use crate::data::DataError as D;
        match self {
            Error::Argument { .. } => ErrorKind::InvalidArgument,
            Error::Index { field, .. } if field == "output path" => ErrorKind::AlreadyExists,
            Error::Index { found, field, .. }
                if field == "index directory"
                    || field == "manifest"
                    || found.starts_with("cannot stat") =>
            {
                ErrorKind::NotFound
            }
            Error::Index { .. } => ErrorKind::Corrupt,
            Error::File { cause, .. } if cause.kind() == std::io::ErrorKind::NotFound => {
                ErrorKind::NotFound
            }
            Error::File { .. } => ErrorKind::Io,
            Error::Io(_) => ErrorKind::Io,
            Error::Data(D::Io { cause, .. }) if cause.kind() == std::io::ErrorKind::NotFound => {
                ErrorKind::NotFound
            }
            Error::Data(D::Io { .. }) => ErrorKind::Io,
            Error::Data(_) => ErrorKind::InvalidArgument,
            Error::Cancelled { .. } => ErrorKind::Cancelled,
        }
    }

    pub fn index(
        path: &Path,
        field: impl Into<String>,
        expected: impl ToString,
        found: impl ToString,
    ) -> Self {
        Error::Index {
            path: path.to_path_buf(),
            field: field.into(),
            expected: expected.to_string(),
            found: found.to_string(),
        }
    }

    pub fn argument(
        what: impl Into<String>,
        expected: impl ToString,
        found: impl ToString,
    ) -> Self {
        Error::Argument {
            what: what.into(),
            expected: expected.to_string(),
            found: found.to_string(),
        }
    }

    pub fn file(op: &'static str, path: &Path, source: std::io::Error) -> Self {
        Error::File {
            op,
            path: path.to_path_buf(),
            cause: source,
        }
    }
}

/// Adds the path to `std::io` results.
pub trait FileContext<T> {
    fn at(self, op: &'static str, path: &Path) -> Result<T>;
}

impl<T> FileContext<T> for std::io::Result<T> {
    fn at(self, op: &'static str, path: &Path) -> Result<T> {
        self.map_err(|e| Error::file(op, path, e))
    }
}
