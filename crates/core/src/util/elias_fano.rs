//! Elias–Fano coding of a sorted set of ids below `u` (Elias 1974, Fano
//! 1971; as in Vigna, "Quasi-succinct indices", WSDM 2013): each id's low
//! `l = ⌊log2(u/d)⌋` bits stored plainly, its high part as unary gaps in a
//! bitmap of `d + (u >> l) + 1` bits. A list of `d` ids takes about
//! `d·(2 + log2(u/d))` bits, against `d·⌈log2 u⌉` packed.
//!
//! Why: Gorgeous's graph cache (§4.1) holds adjacency lists, and every list
//! it holds saves a read. On wordnet-minilm (116,707 nodes, mean degree
//! 52.5) a list takes 13.5 bits an id instead of 17, 88 bytes instead of
//! 113: at a 20% budget with 4-bit codes the cache then holds every list
//! instead of 83% of them. The price is the order: the ids come back
//! sorted, not nearest first. A search that estimates every neighbour does
//! not care; ACORN's two-hop look takes the first matches it meets, which
//! are then any matches, not the nearest (`search::acorn`).
//!
//! A list is `u16 d`, then the low bits (⌈d·l/8⌉ bytes), then the bitmap
//! (⌈(d + (u >> l) + 1)/8⌉ bytes; none for an empty list). Bytes past the
//! end of the buffer read as zero.

use super::packed::{load_word, or_bits};

/// The low bits of a list of `d` ids below `u`.
#[inline]
pub fn low_bits(d: usize, u: usize) -> u32 {
    match d {
        0 => 0,
        _ => (u / d).max(1).ilog2(),
    }
}

/// Bytes of a list of `d` ids below `u` (an empty list is its degree
/// alone: no bitmap).
pub fn len(d: usize, u: usize) -> usize {
    let (lo, hi) = parts(d, u, low_bits(d, u));
    2 + lo + hi
}

/// Bytes of the low bits and of the bitmap of a list of `d` ids below `u`
/// at `l` low bits.
#[inline]
fn parts(d: usize, u: usize, l: u32) -> (usize, usize) {
    let hi = match d {
        0 => 0,
        _ => (d + (u >> l) + 1).div_ceil(8),
    };
    ((d * l as usize).div_ceil(8), hi)
}

/// Appends the list of `ids` (each below `u`, any order, no repeats) to
/// `out`, sorted.
pub fn encode(ids: &[u32], u: usize, out: &mut Vec<u8>) {
    assert!(
        ids.len() <= u16::MAX as usize,
        "elias_fano: {} ids",
        ids.len()
    );
    let mut sorted = ids.to_vec();
    sorted.sort_unstable();
    let d = sorted.len();
    let l = low_bits(d, u);
    let start = out.len();
    out.resize(start + len(d, u), 0);
    out[start..start + 2].copy_from_slice(&(d as u16).to_le_bytes());
    let (low, high) = out[start + 2..].split_at_mut(parts(d, u, l).0);
    for (i, &v) in sorted.iter().enumerate() {
        assert!((v as usize) < u, "elias_fano: id {v} not below {u}");
        if i > 0 {
            assert_ne!(sorted[i - 1], v, "elias_fano: id {v} repeated");
        }
        if l > 0 {
            or_bits(low, i, l, v & ((1u32 << l) - 1));
        }
        let at = (v >> l) as usize + i;
        high[at / 8] |= 1 << (at % 8);
    }
}

/// The ids of the list at the start of `bytes` for ids below `u`, or None
/// when `bytes` is shorter than the list its degree says.
pub fn decode(bytes: &[u8], u: usize) -> Option<Ids<'_>> {
    let d = u16::from_le_bytes([*bytes.first()?, *bytes.get(1)?]) as usize;
    // One division a list (`low_bits`), shared by the size check and the
    // split.
    let l = low_bits(d, u);
    let (lo, hi) = parts(d, u, l);
    if bytes.len() < 2 + lo + hi {
        return None;
    }
    Some(Ids {
        low: &bytes[2..2 + lo],
        high: &bytes[2 + lo..2 + lo + hi],
        l,
        d,
        i: 0,
        word: 0,
        base: 0,
        next_word: 0,
    })
}

/// The ids of one list, ascending.
#[derive(Clone, Copy, Debug)]
pub struct Ids<'a> {
    low: &'a [u8],
    high: &'a [u8],
    l: u32,
    d: usize,
    i: usize,
    /// The bitmap's bits not yet consumed, from bit `base`.
    word: u64,
    base: usize,
    /// Byte of the bitmap the next word starts at.
    next_word: usize,
}

impl Ids<'_> {
    pub fn len(&self) -> usize {
        self.d
    }

    /// Appends the ids not yet taken to `out`: the search's way to take a
    /// whole list, one tight loop instead of a call an id.
    pub fn append_to(mut self, out: &mut Vec<u32>) {
        out.reserve(self.d - self.i);
        while self.i < self.d {
            out.push(self.pop_next());
        }
    }

    /// The next id; there must be one (`i < d`). The high part is the
    /// next set bit's position less the ids before it; the low part is
    /// read from the running bit offset `i·l`.
    #[inline(always)]
    fn pop_next(&mut self) -> u32 {
        while self.word == 0 {
            self.base = 8 * self.next_word;
            self.word = load_word(self.high, self.next_word);
            self.next_word += 8;
        }
        let at = self.base + self.word.trailing_zeros() as usize;
        self.word &= self.word - 1;
        let bit = self.i * self.l as usize;
        let low = (load_word(self.low, bit / 8) >> (bit % 8)) & ((1u64 << self.l) - 1);
        self.i += 1;
        (((at - (self.i - 1)) as u64) << self.l | low) as u32
    }

    pub fn is_empty(&self) -> bool {
        self.d == 0
    }
}

impl Iterator for Ids<'_> {
    type Item = u32;

    #[inline]
    fn next(&mut self) -> Option<u32> {
        match self.i < self.d {
            true => Some(self.pop_next()),
            false => None,
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.d - self.i;
        (left, Some(left))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Every list decodes to its ids sorted, in exactly `len` bytes,
        /// also when lists follow each other in one buffer.
        #[test]
        fn round_trip(u in 1usize..200_000, raw in proptest::collection::vec(any::<u32>(), 0..300), seed in any::<u32>()) {
            let mut ids: Vec<u32> = raw.iter().map(|&v| v % u as u32).collect();
            ids.sort_unstable();
            ids.dedup();
            // Some order other than sorted, as a graph list comes.
            let mut shuffled = ids.clone();
            shuffled.rotate_left(seed as usize % ids.len().max(1));
            let mut out = vec![0xEE];
            encode(&shuffled, u, &mut out);
            prop_assert_eq!(out.len(), 1 + len(ids.len(), u));
            encode(&[], u, &mut out);
            let first = decode(&out[1..], u).expect("whole");
            prop_assert_eq!(first.len(), ids.len());
            let mut appended = vec![7];
            first.append_to(&mut appended);
            prop_assert_eq!(&appended[1..], &ids[..]);
            prop_assert_eq!(first.collect::<Vec<_>>(), ids.clone());
            let second = decode(&out[1 + len(ids.len(), u)..], u).expect("whole");
            prop_assert_eq!(second.count(), 0);
            // A list cut short is refused, not read past.
            if !ids.is_empty() {
                let end = out.len() - len(0, u) - 1;
                prop_assert!(decode(&out[1..end], u).is_none());
            }
        }
    }

    #[test]
    fn every_id_at_the_edges() {
        for u in [1usize, 2, 3, 7, 8, 9, 63, 64, 65, 1000] {
            let all: Vec<u32> = (0..u as u32).collect();
            let mut out = Vec::new();
            encode(&all, u, &mut out);
            assert_eq!(decode(&out, u).unwrap().collect::<Vec<_>>(), all, "u = {u}");
            let last = [u as u32 - 1];
            out.clear();
            encode(&last, u, &mut out);
            assert_eq!(
                decode(&out, u).unwrap().collect::<Vec<_>>(),
                last,
                "u = {u}"
            );
        }
    }

    /// What the module notes claim for wordnet-minilm's graph.
    #[test]
    fn smaller_than_packed_at_graph_degrees() {
        let (u, d) = (116_707, 52);
        assert!(len(d, u) <= 88, "{}", len(d, u));
        assert_eq!(crate::layout::record::packed_len(0, d, 17), 113);
        // An empty list is its degree alone, whatever the universe.
        assert_eq!(len(0, u), 2);
    }
}
