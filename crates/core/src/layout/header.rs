//! Page 0 of every pages file: a self-describing header, so a pages file
//! that does not belong to its manifest (or is truncated) is caught at open.

use crate::data::DType;

pub const MAGIC: &[u8; 8] = b"STRVPAGE";
pub const HEADER_VERSION: u32 = 1;

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
        if 52 + name_len + 4 > page.len() {
            return Err(format!("layout name length: {name_len} is past the page"));
        }
        Ok(PagesHeader {
            page_size: u32_at(12),
            n: u64_at(16),
            dim: u32_at(24),
            dtype,
            max_degree: u32_at(32),
            medoid: u32_at(36),
            pages: u64_at(40),
            layout: String::from_utf8_lossy(&page[52..52 + name_len]).into_owned(),
            record_extra: u32_at(52 + name_len),
        })
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
}
