//! Unsigned integers stored in `bits` bits each, least significant bit
//! first: the neighbour ids of a packed record (`layout::record`) and
//! [`PackedInts`], the id→block map of a shuffled layout (117k nodes in 15k
//! blocks need 14 bits a node instead of 32, and every byte saved goes to
//! the node cache, which saves reads: the budget is fixed).

/// Value `i` of the `bits`-bit values packed in `bytes` (1 <= bits <= 32).
/// Eight bytes hold any value at any bit offset; bytes past the end read as
/// zero.
#[inline]
pub fn read_bits(bytes: &[u8], i: usize, bits: u32) -> u32 {
    let bit = i * bits as usize;
    let word = load_word(bytes, bit / 8);
    ((word >> (bit % 8)) & ((1u64 << bits) - 1)) as u32
}

/// Eight bytes of `bytes` from `at`, little-endian; bytes past the end
/// read as zero.
#[inline]
pub fn load_word(bytes: &[u8], at: usize) -> u64 {
    match bytes.get(at..at + 8) {
        Some(w) => u64::from_le_bytes(w.try_into().expect("8 bytes")),
        None => {
            let mut w = [0u8; 8];
            let tail = bytes.get(at..).unwrap_or(&[]);
            w[..tail.len()].copy_from_slice(tail);
            u64::from_le_bytes(w)
        }
    }
}

/// ORs `v` (below 2^bits) into `bytes` as value `i`; its bits must still be
/// zero there. Bits past the end of `bytes` are dropped (they are zero when
/// `bytes` holds every value).
pub fn or_bits(bytes: &mut [u8], i: usize, bits: u32, v: u32) {
    let bit = i * bits as usize;
    let shifted = u64::from(v) << (bit % 8);
    for (k, byte) in shifted.to_le_bytes().iter().enumerate() {
        if let Some(slot) = bytes.get_mut(bit / 8 + k) {
            *slot |= byte;
        }
    }
}

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
            or_bits(&mut bytes, i, bits, v);
        }
        PackedInts {
            bytes,
            bits,
            len: values.len(),
        }
    }

    /// Value `i`. Panics if `i >= len`.
    #[inline]
    pub fn get(&self, i: usize) -> u32 {
        assert!(i < self.len, "PackedInts: index {i} of {}", self.len);
        read_bits(&self.bytes, i, self.bits)
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
