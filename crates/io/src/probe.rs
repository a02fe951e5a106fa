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
    pub backend: Backend,
    pub seed: u64,
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
}

fn xorshift(s: &mut u64) -> u64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    *s
}

fn one_thread(path: &Path, p: &ProbeParams, seed: u64) -> Result<(u64, Vec<f64>, String), IoError> {
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
    let t0 = Instant::now();
    let mut lat = Vec::new();
    let mut done: Vec<Completion> = Vec::new();
    let mut reads = 0u64;
    while t0.elapsed() < p.duration {
        done.clear();
        reader.reap(1, &mut done)?;
        for c in &done {
            if let Err(e) = &c.result {
                return Err(IoError::Unsupported {
                    backend: "probe",
                    path: path.to_path_buf(),
                    reason: format!("a probe read failed: {e}"),
                });
            }
            lat.push(start[c.slot as usize].elapsed().as_secs_f64() * 1e6);
            reads += 1;
            issue(&mut *reader, c.slot, &mut start)?;
        }
        reader.submit()?;
    }
    done.clear();
    while reader.in_flight() > 0 {
        reader.reap(reader.in_flight(), &mut done)?;
    }
    Ok((reads, lat, reader.name().to_string()))
}

/// Measures random reads of `p.block_bytes` at depth `p.depth` per thread.
pub fn random_reads(path: &Path, p: &ProbeParams) -> Result<ProbeResult, IoError> {
    let t0 = Instant::now();
    let results: Vec<_> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..p.threads.max(1))
            .map(|t| s.spawn(move || one_thread(path, p, p.seed.wrapping_add(t as u64 * 7919))))
            .collect();
        hs.into_iter()
            .map(|h| h.join().expect("probe thread"))
            .collect()
    });
    let secs = t0.elapsed().as_secs_f64();
    let mut reads = 0;
    let mut lat = Vec::new();
    let mut backend = String::new();
    for r in results {
        let (n, l, b) = r?;
        reads += n;
        lat.extend(l);
        backend = b;
    }
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
    })
}
