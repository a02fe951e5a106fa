//! Gorgeous's graph cache (§4.1, "graph prioritized memory cache"): the
//! adjacency lists alone, no vectors, of the best-ranked nodes. With PQ
//! codes in RAM a search needs a node's list at every hop but its exact
//! vector only if it ends among the top candidates (§3.3), so a list held
//! here saves a read that a whole cached record would cost 4-10x the bytes
//! to save.
//!
//! `graph.bin`, written by the build, holds every list packed (u16 degree,
//! ⌈log2 n⌉-bit ids, as the blocked layout packs them), in rank order, so
//! the cache loads the longest prefix its budget grant holds:
//!
//! | bytes | field |
//! |---|---|
//! | 8 | magic `STRVADJ1` |
//! | 8 | n (u64) |
//! | 4 | id bits (u32) |
//! | 4 n | node ids in rank order (u32) |
//! | 8 (n + 1) | byte offset of each list in the list section (u64) |
//! | ... | the lists, in rank order |
//!
//! In RAM each held list is coded Elias–Fano ([`crate::util::elias_fano`]:
//! 88 bytes instead of 113 at wordnet-minilm's degree), so the same grant
//! holds more lists; a list's coded size follows from its degree, which
//! its offsets give, so the prefix that fits is found before any list is
//! read.

use crate::error::{Error, FileContext, Result};
use crate::layout::record::{id_bits, packed_len, write_packed, NodeView};
use crate::util::elias_fano;
use std::io::{Read, Write};
use std::path::Path;

const MAGIC: &[u8; 8] = b"STRVADJ1";
/// The file's name in an index directory.
pub const GRAPH_FILE: &str = "graph.bin";
const HEADER: usize = 20;

/// Writes `graph.bin`: `lists[id]` for every id, in the order of `rank`
/// (a permutation of 0..n, best first).
pub fn write(out: &mut impl Write, rank: &[u32], lists: &[Vec<u32>]) -> std::io::Result<()> {
    let n = lists.len();
    assert_eq!(rank.len(), n, "rank must order every node");
    let bits = id_bits(n);
    out.write_all(MAGIC)?;
    out.write_all(&(n as u64).to_le_bytes())?;
    out.write_all(&bits.to_le_bytes())?;
    for &id in rank {
        out.write_all(&id.to_le_bytes())?;
    }
    let mut offset = 0u64;
    out.write_all(&offset.to_le_bytes())?;
    for &id in rank {
        offset += packed_len(0, lists[id as usize].len(), bits) as u64;
        out.write_all(&offset.to_le_bytes())?;
    }
    let mut buf = Vec::new();
    for &id in rank {
        let l = &lists[id as usize];
        buf.resize(packed_len(0, l.len(), bits), 0);
        write_packed(&mut buf, &[], l, bits);
        out.write_all(&buf)?;
    }
    Ok(())
}

/// Bytes in RAM of a cache holding `nodes` of n nodes whose lists take
/// `list_bytes`: the lists, an offset per node (u32 while the lists stay
/// under 4 GB, else u64: lists of 100M nodes pass it), and (unless every
/// node is held, when ids index directly) the sorted ids.
pub fn resident_bytes_for(nodes: usize, n: usize, list_bytes: usize) -> usize {
    list_bytes + Offsets::width(list_bytes) * (nodes + 1) + if nodes == n { 0 } else { 4 * nodes }
}

/// Where each held list starts: u32 while the lists stay under 4 GB
/// (at 20% of wordnet-minilm the 4 bytes a node saved hold 0.5 MB more
/// lists), else u64.
enum Offsets {
    Narrow(Vec<u32>),
    Wide(Vec<u64>),
}

impl Default for Offsets {
    fn default() -> Self {
        Offsets::Narrow(Vec::new())
    }
}

impl Offsets {
    fn width(list_bytes: usize) -> usize {
        match u32::try_from(list_bytes) {
            Ok(_) => 4,
            Err(_) => 8,
        }
    }

    fn with_capacity(nodes: usize, list_bytes: usize) -> Offsets {
        match Offsets::width(list_bytes) {
            4 => Offsets::Narrow(Vec::with_capacity(nodes + 1)),
            _ => Offsets::Wide(Vec::with_capacity(nodes + 1)),
        }
    }

    fn push(&mut self, at: usize) {
        match self {
            Offsets::Narrow(v) => v.push(at as u32),
            Offsets::Wide(v) => v.push(at as u64),
        }
    }

    #[inline]
    fn at(&self, i: usize) -> usize {
        match self {
            Offsets::Narrow(v) => v[i] as usize,
            Offsets::Wide(v) => v[i] as usize,
        }
    }

    fn len(&self) -> usize {
        match self {
            Offsets::Narrow(v) => v.len(),
            Offsets::Wide(v) => v.len(),
        }
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The adjacency lists of some nodes, looked up by id.
#[derive(Default)]
pub struct AdjacencyCache {
    n: usize,
    /// Sorted ids held; empty when every node is (ids index `offsets`).
    ids: Vec<u32>,
    /// Start of each held list in `lists` (one more than the nodes held).
    offsets: Offsets,
    /// The held lists, coded Elias–Fano.
    lists: Vec<u8>,
}

/// What `graph.bin` asks for: the bytes to hold every list.
pub fn demand(path: &Path) -> Result<usize> {
    let (n, bits, _, offsets) = read_head(path)?;
    let held = held_offsets(&offsets, n, bits);
    Ok(resident_bytes_for(n, n, held[n]))
}

/// Where each list of the rank order would start in RAM, coded: the sum of
/// the coded sizes the lists before it may take (n + 1 entries).
fn held_offsets(offsets: &[u64], n: usize, bits: u32) -> Vec<usize> {
    let mut most = MostCoded::new(n);
    let mut at = Vec::with_capacity(offsets.len());
    at.push(0);
    for w in offsets.windows(2) {
        // The degree field is a u16: a longer gap is a damaged file, and
        // must not size a table.
        let degree = 8 * ((w[1] - w[0]) as usize).saturating_sub(2) / bits as usize;
        let degree = degree.min(u16::MAX as usize);
        at.push(at.last().expect("one") + most.at(degree));
    }
    at
}

/// The most bytes a coded list may take whose packed form allows at most
/// `degree` ids: `⌊8·(packed − 2)/bits⌋` is its degree when ids take 8
/// bits or more, and bounds it when they take fewer; a repeated id is held
/// once, so the list may be shorter still. The coded size is not monotone
/// in the degree (it can drop a byte where the low bits shrink), so each
/// degree counts the largest size of any degree up to it: a held list
/// never takes more than was counted for it.
struct MostCoded {
    n: usize,
    upper: Vec<usize>,
}

impl MostCoded {
    fn new(n: usize) -> Self {
        MostCoded {
            n,
            upper: vec![elias_fano::len(0, n)],
        }
    }

    fn at(&mut self, degree: usize) -> usize {
        while self.upper.len() <= degree {
            let d = self.upper.len();
            let top = self.upper[d - 1].max(elias_fano::len(d, self.n));
            self.upper.push(top);
        }
        self.upper[degree]
    }
}

/// n, id bits, rank order and list offsets of `graph.bin`.
type Head = (usize, u32, Vec<u32>, Vec<u64>);

fn read_head(path: &Path) -> Result<Head> {
    let mut f = std::io::BufReader::new(std::fs::File::open(path).at("open", path)?);
    let mut h = [0u8; HEADER];
    f.read_exact(&mut h).at("read", path)?;
    if &h[..8] != MAGIC {
        return Err(Error::index(path, "magic", "\"STRVADJ1\"", "other bytes"));
    }
    let n = u64::from_le_bytes(h[8..16].try_into().expect("8 bytes")) as usize;
    let bits = u32::from_le_bytes(h[16..20].try_into().expect("4 bytes"));
    if bits != id_bits(n) {
        return Err(Error::index(path, "id bits", id_bits(n), bits));
    }
    let len = std::fs::metadata(path).at("stat", path)?.len();
    // In u128, so a damaged n cannot wrap past the check and size the
    // buffers below: they stay within the file's real size.
    let lists_at = HEADER as u128 + 12 * n as u128 + 8;
    if u128::from(len) < lists_at {
        return Err(Error::index(
            path,
            "size",
            format!("at least {lists_at} bytes for {n} nodes"),
            len,
        ));
    }
    let mut b = vec![0u8; 4 * n];
    f.read_exact(&mut b).at("read", path)?;
    let rank: Vec<u32> = b
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
        .collect();
    let mut b = vec![0u8; 8 * (n + 1)];
    f.read_exact(&mut b).at("read", path)?;
    let offsets: Vec<u64> = b
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect();
    // Each list at least its degree field (an empty list's 2 bytes).
    let least = packed_len(0, 0, bits) as u64;
    if offsets[0] != 0
        || offsets
            .windows(2)
            .any(|w| w[1] < w[0].saturating_add(least))
        || lists_at + u128::from(offsets[n]) != u128::from(len)
    {
        return Err(Error::index(
            path,
            "list offsets",
            format!(
                "increasing by at least {least} from 0 to the {} bytes of lists",
                u128::from(len) - lists_at
            ),
            "other values (corrupt file)",
        ));
    }
    if let Some(&id) = rank.iter().find(|&&id| id as usize >= n) {
        return Err(Error::index(path, "rank order", format!("ids < {n}"), id));
    }
    Ok((n, bits, rank, offsets))
}

impl AdjacencyCache {
    /// Loads the best-ranked lists of `graph.bin` that fit in `budget`
    /// bytes (as counted by [`resident_bytes_for`]), for an index of `n`
    /// nodes.
    pub fn load(path: &Path, n: usize, budget: usize) -> Result<AdjacencyCache> {
        let (fn_, bits, rank, offsets) = read_head(path)?;
        if fn_ != n {
            return Err(Error::index(path, "n", n, fn_));
        }
        let held_at = held_offsets(&offsets, n, bits);
        // The longest prefix of the rank order that fits (all of it is
        // cheaper than all but one: it needs no id array).
        let fits = |m: usize| resident_bytes_for(m, n, held_at[m]) <= budget;
        let (mut lo, mut hi) = if fits(n) {
            (n, n)
        } else {
            (0, n.saturating_sub(1))
        };
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            if fits(mid) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        let m = lo;
        // Not one list fits: hold nothing, not even the offsets' first
        // entry, which alone would be 4 bytes past a grant of less.
        if m == 0 {
            return Ok(AdjacencyCache::default());
        }
        let mut f = std::fs::File::open(path).at("open", path)?;
        let lists_at = (HEADER + 12 * n + 8) as u64;
        use std::io::Seek;
        f.seek(std::io::SeekFrom::Start(lists_at))
            .at("seek", path)?;
        let mut raw = vec![0u8; offsets[m] as usize];
        f.read_exact(&mut raw).at("read", path)?;
        // Re-ordered by id, so a lookup is a binary search (or an index).
        let mut held: Vec<(u32, usize)> = (0..m).map(|i| (rank[i], i)).collect();
        held.sort_unstable();
        let mut cache = AdjacencyCache {
            n,
            ids: if m == n {
                Vec::new()
            } else {
                held.iter().map(|h| h.0).collect()
            },
            offsets: Offsets::with_capacity(m, held_at[m]),
            lists: Vec::with_capacity(held_at[m]),
        };
        let mut ids = Vec::new();
        for (k, &(id, i)) in held.iter().enumerate() {
            if m == n && id as usize != k {
                return Err(Error::index(
                    path,
                    "rank order",
                    "a permutation of the ids",
                    "repeats",
                ));
            }
            let list = &raw[offsets[i] as usize..offsets[i + 1] as usize];
            let view = NodeView::parse_packed(list, 0, usize::MAX, bits);
            if let Some(bad) = view.neighbors().find(|&v| v as usize >= n) {
                return Err(Error::index(
                    path,
                    format!("node {id}: neighbour id"),
                    format!("< {n}"),
                    bad,
                ));
            }
            cache.offsets.push(cache.lists.len());
            // A repeated id (a build's `duplicate_links`) is held once: the
            // search would skip it as visited anyway.
            ids.clear();
            ids.extend(view.neighbors());
            ids.sort_unstable();
            ids.dedup();
            elias_fano::encode(&ids, n, &mut cache.lists);
        }
        cache.offsets.push(cache.lists.len());
        // A search follows the lists at random (`stratavec_io::huge_pages`).
        stratavec_io::huge_pages::back(&cache.lists);
        Ok(cache)
    }

    /// Node `id`'s neighbours, if held (a view with an empty vector).
    #[inline]
    pub fn get(&self, id: u32) -> Option<NodeView<'_>> {
        let i = if self.ids.is_empty() {
            if (id as usize) >= self.offsets.len().saturating_sub(1) {
                return None;
            }
            id as usize
        } else {
            self.ids.binary_search(&id).ok()?
        };
        let list = &self.lists[self.offsets.at(i)..self.offsets.at(i + 1)];
        Some(NodeView::elias_fano(list, self.n))
    }

    /// Nodes held.
    pub fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn resident_bytes(&self) -> usize {
        if self.offsets.is_empty() {
            return 0;
        }
        resident_bytes_for(self.len(), self.n, self.lists.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A grant below one list's bytes holds nothing (it held the offsets'
    /// first entry, 8 bytes past a grant of 0: proptest found n = 1,
    /// budget = 0).
    #[test]
    fn a_grant_too_small_for_one_list_holds_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("graph.bin");
        let mut f = std::fs::File::create(&path).unwrap();
        write(&mut f, &[0, 1], &[vec![1], vec![0]]).unwrap();
        drop(f);
        for budget in 0..8 {
            let c = AdjacencyCache::load(&path, 2, budget).unwrap();
            assert_eq!((c.len(), c.resident_bytes()), (0, 0), "budget {budget}");
            assert!(c.get(0).is_none());
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(40))]
        /// Whatever the budget: the cache holds a prefix of the rank order,
        /// every held list holds the graph's ids (sorted, each once: the
        /// coding's order), nothing else is held, and its bytes never
        /// exceed the budget.
        #[test]
        fn holds_the_best_ranked_lists_within_its_budget(n in 1usize..300, seed in any::<u64>(), budget in 0usize..20_000) {
            let mut rng = crate::util::rng::Rng::new(seed);
            let lists: Vec<Vec<u32>> = (0..n).map(|_| {
                let d = rng.below(12);
                (0..d).map(|_| rng.below(n) as u32).collect()
            }).collect();
            let mut rank: Vec<u32> = (0..n as u32).collect();
            rng.shuffle(&mut rank);
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("graph.bin");
            let mut f = std::fs::File::create(&path).unwrap();
            write(&mut f, &rank, &lists).unwrap();
            drop(f);
            let full = demand(&path).unwrap();
            let c = AdjacencyCache::load(&path, n, budget).unwrap();
            prop_assert!(c.resident_bytes() <= budget);
            prop_assert_eq!(budget >= full, c.len() == n);
            for (i, &id) in rank.iter().enumerate() {
                match c.get(id) {
                    Some(v) => {
                        prop_assert!(i < c.len());
                        let mut want = lists[id as usize].clone();
                        want.sort_unstable();
                        want.dedup();
                        prop_assert_eq!(v.degree(), want.len());
                        prop_assert_eq!(v.neighbors().collect::<Vec<_>>(), want);
                    }
                    None => prop_assert!(i >= c.len()),
                }
            }
            prop_assert!(c.get(n as u32).is_none());
        }
    }

    #[test]
    fn a_truncated_file_is_refused_with_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("graph.bin");
        let lists = vec![vec![1u32], vec![0]];
        let mut b = Vec::new();
        write(&mut b, &[0, 1], &lists).unwrap();
        std::fs::write(&path, &b[..b.len() - 1]).unwrap();
        let e = AdjacencyCache::load(&path, 2, 1 << 20)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("graph.bin") && e.contains("list offsets"), "{e}");
    }

    /// A count that would wrap the size, an empty list (no degree to read)
    /// and offsets past the end are refused naming graph.bin.
    #[test]
    fn damaged_counts_and_offsets_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(GRAPH_FILE);
        let lists = vec![vec![1u32], vec![0], vec![]];
        let mut good = Vec::new();
        write(&mut good, &[2, 0, 1], &lists).unwrap();
        let err = |bytes: &[u8]| {
            std::fs::write(&path, bytes).unwrap();
            let e = AdjacencyCache::load(&path, 3, 1 << 20)
                .err()
                .unwrap()
                .to_string();
            assert!(e.contains("graph.bin"), "{e}");
            e
        };
        let mut huge = good.clone();
        let n = 1u64 << 62;
        huge[8..16].copy_from_slice(&n.to_le_bytes());
        huge[16..20].copy_from_slice(&id_bits(n as usize).to_le_bytes());
        assert!(err(&huge).contains("size"));
        // Offsets 0, 2, 2, ...: the second list has no degree field.
        let offsets_at = HEADER + 4 * 3;
        let mut empty = good.clone();
        empty[offsets_at + 16..offsets_at + 24].copy_from_slice(&2u64.to_le_bytes());
        assert!(err(&empty).contains("list offsets"));
        let mut past = good.clone();
        past[offsets_at + 24..offsets_at + 32].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(err(&past).contains("list offsets"));
        std::fs::write(&path, &good).unwrap();
        assert_eq!(AdjacencyCache::load(&path, 3, 1 << 20).unwrap().len(), 3);
    }
}
