//! Distance estimation from compact codes held in RAM (the third of the five
//! questions in docs/architecture.md). A [`Quantizer`] owns the codes of
//! every vector; per query it prepares a table once and then estimates the distance
//! of any id from it. Search code sees only this trait, never PQ centroids.

mod eigen;
/// Extended RaBitQ: B-bit codes with an error bound (issue #57 item 2).
pub mod exrabitq;
/// Cluster centres the extended-RaBitQ codes are taken against.
pub mod exrabitq_centres;
/// The bound's ε₀ measured on the data's near pairs (issue #57 item 2).
pub mod exrabitq_eps;
pub mod kmeans;
/// PCA split and RaBitQ neighbour codes for AlayaLaser-style node records (§3.2).
pub mod pca;
pub mod pq;
pub mod pq_file;
pub mod rabitq;
pub mod record_codes;
pub mod record_scorer;

pub use pq::{PqCodebook, PqQuantizer};

/// One query's prepared state for a [`Quantizer`] (what `prepare` fills and
/// the estimates read). Its fields belong to the quantizer that filled it;
/// a search only keeps it.
#[derive(Clone, Debug, Default)]
pub struct QueryTable {
    /// The lookup table (PQ: 256 entries per sub-space) quantized to u16,
    /// plus one entry of padding.
    pub words: Vec<u16>,
    /// estimate = `bias + scale * sum of words`.
    pub bias: f32,
    pub scale: f32,
    /// A float query's prepared form (extended RaBitQ: the rotated unit
    /// query), where the quantizer keeps one.
    pub floats: Vec<f32>,
    /// A query rounded to bytes (extended RaBitQ at four bits: its even
    /// elements, then its odd ones).
    pub ints: Vec<i8>,
    /// A query rounded to i16 (extended RaBitQ at eight bits).
    pub shorts: Vec<i16>,
    /// The prepared query's product with each cluster centre's offset
    /// (extended RaBitQ, `exrabitq_centres`).
    pub offsets: Vec<f32>,
}

/// No codes in RAM: the quantizer of indexes whose records carry their
/// neighbours' codes (laser, `record_codes`), which no search asks for
/// estimates by id. Estimates are 0 should one ever be asked.
pub struct NoCodes;

impl Quantizer for NoCodes {
    fn name(&self) -> String {
        "none".into()
    }
    fn bytes_per_vector(&self) -> usize {
        0
    }
    fn resident_bytes(&self) -> usize {
        0
    }
    fn prepare(&self, _query: &[f32], _table: &mut QueryTable) {}
    fn estimate_many(&self, _table: &QueryTable, _ids: &[u32], out: &mut [f32]) {
        out.fill(0.0);
    }
}

/// Estimated distances from in-RAM codes. Smaller is closer, in the same
/// orientation as the index's exact distance (squared L2, or negated inner
/// product).
pub trait Quantizer: Send + Sync {
    /// Short name for reports ("pq48").
    fn name(&self) -> String;
    /// Code bytes per vector.
    fn bytes_per_vector(&self) -> usize;
    /// Bytes held in RAM (codes + codebooks).
    fn resident_bytes(&self) -> usize;
    /// Per-query preparation (e.g. PQ lookup tables) into `table`.
    fn prepare(&self, query: &[f32], table: &mut QueryTable);
    /// Estimated distances of many ids at once (`out[i]` for `ids[i]`); a
    /// quantizer may overlap the memory accesses of scattered codes.
    fn estimate_many(&self, table: &QueryTable, ids: &[u32], out: &mut [f32]);
    /// Hints the CPU to bring the codes of `ids` into cache ahead of their
    /// estimates (a no-op for estimators with nothing per vector in RAM).
    fn prefetch(&self, _ids: &[u32]) {}
    /// Estimates with an error bound each (`est[i] ± err[i]` holds the
    /// exact distance of `ids[i]` on all but a stated share of pairs:
    /// `exrabitq_eps` measures it): false, and nothing written, for a quantizer
    /// without bounds.
    fn bounds_many(
        &self,
        _table: &QueryTable,
        _ids: &[u32],
        _est: &mut [f32],
        _err: &mut [f32],
    ) -> bool {
        false
    }
    /// Estimated distance of vector `id` to the prepared query.
    fn estimate(&self, table: &QueryTable, id: u32) -> f32 {
        let mut out = [0.0];
        self.estimate_many(table, &[id], &mut out);
        out[0]
    }
}
