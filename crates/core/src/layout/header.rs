//! Page 0 of every pages file: a self-describing header, so a pages file
//! that does not belong to its manifest (or is truncated) is caught at open.
//!
//! Every layout sizes its arithmetic from these fields, so they are checked
//! twice before any layout is built: [`PagesHeader::decode`] refuses values
//! no index can have (a zero page size divides by zero, a huge count sizes
//! a terabyte allocation), and [`PagesHeader::check`] refuses a header that
//! describes another index than its manifest does.

use crate::data::DType;
use crate::error::{Error, Result};
use std::path::Path;

pub const MAGIC: &[u8; 8] = b"STRVPAGE";
pub const HEADER_VERSION: u32 = 1;

/// Page sizes an index can have: the build's 4096, 8192 and 16384 (every
/// layout, CSR's header page too).
pub const MIN_PAGE_SIZE: usize = 4096;
pub const MAX_PAGE_SIZE: usize = 16384;
/// The largest dimension an index can have: with it and `n < 2^32` every
/// size a layout computes (`n x dim x 4`, a record's bytes) fits in 64
/// bits with room, and a record stays far below a read slot's 4 GiB.
pub const MAX_DIM: usize = 1 << 20;
/// Degrees are stored in 16 bits in packed records (`layout::record`).
pub const MAX_DEGREE: usize = u16::MAX as usize;

/// Whether `p` is a page size an index can have.
pub fn page_size_ok(p: usize) -> bool {
    p.is_power_of_two() && (MIN_PAGE_SIZE..=MAX_PAGE_SIZE).contains(&p)
}

/// `n` is a count of vectors an index can have: ids are u32 and
/// `u32::MAX` means "no neighbour" (the build refuses more).
pub fn n_ok(n: u64) -> bool {
    (1..u64::from(u32::MAX)).contains(&n)
}

/// `dim` is a dimension an index can have.
pub fn dim_ok(dim: usize) -> bool {
    (1..=MAX_DIM).contains(&dim)
}

/// What the manifest says a pages file holds: the header must agree before
/// a layout is built from it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expected {
    pub layout: String,
    pub n: usize,
    pub dim: usize,
    pub dtype: DType,
    pub page_size: usize,
    /// The pages file's size as the manifest records it (and the open
    /// checked against the file).
    pub file_bytes: u64,
}

impl Expected {
    pub fn from_manifest(m: &crate::index::Manifest) -> Self {
        Expected {
            layout: m.layout.clone(),
            n: m.n,
            dim: m.dim,
            dtype: m.dtype,
            page_size: m.page_size,
            file_bytes: m.files.get(super::PAGES_FILE).map_or(0, |f| f.bytes),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PagesHeader {
    pub layout: String,
    pub page_size: u32,
    pub n: u64,
    pub dim: u32,
    pub dtype: DType,
    pub max_degree: u32,
    pub medoid: u32,
    pub pages: u64,
    /// Layout-specific bytes a record carries beyond vector and ids, as the
    /// layout encodes them (laser: the dimension its neighbour codes cover).
    /// Stored after the name; headers written before it existed read 0.
    pub record_extra: u32,
}

fn dtype_code(d: DType) -> u32 {
    match d {
        DType::F32 => 0,
        DType::U8 => 1,
        DType::I8 => 2,
        DType::F16 => 3,
    }
}

impl PagesHeader {
    /// Serialises into the first bytes of page 0 (the rest stays zero).
    pub fn encode(&self, page: &mut [u8]) {
        page.fill(0);
        page[..8].copy_from_slice(MAGIC);
        let mut w = 8;
        let mut put = |bytes: &[u8]| {
            page[w..w + bytes.len()].copy_from_slice(bytes);
            w += bytes.len();
        };
        put(&HEADER_VERSION.to_le_bytes());
        put(&self.page_size.to_le_bytes());
        put(&self.n.to_le_bytes());
        put(&self.dim.to_le_bytes());
        put(&dtype_code(self.dtype).to_le_bytes());
        put(&self.max_degree.to_le_bytes());
        put(&self.medoid.to_le_bytes());
        put(&self.pages.to_le_bytes());
        let name = self.layout.as_bytes();
        put(&(name.len() as u32).to_le_bytes());
        put(name);
        put(&self.record_extra.to_le_bytes());
    }

    /// Parses page 0; `Err` names the field that is wrong.
    pub fn decode(page: &[u8]) -> Result<Self, String> {
        if page.len() < 64 || &page[..8] != MAGIC {
            return Err("magic: expected \"STRVPAGE\" at byte 0".into());
        }
        let u32_at = |o: usize| u32::from_le_bytes(page[o..o + 4].try_into().unwrap());
        let u64_at = |o: usize| u64::from_le_bytes(page[o..o + 8].try_into().unwrap());
        let version = u32_at(8);
        if version != HEADER_VERSION {
            return Err(format!(
                "header version: expected {HEADER_VERSION}, found {version}"
            ));
        }
        let dtype = match u32_at(28) {
            0 => DType::F32,
            1 => DType::U8,
            2 => DType::I8,
            3 => DType::F16,
            x => return Err(format!("dtype code: expected 0, 1, 2 or 3, found {x}")),
        };
        let name_len = u32_at(48) as usize;
        if name_len > page.len() || 52 + name_len + 4 > page.len() {
            return Err(format!("layout name length: {name_len} is past the page"));
        }
        let h = PagesHeader {
            page_size: u32_at(12),
            n: u64_at(16),
            dim: u32_at(24),
            dtype,
            max_degree: u32_at(32),
            medoid: u32_at(36),
            pages: u64_at(40),
            layout: String::from_utf8_lossy(&page[52..52 + name_len]).into_owned(),
            record_extra: u32_at(52 + name_len),
        };
        h.check_ranges()?;
        Ok(h)
    }

    /// Refuses fields no index can have, before any layout computes with
    /// them.
    fn check_ranges(&self) -> Result<(), String> {
        let bad = |field: &str, expected: &str, found: &dyn std::fmt::Display| {
            Err(format!("{field}: expected {expected}, found {found}"))
        };
        if !page_size_ok(self.page_size as usize) {
            let want = format!("a power of two in {MIN_PAGE_SIZE}..={MAX_PAGE_SIZE}");
            return bad("page size", &want, &self.page_size);
        }
        if !n_ok(self.n) {
            return bad("n", "1..4294967295", &self.n);
        }
        if !dim_ok(self.dim as usize) {
            return bad("dim", &format!("1..={MAX_DIM}"), &self.dim);
        }
        if self.max_degree as usize > MAX_DEGREE {
            return bad("max degree", &format!("<= {MAX_DEGREE}"), &self.max_degree);
        }
        if u64::from(self.medoid) >= self.n {
            return bad("medoid", &format!("< n ({})", self.n), &self.medoid);
        }
        if self.pages < 2 {
            return bad(
                "pages",
                "at least 2 (the header page and data)",
                &self.pages,
            );
        }
        Ok(())
    }

    /// Refuses a header (of the pages file at `path`) that describes
    /// another index than the manifest: each field against `want`, and its
    /// page count against the file's size, so the layout built from it
    /// reads only pages that exist.
    pub fn check(&self, path: &Path, want: &Expected) -> Result<()> {
        let field = |name: &str, want: String, got: String| -> Result<()> {
            match want == got {
                true => Ok(()),
                false => Err(Error::index(path, name, format!("{want} (manifest)"), got)),
            }
        };
        field("n", want.n.to_string(), self.n.to_string())?;
        field("dim", want.dim.to_string(), self.dim.to_string())?;
        field(
            "dtype",
            want.dtype.as_str().into(),
            self.dtype.as_str().into(),
        )?;
        field(
            "page size",
            want.page_size.to_string(),
            self.page_size.to_string(),
        )?;
        field("layout", want.layout.clone(), self.layout.clone())?;
        // Every layout writes ⌈file bytes / page size⌉ as its page count.
        let pages = want.file_bytes.div_ceil(u64::from(self.page_size));
        if self.pages != pages {
            return Err(Error::index(
                path,
                "pages",
                format!(
                    "{pages} (a {}-byte file in {}-byte pages)",
                    want.file_bytes, self.page_size
                ),
                self.pages,
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_rejects_garbage() {
        let h = PagesHeader {
            layout: "coupled".into(),
            page_size: 4096,
            n: 123,
            dim: 384,
            dtype: DType::F32,
            max_degree: 64,
            medoid: 7,
            pages: 99,
            record_extra: 0,
        };
        let mut page = vec![0u8; 4096];
        h.encode(&mut page);
        assert_eq!(PagesHeader::decode(&page).unwrap(), h);
        page[0] = b'X';
        assert!(PagesHeader::decode(&page).unwrap_err().contains("magic"));
    }

    fn header() -> PagesHeader {
        PagesHeader {
            layout: "coupled".into(),
            page_size: 4096,
            n: 100,
            dim: 8,
            dtype: DType::F32,
            max_degree: 16,
            medoid: 3,
            pages: 6,
            record_extra: 0,
        }
    }

    fn decoded(h: &PagesHeader) -> Result<PagesHeader, String> {
        let mut page = vec![0u8; 4096];
        h.encode(&mut page);
        PagesHeader::decode(&page)
    }

    /// Values no index has are refused by name before a layout divides or
    /// allocates by them.
    #[test]
    fn decode_refuses_sizes_no_index_has() {
        let cases: [(&str, PagesHeader); 8] = [
            (
                "page size: expected a power of two in 4096..=16384, found 0",
                PagesHeader {
                    page_size: 0,
                    ..header()
                },
            ),
            (
                "page size",
                PagesHeader {
                    page_size: 12288,
                    ..header()
                },
            ),
            (
                "page size",
                PagesHeader {
                    page_size: 0xFFFF_F000,
                    ..header()
                },
            ),
            (
                "n: expected 1..4294967295, found 0",
                PagesHeader { n: 0, ..header() },
            ),
            (
                "n:",
                PagesHeader {
                    n: u64::MAX,
                    ..header()
                },
            ),
            (
                "dim: expected 1..=1048576, found 4294967295",
                PagesHeader {
                    dim: u32::MAX,
                    ..header()
                },
            ),
            (
                "max degree",
                PagesHeader {
                    max_degree: 1 << 20,
                    ..header()
                },
            ),
            (
                "medoid: expected < n (100), found 100",
                PagesHeader {
                    medoid: 100,
                    ..header()
                },
            ),
        ];
        for (want, h) in cases {
            let e = decoded(&h).unwrap_err();
            assert!(e.contains(want), "{e:?} does not contain {want:?}");
        }
        let mut page = vec![0u8; 4096];
        header().encode(&mut page);
        page[48..52].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(PagesHeader::decode(&page)
            .unwrap_err()
            .contains("name length"));
    }

    /// A header that disagrees with its manifest, or whose page count is not
    /// its file's, is refused naming the file, the field and both values.
    #[test]
    fn check_compares_with_the_manifest_and_the_file_size() {
        let path = Path::new("/x/pages.bin");
        let want = Expected {
            layout: "coupled".into(),
            n: 100,
            dim: 8,
            dtype: DType::F32,
            page_size: 4096,
            file_bytes: 6 * 4096,
        };
        header().check(path, &want).unwrap();
        let e = |h: PagesHeader| h.check(path, &want).unwrap_err().to_string();
        assert_eq!(
            e(PagesHeader { n: 99, ..header() }),
            "/x/pages.bin: n: expected 100 (manifest), found 99"
        );
        assert!(e(PagesHeader {
            page_size: 8192,
            ..header()
        })
        .contains("page size"));
        assert!(e(PagesHeader {
            layout: "blocked".into(),
            ..header()
        })
        .contains("layout"));
        assert_eq!(
            e(PagesHeader {
                pages: 1 << 40,
                ..header()
            }),
            "/x/pages.bin: pages: expected 6 (a 24576-byte file in 4096-byte pages), \
             found 1099511627776"
        );
    }
}
