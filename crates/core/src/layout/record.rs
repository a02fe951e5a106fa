//! One node record as stored on disk: the full-precision vector, the degree,
//! and the neighbour ids (little-endian u32, padded to the maximum degree).

/// A borrowed view of one record inside a read buffer.
#[derive(Clone, Copy, Debug)]
pub struct NodeView<'a> {
    /// The vector in the index's element type, little-endian.
    pub vector: &'a [u8],
    /// `degree` ids, 4 bytes each.
    neighbors: &'a [u8],
}

impl<'a> NodeView<'a> {
    /// Parses a record of `vector_bytes + 4 + 4 * max_degree` bytes. A degree
    /// over `max_degree` (a corrupt page) yields no neighbours rather than a
    /// read past the record.
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
        }
    }

    pub fn degree(&self) -> usize {
        self.neighbors.len() / 4
    }

    pub fn neighbors(&self) -> impl Iterator<Item = u32> + 'a {
        self.neighbors
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
}

/// Writes one record into `out` (exactly `vector.len() + 4 + 4 * max_degree`
/// bytes; unused neighbour slots are zero).
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

#[cfg(test)]
mod tests {
    use super::*;

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
    }
}
