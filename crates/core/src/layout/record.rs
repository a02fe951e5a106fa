//! One node record as stored on disk: the full-precision vector, the degree,
//! and the neighbour ids. Two encodings:
//!
//! - **fixed** (the coupled layout, as DiskANN stores it): u32 degree, then
//!   `max_degree` little-endian u32 slots, unused ones zero;
//! - **packed** (the blocked layout): u16 degree, then exactly `degree` ids
//!   of `id_bits` bits each (enough for ids below n), least significant bit
//!   first. A record takes only the room its degree needs, so a 4 KB block
//!   holds more of them (Starling §4.1: the gain of block search grows with
//!   the records per block).

use crate::util::elias_fano;
use crate::util::packed::{or_bits, read_bits};

/// Bits that hold every id (or any value) below `n`, at least 1.
pub fn id_bits(n: usize) -> u32 {
    (usize::BITS - n.saturating_sub(1).leading_zeros()).max(1)
}

/// Bytes of a packed record with `degree` neighbours.
pub fn packed_len(vector_bytes: usize, degree: usize, id_bits: u32) -> usize {
    vector_bytes + 2 + (degree * id_bits as usize).div_ceil(8)
}

/// A borrowed view of one record inside a read buffer.
#[derive(Clone, Copy, Debug)]
pub struct NodeView<'a> {
    /// The vector in the index's element type, little-endian.
    pub vector: &'a [u8],
    /// The neighbour ids, encoded.
    neighbors: &'a [u8],
    degree: usize,
    /// 32: plain u32 slots; less: packed.
    id_bits: u32,
    /// Set for a list coded Elias–Fano (the graph cache's: `neighbors`
    /// and `id_bits` are then unused).
    coded: Option<elias_fano::Ids<'a>>,
}

impl<'a> NodeView<'a> {
    /// Parses a fixed record of `vector_bytes + 4 + 4 * max_degree` bytes. A
    /// degree over `max_degree` (a corrupt page) yields no neighbours rather
    /// than a read past the record.
    pub fn parse(record: &'a [u8], vector_bytes: usize, max_degree: usize) -> Self {
        let vector = &record[..vector_bytes];
        let deg_bytes: [u8; 4] = record[vector_bytes..vector_bytes + 4]
            .try_into()
            .expect("4 bytes");
        let degree = u32::from_le_bytes(deg_bytes) as usize;
        let start = vector_bytes + 4;
        let degree = if degree <= max_degree { degree } else { 0 };
        NodeView {
            vector,
            neighbors: &record[start..start + 4 * degree],
            degree,
            id_bits: 32,
            coded: None,
        }
    }

    /// Parses a packed record. A degree over `max_degree`, or one the
    /// record is too short for (a corrupt page), yields no neighbours.
    pub fn parse_packed(
        record: &'a [u8],
        vector_bytes: usize,
        max_degree: usize,
        id_bits: u32,
    ) -> Self {
        let vector = &record[..vector_bytes];
        let degree = u16::from_le_bytes([record[vector_bytes], record[vector_bytes + 1]]) as usize;
        let start = vector_bytes + 2;
        let len = (degree * id_bits as usize).div_ceil(8);
        let degree = if degree <= max_degree && start + len <= record.len() {
            degree
        } else {
            0
        };
        let len = (degree * id_bits as usize).div_ceil(8);
        NodeView {
            vector,
            neighbors: &record[start..start + len],
            degree,
            id_bits,
            coded: None,
        }
    }

    /// A list alone coded Elias–Fano for ids below `n`
    /// ([`elias_fano::encode`]); a list cut short yields no neighbours.
    pub fn elias_fano(list: &'a [u8], n: usize) -> Self {
        let coded = elias_fano::decode(list, n);
        NodeView {
            vector: &[],
            neighbors: &[],
            degree: coded.map_or(0, |c| c.len()),
            id_bits: 32,
            coded,
        }
    }

    /// A record that is a vector alone (the ivf layout's records).
    pub fn vector_only(vector: &'a [u8]) -> Self {
        NodeView {
            vector,
            neighbors: &[],
            degree: 0,
            id_bits: 32,
            coded: None,
        }
    }

    pub fn degree(&self) -> usize {
        self.degree
    }

    /// Appends the neighbour ids to `out` (as [`Self::neighbors`] gives
    /// them; a coded list in one loop).
    #[inline]
    pub fn append_neighbors(&self, out: &mut Vec<u32>) {
        match self.coded {
            Some(c) => c.append_to(out),
            None => out.extend(self.neighbors()),
        }
    }

    pub fn neighbors(&self) -> Neighbors<'a> {
        Neighbors {
            bytes: self.neighbors,
            next: 0,
            degree: self.degree,
            id_bits: self.id_bits,
            coded: self.coded,
        }
    }
}

/// The ids of a record, decoded one by one.
pub struct Neighbors<'a> {
    bytes: &'a [u8],
    next: usize,
    degree: usize,
    id_bits: u32,
    coded: Option<elias_fano::Ids<'a>>,
}

impl Iterator for Neighbors<'_> {
    type Item = u32;

    #[inline]
    fn next(&mut self) -> Option<u32> {
        if let Some(c) = &mut self.coded {
            self.next += 1;
            return c.next();
        }
        if self.next == self.degree {
            return None;
        }
        let i = self.next;
        self.next += 1;
        if self.id_bits == 32 {
            let b = &self.bytes[4 * i..4 * i + 4];
            return Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        }
        Some(read_bits(self.bytes, i, self.id_bits))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.degree.saturating_sub(self.next);
        (left, Some(left))
    }
}

/// Writes one fixed record into `out` (exactly `vector.len() + 4 + 4 *
/// max_degree` bytes; unused neighbour slots are zero).
pub fn write_record(out: &mut [u8], vector: &[u8], neighbors: &[u32], max_degree: usize) {
    assert!(neighbors.len() <= max_degree);
    let vb = vector.len();
    out[..vb].copy_from_slice(vector);
    out[vb..vb + 4].copy_from_slice(&(neighbors.len() as u32).to_le_bytes());
    for (i, nb) in neighbors.iter().enumerate() {
        let s = vb + 4 + 4 * i;
        out[s..s + 4].copy_from_slice(&nb.to_le_bytes());
    }
    out[vb + 4 + 4 * neighbors.len()..vb + 4 + 4 * max_degree].fill(0);
}

/// Writes one packed record into `out` (exactly `packed_len(vector.len(),
/// neighbors.len(), id_bits)` bytes). Every id must be below 2^id_bits.
pub fn write_packed(out: &mut [u8], vector: &[u8], neighbors: &[u32], id_bits: u32) {
    let vb = vector.len();
    assert_eq!(out.len(), packed_len(vb, neighbors.len(), id_bits));
    assert!(neighbors.len() <= u16::MAX as usize);
    out[..vb].copy_from_slice(vector);
    out[vb..vb + 2].copy_from_slice(&(neighbors.len() as u16).to_le_bytes());
    let ids = &mut out[vb + 2..];
    ids.fill(0);
    for (i, &nb) in neighbors.iter().enumerate() {
        debug_assert!(id_bits == 32 || nb >> id_bits == 0);
        or_bits(ids, i, id_bits, nb);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn round_trip() {
        let vector = [1u8, 2, 3, 4, 5, 6, 7, 8];
        let mut buf = vec![0xAAu8; 8 + 4 + 4 * 5];
        write_record(&mut buf, &vector, &[9, 8, 7], 5);
        let v = NodeView::parse(&buf, 8, 5);
        assert_eq!(v.vector, &vector);
        assert_eq!(v.neighbors().collect::<Vec<_>>(), vec![9, 8, 7]);
    }

    #[test]
    fn corrupt_degree_gives_no_neighbours() {
        let mut buf = vec![0u8; 8 + 4 + 8];
        buf[8..12].copy_from_slice(&1000u32.to_le_bytes());
        assert_eq!(NodeView::parse(&buf, 8, 2).degree(), 0);
        let mut buf = vec![0u8; 8 + 2 + 3];
        buf[8..10].copy_from_slice(&3u16.to_le_bytes()); // 3 x 17 bits > 3 bytes
        assert_eq!(NodeView::parse_packed(&buf, 8, 64, 17).degree(), 0);
    }

    #[test]
    fn id_bits_cover_every_id() {
        assert_eq!(id_bits(1), 1);
        assert_eq!(id_bits(2), 1);
        assert_eq!(id_bits(3), 2);
        assert_eq!(id_bits(116_707), 17);
        assert_eq!(id_bits(1 << 20), 20);
        assert_eq!(id_bits((1 << 20) + 1), 21);
        // Also the width of the id->block map (`util::PackedInts`).
        assert_eq!(id_bits(0), 1);
        assert_eq!(id_bits(15_060), 14);
        assert_eq!(id_bits(1 << 32), 32);
    }

    proptest! {
        /// Packed records decode to the ids written, for any width and
        /// degree, next to other bytes (records sit back to back in a block).
        #[test]
        fn packed_round_trip(n in 1usize..(1 << 31), vb in 0usize..40,
                             ids in proptest::collection::vec(any::<u32>(), 0..70), tail in 0usize..9) {
            let bits = id_bits(n);
            let ids: Vec<u32> = ids.into_iter().map(|x| x % n as u32).collect();
            let vector: Vec<u8> = (0..vb).map(|i| i as u8).collect();
            let len = packed_len(vb, ids.len(), bits);
            let mut buf = vec![0xFFu8; len + tail];
            write_packed(&mut buf[..len], &vector, &ids, bits);
            let v = NodeView::parse_packed(&buf, vb, 70, bits);
            prop_assert_eq!(v.vector, &vector[..]);
            prop_assert_eq!(v.neighbors().collect::<Vec<_>>(), ids.clone());
            // Also exactly at its own length.
            let v = NodeView::parse_packed(&buf[..len], vb, 70, bits);
            prop_assert_eq!(v.neighbors().collect::<Vec<_>>(), ids);
        }
    }
}
