//! Neighbour packing (Gorgeous §3.4, Figure 7): a node's disk block carries,
//! after the node's own record, the adjacency lists of some of its
//! neighbours, so a neighbour that becomes a candidate later needs no read
//! for its list. Shared by the graph-replicated layout ([`super::replicated`],
//! Figure 7(a)) and the separated one ([`super::separated`], Figure 7(b)):
//! both choose the lists by the same rule and store them the same way.
//!
//! **Selection** (Gorgeous §4.1). Nodes are packed one by one in id order.
//! A node's candidates are its neighbours (itself and repeats dropped) by
//! exact distance to it, closest first, ties by id: "the close neighbours of
//! a node are more likely to be visited after the node". They are taken
//! while fewer than R' (`max_replicas`) are taken, skipping
//!
//! - a neighbour whose list is already packed R' + 1 times (the paper's cap:
//!   without it the lists of hubs fill many blocks, and a read brings lists
//!   the search has already seen), and
//! - a neighbour whose list does not fit the room left in the block; a
//!   shorter list further down may still fit, so the block is filled as far
//!   as the candidates allow (Figure 7(a): the lists "fill a disk block").
//!
//! With no R' (`None`) a block takes as many lists as fit and no list is
//! capped. The candidates of a chunk of nodes are sorted in parallel; the
//! picking, which depends on every earlier node's picks through the cap, is
//! sequential, so the same graph always gives the same bytes.
//!
//! **Replica section**, right after the node's own record in its block:
//!
//! | bytes            | field                                              |
//! |------------------|----------------------------------------------------|
//! | 2                | r, the replicas that follow (u16 little endian)    |
//! | ⌈id_bits/8⌉      | replica id, little endian                          |
//! | 2                | its degree d (u16 little endian)                   |
//! | ⌈d·id_bits/8⌉    | its d neighbour ids, `id_bits` bits each           |
//!
//! The last three rows repeat r times, back to back; the rest of the page is
//! zero. The id is kept to whole bytes rather than packed with the list so
//! that each list starts on a byte and is exactly a packed record with an
//! empty vector ([`super::record`]), parsed by the same code as the node's
//! own; the id itself is what re-ranking needs to fetch the replica's exact
//! vector (§4.1: "we also store the IDs of the packed neighbors"). A reader
//! checks every field against the bytes it has: a count, id, or degree that
//! is out of range or runs past the page ends the section, keeping the
//! entries read before it.

use super::record::{packed_len, write_packed, NodeView};
use crate::error::{Error, Result};
use rayon::prelude::*;
use std::io;

/// Bytes of the replica count at the start of the section.
pub const COUNT_BYTES: usize = 2;

/// Bytes of a replica's id: whole bytes, enough for `id_bits`.
pub fn id_bytes(id_bits: u32) -> usize {
    id_bits.div_ceil(8) as usize
}

/// Bytes of one replica entry whose list has `degree` ids.
pub fn replica_len(degree: usize, id_bits: u32) -> usize {
    id_bytes(id_bits) + packed_len(0, degree, id_bits)
}

/// What writing a layout with replicated lists did.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ReplicationStats {
    /// Lists written into other nodes' blocks.
    pub replicas: u64,
    /// `replicas / n`: the lists one block read brings besides its own.
    pub mean_replicas_per_block: f64,
    /// The most blocks any one list was written into (at most R' + 1).
    pub max_times_replicated: u32,
    /// Bytes of the pages file.
    pub file_bytes: u64,
    /// `file_bytes` over the coupled layout's for the same data (DiskANN's
    /// one-copy layout: Gorgeous §4.1's "disk space blow up", Figure 14).
    pub blowup_vs_coupled: f64,
}

/// Counts gathered by [`pack_neighbors`].
pub(crate) struct Packing {
    pub replicas: u64,
    pub max_times: u32,
}

impl Packing {
    pub fn stats(&self, n: usize, file_bytes: u64, coupled_bytes: u64) -> ReplicationStats {
        ReplicationStats {
            replicas: self.replicas,
            mean_replicas_per_block: if n == 0 {
                0.0
            } else {
                self.replicas as f64 / n as f64
            },
            max_times_replicated: self.max_times,
            file_bytes,
            blowup_vs_coupled: file_bytes as f64 / coupled_bytes as f64,
        }
    }
}

/// Nodes whose candidates are sorted together (in parallel) before they are
/// picked from in id order: the sorted lists of a chunk are all that is held,
/// not those of the whole graph.
const CHUNK: usize = 4096;

/// Refuses lists the layout cannot encode, before anything is written: a
/// count other than `n`, a degree over `max_degree` (a reader would take it
/// for a corrupt page), an id not below `n` (it would not fit `id_bits`).
pub(crate) fn check_lists(lists: &[Vec<u32>], n: usize, max_degree: usize) -> io::Result<()> {
    let bad = |msg: String| Err(io::Error::new(io::ErrorKind::InvalidInput, msg));
    if lists.len() != n {
        return bad(format!(
            "adjacency lists: expected {n}, found {}",
            lists.len()
        ));
    }
    for (u, list) in lists.iter().enumerate() {
        if list.len() > max_degree {
            return bad(format!(
                "degree of node {u}: expected at most {max_degree}, found {}",
                list.len()
            ));
        }
        if let Some(&v) = list.iter().find(|&&v| v as usize >= n) {
            return bad(format!(
                "neighbour of node {u}: expected an id below {n}, found {v}"
            ));
        }
    }
    Ok(())
}

/// The checks every layout with one graph block a page makes: a page size
/// the engine reads, ids that fit a u32, a degree that fits the u16 of a
/// record.
pub(crate) fn check_geometry(page_size: usize, n: usize, max_degree: usize) -> Result<()> {
    if ![4096, 8192, 16384].contains(&page_size) {
        return Err(Error::argument(
            "page_size",
            "4096, 8192 or 16384",
            page_size,
        ));
    }
    if n as u64 > u64::from(u32::MAX) + 1 {
        return Err(Error::argument(
            "n",
            format!("at most {} nodes (u32 ids)", u64::from(u32::MAX) + 1),
            n,
        ));
    }
    if max_degree > u16::MAX as usize {
        return Err(Error::argument(
            "max_degree",
            format!("at most {} (u16 degrees)", u16::MAX),
            max_degree,
        ));
    }
    Ok(())
}

/// `u`'s neighbours, without `u` and repeats, closest to `u` first, ties by id.
fn by_distance(u: u32, list: &[u32], distance: &(dyn Fn(u32, u32) -> f32 + Sync)) -> Vec<u32> {
    let mut ids: Vec<u32> = list.iter().copied().filter(|&v| v != u).collect();
    ids.sort_unstable();
    ids.dedup();
    let mut by: Vec<(f32, u32)> = ids.into_iter().map(|v| (distance(u, v), v)).collect();
    // total_cmp: a NaN distance still sorts the same way every time.
    by.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    by.into_iter().map(|(_, v)| v).collect()
}

/// Chooses the lists packed into every node's block (rule in the module
/// comment) and calls `block(u, picks)` for each node in id order, picks in
/// the order chosen (closest first). `room(u)` is the bytes node `u`'s block
/// has for replica entries (after its own record and the count). Lists must
/// have passed [`check_lists`].
pub(crate) fn pack_neighbors(
    lists: &[Vec<u32>],
    id_bits: u32,
    max_replicas: Option<usize>,
    distance: &(dyn Fn(u32, u32) -> f32 + Sync),
    room: &(dyn Fn(u32) -> usize + Sync),
    mut block: impl FnMut(u32, &[u32]) -> io::Result<()>,
) -> io::Result<Packing> {
    let n = lists.len();
    let take = max_replicas.unwrap_or(usize::MAX);
    let smallest = replica_len(0, id_bits);
    let mut times = vec![0u32; n];
    let mut packing = Packing {
        replicas: 0,
        max_times: 0,
    };
    let mut picks = Vec::new();
    for first in (0..n).step_by(CHUNK) {
        let last = (first + CHUNK).min(n);
        // No distances for blocks that can take nothing.
        let sorted: Vec<Vec<u32>> = (first..last)
            .into_par_iter()
            .map(|u| {
                if take == 0 || room(u as u32) < smallest {
                    Vec::new()
                } else {
                    by_distance(u as u32, &lists[u], distance)
                }
            })
            .collect();
        for (u, candidates) in (first..last).zip(&sorted) {
            picks.clear();
            let mut left = room(u as u32);
            for &v in candidates {
                if picks.len() == take || left < smallest {
                    break;
                }
                let times_v = &mut times[v as usize];
                if max_replicas.is_some_and(|r| *times_v as usize > r) {
                    continue;
                }
                let len = replica_len(lists[v as usize].len(), id_bits);
                if len > left {
                    continue;
                }
                left -= len;
                *times_v += 1;
                packing.max_times = packing.max_times.max(*times_v);
                picks.push(v);
            }
            packing.replicas += picks.len() as u64;
            block(u as u32, &picks)?;
        }
    }
    Ok(packing)
}

/// What a replicated or separated layout writes first: its header page,
/// then one `page_size` block per node in id order, each the node's vector
/// (`vector_bytes` long, filled by `vector`; 0 for graph blocks), its own
/// packed list and the replicas [`pack_neighbors`] chose for the room left.
pub(crate) struct BlockWriter<'a> {
    pub header: &'a super::PagesHeader,
    pub page_size: usize,
    pub lists: &'a [Vec<u32>],
    pub id_bits: u32,
    pub vector_bytes: usize,
    pub vector: &'a dyn Fn(u32, &mut [u8]),
}

impl BlockWriter<'_> {
    pub fn write(
        &self,
        out: &mut impl io::Write,
        distance: &(dyn Fn(u32, u32) -> f32 + Sync),
        max_replicas: Option<usize>,
    ) -> io::Result<Packing> {
        let (lists, bits, vb) = (self.lists, self.id_bits, self.vector_bytes);
        let mut page = vec![0u8; self.page_size];
        self.header.encode(&mut page);
        out.write_all(&page)?;
        let page_size = self.page_size;
        let own = move |u: u32| packed_len(vb, lists[u as usize].len(), bits);
        let room = move |u: u32| page_size - own(u) - COUNT_BYTES;
        let mut vec_buf = vec![0u8; vb];
        pack_neighbors(lists, bits, max_replicas, distance, &room, |u, picks| {
            page.fill(0);
            (self.vector)(u, &mut vec_buf);
            let at = own(u);
            write_packed(&mut page[..at], &vec_buf, &lists[u as usize], bits);
            write_replicas(&mut page[at..], picks, lists, bits);
            out.write_all(&page)
        })
    }
}

/// Writes the replica section for `picks` at the start of `out` and returns
/// its length. `out` must be zero and hold it (what `pack_neighbors` chose
/// for the room).
pub(crate) fn write_replicas(
    out: &mut [u8],
    picks: &[u32],
    lists: &[Vec<u32>],
    id_bits: u32,
) -> usize {
    let count = u16::try_from(picks.len()).expect("replicas per block fit a u16");
    out[..COUNT_BYTES].copy_from_slice(&count.to_le_bytes());
    let w = id_bytes(id_bits);
    let mut at = COUNT_BYTES;
    for &v in picks {
        out[at..at + w].copy_from_slice(&v.to_le_bytes()[..w]);
        at += w;
        let list = &lists[v as usize];
        let len = packed_len(0, list.len(), id_bits);
        write_packed(&mut out[at..at + len], &[], list, id_bits);
        at += len;
    }
    at
}

/// The node's own record at the start of its block: `vector_bytes` of
/// vector, u16 degree, packed ids. `None` when the degree is over
/// `max_degree` or the record runs past `block` (a corrupt or short read).
pub(crate) fn own_record(
    block: &[u8],
    vector_bytes: usize,
    max_degree: usize,
    id_bits: u32,
) -> Option<&[u8]> {
    let d = block.get(vector_bytes..vector_bytes + 2)?;
    let degree = u16::from_le_bytes([d[0], d[1]]) as usize;
    if degree > max_degree {
        return None;
    }
    block.get(..packed_len(vector_bytes, degree, id_bits))
}

/// Parses the replica section at the start of `section` into `out` (cleared
/// first): (id, view with an empty vector). Every field is checked: an id
/// not below `n`, a degree over `max_degree`, or an entry running past
/// `section` ends the walk; entries before it are kept.
pub(crate) fn read_replicas<'a>(
    section: &'a [u8],
    n: usize,
    max_degree: usize,
    id_bits: u32,
    out: &mut Vec<(u32, NodeView<'a>)>,
) {
    out.clear();
    let Some(c) = section.get(..COUNT_BYTES) else {
        return;
    };
    let count = u16::from_le_bytes([c[0], c[1]]);
    let w = id_bytes(id_bits);
    let mut at = COUNT_BYTES;
    for _ in 0..count {
        let Some(head) = section.get(at..at + w + 2) else {
            return;
        };
        let mut id = [0u8; 4];
        id[..w].copy_from_slice(&head[..w]);
        let id = u32::from_le_bytes(id);
        let degree = u16::from_le_bytes([head[w], head[w + 1]]) as usize;
        if id as usize >= n || degree > max_degree {
            return;
        }
        let len = packed_len(0, degree, id_bits);
        let Some(list) = section.get(at + w..at + w + len) else {
            return;
        };
        out.push((id, NodeView::parse_packed(list, 0, max_degree, id_bits)));
        at += w + len;
    }
}

/// Checks shared by the tests of both layouts that replicate lists.
/// The replica section of a block whose own record (`vector_bytes` of
/// vector, then a packed list) comes first: [`read_replicas`] after
/// [`own_record`]; nothing when the own record is corrupt, since the
/// section's start is then unknown.
pub(crate) fn block_replicas<'a>(
    block: &'a [u8],
    vector_bytes: usize,
    n: usize,
    max_degree: usize,
    id_bits: u32,
    out: &mut Vec<(u32, NodeView<'a>)>,
) {
    out.clear();
    if let Some(own) = own_record(block, vector_bytes, max_degree, id_bits) {
        read_replicas(&block[own.len()..], n, max_degree, id_bits, out);
    }
}

#[cfg(test)]
pub(crate) mod testing {
    use super::{replica_len, COUNT_BYTES};
    use crate::layout::{Layout, Span};
    use proptest::prelude::*;

    /// A distance with many ties (so the id order of ties is exercised),
    /// not symmetric (the rule never assumes it).
    pub fn coarse_distance(u: u32, v: u32) -> f32 {
        ((u.wrapping_mul(2_654_435_761) ^ v.wrapping_mul(40_503)) >> 29) as f32
    }

    /// `n` random normal `dim`-d f32 vectors (their stored bytes) and lists
    /// of exactly `degree` distinct random neighbours (never the node), with
    /// the squared L2 distance between them: the data of the blow-up figures.
    pub fn random_data(
        n: usize,
        dim: usize,
        degree: usize,
        seed: u64,
    ) -> (Vec<f32>, Vec<Vec<u32>>) {
        let mut rng = crate::util::rng::Rng::new(seed);
        let vectors = (0..n * dim).map(|_| rng.normal()).collect();
        let lists = (0..n as u32)
            .map(|u| {
                let mut l = Vec::with_capacity(degree);
                while l.len() < degree {
                    let v = rng.below(n) as u32;
                    if v != u && !l.contains(&v) {
                        l.push(v);
                    }
                }
                l
            })
            .collect();
        (vectors, lists)
    }

    /// Squared L2 distance between rows `u` and `v` of `vectors`.
    pub fn l2(vectors: &[f32], dim: usize, u: u32, v: u32) -> f32 {
        let a = &vectors[u as usize * dim..(u as usize + 1) * dim];
        let b = &vectors[v as usize * dim..(v as usize + 1) * dim];
        a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
    }

    /// Writes row `id` of `vectors` as stored f32 bytes.
    pub fn f32_bytes(vectors: &[f32], dim: usize, id: u32, out: &mut [u8]) {
        let row = &vectors[id as usize * dim..(id as usize + 1) * dim];
        for (o, x) in out.chunks_exact_mut(4).zip(row) {
            o.copy_from_slice(&x.to_le_bytes());
        }
    }

    /// The bytes of `span` in `file`, after checking it is page-aligned,
    /// inside the file and no longer than `max_span_bytes`.
    pub fn read<'a>(l: &dyn Layout, file: &'a [u8], span: Span) -> Result<&'a [u8], TestCaseError> {
        let page = l.page_size() as u64;
        prop_assert_eq!(span.offset % page, 0);
        prop_assert_eq!(u64::from(span.len) % page, 0);
        prop_assert!(span.len as usize <= l.max_span_bytes());
        prop_assert!(span.offset + u64::from(span.len) <= file.len() as u64);
        Ok(&file[span.offset as usize..(span.offset + u64::from(span.len)) as usize])
    }

    /// Checks the graph side of every node's block (`span_of`) in a written
    /// file: the node's own list; replicas that are its neighbours' lists
    /// (never its own), closest first with ties by id, at most `max_replicas`
    /// of them, and none left out that the rule allowed and that would have
    /// fitted; no list in more than `max_replicas + 1` blocks. Returns how
    /// many blocks each list was found in.
    pub fn check_blocks(
        l: &dyn Layout,
        file: &[u8],
        lists: &[Vec<u32>],
        id_bits: u32,
        max_replicas: Option<usize>,
        distance: &dyn Fn(u32, u32) -> f32,
    ) -> Result<Vec<u32>, TestCaseError> {
        let page = l.page_size();
        let mut times = vec![0u32; lists.len()];
        let (mut records, mut replicas) = (vec![], vec![]);
        for id in 0..lists.len() as u32 {
            let sp = l.span_of(id);
            prop_assert_eq!(sp.len as usize, page);
            let bytes = read(l, file, sp)?;
            let own = l.record_slice(id, bytes);
            prop_assert!(own.len() <= l.record_bytes());
            let rec = l.parse(own);
            prop_assert_eq!(
                rec.neighbors().collect::<Vec<_>>(),
                lists[id as usize].clone()
            );
            l.block_records(id, bytes, &mut records);
            prop_assert_eq!(records.len(), 1);
            prop_assert_eq!(records[0], (id, own));

            l.replicated_lists(id, bytes, &mut replicas);
            let picked: Vec<u32> = replicas.iter().map(|r| r.0).collect();
            if let Some(r) = max_replicas {
                prop_assert!(picked.len() <= r);
            }
            let mut used = own.len() + COUNT_BYTES;
            for (k, (rid, view)) in replicas.iter().enumerate() {
                prop_assert!(*rid != id);
                prop_assert!(lists[id as usize].contains(rid));
                prop_assert!(view.vector.is_empty());
                prop_assert_eq!(
                    view.neighbors().collect::<Vec<_>>(),
                    lists[*rid as usize].clone()
                );
                if k > 0 {
                    let (prev, d) = (picked[k - 1], distance(id, *rid));
                    let dp = distance(id, prev);
                    prop_assert!(
                        dp < d || (dp == d && prev < *rid),
                        "replicas of {} out of order: {:?}",
                        id,
                        picked
                    );
                }
                used += replica_len(lists[*rid as usize].len(), id_bits);
            }
            // Nothing left out that was allowed and would have fitted: every
            // neighbour not picked was capped, or too long for what was left
            // (the room only shrinks as the block fills).
            let full = max_replicas.is_some_and(|r| picked.len() == r);
            for &v in &lists[id as usize] {
                if v == id || picked.contains(&v) || full {
                    continue;
                }
                let capped = max_replicas.is_some_and(|r| times[v as usize] as usize > r);
                let too_long = used + replica_len(lists[v as usize].len(), id_bits) > page;
                prop_assert!(capped || too_long, "node {} left out {}", id, v);
            }
            for &v in &picked {
                times[v as usize] += 1;
            }
        }
        if let Some(r) = max_replicas {
            prop_assert!(times.iter().all(|&t| t as usize <= r + 1));
        }
        Ok(times)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::record::id_bits;

    fn run(
        lists: &[Vec<u32>],
        max_replicas: Option<usize>,
        room: usize,
        distance: &(dyn Fn(u32, u32) -> f32 + Sync),
    ) -> (Vec<Vec<u32>>, Packing) {
        let mut all = vec![];
        let p = pack_neighbors(
            lists,
            id_bits(lists.len()),
            max_replicas,
            distance,
            &|_| room,
            |u, picks| {
                assert_eq!(u as usize, all.len());
                all.push(picks.to_vec());
                Ok(())
            },
        )
        .unwrap();
        (all, p)
    }

    #[test]
    fn picks_closest_first_ties_by_id_and_drops_self_and_repeats() {
        // Node 0 lists itself, a repeat, and two neighbours at distance 1.
        let lists = vec![vec![3, 0, 2, 1, 3], vec![], vec![], vec![]];
        let d = |u: u32, v: u32| if u == 0 && v == 3 { 0.5 } else { 1.0 };
        let (picks, p) = run(&lists, None, 4096, &d);
        assert_eq!(picks[0], vec![3, 1, 2]);
        assert_eq!(p.replicas, 3);
        assert_eq!(p.max_times, 1);
    }

    #[test]
    fn a_list_is_packed_at_most_r_plus_one_times() {
        // Every node lists node 0 first; with R' = 1 only nodes 1 and 2 get
        // it, the others fall back to their next neighbour.
        let n = 6u32;
        let lists: Vec<Vec<u32>> = (0..n)
            .map(|u| {
                if u == 0 {
                    vec![1]
                } else {
                    vec![0, (u % (n - 1)) + 1]
                }
            })
            .collect();
        let d = |_: u32, v: u32| v as f32;
        let (picks, p) = run(&lists, Some(1), 4096, &d);
        assert_eq!(picks[1], vec![0]);
        assert_eq!(picks[2], vec![0]);
        assert_eq!(picks[3], vec![4]);
        assert_eq!(p.max_times, 2);
    }

    #[test]
    fn a_list_too_long_for_the_room_is_skipped_not_the_rest() {
        let lists = vec![vec![1, 2], (0..40).collect(), vec![0], vec![]];
        let lists: Vec<Vec<u32>> = lists
            .into_iter()
            .map(|l: Vec<u32>| l.into_iter().map(|v| v % 4).collect())
            .collect();
        let bits = id_bits(4);
        // Room for node 2's list but not node 1's 40 ids.
        let room = replica_len(1, bits) + 1;
        let (picks, _) = run(&lists, None, room, &|_, v| v as f32);
        assert_eq!(picks[0], vec![2]);
    }

    #[test]
    fn sections_round_trip_and_truncations_keep_what_fits() {
        let lists: Vec<Vec<u32>> = (0..300u32)
            .map(|u| (0..u % 9).map(|k| (u + k) % 300).collect())
            .collect();
        let bits = id_bits(300);
        let picks = [5u32, 299, 0, 17];
        let mut buf = vec![0u8; 200];
        let len = write_replicas(&mut buf, &picks, &lists, bits);
        let mut out = vec![];
        read_replicas(&buf, 300, 8, bits, &mut out);
        assert_eq!(out.iter().map(|r| r.0).collect::<Vec<_>>(), picks);
        for (id, view) in &out {
            assert!(view.vector.is_empty());
            assert_eq!(view.neighbors().collect::<Vec<_>>(), lists[*id as usize]);
        }
        for cut in 0..len {
            read_replicas(&buf[..cut], 300, 8, bits, &mut out);
            assert!(out.len() < picks.len());
            for (id, view) in &out {
                assert_eq!(view.neighbors().collect::<Vec<_>>(), lists[*id as usize]);
            }
        }
    }
}
