use anyhow::{Context, Result};
use serde::Serialize;
use std::path::PathBuf;
use std::time::Duration;
use stratavec_io::probe::{random_reads, ProbeParams};
use stratavec_io::Backend;

#[derive(clap::Args)]
pub struct Args {
    /// File to read (e.g. an index's pages.bin). Without it a scratch file
    /// of --file-mb is written in --dir and removed afterwards.
    #[arg(long)]
    file: Option<PathBuf>,
    /// Directory for the scratch file (default: current directory).
    #[arg(long, default_value = ".")]
    dir: PathBuf,
    /// Size of the scratch file in MiB.
    #[arg(long, default_value_t = 1024)]
    file_mb: usize,
    /// Read sizes in bytes, one measurement each.
    #[arg(long, value_delimiter = ',', default_values_t = [4096, 8192, 16384])]
    sizes: Vec<usize>,
    /// Queue depths (reads in flight per thread), one measurement each.
    #[arg(long, value_delimiter = ',', default_values_t = [1, 4, 16, 64, 128])]
    depths: Vec<usize>,
    /// Reader threads (each with its own ring and depth).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Seconds per measurement.
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
    /// I/O backend: auto, io_uring, pread, buffered, ram; the memory tiers
    /// mmap (the file mapped, local memory) and simulated:LAT_NS[,GBPS]
    /// (mmap held to a tier's latency and bandwidth).
    #[arg(long, default_value = "auto")]
    io: Backend,
    /// One JSON object per line instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Row {
    block_bytes: usize,
    depth: usize,
    threads: usize,
    reads_per_s: f64,
    mb_per_s: f64,
    p50_us: f64,
    p99_us: f64,
    backend: String,
    file: String,
}

/// A scratch file of incompressible bytes, removed on drop.
struct Scratch(PathBuf);
impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn make_scratch(dir: &std::path::Path, mb: usize) -> Result<Scratch> {
    use std::io::Write;
    let path = dir.join(format!(".stratavec-bench-io-{}", std::process::id()));
    let scratch = Scratch(path.clone());
    let mut f = std::io::BufWriter::new(
        std::fs::File::create(&path).with_context(|| format!("create {}", path.display()))?,
    );
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut block = vec![0u8; 1 << 20];
    for _ in 0..mb {
        for c in block.chunks_exact_mut(8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            c.copy_from_slice(&x.to_le_bytes());
        }
        f.write_all(&block)?;
    }
    f.into_inner()?.sync_all()?;
    Ok(scratch)
}

pub fn run(a: Args) -> Result<()> {
    let scratch;
    let path = match &a.file {
        Some(p) => p.clone(),
        None => {
            scratch = make_scratch(&a.dir, a.file_mb)?;
            scratch.0.clone()
        }
    };
    if !a.json {
        println!(
            "{:>7} {:>6} {:>8} {:>10} {:>8} {:>8} {:>8}  backend",
            "block", "depth", "threads", "reads/s", "MB/s", "p50_us", "p99_us"
        );
    }
    for &size in &a.sizes {
        for &depth in &a.depths {
            let r = random_reads(
                &path,
                &ProbeParams {
                    backend: a.io,
                    seed: 42,
                    ..ProbeParams::new(size, depth, a.threads, Duration::from_secs_f64(a.seconds))
                },
            )?;
            let row = Row {
                block_bytes: size,
                depth,
                threads: r.threads,
                reads_per_s: r.reads_per_s,
                mb_per_s: r.mb_per_s,
                p50_us: r.p50_us,
                p99_us: r.p99_us,
                backend: r.backend,
                file: path.display().to_string(),
            };
            if a.json {
                println!("{}", serde_json::to_string(&row)?);
            } else {
                println!(
                    "{:>7} {:>6} {:>8} {:>10.0} {:>8.1} {:>8.0} {:>8.0}  {}",
                    row.block_bytes,
                    row.depth,
                    row.threads,
                    row.reads_per_s,
                    row.mb_per_s,
                    row.p50_us,
                    row.p99_us,
                    row.backend
                );
            }
        }
    }
    Ok(())
}
