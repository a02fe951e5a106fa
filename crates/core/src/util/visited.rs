//! A set of node ids, cleared in O(1) amortised between searches.
//!
//! Open addressing over a power-of-two table that grows when half full. Its
//! size follows the nodes one search touches (hundreds to tens of thousands),
//! not the index size, so a worker can keep one per query in flight even for
//! 100M-vector indexes (a bitmap would be 12 MB per query there).
//!
//! For a small index a bitmap of all ids is no larger than that table
//! (117k ids: 14.6 KB against the 32 KB a block search's table takes), and
//! an insert is one load and one store with no hashing or probing; the set
//! picks it then ([`VisitedSet::for_ids_below`]). With 32 queries in flight
//! per worker, every query's set is out of L1 when its turn comes, so the
//! bytes it spans are what its probes cost.

const EMPTY: u32 = u32::MAX;

#[derive(Clone, Debug)]
pub struct VisitedSet {
    table: Vec<u32>,
    len: usize,
    /// 64 - log2(table size): the hash keeps the product's high bits.
    shift: u32,
    /// Non-empty: bitmap mode, one bit per id below `64 * bits.len()`
    /// (`table` unused).
    bits: Vec<u64>,
}

impl Default for VisitedSet {
    fn default() -> Self {
        Self::with_capacity(1024)
    }
}

/// Fibonacci hashing: the high bits of id·2^64/φ spread neighbouring ids
/// (graph neighbour lists are full of them) over the whole table.
#[inline]
fn hash(id: u32, shift: u32) -> usize {
    ((id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> shift) as usize
}

/// Slots of a table for `n` ids (at most half full).
fn table_size(n: usize) -> usize {
    (n * 2).next_power_of_two().max(64)
}

fn shift_for(size: usize) -> u32 {
    64 - size.trailing_zeros()
}

impl VisitedSet {
    pub fn with_capacity(n: usize) -> Self {
        let size = table_size(n);
        VisitedSet {
            table: vec![EMPTY; size],
            len: 0,
            shift: shift_for(size),
            bits: Vec::new(),
        }
    }

    /// A set for ids below `n` expected to hold about `capacity` of them: a
    /// bitmap when that takes no more bytes than the hash table would, else
    /// the hash table. Ids must be below `n` (a bitmap ignores others:
    /// `insert` returns false for them).
    pub fn for_ids_below(n: usize, capacity: usize) -> Self {
        let words = n.div_ceil(64).max(1);
        if words * 8 <= table_size(capacity) * 4 {
            VisitedSet {
                table: Vec::new(),
                len: 0,
                shift: 0,
                bits: vec![0; words],
            }
        } else {
            Self::with_capacity(capacity)
        }
    }

    /// Ids it holds without growing.
    pub fn capacity(&self) -> usize {
        if !self.bits.is_empty() {
            return self.bits.len() * 64;
        }
        self.table.len() / 2
    }

    /// Makes room for `n` ids without growing on the way (a bitmap always
    /// has room).
    pub fn reserve(&mut self, n: usize) {
        if !self.bits.is_empty() {
            return;
        }
        if self.len == 0 && n * 2 > self.table.len() {
            // Nothing to rehash: allocate the final size at once.
            *self = Self::with_capacity(n);
            return;
        }
        while n * 2 > self.table.len() {
            self.grow();
        }
    }

    pub fn clear(&mut self) {
        if self.len > 0 {
            self.table.fill(EMPTY);
            self.bits.fill(0);
            self.len = 0;
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Inserts `id`; returns true when it was not there before.
    #[inline]
    pub fn insert(&mut self, id: u32) -> bool {
        if !self.bits.is_empty() {
            let Some(word) = self.bits.get_mut(id as usize / 64) else {
                debug_assert!(false, "id {id} outside the bitmap");
                return false;
            };
            let bit = 1u64 << (id % 64);
            let new = *word & bit == 0;
            *word |= bit;
            self.len += new as usize;
            return new;
        }
        debug_assert_ne!(id, EMPTY);
        if (self.len + 1) * 2 > self.table.len() {
            self.grow();
        }
        let mask = self.table.len() - 1;
        let mut i = hash(id, self.shift);
        loop {
            let slot = self.table[i];
            if slot == id {
                return false;
            }
            if slot == EMPTY {
                self.table[i] = id;
                self.len += 1;
                return true;
            }
            i = (i + 1) & mask;
        }
    }

    #[inline]
    pub fn contains(&self, id: u32) -> bool {
        if !self.bits.is_empty() {
            return self
                .bits
                .get(id as usize / 64)
                .is_some_and(|w| w & (1u64 << (id % 64)) != 0);
        }
        let mask = self.table.len() - 1;
        let mut i = hash(id, self.shift);
        loop {
            let slot = self.table[i];
            if slot == id {
                return true;
            }
            if slot == EMPTY {
                return false;
            }
            i = (i + 1) & mask;
        }
    }

    fn grow(&mut self) {
        let bigger = vec![EMPTY; self.table.len() * 2];
        self.shift = shift_for(bigger.len());
        let old = std::mem::replace(&mut self.table, bigger);
        self.len = 0;
        for id in old.into_iter().filter(|&x| x != EMPTY) {
            self.insert(id);
        }
    }

    /// Bytes held, for memory reports.
    pub fn bytes(&self) -> usize {
        self.table.len() * 4 + self.bits.len() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashSet;

    proptest! {
        #[test]
        fn behaves_like_hashset(ids in proptest::collection::vec(0u32..5000, 0..3000),
                                bitmap in any::<bool>()) {
            // 5,000 ids take 632 bytes as a bitmap: chosen when the table
            // for the expected count would be as large.
            let mut v = if bitmap {
                VisitedSet::for_ids_below(5000, 200)
            } else {
                VisitedSet::for_ids_below(5000, 8)
            };
            prop_assert_eq!(v.bits.is_empty(), !bitmap);
            // Reserving on an empty set and on a filled one.
            v.reserve(ids.len() / 3);
            let mut h = HashSet::new();
            for (i, &id) in ids.iter().enumerate() {
                prop_assert_eq!(v.insert(id), h.insert(id));
                if i == ids.len() / 2 {
                    v.reserve(ids.len());
                    prop_assert!(v.capacity() >= ids.len());
                }
            }
            prop_assert_eq!(v.len(), h.len());
            for id in 0..5000u32 {
                prop_assert_eq!(v.contains(id), h.contains(&id));
            }
            v.clear();
            prop_assert!(v.is_empty());
            prop_assert!(!ids.iter().any(|&i| v.contains(i)));
        }
    }
}
