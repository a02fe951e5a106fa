//! The one error type of `data`. Every variant that concerns a file carries its
//! path, and every validation failure says which field was wrong, what was
//! expected and what was found, so a user can fix the file without a debugger.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// An operating-system call failed; `op` says which ("open", "mmap", "write", ...).
    /// `cause` is in the message, not a `source()` (see `stratavec_io::IoError`:
    /// a chain printer would repeat it).
    #[error("{}: cannot {op}: {cause}", path.display())]
    Io {
        path: PathBuf,
        op: &'static str,
        cause: std::io::Error,
    },

    #[error("{}: empty file (0 bytes)", path.display())]
    Empty { path: PathBuf },

    #[error(
        "{}: unknown file extension {found:?}; expected one of {expected}",
        path.display()
    )]
    UnknownFormat {
        path: PathBuf,
        found: String,
        expected: &'static str,
    },

    /// A header field or structural property has a value the reader cannot
    /// accept (n = 0, bad npy magic, fortran order, ...).
    #[error("{}: field `{field}`: expected {expected}, found {found}", path.display())]
    Invalid {
        path: PathBuf,
        field: &'static str,
        expected: String,
        found: String,
    },

    /// The header announces a payload whose size disagrees with the file size
    /// (too short is truncation, too long is usually a wrong dtype or format).
    #[error(
        "{}: header says {n} x {dim} {dtype} = {expected} bytes, file has {found} bytes",
        path.display()
    )]
    SizeMismatch {
        path: PathBuf,
        n: u64,
        dim: u64,
        dtype: &'static str,
        /// u128: a corrupt header can announce more than u64::MAX bytes.
        expected: u128,
        found: u64,
    },

    /// `.fvecs`/`.bvecs`/`.ivecs`: the file is not a whole number of rows of
    /// the dimension announced by row 0.
    #[error(
        "{}: file has {found} bytes, not a multiple of the {row_bytes}-byte row \
         (4-byte dimension + {dim} x {dtype}) announced by row 0",
        path.display()
    )]
    RaggedRows {
        path: PathBuf,
        dim: u64,
        dtype: &'static str,
        row_bytes: u64,
        found: u64,
    },

    /// `.fvecs`/`.bvecs`/`.ivecs`: one row's dimension disagrees with row 0.
    #[error(
        "{}: row {row} has dimension {found}, expected {expected} (the dimension of row 0)",
        path.display()
    )]
    RowDimension {
        path: PathBuf,
        row: u64,
        expected: i64,
        found: i64,
    },

    #[error(
        "{}: dimension {found} does not match the {what} dimension {expected}",
        path.display()
    )]
    DimensionMismatch {
        path: PathBuf,
        what: &'static str,
        expected: usize,
        found: usize,
    },

    #[error("{}: row {row}, component {component} is {value}", path.display())]
    NonFinite {
        path: PathBuf,
        row: usize,
        component: usize,
        /// "NaN", "inf" or "-inf".
        value: &'static str,
    },

    /// `.ibin` ground truth: neither the ids-only nor the ids+distances size.
    #[error(
        "{}: header says nq={nq}, k={k}: an ids-only file should be 8+4*nq*k = {ids_only} \
         bytes and a file with distances 8+8*nq*k = {with_dists} bytes, file has {found} bytes",
        path.display()
    )]
    GroundTruthSize {
        path: PathBuf,
        nq: u64,
        k: u64,
        ids_only: u128,
        with_dists: u128,
        found: u64,
    },

    /// A column of a Parquet or Arrow table (`data::table`), at one row or
    /// as a whole.
    #[error(
        "{}: column `{column}`{}: expected {expected}, found {found}",
        path.display(),
        row.map(|r| format!(", row {r}")).unwrap_or_default()
    )]
    Column {
        path: PathBuf,
        column: String,
        row: Option<u64>,
        expected: String,
        found: String,
    },

    /// A caller-supplied argument (not a file) is out of range, e.g. recall's
    /// k or the number of result lists; `context` names the operation.
    #[error("{context}: `{field}`: expected {expected}, found {found}")]
    Argument {
        context: &'static str,
        field: &'static str,
        expected: String,
        found: String,
    },

    /// A name (metric, dtype) that does not parse.
    #[error("unknown {what} {found:?}; expected one of {expected}")]
    UnknownName {
        what: &'static str,
        found: String,
        expected: &'static str,
    },

    #[error("cannot start a pool of {threads} threads: {message}")]
    ThreadPool { threads: usize, message: String },
}

impl DataError {
    pub(crate) fn io(path: &std::path::Path, op: &'static str, source: std::io::Error) -> Self {
        DataError::Io {
            path: path.to_path_buf(),
            op,
            cause: source,
        }
    }

    pub(crate) fn invalid(
        path: &std::path::Path,
        field: &'static str,
        expected: impl Into<String>,
        found: impl ToString,
    ) -> Self {
        DataError::Invalid {
            path: path.to_path_buf(),
            field,
            expected: expected.into(),
            found: found.to_string(),
        }
    }

    pub(crate) fn argument(
        context: &'static str,
        field: &'static str,
        expected: impl Into<String>,
        found: impl ToString,
    ) -> Self {
        DataError::Argument {
            context,
            field,
            expected: expected.into(),
            found: found.to_string(),
        }
    }
}
