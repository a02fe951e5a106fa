//! `STRATAVEC_IO` overrides `Backend::Auto` and nothing else. Its own test
//! binary (own process) because it changes the environment.

use std::io::Write;

use stratavec_io::{open_reader, Backend, IoError, ReaderOptions};

#[test]
fn env_var_overrides_auto_only() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let path = dir.path().join("pages.bin");
    std::fs::File::create(&path)
        .unwrap()
        .write_all(&[7u8; 10000])
        .unwrap();
    let auto = ReaderOptions::default();
    let explicit = ReaderOptions {
        backend: Backend::Buffered,
        ..Default::default()
    };

    // Single test in this binary, so no other thread reads the environment.
    std::env::set_var("STRATAVEC_IO", "ram");
    assert_eq!(open_reader(&path, &auto).unwrap().name(), "ram");
    assert_eq!(
        open_reader(&path, &explicit).unwrap().name(),
        "pread+buffered"
    );

    std::env::set_var("STRATAVEC_IO", "buffered");
    assert_eq!(open_reader(&path, &auto).unwrap().name(), "pread+buffered");

    std::env::set_var("STRATAVEC_IO", "nonsense");
    let e = open_reader(&path, &auto)
        .err()
        .expect("bad value must be refused");
    assert!(matches!(e, IoError::InvalidOptions { .. }));
    let msg = e.to_string();
    assert!(
        msg.contains("STRATAVEC_IO") && msg.contains("\"nonsense\""),
        "{msg}"
    );
    assert!(
        msg.contains("auto|io_uring|pread|buffered|ram|mmap|simulated:LAT_NS[,GBPS]"),
        "{msg}"
    );

    // Empty means unset.
    std::env::set_var("STRATAVEC_IO", "");
    assert_ne!(open_reader(&path, &auto).unwrap().name(), "ram");

    std::env::set_var("STRATAVEC_IO", "auto");
    let name = open_reader(&path, &auto).unwrap().name();
    eprintln!("auto picks {name} here");
    std::env::remove_var("STRATAVEC_IO");
    assert_eq!(open_reader(&path, &auto).unwrap().name(), name);
}
