//! How node records are laid on disk (the second of the five questions in
//! docs/architecture.md). Search code asks a [`Layout`] which span of the file
//! holds a node and for the node's record inside the bytes read; it never
//! computes an offset itself.

pub mod blocked;
pub mod coupled;
pub mod csr;
pub mod header;
pub mod ivf;
pub mod ivf_assign;
pub mod ivf_members;
pub mod kind;
pub mod laser;
pub mod position_map;
pub mod record;
pub mod replicated;
pub mod replication;
pub mod separated;
pub mod shuffle;

pub use blocked::BlockedLayout;
pub use coupled::CoupledLayout;
pub use csr::CsrLayout;
pub use header::PagesHeader;
pub use ivf::IvfLayout;
pub use kind::LayoutKind;
pub use laser::LaserLayout;
pub use record::NodeView;
pub use replicated::ReplicatedLayout;
pub use replication::ReplicationStats;
pub use separated::SeparatedLayout;

/// The pages file of every index: page 0 its header, then the records in
/// the layout's order.
pub const PAGES_FILE: &str = "pages.bin";

/// A contiguous byte range of the pages file: one read. Page-aligned for
/// the layouts made for an SSD; any bytes for the CSR layout, made for a
/// byte-granular tier, whose reads [`Span::aligned`] widens on a backend
/// that needs alignment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub offset: u64,
    pub len: u32,
}

/// Buffer room for a read of up to `bytes` that may start anywhere: the
/// pages around it, for a backend that widens it to 4 KB alignment
/// ([`Span::aligned`]). The byte-granular layouts' `max_span_bytes`.
pub fn widened_room(bytes: usize) -> usize {
    bytes.div_ceil(4096) * 4096 + 4096
}

impl Span {
    /// The read that covers this span on a backend with `alignment`-byte
    /// granularity (a power of two), and where the span starts inside it.
    /// The identity for aligned spans and for alignment 1.
    pub fn aligned(self, alignment: u64) -> (Span, usize) {
        let start = self.offset & !(alignment - 1);
        let end = (self.offset + u64::from(self.len)).div_ceil(alignment) * alignment;
        let read = Span {
            offset: start,
            len: (end - start) as u32,
        };
        (read, (self.offset - start) as usize)
    }
}

pub trait Layout: Send + Sync {
    /// Short name for reports ("coupled").
    fn name(&self) -> &'static str;
    /// Page size in bytes (4096, 8192 or 16384).
    fn page_size(&self) -> usize;
    /// The largest span any one node needs, of either kind (`span_of` and
    /// `vector_span_of`): buffer slots are this big.
    fn max_span_bytes(&self) -> usize;
    /// The read that fetches node `id`'s record.
    fn span_of(&self, id: u32) -> Span;
    /// Bytes of the largest stored record (node cache slots are this big).
    fn record_bytes(&self) -> usize;
    /// Node `id`'s raw record inside `bytes`, the result of reading
    /// `span_of(id)` (at most `record_bytes()` long).
    fn record_slice<'a>(&'a self, id: u32, bytes: &'a [u8]) -> &'a [u8];
    /// Parses a raw record (from a read or from the node cache).
    fn parse<'a>(&self, record: &'a [u8]) -> NodeView<'a>;
    /// Every record (id, raw record) inside `bytes`, the result of reading
    /// `span_of(target)`: what block search (Starling §4.2) looks at.
    fn block_records<'a>(&self, target: u32, bytes: &'a [u8], out: &mut Vec<(u32, &'a [u8])>);
    /// Size the pages file must have.
    fn file_bytes(&self) -> u64;
    /// Mean records a read brings (what block search can use).
    fn records_per_block(&self) -> f64 {
        1.0
    }
    /// Bytes the layout itself holds in RAM (e.g. an id→position map).
    fn resident_bytes(&self) -> usize {
        0
    }
    /// Node `id`'s parsed record inside `bytes`.
    fn record<'a>(&'a self, id: u32, bytes: &'a [u8]) -> NodeView<'a> {
        self.parse(self.record_slice(id, bytes))
    }
    /// Whether the record `span_of` brings holds the node's vector. False
    /// for layouts that keep vectors apart (separated): only a search that
    /// reads vectors separately (two-stage) can search them.
    fn records_hold_vectors(&self) -> bool {
        true
    }
    /// The read that fetches node `id`'s full vector (re-ranking, Gorgeous
    /// §4.2 refinement): `span_of` unless vectors are stored apart.
    fn vector_span_of(&self, id: u32) -> Span {
        self.span_of(id)
    }
    /// Node `id`'s stored vector inside the bytes read from
    /// `vector_span_of(id)`.
    fn vector_slice<'a>(&'a self, id: u32, bytes: &'a [u8]) -> &'a [u8] {
        self.record(id, bytes).vector
    }
    /// The quantized codes of a record's neighbours, for layouts whose
    /// records carry them (laser, AlayaLaser §3.2); `None` otherwise.
    fn neighbour_codes<'a>(&self, _record: &'a [u8]) -> Option<laser::NeighbourCodes<'a>> {
        None
    }
    /// The cluster index this layout is (the ivf layout, paper 002 §6):
    /// what its search reads a cluster by. `None` for the graph layouts.
    fn clusters(&self) -> Option<&ivf::IvfLayout> {
        None
    }
    /// Adjacency lists of other nodes replicated in the block read for
    /// `target` (Gorgeous §3.4): (id, view with an empty vector). Empty for
    /// layouts that replicate nothing.
    fn replicated_lists<'a>(
        &self,
        _target: u32,
        _bytes: &'a [u8],
        out: &mut Vec<(u32, NodeView<'a>)>,
    ) {
        out.clear();
    }
}
