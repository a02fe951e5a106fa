//! AlayaLaser's SIMD-friendly node record (AlayaLaser §3.2, Figure 5): the
//! coupled record (vector, degree, neighbour ids) followed by the quantized
//! codes of every neighbour's principal components, interleaved in
//! fast-scan order, so expanding a node scores all its neighbours from the
//! page just read with a few `vpshufb`s and no codes need to sit in RAM.
//!
//! Record: `vector | u32 degree | slots × u32 ids | slots × f32 norm |
//! slots × f32 dot | slots × f32 residual | groups × fast-scan group`,
//! where `slots` is the maximum degree rounded up to a fast-scan group of
//! 32 (unused slots are zero), the three factor arrays are the RaBitQ
//! factors of each neighbour's code (`quant::rabitq`: ‖o − c‖ and ⟨ō, o⟩)
//! and the squared norm of its PCA residual (what the principal components
//! leave out), and group `g` holds the codes of neighbours `32g..32g+32`
//! (`stratavec_simd::fastscan`). Records are packed into pages in id order
//! like DiskANN's; the page header's `record_extra` is the code dimension.

use stratavec_simd::fastscan;

use super::coupled::CoupledLayout;
use super::header::PagesHeader;
use super::record::NodeView;
use super::{Layout, Span};
use crate::data::DType;
use std::io::Write;

/// Per-neighbour factors: RaBitQ's ‖o − c‖ and ⟨ō, o⟩, and ‖o_res‖².
pub const FACTORS: usize = 3;

/// The laser layout: [`CoupledLayout`]'s geometry with the neighbour codes
/// as each record's extra bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaserLayout {
    inner: CoupledLayout,
    /// Principal dimensions the codes cover (a multiple of 4).
    pub code_dim: usize,
    /// Neighbour slots a record has: the degree rounded up to 32.
    pub slots: usize,
    /// Sub-codes (4 dimensions each) a code has, rounded up to even (the
    /// fast-scan kernel takes sub-quantizers in pairs).
    pub m: usize,
}

/// Sub-codes a code of `code_dim` dimensions has in fast-scan groups.
pub fn sub_codes(code_dim: usize) -> usize {
    (code_dim / 4).next_multiple_of(2)
}

/// Bytes the codes of `slots` neighbours take in a record.
pub fn codes_bytes(code_dim: usize, slots: usize) -> usize {
    slots * 4 * FACTORS + slots / fastscan::GROUP * fastscan::packed_len(sub_codes(code_dim))
}

impl LaserLayout {
    pub fn new(
        page_size: usize,
        n: usize,
        dim: usize,
        dtype: DType,
        max_degree: usize,
        code_dim: usize,
    ) -> Result<Self, String> {
        if code_dim == 0 || !code_dim.is_multiple_of(4) || code_dim > dim.next_multiple_of(4) {
            return Err(format!(
                "code dimension: expected a positive multiple of 4 up to the dimension {dim} \
                 rounded up to 4, found {code_dim}"
            ));
        }
        let slots = max_degree.max(1).next_multiple_of(fastscan::GROUP);
        let extra = codes_bytes(code_dim, slots);
        Ok(LaserLayout {
            inner: CoupledLayout::with_extra(page_size, n, dim, dtype, slots, extra),
            code_dim,
            slots,
            m: sub_codes(code_dim),
        })
    }

    /// The layout a pages header describes; an error when its code
    /// dimension or page count is not this layout's.
    pub fn from_header(h: &PagesHeader) -> Result<Self, String> {
        let l = Self::new(
            h.page_size as usize,
            h.n as usize,
            h.dim as usize,
            h.dtype,
            h.max_degree as usize,
            h.record_extra as usize,
        )?;
        l.inner.check_pages(h.pages)?;
        Ok(l)
    }

    /// Bytes of one record with `max_degree` neighbours.
    pub fn record_bytes_for(dim: usize, dtype: DType, max_degree: usize, code_dim: usize) -> usize {
        let slots = max_degree.max(1).next_multiple_of(fastscan::GROUP);
        dim * dtype.size() + 4 + 4 * slots + codes_bytes(code_dim, slots)
    }

    /// Streams the pages file. `codes` holds every vector's code, `m_raw =
    /// code_dim / 4` sub-codes (0..=15) a row, and `factors` its three
    /// factors; a record gets its neighbours' codes and factors.
    pub fn write<W: Write>(
        &self,
        out: &mut W,
        medoid: u32,
        neighbors: &[Vec<u32>],
        vector_bytes: &dyn Fn(u32, &mut [u8]),
        codes: &[u8],
        factors: &[[f32; FACTORS]],
    ) -> std::io::Result<()> {
        let m_raw = self.code_dim / 4;
        assert_eq!(codes.len(), factors.len() * m_raw, "one code a vector");
        let fill = |id: u32, extra: &mut [u8]| {
            self.encode_codes(&neighbors[id as usize], codes, factors, extra)
        };
        self.inner.write_with(
            out,
            self.name(),
            self.code_dim as u32,
            medoid,
            neighbors,
            vector_bytes,
            &fill,
        )
    }

    /// Fills one record's code section for the neighbour list `list`.
    fn encode_codes(
        &self,
        list: &[u32],
        codes: &[u8],
        factors: &[[f32; FACTORS]],
        extra: &mut [u8],
    ) {
        let (m_raw, m, s) = (self.code_dim / 4, self.m, self.slots);
        extra.fill(0);
        for (i, &nb) in list.iter().enumerate() {
            for (f, &x) in factors[nb as usize].iter().enumerate() {
                let at = 4 * (f * s + i);
                extra[at..at + 4].copy_from_slice(&x.to_le_bytes());
            }
        }
        let groups = &mut extra[4 * FACTORS * s..];
        let glen = fastscan::packed_len(m);
        let mut rows = vec![0u8; fastscan::GROUP * m];
        for (g, chunk) in list.chunks(fastscan::GROUP).enumerate() {
            rows.fill(0);
            for (r, &nb) in chunk.iter().enumerate() {
                let code = &codes[nb as usize * m_raw..(nb as usize + 1) * m_raw];
                rows[r * m..r * m + m_raw].copy_from_slice(code);
            }
            fastscan::pack_group(
                &rows[..chunk.len() * m],
                chunk.len(),
                m,
                &mut groups[g * glen..(g + 1) * glen],
            );
        }
    }

    /// The neighbour codes of a record (from a read or the node cache).
    pub fn codes<'a>(&self, record: &'a [u8]) -> NeighbourCodes<'a> {
        let start = self.inner.record_bytes - self.inner.extra_bytes;
        NeighbourCodes {
            bytes: &record[start..self.inner.record_bytes],
            slots: self.slots,
            m: self.m,
        }
    }
}

/// A record's neighbour codes, borrowed: neighbour `i`'s factors, and the
/// fast-scan group holding its code.
#[derive(Clone, Copy, Debug)]
pub struct NeighbourCodes<'a> {
    bytes: &'a [u8],
    slots: usize,
    /// Sub-codes a code has (even).
    pub m: usize,
}

impl<'a> NeighbourCodes<'a> {
    /// Factor `f` (0: ‖o − c‖, 1: ⟨ō, o⟩, 2: ‖o_res‖²) of neighbour `i`.
    #[inline]
    pub fn factor(&self, f: usize, i: usize) -> f32 {
        let at = 4 * (f * self.slots + i);
        f32::from_le_bytes(self.bytes[at..at + 4].try_into().expect("4 bytes"))
    }

    /// Factor `f` of the 32 neighbours of group `g`, little-endian f32
    /// bytes (what [`Self::factor`] reads one at a time).
    #[inline]
    pub fn factor_group(&self, f: usize, g: usize) -> &'a [u8; 4 * fastscan::GROUP] {
        let at = 4 * (f * self.slots + g * fastscan::GROUP);
        self.bytes[at..at + 4 * fastscan::GROUP]
            .try_into()
            .expect("a group's factors")
    }

    /// Fast-scan group `g` (neighbours `32g..32g+32`).
    #[inline]
    pub fn group(&self, g: usize) -> &'a [u8] {
        let glen = fastscan::packed_len(self.m);
        let start = 4 * FACTORS * self.slots + g * glen;
        &self.bytes[start..start + glen]
    }

    /// Groups a record has.
    pub fn groups(&self) -> usize {
        self.slots / fastscan::GROUP
    }
}

impl Layout for LaserLayout {
    fn name(&self) -> &'static str {
        super::LayoutKind::Laser.name()
    }

    fn page_size(&self) -> usize {
        self.inner.page_size()
    }

    fn max_span_bytes(&self) -> usize {
        self.inner.max_span_bytes()
    }

    fn span_of(&self, id: u32) -> Span {
        self.inner.span_of(id)
    }

    fn record_bytes(&self) -> usize {
        self.inner.record_bytes()
    }

    fn record_slice<'a>(&'a self, id: u32, bytes: &'a [u8]) -> &'a [u8] {
        self.inner.record_slice(id, bytes)
    }

    fn parse<'a>(&self, record: &'a [u8]) -> NodeView<'a> {
        self.inner.parse(record)
    }

    fn block_records<'a>(&self, target: u32, bytes: &'a [u8], out: &mut Vec<(u32, &'a [u8])>) {
        self.inner.block_records(target, bytes, out)
    }

    fn file_bytes(&self) -> u64 {
        self.inner.file_bytes()
    }

    fn records_per_block(&self) -> f64 {
        self.inner.records_per_block()
    }

    fn neighbour_codes<'a>(&self, record: &'a [u8]) -> Option<NeighbourCodes<'a>> {
        Some(self.codes(record))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        /// Every record parses back to the ids, vector, factors and codes
        /// written, whatever the degree, code dimension and page size.
        #[test]
        fn records_round_trip(n in 1usize..80, dim in 4usize..200, deg in 1usize..70,
                              code_quarters in 1usize..20, seed in any::<u64>()) {
            let code_dim = (4 * code_quarters).min(dim.next_multiple_of(4));
            let dtype = DType::F32;
            let rb = LaserLayout::record_bytes_for(dim, dtype, deg, code_dim);
            let page = [4096usize, 8192, 16384].into_iter().find(|&p| p >= rb).unwrap_or(16384);
            let l = LaserLayout::new(page, n, dim, dtype, deg, code_dim).unwrap();
            let m_raw = code_dim / 4;
            let mix = |a: u64, b: u64| (a ^ seed).wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(b).rotate_left(17);
            let lists: Vec<Vec<u32>> = (0..n).map(|i| {
                let d = (mix(i as u64, 1) % (deg as u64 + 1)) as usize;
                (0..d).map(|j| (mix(i as u64, j as u64 + 2) % n as u64) as u32).collect()
            }).collect();
            let codes: Vec<u8> = (0..n * m_raw).map(|i| (mix(i as u64, 99) % 16) as u8).collect();
            let factors: Vec<[f32; 3]> = (0..n).map(|i| [i as f32 + 0.5, 1.0 / (i as f32 + 2.0), -(i as f32)]).collect();
            let vb = |id: u32, out: &mut [u8]| out.iter_mut().enumerate().for_each(|(k, b)| *b = (k as u32 * 31 + id) as u8);
            let mut file = vec![];
            l.write(&mut file, 0, &lists, &vb, &codes, &factors).unwrap();
            prop_assert_eq!(file.len() as u64, l.file_bytes());
            let h = PagesHeader::decode(&file[..page]).unwrap();
            prop_assert_eq!(h.layout.as_str(), "laser");
            prop_assert_eq!(LaserLayout::from_header(&h).unwrap(), l.clone());
            let mut unpacked = vec![0u8; fastscan::GROUP * l.m];
            let mut expect = vec![0u8; dim * 4];
            for id in 0..n as u32 {
                let s = l.span_of(id);
                let bytes = &file[s.offset as usize..s.offset as usize + s.len as usize];
                let rec = l.record_slice(id, bytes);
                let node = l.parse(rec);
                vb(id, &mut expect);
                prop_assert_eq!(node.vector, &expect[..]);
                let ids: Vec<u32> = node.neighbors().collect();
                prop_assert_eq!(&ids, &lists[id as usize]);
                let c = l.neighbour_codes(rec).unwrap();
                for (i, &nb) in ids.iter().enumerate() {
                    for (f, &want) in factors[nb as usize].iter().enumerate() {
                        prop_assert_eq!(c.factor(f, i), want);
                    }
                    fastscan::unpack_group(c.group(i / fastscan::GROUP), l.m, &mut unpacked);
                    let r = i % fastscan::GROUP;
                    prop_assert_eq!(&unpacked[r * l.m..r * l.m + m_raw], &codes[nb as usize * m_raw..(nb as usize + 1) * m_raw]);
                    prop_assert!(unpacked[r * l.m + m_raw..(r + 1) * l.m].iter().all(|&x| x == 0));
                }
            }
        }
    }

    #[test]
    fn sizes_at_768_and_384_dimensions() {
        // 768-d f16 vectors, R = 64, 128 code dimensions: one 4 KB page.
        let rb = LaserLayout::record_bytes_for(768, DType::F16, 64, 128);
        assert_eq!(rb, 1536 + 4 + 256 + 64 * 12 + 2 * 32 * 16);
        assert!(rb <= 4096);
        assert!(LaserLayout::record_bytes_for(768, DType::F32, 64, 128) > 4096);
        assert!(LaserLayout::record_bytes_for(384, DType::F32, 64, 128) <= 4096);
        let e = LaserLayout::new(4096, 10, 96, DType::F32, 64, 6).unwrap_err();
        assert!(e.contains("multiple of 4") && e.contains("found 6"), "{e}");
    }
}
