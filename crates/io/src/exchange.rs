//! Switching two directory entries in one step, for publishing an index or
//! collection over the previous one without a moment when its path names
//! nothing (issue #55; `stratavec::index::commit::publish`).

use std::path::Path;

/// Swaps the directory entries `a` and `b` atomically (both exist). `false`
/// when the kernel or filesystem cannot (ENOSYS, EINVAL): the caller falls
/// back to two renames.
pub fn exchange(a: &Path, b: &Path) -> std::io::Result<bool> {
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| {
        std::ffi::CString::new(p.as_os_str().as_bytes())
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))
    };
    let (ca, cb) = (c(a)?, c(b)?);
    // SAFETY: two NUL-terminated paths that outlive the call; no other pointers.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            ca.as_ptr(),
            libc::AT_FDCWD,
            cb.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if rc == 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::ENOSYS) | Some(libc::EINVAL) | Some(libc::ENOTSUP) => Ok(false),
        _ => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exchanges_two_directories() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
        std::fs::create_dir(&a).unwrap();
        std::fs::create_dir(&b).unwrap();
        std::fs::write(a.join("x"), b"from a").unwrap();
        std::fs::write(b.join("x"), b"from b").unwrap();
        if !exchange(&a, &b).unwrap() {
            eprintln!("skipped: this filesystem cannot exchange (RENAME_EXCHANGE)");
            return;
        }
        assert_eq!(std::fs::read(a.join("x")).unwrap(), b"from b");
        assert_eq!(std::fs::read(b.join("x")).unwrap(), b"from a");
        let e = exchange(&a, &tmp.path().join("absent")).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOENT));
    }
}
