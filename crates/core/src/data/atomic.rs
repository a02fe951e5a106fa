//! Crash-safe file writing: every writer in `data` fills `<name>.tmp` in the
//! same directory, fsyncs it and renames it over `<name>`, so a reader sees
//! either the old file or the complete new one, never half a file.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use super::DataError;

/// Writes `path` atomically; `fill` writes the whole content.
pub(crate) fn write_atomic(
    path: &Path,
    fill: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>,
) -> Result<(), DataError> {
    let tmp = tmp_path(path);
    let result = write_tmp(&tmp, fill).and_then(|()| {
        fs::rename(&tmp, path).map_err(|e| DataError::io(path, "rename the temporary file to", e))
    });
    if result.is_err() {
        // Best effort: the error being returned matters more than a leftover.
        let _ = fs::remove_file(&tmp);
        return result;
    }
    // Make the rename itself durable. Some filesystems refuse to fsync a
    // directory; the data is already safe then, so that failure is ignored.
    if let Some(dir) = path.parent() {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}

fn write_tmp(
    tmp: &Path,
    fill: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>,
) -> Result<(), DataError> {
    let file = File::create(tmp).map_err(|e| DataError::io(tmp, "create", e))?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    fill(&mut w).map_err(|e| DataError::io(tmp, "write", e))?;
    let file = w
        .into_inner()
        .map_err(|e| DataError::io(tmp, "write", e.into_error()))?;
    file.sync_all().map_err(|e| DataError::io(tmp, "fsync", e))
}

/// `dir/name.ext` → `dir/name.ext.tmp`.
pub(crate) fn tmp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    path.with_file_name(name)
}

/// Writes f32s little-endian, a buffer at a time (no per-element syscall).
pub(crate) fn put_f32s(w: &mut (impl Write + ?Sized), data: &[f32]) -> io::Result<()> {
    let mut buf = Vec::with_capacity(4 * data.len().min(16 * 1024));
    for chunk in data.chunks(16 * 1024) {
        buf.clear();
        buf.extend(chunk.iter().flat_map(|x| x.to_le_bytes()));
        w.write_all(&buf)?;
    }
    Ok(())
}

/// Writes u32s little-endian, a buffer at a time.
pub(crate) fn put_u32s(w: &mut (impl Write + ?Sized), data: &[u32]) -> io::Result<()> {
    let mut buf = Vec::with_capacity(4 * data.len().min(16 * 1024));
    for chunk in data.chunks(16 * 1024) {
        buf.clear();
        buf.extend(chunk.iter().flat_map(|x| x.to_le_bytes()));
        w.write_all(&buf)?;
    }
    Ok(())
}

/// Writes i8s as their two's-complement bytes, a buffer at a time.
pub(crate) fn put_i8s(w: &mut (impl Write + ?Sized), data: &[i8]) -> io::Result<()> {
    let mut buf = Vec::with_capacity(data.len().min(64 * 1024));
    for chunk in data.chunks(64 * 1024) {
        buf.clear();
        buf.extend(chunk.iter().map(|&x| x as u8));
        w.write_all(&buf)?;
    }
    Ok(())
}

/// Checks the shape arguments every writer takes: `n, d >= 1`, both fit the
/// u32 header fields, and `len == n * d`.
pub(crate) fn check_shape(path: &Path, n: usize, d: usize, len: usize) -> Result<(), DataError> {
    for (field, v) in [("n", n), ("d", d)] {
        if v == 0 || v > u32::MAX as usize {
            return Err(DataError::invalid(path, field, "1..=4294967295", v));
        }
    }
    match n.checked_mul(d) {
        Some(nd) if nd == len => Ok(()),
        _ => Err(DataError::invalid(
            path,
            "data.len()",
            format!("n*d = {n}*{d}"),
            len,
        )),
    }
}
