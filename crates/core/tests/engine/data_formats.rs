//! Vector file formats: round trips for every format and dtype, and one test
//! per kind of bad input checking that the message names the file and the
//! expected and found values.

use std::path::{Path, PathBuf};

use stratavec::data::{
    open, write_bvecs, write_fbin, write_fvecs, write_i8bin, write_npy_f32, write_npy_i8,
    write_npy_u8, write_u8bin, DType, DataError, Elems, Format, VectorFile, VectorRows,
};

fn f32_data(n: usize, d: usize) -> Vec<f32> {
    (0..n * d).map(|i| i as f32 * 0.5 - 3.0).collect()
}

fn u8_data(n: usize, d: usize) -> Vec<u8> {
    (0..n * d).map(|i| (i * 37 % 256) as u8).collect()
}

fn i8_data(n: usize, d: usize) -> Vec<i8> {
    (0..n * d).map(|i| (i * 37 % 256) as u8 as i8).collect()
}

fn err_of(r: Result<VectorFile, DataError>) -> String {
    match r {
        Ok(f) => panic!("expected an error, opened {f:?}"),
        Err(e) => e.to_string(),
    }
}

fn assert_mentions(msg: &str, parts: &[&str]) {
    for p in parts {
        assert!(msg.contains(p), "message {msg:?} should mention {p:?}");
    }
}

fn write_raw(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn no_tmp_left(dir: &Path) {
    for e in std::fs::read_dir(dir).unwrap() {
        let name = e.unwrap().file_name();
        assert!(
            !name.to_string_lossy().ends_with(".tmp"),
            "leftover {name:?}"
        );
    }
}

#[test]
fn round_trip_f32_formats() {
    let dir = tempfile::tempdir().unwrap();
    let (n, d) = (7, 5);
    let data = f32_data(n, d);
    let cases: [(&str, Format, bool); 3] = [
        ("a.fbin", Format::Fbin, true),
        ("a.fvecs", Format::Fvecs, false),
        ("a.npy", Format::Npy, true),
    ];
    for (name, format, contiguous) in cases {
        let p = dir.path().join(name);
        match format {
            Format::Fbin => write_fbin(&p, n, d, &data).unwrap(),
            Format::Fvecs => write_fvecs(&p, n, d, &data).unwrap(),
            _ => write_npy_f32(&p, n, d, &data).unwrap(),
        }
        let f = open(&p).unwrap();
        assert_eq!(
            (f.format(), f.n(), f.dim(), f.dtype()),
            (format, n, d, DType::F32)
        );
        assert!(f.is_zero_copy(), "{name}");
        assert_eq!(f.to_f32_vec(), data, "{name}");
        for i in 0..n {
            assert_eq!(f.row(i), Elems::F32(&data[i * d..(i + 1) * d]));
            assert!(matches!(f.row_f32(i), std::borrow::Cow::Borrowed(_)));
        }
        assert_eq!(f.as_f32().is_some(), contiguous, "{name}");
        if contiguous {
            assert_eq!(f.as_f32().unwrap(), &data[..]);
            assert_eq!(f.vectors().unwrap().n(), n);
        }
        assert!(f.as_u8().is_none() && f.as_i8().is_none());
        f.check_finite().unwrap();
    }
    no_tmp_left(dir.path());
}

#[test]
fn round_trip_u8_i8_formats() {
    let dir = tempfile::tempdir().unwrap();
    let (n, d) = (6, 3);
    let (u, s) = (u8_data(n, d), i8_data(n, d));
    write_u8bin(dir.path().join("a.u8bin"), n, d, &u).unwrap();
    write_bvecs(dir.path().join("a.bvecs"), n, d, &u).unwrap();
    write_npy_u8(dir.path().join("u.npy"), n, d, &u).unwrap();
    write_i8bin(dir.path().join("a.i8bin"), n, d, &s).unwrap();
    write_npy_i8(dir.path().join("i.npy"), n, d, &s).unwrap();
    for name in ["a.u8bin", "a.bvecs", "u.npy"] {
        let f = open(dir.path().join(name)).unwrap();
        assert_eq!((f.n(), f.dim(), f.dtype()), (n, d, DType::U8), "{name}");
        for i in 0..n {
            assert_eq!(f.row(i), Elems::U8(&u[i * d..(i + 1) * d]));
        }
        let want: Vec<f32> = u.iter().map(|&x| x as f32).collect();
        assert_eq!(f.to_f32_vec(), want);
        assert_eq!(f.as_u8().is_some(), name != "a.bvecs");
        f.check_finite().unwrap();
    }
    for name in ["a.i8bin", "i.npy"] {
        let f = open(dir.path().join(name)).unwrap();
        assert_eq!((f.n(), f.dim(), f.dtype()), (n, d, DType::I8), "{name}");
        assert_eq!(f.as_i8().unwrap(), &s[..]);
        assert_eq!(VectorRows::row(&f, 2), Elems::I8(&s[2 * d..3 * d]));
    }
    no_tmp_left(dir.path());
}

#[test]
fn rewrite_replaces_atomically() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("a.fbin");
    write_fbin(&p, 2, 2, &[1.0, 2.0, 3.0, 4.0]).unwrap();
    let old = open(&p).unwrap();
    write_fbin(&p, 1, 3, &[5.0, 6.0, 7.0]).unwrap();
    // The old map still sees the old file (rename swapped the inode).
    assert_eq!(old.as_f32().unwrap(), &[1.0, 2.0, 3.0, 4.0]);
    assert_eq!(open(&p).unwrap().as_f32().unwrap(), &[5.0, 6.0, 7.0]);
    // A rejected write leaves neither a file nor a temporary behind.
    let q = dir.path().join("b.fbin");
    let e = write_fbin(&q, 2, 3, &[1.0; 5]).unwrap_err().to_string();
    assert_mentions(&e, &["b.fbin", "data.len()", "2*3", "5"]);
    assert!(!q.exists());
    no_tmp_left(dir.path());
}

fn fbin_bytes(n: u32, d: u32, payload: usize) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&n.to_le_bytes());
    b.extend_from_slice(&d.to_le_bytes());
    b.resize(8 + payload, 0);
    b
}

#[test]
fn bin_header_errors() {
    let dir = tempfile::tempdir().unwrap();
    let dp = dir.path();
    let e = err_of(VectorFile::open(write_raw(dp, "empty.fbin", &[])));
    assert_mentions(&e, &["empty.fbin", "empty file"]);

    // Truncated: 1000 x 128 float32 = 512008 bytes but only 512000 present.
    let e = err_of(open(write_raw(
        dp,
        "base.fbin",
        &fbin_bytes(1000, 128, 512000 - 8),
    )));
    assert_mentions(
        &e,
        &["base.fbin: header says 1000 x 128 float32 = 512008 bytes, file has 512000 bytes"],
    );
    // Too long (e.g. a u8 file renamed .fbin the other way round).
    let e = err_of(open(write_raw(dp, "long.u8bin", &fbin_bytes(3, 4, 13))));
    assert_mentions(
        &e,
        &["long.u8bin", "3 x 4 uint8 = 20 bytes", "file has 21 bytes"],
    );
    // A corrupt header whose size overflows u64 is still just a mismatch.
    let e = err_of(open(write_raw(
        dp,
        "huge.fbin",
        &fbin_bytes(u32::MAX, u32::MAX, 4),
    )));
    assert_mentions(
        &e,
        &[
            "huge.fbin",
            "4294967295 x 4294967295 float32",
            "file has 12 bytes",
        ],
    );

    let e = err_of(open(write_raw(dp, "n0.fbin", &fbin_bytes(0, 4, 0))));
    assert_mentions(&e, &["n0.fbin", "`n`", "at least 1", "found 0"]);
    let e = err_of(open(write_raw(dp, "d0.i8bin", &fbin_bytes(4, 0, 0))));
    assert_mentions(&e, &["d0.i8bin", "`d`", "found 0"]);
    let e = err_of(open(write_raw(dp, "short.fbin", &[1, 0, 0])));
    assert_mentions(&e, &["short.fbin", "header", "8 bytes", "3 bytes"]);

    let e = err_of(open(write_raw(dp, "x.txt", &[1, 2, 3])));
    assert_mentions(&e, &["x.txt", "\"txt\"", ".fbin"]);
    let e = err_of(open(dp.join("missing.fbin")));
    assert_mentions(&e, &["missing.fbin", "cannot open"]);
}

fn vecs_row(d: i32, elems: &[u8]) -> Vec<u8> {
    let mut b = d.to_le_bytes().to_vec();
    b.extend_from_slice(elems);
    b
}

#[test]
fn vecs_errors() {
    let dir = tempfile::tempdir().unwrap();
    let dp = dir.path();
    // Three rows of d=2 f32, then two stray bytes.
    let mut b = [
        vecs_row(2, &[0; 8]),
        vecs_row(2, &[0; 8]),
        vecs_row(2, &[0; 8]),
    ]
    .concat();
    b.extend_from_slice(&[0, 0]);
    let e = err_of(open(write_raw(dp, "ragged.fvecs", &b)));
    assert_mentions(
        &e,
        &["ragged.fvecs", "38 bytes", "12-byte row", "2 x float32"],
    );

    // Same total size as 3 rows of d=2 bvecs (6 bytes each) but row 2 says 4.
    let b = [
        vecs_row(2, &[1, 2]),
        vecs_row(2, &[3, 4]),
        vecs_row(4, &[5, 6]),
        vecs_row(2, &[7, 8]),
    ]
    .concat();
    let e = err_of(open(write_raw(dp, "mixed.bvecs", &b)));
    assert_mentions(&e, &["mixed.bvecs", "row 2 has dimension 4, expected 2"]);

    let e = err_of(open(write_raw(dp, "neg.fvecs", &vecs_row(-3, &[]))));
    assert_mentions(&e, &["neg.fvecs", "dimension of row 0", "found -3"]);
    let e = err_of(open(write_raw(dp, "empty.bvecs", &[])));
    assert_mentions(&e, &["empty.bvecs", "empty"]);
}

/// A hand-built npy file: `header` is padded with spaces and a newline so the
/// whole preamble is `total` bytes.
fn npy_bytes(major: u8, header: &str, total: usize, data: &[u8]) -> Vec<u8> {
    let pre = if major == 1 { 10 } else { 12 };
    assert!(pre + header.len() < total, "test header does not fit");
    let hlen = total - pre;
    let mut b = b"\x93NUMPY".to_vec();
    b.extend_from_slice(&[major, 0]);
    if major == 1 {
        b.extend_from_slice(&(hlen as u16).to_le_bytes());
    } else {
        b.extend_from_slice(&(hlen as u32).to_le_bytes());
    }
    b.extend_from_slice(header.as_bytes());
    b.resize(total - 1, b' ');
    b.push(b'\n');
    b.extend_from_slice(data);
    b
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

#[test]
fn npy_versions_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    let data = f32_data(3, 2);
    let h = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }";
    for (major, total) in [(1u8, 128), (2, 192), (3, 128)] {
        let p = write_raw(
            dir.path(),
            &format!("v{major}.npy"),
            &npy_bytes(major, h, total, &f32_bytes(&data)),
        );
        let f = open(&p).unwrap();
        assert!(f.is_zero_copy());
        assert_eq!(f.as_f32().unwrap(), &data[..], "v{major}");
    }
    // Version 3.0 headers are UTF-8; an invalid sequence is a header error.
    let mut b = npy_bytes(3, h, 128, &f32_bytes(&data));
    b[100] = 0xff;
    let e = err_of(open(write_raw(dir.path(), "bad3.npy", &b)));
    assert_mentions(&e, &["bad3.npy", "`header`", "UTF-8"]);
    // '<u1' / '<i1' spellings and Python-2 longs.
    let p = write_raw(
        dir.path(),
        "i1.npy",
        &npy_bytes(
            1,
            "{'descr': '<i1', 'fortran_order': False, 'shape': (1L, 3L), }",
            128,
            &[255, 0, 1],
        ),
    );
    assert_eq!(open(&p).unwrap().as_i8().unwrap(), &[-1, 0, 1]);
}

#[test]
fn npy_misaligned_data_is_copied() {
    let dir = tempfile::tempdir().unwrap();
    let data = f32_data(2, 3);
    // A preamble of 127 bytes puts the data at an odd offset.
    let h = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
    let p = write_raw(
        dir.path(),
        "odd.npy",
        &npy_bytes(1, h, 127, &f32_bytes(&data)),
    );
    let f = open(&p).unwrap();
    assert!(!f.is_zero_copy());
    assert_eq!(f.as_f32().unwrap(), &data[..]);
    assert_eq!(f.row(1), Elems::F32(&data[3..]));
}

#[test]
fn npy_errors() {
    let dir = tempfile::tempdir().unwrap();
    let dp = dir.path();
    let ok_data = f32_bytes(&f32_data(3, 2));
    let good = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }";
    let case = |name: &str, bytes: Vec<u8>, parts: &[&str]| {
        let e = err_of(open(write_raw(dp, name, &bytes)));
        assert_mentions(&e, &[name]);
        assert_mentions(&e, parts);
    };
    case(
        "magic.npy",
        b"PK\x03\x04 not numpy".to_vec(),
        &["`magic`", "\\x93NUMPY", "PK"],
    );
    let mut v4 = npy_bytes(1, good, 128, &ok_data);
    v4[6] = 4;
    case("v4.npy", v4, &["`version`", "1.0, 2.0 or 3.0", "found 4.0"]);
    case(
        "fortran.npy",
        npy_bytes(
            1,
            "{'descr': '<f4', 'fortran_order': True, 'shape': (3, 2), }",
            128,
            &ok_data,
        ),
        &["`fortran_order`", "False", "found True"],
    );
    case(
        "f8.npy",
        npy_bytes(
            1,
            "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 1), }",
            128,
            &ok_data,
        ),
        &["`descr`", "'<f4'", "found '<f8'"],
    );
    case(
        "oned.npy",
        npy_bytes(
            1,
            "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }",
            128,
            &ok_data,
        ),
        &["`shape`", "2 dimensions", "found (6)"],
    );
    case(
        "zero.npy",
        npy_bytes(
            1,
            "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 2), }",
            128,
            &[],
        ),
        &["`shape`", "n >= 1"],
    );
    case(
        "nodescr.npy",
        npy_bytes(
            1,
            "{'fortran_order': False, 'shape': (3, 2), }",
            128,
            &ok_data,
        ),
        &["`descr`", "missing"],
    );
    case(
        "garbled.npy",
        npy_bytes(1, "{'descr': '<f4', 'shape': (3, 2", 128, &ok_data),
        &["`header`", "dict"],
    );
    case(
        "short.npy",
        npy_bytes(1, good, 128, &ok_data[..20]),
        &["3 x 2 float32 = 152 bytes", "file has 148 bytes"],
    );
    let mut hl = npy_bytes(1, good, 128, &[]);
    hl[8] = 0xff;
    case("hlen.npy", hl, &["`header length`", "found 255"]);
}

#[test]
fn finite_and_dimension_checks() {
    let dir = tempfile::tempdir().unwrap();
    let (n, d) = (40, 8);
    for (bad, word) in [
        (f32::NAN, "NaN"),
        (f32::INFINITY, "inf"),
        (f32::NEG_INFINITY, "-inf"),
    ] {
        let mut data = f32_data(n, d);
        data[17 * d + 3] = bad;
        data[30 * d + 1] = bad; // a later one must not be the one reported
        for name in ["base.fbin", "base.fvecs"] {
            let p = dir.path().join(name);
            if name.ends_with("fbin") {
                write_fbin(&p, n, d, &data).unwrap();
            } else {
                write_fvecs(&p, n, d, &data).unwrap();
            }
            let e = open(&p).unwrap().check_finite().unwrap_err().to_string();
            assert_mentions(&e, &[&format!("{name}: row 17, component 3 is {word}")]);
        }
    }
    let p = dir.path().join("query.fbin");
    write_fbin(&p, 2, 96, &vec![0.0; 192]).unwrap();
    let e = open(&p)
        .unwrap()
        .check_dim(128, "index")
        .unwrap_err()
        .to_string();
    assert_mentions(
        &e,
        &["query.fbin: dimension 96 does not match the index dimension 128"],
    );
    open(&p).unwrap().check_dim(96, "index").unwrap();
}
