//! A read-only array of small unsigned integers stored in `bits` bits each
//! (least significant bit first, as the packed neighbour ids of
//! `layout::record`). The id→block map of a shuffled layout is the user:
//! 117k nodes in 15k blocks need 14 bits a node instead of 32, and every
//! byte saved goes to the node cache, which saves reads (the budget is
//! fixed).

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackedInts {
    /// The values' bits, plus 8 bytes of zero padding so any value is read
    /// with one unaligned 8-byte load.
    bytes: Vec<u8>,
    bits: u32,
    len: usize,
}

impl PackedInts {
    /// Packs `values`, each below `2^bits` (1 <= bits <= 32).
    pub fn new(values: &[u32], bits: u32) -> Self {
        assert!((1..=32).contains(&bits), "PackedInts: bits = {bits}");
        let mut bytes = vec![0u8; (values.len() * bits as usize).div_ceil(8) + 8];
        for (i, &v) in values.iter().enumerate() {
            assert!(
                bits == 32 || v >> bits == 0,
                "PackedInts: value {v} does not fit in {bits} bits"
            );
            let bit = i * bits as usize;
            let at = bit / 8;
            let word = u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
            let word = word | (u64::from(v) << (bit % 8));
            bytes[at..at + 8].copy_from_slice(&word.to_le_bytes());
        }
        PackedInts {
            bytes,
            bits,
            len: values.len(),
        }
    }

    /// The fewest bits that hold every value below `bound` (at least 1).
    pub fn bits_for(bound: usize) -> u32 {
        (usize::BITS - bound.saturating_sub(1).leading_zeros()).max(1)
    }

    /// Value `i`. Panics if `i >= len`.
    #[inline]
    pub fn get(&self, i: usize) -> u32 {
        assert!(i < self.len, "PackedInts: index {i} of {}", self.len);
        let bit = i * self.bits as usize;
        let at = bit / 8;
        let word = u64::from_le_bytes(self.bytes[at..at + 8].try_into().expect("8 bytes"));
        ((word >> (bit % 8)) & ((1u64 << self.bits) - 1)) as u32
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.bytes.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn bits_for_covers_every_value_below_the_bound() {
        assert_eq!(PackedInts::bits_for(0), 1);
        assert_eq!(PackedInts::bits_for(1), 1);
        assert_eq!(PackedInts::bits_for(2), 1);
        assert_eq!(PackedInts::bits_for(3), 2);
        assert_eq!(PackedInts::bits_for(15_060), 14);
        assert_eq!(PackedInts::bits_for(1 << 14), 14);
        assert_eq!(PackedInts::bits_for((1 << 14) + 1), 15);
        assert_eq!(PackedInts::bits_for(1 << 32), 32);
    }

    #[test]
    #[should_panic(expected = "does not fit")]
    fn a_value_too_wide_is_refused() {
        PackedInts::new(&[4], 2);
    }

    proptest! {
        /// Every value reads back, at every width, including the last one
        /// (which relies on the padding).
        #[test]
        fn round_trip(bits in 1u32..=32, raw in prop::collection::vec(any::<u32>(), 0..300)) {
            let mask = if bits == 32 { u32::MAX } else { (1u32 << bits) - 1 };
            let values: Vec<u32> = raw.iter().map(|v| v & mask).collect();
            let p = PackedInts::new(&values, bits);
            prop_assert_eq!(p.len(), values.len());
            for (i, &v) in values.iter().enumerate() {
                prop_assert_eq!(p.get(i), v, "bits {} index {}", bits, i);
            }
            prop_assert!(p.bytes() <= (values.len() * bits as usize).div_ceil(8) + 8 + 8);
        }
    }
}
