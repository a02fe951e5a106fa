//! big-ann-benchmarks' filter-track label files (`.spmat`): a CSR matrix,
//! little-endian — i64 nrow, ncol, nnz; i64 indptr[nrow + 1]; i32
//! indices[nnz]; f32 data[nnz]. A row's nonzero columns are its labels
//! (base vectors) or the labels a query ANDs (`query.filters.spmat`); the
//! values are not used (the track writes 1).
//!
//! Reading checks every field against the others and names the file, the
//! field, what was expected and what was found: a label file a build
//! takes must not index half its rows under the wrong labels.

use super::LabelSets;
use crate::error::{Error, FileContext, Result};
use std::io::Write;
use std::path::Path;

const HEADER: usize = 24;

fn i64_at(b: &[u8], at: usize) -> i64 {
    i64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// The rows of the `.spmat` file at `path`, each row's labels sorted and
/// without repeats.
pub fn read(path: &Path) -> Result<LabelSets> {
    let bytes = std::fs::read(path).at("read the label matrix", path)?;
    parse(&bytes, path)
}

/// [`read`] of bytes already in memory (`path` names them in errors).
pub fn parse(bytes: &[u8], path: &Path) -> Result<LabelSets> {
    let bad =
        |field: &str, expected: String, found: String| Error::index(path, field, expected, found);
    if bytes.len() < HEADER {
        return Err(bad(
            "header",
            format!("{HEADER} bytes (i64 nrow, ncol, nnz)"),
            format!("{} bytes", bytes.len()),
        ));
    }
    let (nrow, ncol, nnz) = (i64_at(bytes, 0), i64_at(bytes, 8), i64_at(bytes, 16));
    // Rows and labels are u32 in the index; the nonzeros only need to fit
    // the file (checked by its size next).
    for (field, v, max) in [
        ("nrow", nrow, u32::MAX as i64),
        ("ncol", ncol, u32::MAX as i64),
        ("nnz", nnz, i64::MAX),
    ] {
        if !(0..=max).contains(&v) {
            return Err(bad(field, format!("0..={max}"), v.to_string()));
        }
    }
    let (nrow, ncol, nnz) = (nrow as usize, ncol as usize, nnz as usize);
    let want = HEADER as u128 + 8 * (nrow as u128 + 1) + 8 * nnz as u128;
    if bytes.len() as u128 != want {
        return Err(bad(
            "file size",
            format!("{want} bytes (24 + 8 x (nrow {nrow} + 1) + (4 + 4) x nnz {nnz})"),
            format!("{} bytes", bytes.len()),
        ));
    }
    let indptr_at = HEADER;
    let indices_at = indptr_at + 8 * (nrow + 1);
    let mut indptr = Vec::with_capacity(nrow + 1);
    let mut indices: Vec<u32> = Vec::with_capacity(nnz);
    let mut prev = 0i64;
    for r in 0..=nrow {
        let p = i64_at(bytes, indptr_at + 8 * r);
        let ok = match r {
            0 => p == 0,
            _ if r == nrow => p == nnz as i64 && p >= prev,
            _ => p >= prev && p <= nnz as i64,
        };
        if !ok {
            let expected = match r {
                0 => "0".to_string(),
                _ if r == nrow => format!("nnz ({nnz}), and at least indptr[{}] ({prev})", r - 1),
                _ => format!("{prev}..={nnz} (non-decreasing, at most nnz)"),
            };
            return Err(bad(&format!("indptr[{r}]"), expected, p.to_string()));
        }
        if r > 0 {
            let row = &mut Vec::with_capacity((p - prev) as usize);
            for j in prev as usize..p as usize {
                let at = indices_at + 4 * j;
                let c = i32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
                if c < 0 || c as usize >= ncol {
                    return Err(bad(
                        &format!("indices[{j}] (row {})", r - 1),
                        format!("a column in 0..{ncol}"),
                        c.to_string(),
                    ));
                }
                row.push(c as u32);
            }
            row.sort_unstable();
            row.dedup();
            indices.extend_from_slice(row);
            indptr.push(indices.len() as u64);
        } else {
            indptr.push(0);
        }
        prev = p;
    }
    Ok(LabelSets {
        n_labels: ncol as u32,
        indptr,
        indices,
    })
}

/// Writes `sets` as a `.spmat` file (values 1), the track's layout.
pub fn write(path: &Path, sets: &LabelSets) -> Result<()> {
    let nnz = sets.indices.len();
    let mut out = Vec::with_capacity(HEADER + 8 * sets.indptr.len() + 8 * nnz);
    for v in [sets.len() as i64, sets.n_labels as i64, nnz as i64] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    for &p in &sets.indptr {
        out.extend_from_slice(&(p as i64).to_le_bytes());
    }
    for &c in &sets.indices {
        out.extend_from_slice(&(c as i32).to_le_bytes());
    }
    for _ in 0..nnz {
        out.extend_from_slice(&1f32.to_le_bytes());
    }
    let mut f = std::fs::File::create(path).at("create the label matrix", path)?;
    f.write_all(&out).at("write the label matrix", path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sets(rows: &[Vec<u32>], n_labels: u32) -> LabelSets {
        LabelSets::from_rows(rows.iter().map(|r| r.as_slice()), n_labels)
    }

    proptest! {
        #[test]
        fn written_rows_read_back_sorted_and_unique(
            rows in prop::collection::vec(prop::collection::vec(0u32..40, 0..6), 0..30)
        ) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("x.spmat");
            let given = sets(&rows, 40);
            write(&path, &given).unwrap();
            let back = read(&path).unwrap();
            prop_assert_eq!(back.len(), rows.len());
            prop_assert_eq!(back.n_labels, 40);
            for (i, r) in rows.iter().enumerate() {
                let mut want = r.clone();
                want.sort_unstable();
                want.dedup();
                prop_assert_eq!(back.row(i), want.as_slice());
            }
        }
    }

    fn raw(nrow: i64, ncol: i64, indptr: &[i64], indices: &[i32]) -> Vec<u8> {
        let mut b = Vec::new();
        for v in [nrow, ncol, indices.len() as i64] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        indptr
            .iter()
            .for_each(|p| b.extend_from_slice(&p.to_le_bytes()));
        indices
            .iter()
            .for_each(|c| b.extend_from_slice(&c.to_le_bytes()));
        indices
            .iter()
            .for_each(|_| b.extend_from_slice(&1f32.to_le_bytes()));
        b
    }

    #[test]
    fn a_damaged_file_names_the_field() {
        let p = Path::new("labels.spmat");
        let cases: Vec<(Vec<u8>, &[&str])> = vec![
            (vec![0; 10], &["header", "24 bytes", "found 10 bytes"]),
            (
                raw(2, 5, &[0, 1, 2], &[1, 7]),
                &["indices[1] (row 1)", "0..5", "found 7"],
            ),
            (raw(2, 5, &[0, 2, 1], &[1, 2]), &["indptr[2]", "found 1"]),
            (
                raw(2, 5, &[1, 1, 2], &[1, 2]),
                &["indptr[0]", "expected 0", "found 1"],
            ),
            (raw(2, 5, &[0, 1, 2], &[1, -3]), &["indices[1]", "found -3"]),
            (
                {
                    let mut b = raw(2, 5, &[0, 1, 2], &[1, 2]);
                    b.pop();
                    b
                },
                &["file size", "found 63 bytes"],
            ),
        ];
        for (bytes, parts) in cases {
            let e = parse(&bytes, p).unwrap_err().to_string();
            assert!(e.contains("labels.spmat"), "{e}");
            for part in parts {
                assert!(e.contains(part), "{part:?} not in {e}");
            }
        }
    }
}
