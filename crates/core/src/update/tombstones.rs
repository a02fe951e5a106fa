//! Deleted rows of an index's generation: a bit a row. A deleted row stays
//! in the disk graph as a waypoint (FreshDiskANN §4.2: deletes are lazy;
//! searches route through deleted nodes but never return them) until a
//! merge drops it. n/8 bytes: 12.5 MB for 100M rows, charged to the memory
//! plan with the delta.

#[derive(Clone, Debug, Default)]
pub struct Tombstones {
    bits: Vec<u64>,
    count: usize,
}

impl Tombstones {
    /// No row of `n` deleted.
    pub fn new(n: usize) -> Tombstones {
        Tombstones {
            bits: vec![0; n.div_ceil(64)],
            count: 0,
        }
    }

    /// Marks `row` deleted; whether it was live. `row` must be below `n`.
    pub fn insert(&mut self, row: u32) -> bool {
        let (w, b) = (row as usize / 64, 1u64 << (row % 64));
        let new = self.bits[w] & b == 0;
        self.bits[w] |= b;
        self.count += usize::from(new);
        new
    }

    #[inline]
    pub fn contains(&self, row: u32) -> bool {
        self.bits
            .get(row as usize / 64)
            .is_some_and(|w| w & (1u64 << (row % 64)) != 0)
    }

    /// Rows deleted.
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Deleted rows, ascending.
    pub fn rows(&self) -> impl Iterator<Item = u32> + '_ {
        self.bits.iter().enumerate().flat_map(|(w, &word)| {
            (0..64u32)
                .filter(move |b| word & (1u64 << b) != 0)
                .map(move |b| w as u32 * 64 + b)
        })
    }

    pub fn resident_bytes(&self) -> usize {
        self.bits.capacity() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    proptest! {
        #[test]
        fn equals_a_set(n in 1usize..300, rows in proptest::collection::vec(0usize..300, 0..200)) {
            let mut t = Tombstones::new(n);
            let mut set = BTreeSet::new();
            for r in rows.into_iter().filter(|&r| r < n) {
                prop_assert_eq!(t.insert(r as u32), set.insert(r as u32));
            }
            prop_assert_eq!(t.len(), set.len());
            prop_assert_eq!(t.rows().collect::<Vec<_>>(), set.iter().copied().collect::<Vec<_>>());
            for r in 0..n as u32 + 70 {
                prop_assert_eq!(t.contains(r), set.contains(&r));
            }
        }
    }
}
