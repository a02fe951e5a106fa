//! The device probe counts reads only after its warm-up, and its per-interval
//! rates account for every counted read.

use std::io::Write;
use std::time::Duration;
use stratavec_io::probe::{random_reads, ProbeParams};
use stratavec_io::Backend;

fn file_of(blocks: usize) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().expect("temp file");
    let block: Vec<u8> = (0..4096u32).map(|i| (i * 31 % 251) as u8).collect();
    for _ in 0..blocks {
        f.write_all(&block).expect("write");
    }
    f.flush().expect("flush");
    f
}

#[test]
fn intervals_add_up_to_the_counted_reads() {
    let f = file_of(256);
    let p = ProbeParams {
        warmup: Duration::from_millis(50),
        interval: Some(Duration::from_millis(100)),
        // The RAM backend: the same probe loop without depending on the
        // device's speed or O_DIRECT support.
        backend: Backend::Ram,
        ..ProbeParams::new(4096, 4, 2, Duration::from_millis(250))
    };
    let r = random_reads(f.path(), &p).expect("probe");
    assert_eq!(r.per_interval.len(), 3, "250 ms in 100 ms intervals");
    assert!(r.reads > 0);
    // The last interval is 50 ms long: its rate is per its own length.
    let counted: f64 = r
        .per_interval
        .iter()
        .zip([0.1, 0.1, 0.05])
        .map(|(rate, len)| rate * len)
        .sum();
    assert!(
        (counted - r.reads as f64).abs() < 0.5,
        "intervals hold {counted} reads, the probe counted {}",
        r.reads
    );
    assert!((r.reads_per_s - r.reads as f64 / 0.25).abs() < 1e-6);
}

#[test]
fn no_intervals_unless_asked() {
    let f = file_of(16);
    let p = ProbeParams {
        backend: Backend::Ram,
        ..ProbeParams::new(4096, 2, 1, Duration::from_millis(30))
    };
    let r = random_reads(f.path(), &p).expect("probe");
    // (How many reads 30 ms holds depends on the machine's load: not checked.)
    assert!(r.per_interval.is_empty());
    assert_eq!(r.block_bytes, 4096);
}
