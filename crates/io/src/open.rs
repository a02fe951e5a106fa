//! Choosing and opening a backend. `auto` takes the fastest one this kernel
//! and filesystem allow (io_uring + O_DIRECT, then pread, with buffered I/O
//! where O_DIRECT is refused); an explicitly named backend is opened as named
//! or fails with the reason, so benchmarks never measure a silent fallback.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::str::FromStr;

use crate::ram::Residence;
use crate::tier::TierTiming;
use crate::{AlignedBuf, BlockReader, IoError, PreadReader, RamReader, ReadRequest, UringReader};

/// Alignment of offsets, lengths and buffers under O_DIRECT: a multiple of
/// every common logical block size (512, 4096), and index pages are 4 KiB
/// multiples anyway.
pub(crate) const DIRECT_ALIGN: usize = 4096;

/// Overrides `Backend::Auto` (only `Auto`), so tests and users can force a
/// backend without new flags.
const ENV_VAR: &str = "STRATAVEC_IO";

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Backend {
    /// The best the machine allows; see the module docs.
    #[default]
    Auto,
    /// io_uring over an O_DIRECT file.
    IoUring,
    /// Synchronous pread over an O_DIRECT file.
    Pread,
    /// Synchronous pread through the page cache.
    Buffered,
    /// The whole file read into memory at open; reads prefetched at submit.
    Ram,
    /// The file mapped and read in place, reads prefetched at submit: a
    /// memory tier at local-memory speed (`tier`).
    Mmap,
    /// `Mmap` with each read held back to a tier's latency and bandwidth.
    Simulated(TierTiming),
}

impl Backend {
    const NAMES: &'static str = "auto|io_uring|pread|buffered|ram|mmap|simulated:LAT_NS[,GBPS]";

    /// Whether reads are served from memory addresses (any offset and
    /// length; no device queue): the backends that stand for a memory tier.
    pub fn is_memory(self) -> bool {
        matches!(self, Backend::Ram | Backend::Mmap | Backend::Simulated(_))
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Backend::Auto => "auto",
            Backend::IoUring => "io_uring",
            Backend::Pread => "pread",
            Backend::Buffered => "buffered",
            Backend::Ram => "ram",
            Backend::Mmap => "mmap",
            Backend::Simulated(t) => return t.fmt(f),
        })
    }
}

impl FromStr for Backend {
    type Err = String;
    fn from_str(s: &str) -> Result<Backend, String> {
        match s.trim() {
            "auto" => Ok(Backend::Auto),
            "io_uring" => Ok(Backend::IoUring),
            "pread" => Ok(Backend::Pread),
            "buffered" => Ok(Backend::Buffered),
            "ram" => Ok(Backend::Ram),
            "mmap" => Ok(Backend::Mmap),
            other if other.starts_with("simulated:") => {
                Ok(Backend::Simulated(other["simulated:".len()..].parse()?))
            }
            other => Err(format!(
                "unknown I/O backend {other:?}: expected {}",
                Backend::NAMES
            )),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReaderOptions {
    pub backend: Backend,
    /// Buffer slots = the most reads in flight at once.
    pub slots: usize,
    /// Bytes per slot = the largest single read (a multiple of 4096 for the
    /// O_DIRECT backends).
    pub slot_bytes: usize,
    /// io_uring kernel submission thread: saves the submit syscall, costs a
    /// core while busy. Off unless asked for.
    pub sqpoll: bool,
}

impl Default for ReaderOptions {
    fn default() -> Self {
        ReaderOptions {
            backend: Backend::Auto,
            slots: 64,
            slot_bytes: 4096,
            sqpoll: false,
        }
    }
}

/// Open `path` for block reads with the backend `opts` asks for.
pub fn open_reader(path: &Path, opts: &ReaderOptions) -> Result<Box<dyn BlockReader>, IoError> {
    open_reader_as(path, path, opts)
}

/// Opens the file at `source` for block reads; errors and the reader name
/// `path` (the same file, by the name the user knows: `source` may be
/// `/proc/self/fd/N`, see `Pinned`).
pub(crate) fn open_reader_as(
    source: &Path,
    path: &Path,
    opts: &ReaderOptions,
) -> Result<Box<dyn BlockReader>, IoError> {
    let named = |e: IoError| e.with_path(path);
    let mut backend = opts.backend;
    if backend == Backend::Auto {
        // Empty counts as unset (`STRATAVEC_IO= cmd`).
        if let Some(v) = std::env::var(ENV_VAR).ok().filter(|v| !v.is_empty()) {
            backend = v.parse().map_err(|_| IoError::InvalidOptions {
                path: path.to_path_buf(),
                what: "environment variable STRATAVEC_IO",
                expected: Backend::NAMES.into(),
                found: format!("{v:?}"),
            })?;
        }
    }
    let p = path.to_path_buf();
    let (slots, slot_bytes) = (opts.slots, opts.slot_bytes);
    let image = |residence| crate::ram::shared_image(source, residence).map_err(named);
    Ok(match backend {
        Backend::Auto => auto(source, path, opts)?,
        Backend::IoUring => {
            let direct = open_direct(source).map_err(named)?;
            let mut r = UringReader::new(direct, p, true, slots, slot_bytes, opts.sqpoll)?;
            probe(&mut r, path)?;
            r.reset_counters();
            Box::new(r)
        }
        Backend::Pread => Box::new(PreadReader::new(
            open_direct(source).map_err(named)?,
            p,
            true,
            slots,
            slot_bytes,
        )?),
        Backend::Buffered => Box::new(PreadReader::new(
            open_plain(source).map_err(named)?,
            p,
            false,
            slots,
            slot_bytes,
        )?),
        Backend::Ram => Box::new(RamReader::new(
            image(Residence::Copied)?,
            p,
            slots,
            slot_bytes,
        )?),
        Backend::Mmap => {
            Box::new(RamReader::new(image(Residence::Mapped)?, p, slots, slot_bytes)?.tier(None))
        }
        Backend::Simulated(t) => {
            Box::new(RamReader::new(image(Residence::Mapped)?, p, slots, slot_bytes)?.tier(Some(t)))
        }
    })
}

fn auto(source: &Path, path: &Path, opts: &ReaderOptions) -> Result<Box<dyn BlockReader>, IoError> {
    let (file, direct) = match open_direct(source) {
        Ok(f) => (f, true),
        Err(IoError::Unsupported { .. }) => {
            (open_plain(source).map_err(|e| e.with_path(path))?, false)
        }
        Err(e) => return Err(e.with_path(path)),
    };
    let mut tries = vec![opts.sqpoll];
    if opts.sqpoll {
        tries.push(false);
    }
    for sqpoll in tries {
        let dup = file.try_clone().map_err(|cause| IoError::File {
            op: "dup",
            path: path.to_path_buf(),
            cause,
        })?;
        let p = path.to_path_buf();
        match UringReader::new(dup, p, direct, opts.slots, opts.slot_bytes, sqpoll) {
            // A ring that sets up but cannot read (some sandboxes filter
            // io_uring opcodes) is as good as none.
            Ok(mut r) => {
                if probe(&mut r, path).is_ok() {
                    r.reset_counters();
                    return Ok(Box::new(r));
                }
            }
            Err(IoError::Unsupported { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    let p = path.to_path_buf();
    Ok(Box::new(PreadReader::new(
        file,
        p,
        direct,
        opts.slots,
        opts.slot_bytes,
    )?))
}

/// Read the first block through `r` to prove the backend works here.
fn probe(r: &mut UringReader, path: &Path) -> Result<(), IoError> {
    let len = r.slot_bytes().min(DIRECT_ALIGN) as u32;
    r.push(ReadRequest {
        offset: 0,
        len,
        slot: 0,
        tag: 0,
    })?;
    r.submit()?;
    let mut out = Vec::with_capacity(1);
    r.reap(1, &mut out)?;
    match out.pop().map(|c| c.result) {
        Some(Ok(_)) => Ok(()),
        // An empty file has nothing to read; the ring itself is fine.
        Some(Err(IoError::UnexpectedEof { .. })) => Ok(()),
        Some(Err(e)) => Err(e),
        None => Err(IoError::Unsupported {
            backend: "io_uring",
            path: path.to_path_buf(),
            reason: "probe read never completed".into(),
        }),
    }
}

fn open_plain(path: &Path) -> Result<File, IoError> {
    File::open(path).map_err(|source| IoError::File {
        op: "open",
        path: path.into(),
        cause: source,
    })
}

/// Open with O_DIRECT and prove a read works: some filesystems accept the
/// flag at open and refuse the reads. Refusal is [`IoError::Unsupported`].
fn open_direct(path: &Path) -> Result<File, IoError> {
    let refused = |what: &str, e: std::io::Error| IoError::Unsupported {
        backend: "O_DIRECT",
        path: path.into(),
        reason: format!("{what} refused ({e}); the filesystem (tmpfs?) has no direct I/O"),
    };
    let file = match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => return Err(refused("open", e)),
        Err(source) => {
            return Err(IoError::File {
                op: "open (O_DIRECT)",
                path: path.into(),
                cause: source,
            })
        }
    };
    // An aligned 4096-byte read at 0 is legal even for a shorter file (it
    // returns the short count), so one probe fits every size.
    let mut buf = AlignedBuf::new(DIRECT_ALIGN, DIRECT_ALIGN);
    loop {
        match file.read_at(&mut buf, 0) {
            Ok(_) => return Ok(file),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => return Err(refused("read", e)),
            Err(source) => {
                return Err(IoError::Io {
                    op: "probe pread (O_DIRECT)",
                    path: path.into(),
                    offset: 0,
                    len: DIRECT_ALIGN as u64,
                    cause: source,
                })
            }
        }
    }
}

/// Size in bytes; seeking to the end works for regular files and block
/// devices alike (fstat reports 0 for the latter).
pub(crate) fn file_size(file: &File, path: &Path) -> Result<u64, IoError> {
    let mut f = file;
    f.seek(SeekFrom::End(0)).map_err(|source| IoError::File {
        op: "size of",
        path: path.into(),
        cause: source,
    })
}

/// Refuse a `direct` flag that disagrees with how the file was opened: the
/// alignment rules and the backend's name would both be wrong.
pub(crate) fn check_direct_flag(file: &File, path: &Path, direct: bool) -> Result<(), IoError> {
    // SAFETY: F_GETFL on a file descriptor we own; no pointers involved.
    let flags = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETFL) };
    if flags < 0 {
        let source = std::io::Error::last_os_error();
        return Err(IoError::File {
            op: "fcntl(F_GETFL) on",
            path: path.into(),
            cause: source,
        });
    }
    let is_direct = flags & libc::O_DIRECT != 0;
    if is_direct != direct {
        let word = |d: bool| {
            if d {
                "opened with O_DIRECT"
            } else {
                "opened without O_DIRECT"
            }
        };
        return Err(IoError::InvalidOptions {
            path: path.into(),
            what: "direct",
            expected: format!("a file {}", word(direct)),
            found: format!("a file {}", word(is_direct)),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_names_round_trip() {
        for b in [
            Backend::Auto,
            Backend::IoUring,
            Backend::Pread,
            Backend::Buffered,
            Backend::Ram,
            Backend::Mmap,
            Backend::Simulated(TierTiming {
                latency_ns: 1000,
                mb_per_s: 12_500,
            }),
        ] {
            assert_eq!(b.to_string().parse::<Backend>(), Ok(b));
        }
        let e = "uring".parse::<Backend>().unwrap_err();
        assert!(
            e.contains("auto|io_uring|pread|buffered|ram|mmap|simulated:LAT_NS[,GBPS]"),
            "{e}"
        );
        let e = "simulated:1us".parse::<Backend>().unwrap_err();
        assert!(e.contains("latency") && e.contains("\"1us\""), "{e}");
    }

    #[test]
    fn default_options() {
        let o = ReaderOptions::default();
        assert_eq!(
            (o.backend, o.slots, o.slot_bytes, o.sqpoll),
            (Backend::Auto, 64, 4096, false)
        );
    }

    #[test]
    fn missing_file_names_path() {
        let opts = ReaderOptions {
            backend: Backend::Buffered,
            ..Default::default()
        };
        let e = open_reader(Path::new("/nonexistent/stratavec/pages.bin"), &opts)
            .err()
            .expect("must fail");
        assert!(
            e.to_string().contains("/nonexistent/stratavec/pages.bin"),
            "{e}"
        );
    }
}
