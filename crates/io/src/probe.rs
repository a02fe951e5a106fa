//! The device ceiling: random aligned reads of one size at a fixed queue
//! depth, as fio's `randread` does, through the same readers search uses.
//! Every throughput plot draws QPS <= (reads/s at this depth) / (reads per
//! query), so this is measured on the same file system as the index.

use crate::{open_reader, Backend, BlockReader, Completion, IoError, ReadRequest, ReaderOptions};
use std::path::Path;
use std::time::{Duration, Instant};

#[derive(Clone, Debug)]
pub struct ProbeParams {
    pub block_bytes: usize,
    /// Reads kept in flight per thread.
    pub depth: usize,
    pub threads: usize,
    pub duration: Duration,
    /// Read before `duration` starts and not counted: a virtual disk gives a
    /// burst after idling, and the rate it sustains under a search's load is
    /// the one after it (issue #25 measured 94k reads/s for 2 s, 61-82k
    /// sustained).
    pub warmup: Duration,
    /// Reads completed in each interval of this length are counted apart
    /// (`ProbeResult::per_interval`), so a report shows whether the rate
    /// held; `None`: not counted.
    pub interval: Option<Duration>,
    pub backend: Backend,
    pub seed: u64,
}

impl ProbeParams {
    /// `depth` reads in flight per thread for `duration`, no warm-up, no
    /// intervals, the default backend.
    pub fn new(block_bytes: usize, depth: usize, threads: usize, duration: Duration) -> Self {
        ProbeParams {
            block_bytes,
            depth,
            threads,
            duration,
            warmup: Duration::ZERO,
            interval: None,
            backend: Backend::Auto,
            seed: 7,
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct ProbeResult {
    pub block_bytes: usize,
    pub depth: usize,
    pub threads: usize,
    pub reads: u64,
    pub seconds: f64,
    pub reads_per_s: f64,
    pub mb_per_s: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub backend: String,
    /// Reads/s in each `ProbeParams::interval` after the warm-up (all
    /// threads summed); empty without intervals.
    pub per_interval: Vec<f64>,
}

/// What one thread counted: reads and latencies after the warm-up, and
/// reads per interval.
struct ThreadCount {
    reads: u64,
    lat: Vec<f64>,
    per_interval: Vec<u64>,
    backend: String,
}

fn xorshift(s: &mut u64) -> u64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    *s
}

fn one_thread(path: &Path, p: &ProbeParams, seed: u64) -> Result<ThreadCount, IoError> {
    let mut reader = open_reader(
        path,
        &ReaderOptions {
            backend: p.backend,
            slots: p.depth,
            slot_bytes: p.block_bytes,
            ..Default::default()
        },
    )?;
    let size = std::fs::metadata(path)
        .map_err(|e| IoError::File {
            op: "stat",
            path: path.to_path_buf(),
            cause: e,
        })?
        .len();
    let blocks = (size / p.block_bytes as u64).max(1);
    let mut rng = seed | 1;
    let mut start = vec![Instant::now(); p.depth];
    let mut issue = |reader: &mut dyn BlockReader, slot: u32, start: &mut [Instant]| {
        let offset = (xorshift(&mut rng) % blocks) * p.block_bytes as u64;
        start[slot as usize] = Instant::now();
        reader.push(ReadRequest {
            offset,
            len: p.block_bytes as u32,
            slot,
            tag: slot as u64,
        })
    };
    for slot in 0..p.depth as u32 {
        issue(&mut *reader, slot, &mut start)?;
    }
    reader.submit()?;
    let t_warm = Instant::now();
    let t0 = t_warm + p.warmup;
    let mut lat = Vec::new();
    let mut done: Vec<Completion> = Vec::new();
    let mut reads = 0u64;
    let slots = p.interval.map_or(0, |i| {
        (p.duration.as_secs_f64() / i.as_secs_f64()).ceil() as usize
    });
    let mut per_interval = vec![0u64; slots];
    while t_warm.elapsed() < p.warmup + p.duration {
        done.clear();
        reader.reap(1, &mut done)?;
        let now = Instant::now();
        // Completions of the warm-up (and any reaped after the end) are
        // re-issued or drained, not counted.
        let counted = now >= t0 && now - t0 < p.duration;
        let bucket = match p.interval {
            Some(i) if counted => Some(((now - t0).as_secs_f64() / i.as_secs_f64()) as usize),
            _ => None,
        };
        for c in &done {
            if let Err(e) = &c.result {
                return Err(IoError::Unsupported {
                    backend: "probe",
                    path: path.to_path_buf(),
                    reason: format!("a probe read failed: {e}"),
                });
            }
            if counted {
                lat.push((now - start[c.slot as usize]).as_secs_f64() * 1e6);
                reads += 1;
                if let Some(b) = bucket.and_then(|b| per_interval.get_mut(b)) {
                    *b += 1;
                }
            }
            issue(&mut *reader, c.slot, &mut start)?;
        }
        reader.submit()?;
    }
    done.clear();
    while reader.in_flight() > 0 {
        reader.reap(reader.in_flight(), &mut done)?;
    }
    Ok(ThreadCount {
        reads,
        lat,
        per_interval,
        backend: reader.name().to_string(),
    })
}

/// Measures random reads of `p.block_bytes` at depth `p.depth` per thread,
/// for `p.duration` after `p.warmup`.
pub fn random_reads(path: &Path, p: &ProbeParams) -> Result<ProbeResult, IoError> {
    let results: Vec<_> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..p.threads.max(1))
            .map(|t| s.spawn(move || one_thread(path, p, p.seed.wrapping_add(t as u64 * 7919))))
            .collect();
        hs.into_iter()
            .map(|h| h.join().expect("probe thread"))
            .collect()
    });
    // Every thread counts for exactly `duration` after its warm-up; thread
    // start-up is not in it.
    let secs = p.duration.as_secs_f64();
    let mut reads = 0;
    let mut lat = Vec::new();
    let mut backend = String::new();
    let mut per_interval: Vec<u64> = Vec::new();
    for r in results {
        let t = r?;
        reads += t.reads;
        lat.extend(t.lat);
        backend = t.backend;
        per_interval.resize(per_interval.len().max(t.per_interval.len()), 0);
        for (sum, n) in per_interval.iter_mut().zip(t.per_interval) {
            *sum += n;
        }
    }
    let per_interval = match p.interval {
        Some(i) => {
            // The last interval may be cut short by the end of `duration`.
            let len = |k: usize| {
                let start = k as f64 * i.as_secs_f64();
                (secs - start).min(i.as_secs_f64())
            };
            per_interval
                .iter()
                .enumerate()
                .map(|(k, &n)| n as f64 / len(k))
                .collect()
        }
        None => Vec::new(),
    };
    lat.sort_by(|a, b| a.total_cmp(b));
    let pct = |q: f64| {
        lat.get(((lat.len() as f64 - 1.0) * q) as usize)
            .copied()
            .unwrap_or(0.0)
    };
    Ok(ProbeResult {
        block_bytes: p.block_bytes,
        depth: p.depth,
        threads: p.threads.max(1),
        reads,
        seconds: secs,
        reads_per_s: reads as f64 / secs,
        mb_per_s: reads as f64 * p.block_bytes as f64 / secs / 1e6,
        p50_us: pct(0.5),
        p99_us: pct(0.99),
        backend,
        per_interval,
    })
}
