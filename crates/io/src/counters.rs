//! Read counters: what a reader did (its own count) and what the kernel saw
//! (`/proc/self/io`), so benchmarks can tell device reads from cache hits.

use std::ops::{Add, AddAssign, Sub};

/// Reads and bytes completed successfully.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoCounters {
    pub reads: u64,
    pub bytes: u64,
}

impl IoCounters {
    pub(crate) fn record(&mut self, bytes: u32) {
        self.reads += 1;
        self.bytes += u64::from(bytes);
    }
}

impl Add for IoCounters {
    type Output = IoCounters;
    fn add(self, o: IoCounters) -> IoCounters {
        IoCounters {
            reads: self.reads + o.reads,
            bytes: self.bytes + o.bytes,
        }
    }
}

impl AddAssign for IoCounters {
    fn add_assign(&mut self, o: IoCounters) {
        *self = *self + o;
    }
}

/// Difference of two snapshots (`after - before`). Saturates at zero rather
/// than panicking, since counters only grow and a reversed subtraction is a
/// reporting slip, not a reason to abort a benchmark.
impl Sub for IoCounters {
    type Output = IoCounters;
    fn sub(self, o: IoCounters) -> IoCounters {
        IoCounters {
            reads: self.reads.saturating_sub(o.reads),
            bytes: self.bytes.saturating_sub(o.bytes),
        }
    }
}

/// The process's I/O accounting from `/proc/self/io`. `read_bytes` counts bytes
/// the process caused to be fetched from storage (O_DIRECT reads exactly,
/// buffered reads only on page-cache misses); `rchar` counts every byte
/// returned by read-like calls, cached or not.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcIo {
    pub rchar: u64,
    pub wchar: u64,
    pub syscr: u64,
    pub syscw: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
}

impl ProcIo {
    /// Parse the text of a `/proc/<pid>/io` file. `None` unless all six
    /// fields are present and numeric.
    pub fn parse(text: &str) -> Option<ProcIo> {
        let (mut rchar, mut wchar, mut syscr, mut syscw, mut rb, mut wb) =
            (None, None, None, None, None, None);
        for line in text.lines() {
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let Ok(v) = value.trim().parse::<u64>() else {
                continue;
            };
            match key.trim() {
                "rchar" => rchar = Some(v),
                "wchar" => wchar = Some(v),
                "syscr" => syscr = Some(v),
                "syscw" => syscw = Some(v),
                "read_bytes" => rb = Some(v),
                "write_bytes" => wb = Some(v),
                _ => {}
            }
        }
        Some(ProcIo {
            rchar: rchar?,
            wchar: wchar?,
            syscr: syscr?,
            syscw: syscw?,
            read_bytes: rb?,
            write_bytes: wb?,
        })
    }
}

/// The whole process's counters (all threads, including io_uring's kernel
/// workers, which belong to the process). `None` where `/proc/self/io` is
/// absent or unreadable (no procfs, kernel without task I/O accounting).
pub fn proc_self_io() -> Option<ProcIo> {
    let text = std::fs::read_to_string("/proc/self/io").ok()?;
    ProcIo::parse(&text)
}

/// CPU seconds (user + system) the whole process has used so far, all
/// threads (dead ones included) and the kernel work done on its behalf, at
/// microsecond resolution (`getrusage(RUSAGE_SELF)`). A bench divides the
/// growth over a pass by its wall time to tell a CPU-bound system from one
/// waiting on the device. `None` if the call fails.
pub fn process_cpu_seconds() -> Option<f64> {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a `rusage` into the pointer it is given, which
    // points at a zeroed, properly aligned value we own; it is read only
    // after the call reports success.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, ru.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: the call succeeded, so the value is initialised.
    let ru = unsafe { ru.assume_init() };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    Some(secs(ru.ru_utime) + secs(ru.ru_stime))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic() {
        let a = IoCounters {
            reads: 3,
            bytes: 300,
        };
        let b = IoCounters {
            reads: 1,
            bytes: 100,
        };
        assert_eq!(
            a + b,
            IoCounters {
                reads: 4,
                bytes: 400
            }
        );
        assert_eq!(
            a - b,
            IoCounters {
                reads: 2,
                bytes: 200
            }
        );
        assert_eq!(b - a, IoCounters::default());
        let mut c = a;
        c += b;
        assert_eq!(c.reads, 4);
    }

    #[test]
    fn parse_proc_io() {
        let text = "rchar: 12\nwchar: 34\nsyscr: 5\nsyscw: 6\nread_bytes: 4096\n\
                    write_bytes: 8192\ncancelled_write_bytes: 0\n";
        let p = ProcIo::parse(text).unwrap();
        assert_eq!(p.rchar, 12);
        assert_eq!(p.read_bytes, 4096);
        assert_eq!(p.write_bytes, 8192);
        assert!(ProcIo::parse("rchar: 1\n").is_none());
    }

    #[test]
    fn cpu_seconds_grow_with_work() {
        let before = process_cpu_seconds().expect("getrusage");
        // Spin until the clock shows 20 ms of our CPU time: a process that
        // only ever waits would loop forever, so bound it by wall time too.
        let t0 = std::time::Instant::now();
        let mut x = 0u64;
        while process_cpu_seconds().unwrap() - before < 0.02 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            assert!(t0.elapsed().as_secs() < 10, "20 ms of CPU never showed");
        }
        std::hint::black_box(x);
        assert!(process_cpu_seconds().unwrap() >= before + 0.02);
    }

    #[test]
    fn proc_self_io_readable_here() {
        // procfs may be missing in odd sandboxes.
        match proc_self_io() {
            Some(p) => assert!(p.rchar > 0),
            None => stratavec_testkit::skipped(
                "proc_self_io_readable_here",
                stratavec_testkit::Need::Procfs,
                "/proc/self/io is not readable",
            ),
        }
    }
}
