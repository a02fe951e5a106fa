//! Second-tier memory (Cheng et al., paper 002 §4–§5): memory reached by
//! load instructions at 64–256 B granularity (CXL, NVM, a DAX mapping) or by
//! one-sided reads (RDMA), with 0.3–3 µs latency instead of DRAM's 0.1.
//!
//! This machine has none of those, so a tier is measured two ways, by the
//! same reader ([`crate::RamReader`] over a file mapping):
//!
//! - `mmap`: the index file mapped and read where it lies — local memory, the
//!   computation bound; on a real DAX/CXL mapping it is the tier itself;
//! - `simulated:LAT_NS,GBPS`: the same mapping, but each read completes no
//!   earlier than `LAT_NS` after it was submitted, and the reads of every
//!   reader of the file together move no more than `GBPS` gigabytes a
//!   second (one link, shared, as a device's is).
//!
//! Both prefetch a read's cache lines when it is submitted: the batch of
//! loads issued before any computation that §5 ("software pipeline") uses to
//! hide the tier's latency on CXL and NVM. The scheduler already interleaves
//! many queries a thread, so by the time a read is reaped its lines are on
//! their way.

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

/// A simulated tier's timing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TierTiming {
    /// Nanoseconds from submission to completion, at the least.
    pub latency_ns: u32,
    /// Link bandwidth in MB/s (10^6 bytes); 0: unlimited.
    pub mb_per_s: u32,
}

impl TierTiming {
    /// The usage line parse errors repeat.
    pub const FORMAT: &'static str =
        "simulated:LAT_NS[,GBPS] (e.g. simulated:1000,10: 1 µs a read, 10 GB/s)";
}

impl fmt::Display for TierTiming {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "simulated:{}", self.latency_ns)?;
        if self.mb_per_s > 0 {
            let gbps = self.mb_per_s as f64 / 1e3;
            write!(f, ",{gbps}")?;
        }
        Ok(())
    }
}

impl FromStr for TierTiming {
    type Err = String;
    /// `LAT_NS[,GBPS]`, the part after `simulated:`.
    fn from_str(s: &str) -> Result<TierTiming, String> {
        let bad = |what: &str, found: &str| {
            format!(
                "simulated tier {what}: expected {}, found {found:?}",
                Self::FORMAT
            )
        };
        let (lat, bw) = match s.split_once(',') {
            Some((l, b)) => (l.trim(), Some(b.trim())),
            None => (s.trim(), None),
        };
        let latency_ns = lat
            .parse::<u32>()
            .map_err(|_| bad("latency (whole nanoseconds)", lat))?;
        let mb_per_s = match bw {
            None => 0,
            Some(b) => match b.parse::<f64>() {
                Ok(g) if g.is_finite() && g > 0.0 && g * 1e3 < u32::MAX as f64 => {
                    (g * 1e3).round().max(1.0) as u32
                }
                _ => return Err(bad("bandwidth (GB/s, above 0)", b)),
            },
        };
        Ok(TierTiming {
            latency_ns,
            mb_per_s,
        })
    }
}

/// Nanoseconds since the first call in this process: one clock for every
/// reader, so the shared link's schedule means the same to all of them.
pub(crate) fn now_ns() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// What one reading of [`now_ns`] costs, measured once (~20-30 ns). The
/// simulation itself reads the clock at submit and spins on it until a read
/// is due, so it charges that against the latency it adds: otherwise a
/// 300 ns tier would measure ~330.
fn clock_cost_ns() -> u64 {
    static COST: OnceLock<u64> = OnceLock::new();
    *COST.get_or_init(|| {
        let start = now_ns();
        let mut last = start;
        for _ in 0..1000 {
            last = now_ns();
        }
        (last - start) / 1000
    })
}

/// When a read of `len` bytes submitted at `now` completes: after the
/// latency, and after the link has moved it behind every byte already
/// scheduled on it (`link` holds the time the link next falls idle).
pub(crate) fn due_ns(timing: TierTiming, link: &AtomicU64, now: u64, len: u32) -> u64 {
    let latency = u64::from(timing.latency_ns).saturating_sub(clock_cost_ns());
    let ready = now + latency;
    if timing.mb_per_s == 0 {
        return ready;
    }
    // bytes / (MB/s) = µs; * 1000 = ns.
    let transfer = (u64::from(len) * 1000).div_ceil(u64::from(timing.mb_per_s));
    let mut idle = link.load(Ordering::Relaxed);
    let end = loop {
        let end = idle.max(now) + transfer;
        match link.compare_exchange_weak(idle, end, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => break end,
            Err(seen) => idle = seen,
        }
    };
    ready.max(end)
}

/// Asks the CPU to bring `bytes` into its caches (a hint: no fault, no
/// effect on correctness). One prefetch a 64-byte line.
pub(crate) fn prefetch(bytes: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        for line in (0..bytes.len()).step_by(64) {
            // SAFETY: a prefetch never faults and reads nothing into the
            // program; the address is inside `bytes` anyway.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(bytes.as_ptr().add(line).cast()) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = bytes;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timings_parse_print_and_refuse() {
        let t: TierTiming = "1000,10".parse().unwrap();
        assert_eq!(
            t,
            TierTiming {
                latency_ns: 1000,
                mb_per_s: 10_000
            }
        );
        assert_eq!(t.to_string(), "simulated:1000,10");
        let t: TierTiming = "300".parse().unwrap();
        assert_eq!((t.latency_ns, t.mb_per_s), (300, 0));
        assert_eq!(t.to_string(), "simulated:300");
        assert_eq!(
            "3000,2.5".parse::<TierTiming>().unwrap().to_string(),
            "simulated:3000,2.5"
        );
        for bad in ["", "1us", "1000,0", "1000,-3", "1000,fast", "-5"] {
            let e = bad.parse::<TierTiming>().unwrap_err();
            assert!(e.contains("simulated:LAT_NS"), "{bad}: {e}");
        }
    }

    /// The link serialises transfers: reads submitted together complete one
    /// transfer time apart, and never before the latency.
    #[test]
    fn the_link_spaces_reads_by_their_transfer_time() {
        let t = TierTiming {
            latency_ns: 500,
            mb_per_s: 1000, // 1 byte a ns
        };
        let c = clock_cost_ns();
        assert!(c < 500, "a clock read costs {c} ns");
        let link = AtomicU64::new(0);
        let now = 10_000;
        let dues: Vec<u64> = (0..4).map(|_| due_ns(t, &link, now, 200)).collect();
        assert_eq!(dues, vec![10_500 - c, 10_500 - c, 10_600, 10_800]);
        // An idle link: only the latency.
        assert_eq!(due_ns(t, &link, 1_000_000, 200), 1_000_500 - c);
        let unlimited = TierTiming { mb_per_s: 0, ..t };
        assert_eq!(due_ns(unlimited, &link, 5, 1 << 30), 505 - c);
    }
}
