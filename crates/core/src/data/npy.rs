//! NumPy `.npy` files (format versions 1.0, 2.0 and 3.0), restricted to what
//! a vector set is: a 2-D, C-ordered array of `<f4`, `u1` or `i1`.
//!
//! Layout: magic `\x93NUMPY`, major and minor version bytes, header length
//! (u16 in 1.0, u32 in 2.0/3.0), then a Python dict literal such as
//! `{'descr': '<f4', 'fortran_order': False, 'shape': (1000, 128), }` padded
//! with spaces and a newline so the data starts on a 64-byte boundary (numpy
//! has done so since 1.14; older writers used 16, still f32-aligned). 3.0 only
//! differs in allowing UTF-8 in the header.

use std::io::Write;
use std::path::Path;

use super::atomic::{check_shape, put_f32s, put_i8s, write_atomic};
use super::open::Layout;
use super::{DType, DataError};

const MAGIC: &[u8] = b"\x93NUMPY";
/// What a good header looks like, shown when the header does not parse.
const HEADER_EXAMPLE: &str =
    "a dict literal like {'descr': '<f4', 'fortran_order': False, 'shape': (n, d), }";

pub(crate) fn parse(path: &Path, bytes: &[u8]) -> Result<Layout, DataError> {
    if bytes.len() < 10 || &bytes[..6] != MAGIC {
        let shown: String = bytes
            .iter()
            .take(6)
            .map(|&b| b.escape_ascii().to_string())
            .collect();
        return Err(DataError::invalid(
            path,
            "magic",
            "\\x93NUMPY",
            format!("\"{shown}\""),
        ));
    }
    let (major, minor) = (bytes[6], bytes[7]);
    if !(1..=3).contains(&major) || minor != 0 {
        return Err(DataError::invalid(
            path,
            "version",
            "1.0, 2.0 or 3.0",
            format!("{major}.{minor}"),
        ));
    }
    let (header_len, start) = if major == 1 {
        (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10)
    } else {
        if bytes.len() < 12 {
            return Err(DataError::invalid(
                path,
                "header length",
                "a u32 at bytes 8..12",
                format!("a file of {} bytes", bytes.len()),
            ));
        }
        (
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
            12,
        )
    };
    let data_offset = start + header_len;
    if data_offset > bytes.len() {
        return Err(DataError::invalid(
            path,
            "header length",
            format!(
                "at most {} (the bytes after the preamble)",
                bytes.len() - start
            ),
            header_len,
        ));
    }
    let raw = &bytes[start..data_offset];
    // 1.0/2.0 headers are latin-1, 3.0 headers UTF-8.
    let text: String = if major == 3 {
        std::str::from_utf8(raw)
            .map_err(|e| DataError::invalid(path, "header", "UTF-8 text", e))?
            .to_string()
    } else {
        raw.iter().map(|&b| b as char).collect()
    };
    let header = parse_header(&text)
        .ok_or_else(|| DataError::invalid(path, "header", HEADER_EXAMPLE, quote(&text)))?;

    let descr = header.descr.ok_or_else(|| missing(path, "descr"))?;
    let dtype = match descr.as_str() {
        "<f4" => DType::F32,
        "|u1" | "<u1" => DType::U8,
        "|i1" | "<i1" => DType::I8,
        _ => {
            return Err(DataError::invalid(
                path,
                "descr",
                "'<f4', '|u1' or '|i1' (little-endian float32, uint8, int8)",
                format!("'{descr}'"),
            ))
        }
    };
    match header.fortran_order {
        Some(false) => {}
        Some(true) => {
            return Err(DataError::invalid(
                path,
                "fortran_order",
                "False (C order; save with np.ascontiguousarray)",
                "True",
            ))
        }
        None => return Err(missing(path, "fortran_order")),
    }
    let shape = header.shape.ok_or_else(|| missing(path, "shape"))?;
    let shown = format!("{shape:?}").replace('[', "(").replace(']', ")");
    let (n, d) = match shape[..] {
        [n, d] if n > 0 && d > 0 => (n, d),
        [_, _] => {
            return Err(DataError::invalid(
                path,
                "shape",
                "n >= 1 and d >= 1",
                shown,
            ))
        }
        _ => {
            return Err(DataError::invalid(
                path,
                "shape",
                "2 dimensions (n, d)",
                shown,
            ))
        }
    };
    let expected = data_offset as u128 + n as u128 * d as u128 * dtype.size() as u128;
    if expected != bytes.len() as u128 {
        return Err(DataError::SizeMismatch {
            path: path.to_path_buf(),
            n,
            dim: d,
            dtype: dtype.long_name(),
            expected,
            found: bytes.len() as u64,
        });
    }
    Ok(Layout::contiguous(
        dtype,
        n as usize,
        d as usize,
        data_offset,
    ))
}

fn missing(path: &Path, field: &'static str) -> DataError {
    DataError::invalid(path, field, "present in the header", "missing")
}

fn quote(text: &str) -> String {
    let t: String = text.trim_end().chars().take(200).collect();
    format!("{t:?}")
}

#[derive(Debug, Default, PartialEq)]
struct Header {
    descr: Option<String>,
    fortran_order: Option<bool>,
    shape: Option<Vec<u64>>,
}

/// Parses the subset of Python literal syntax numpy writes: a dict with
/// string keys whose values are strings, True/False or tuples of integers.
/// Unknown keys are an error too, since they mean a format we do not know.
fn parse_header(text: &str) -> Option<Header> {
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
    };
    let mut h = Header::default();
    p.expect(b'{')?;
    loop {
        if p.eat(b'}') {
            break;
        }
        let key = p.string()?;
        p.expect(b':')?;
        match key.as_str() {
            "descr" => h.descr = Some(p.string()?),
            "fortran_order" => h.fortran_order = Some(p.boolean()?),
            "shape" => h.shape = Some(p.tuple()?),
            _ => return None,
        }
        if !p.eat(b',') {
            p.expect(b'}')?;
            break;
        }
    }
    p.skip_ws();
    (p.i == p.s.len()).then_some(h)
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn skip_ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.skip_ws();
        let hit = self.s.get(self.i) == Some(&c);
        self.i += hit as usize;
        hit
    }

    fn expect(&mut self, c: u8) -> Option<()> {
        self.eat(c).then_some(())
    }

    fn string(&mut self) -> Option<String> {
        self.skip_ws();
        let q = *self.s.get(self.i).filter(|&&c| c == b'\'' || c == b'"')?;
        let start = self.i + 1;
        let len = self.s[start..].iter().position(|&c| c == q)?;
        self.i = start + len + 1;
        String::from_utf8(self.s[start..start + len].to_vec()).ok()
    }

    fn boolean(&mut self) -> Option<bool> {
        self.skip_ws();
        for (word, v) in [(&b"True"[..], true), (&b"False"[..], false)] {
            if self.s[self.i..].starts_with(word) {
                self.i += word.len();
                return Some(v);
            }
        }
        None
    }

    fn int(&mut self) -> Option<u64> {
        self.skip_ws();
        let start = self.i;
        while self.i < self.s.len() && self.s[self.i].is_ascii_digit() {
            self.i += 1;
        }
        let v = std::str::from_utf8(&self.s[start..self.i])
            .ok()?
            .parse()
            .ok()?;
        // Python 2 era numpy wrote longs as `1000L`.
        self.eat(b'L');
        Some(v)
    }

    /// `()`, `(5,)`, `(5, 3)`, `(5, 3,)`.
    fn tuple(&mut self) -> Option<Vec<u64>> {
        self.expect(b'(')?;
        let mut v = Vec::new();
        loop {
            if self.eat(b')') {
                return Some(v);
            }
            v.push(self.int()?);
            if !self.eat(b',') {
                self.expect(b')')?;
                return Some(v);
            }
        }
    }
}

/// The bytes of a version-1.0 header (or 2.0 if the dict is too long for a
/// u16 length), padded so the data starts at a multiple of 64.
pub(crate) fn header_bytes(descr: &str, n: usize, d: usize) -> Vec<u8> {
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({n}, {d}), }}");
    let (version, preamble) = if dict.len() + 1 + 64 <= u16::MAX as usize {
        (1u8, 10)
    } else {
        (2, 12)
    };
    let total = (preamble + dict.len() + 1).div_ceil(64) * 64;
    let header_len = total - preamble;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[version, 0]);
    if version == 1 {
        out.extend_from_slice(&(header_len as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&(header_len as u32).to_le_bytes());
    }
    out.extend_from_slice(dict.as_bytes());
    out.resize(total - 1, b' ');
    out.push(b'\n');
    out
}

fn write_npy(
    path: &Path,
    descr: &str,
    n: usize,
    d: usize,
    len: usize,
    body: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), DataError> {
    check_shape(path, n, d, len)?;
    write_atomic(path, |w| {
        w.write_all(&header_bytes(descr, n, d))?;
        body(w)
    })
}

/// Writes a 2-D `<f4` `.npy` file (atomically: `path.tmp`, fsync, rename).
pub fn write_npy_f32(
    path: impl AsRef<Path>,
    n: usize,
    d: usize,
    data: &[f32],
) -> Result<(), DataError> {
    write_npy(path.as_ref(), "<f4", n, d, data.len(), |w| {
        put_f32s(w, data)
    })
}

/// Writes a 2-D `|u1` `.npy` file (atomically).
pub fn write_npy_u8(
    path: impl AsRef<Path>,
    n: usize,
    d: usize,
    data: &[u8],
) -> Result<(), DataError> {
    write_npy(path.as_ref(), "|u1", n, d, data.len(), |w| {
        w.write_all(data)
    })
}

/// Writes a 2-D `|i1` `.npy` file (atomically).
pub fn write_npy_i8(
    path: impl AsRef<Path>,
    n: usize,
    d: usize,
    data: &[i8],
) -> Result<(), DataError> {
    write_npy(path.as_ref(), "|i1", n, d, data.len(), |w| put_i8s(w, data))
}

/// Writes a 2-D `<i8` (int64) `.npy` file (atomically): search results as
/// ids, for `numpy.load`.
pub fn write_npy_i64(
    path: impl AsRef<Path>,
    n: usize,
    d: usize,
    data: &[i64],
) -> Result<(), DataError> {
    write_npy(path.as_ref(), "<i8", n, d, data.len(), |w| {
        let bytes: Vec<u8> = data.iter().flat_map(|x| x.to_le_bytes()).collect();
        w.write_all(&bytes)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_dialects() {
        let h = parse_header("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }   \n")
            .unwrap();
        assert_eq!(h.descr.as_deref(), Some("<f4"));
        assert_eq!(h.fortran_order, Some(false));
        assert_eq!(h.shape, Some(vec![3, 2]));
        // Double quotes, no trailing comma, Python 2 longs, other key order.
        let h =
            parse_header("{\"shape\":(3L,2L),\"fortran_order\":True,\"descr\":\"|u1\"}").unwrap();
        assert_eq!(h.shape, Some(vec![3, 2]));
        assert_eq!(h.fortran_order, Some(true));
        assert_eq!(
            parse_header("{'shape': (7,), }").unwrap().shape,
            Some(vec![7])
        );
        for bad in [
            "",
            "{",
            "{'descr': <f4}",
            "{'x': 1}",
            "{'shape': (3, 2) 'descr': '<f4'}",
        ] {
            assert_eq!(parse_header(bad), None, "{bad}");
        }
    }

    #[test]
    fn written_header_is_aligned_and_parses() {
        for (n, d) in [(1, 1), (1000, 128), (123456789, 4096)] {
            let h = header_bytes("<f4", n, d);
            assert_eq!(h.len() % 64, 0);
            assert_eq!(&h[..8], b"\x93NUMPY\x01\x00");
            assert_eq!(*h.last().unwrap(), b'\n');
            let text = std::str::from_utf8(&h[10..]).unwrap();
            assert_eq!(
                parse_header(text).unwrap().shape,
                Some(vec![n as u64, d as u64])
            );
        }
    }
}
