//! The search side of the codes a laser record carries (AlayaLaser §3.2,
//! §4): what a query needs in RAM to score a record's neighbours, and
//! nothing else.
//!
//! A query is projected onto the principal components and then rotated by
//! RaBitQ's random orthogonal matrix. Both are linear, so the search does
//! them as one: `R·P(q − m) = (R·P)·q − (R·P)·m`, one `code_dim × dim`
//! matrix instead of a `code_dim × dim` and a `code_dim × code_dim` one.
//! At 768-d with 696-d codes that halves the multiply-adds of preparing a
//! query (534k instead of 1.02M), and the fused matrix is kept in f16,
//! which halves the bytes each query streams through the cache again (1.07
//! MB instead of 4.1 MB as two f32 matrices): measured on wordnet-mpnet,
//! the two matrix products were over half the laser search's CPU a query.
//! f16 moves the projected query by about 1e-3 of its length, far inside
//! the 1-bit codes' own error (the tests below bound it).
//!
//! The PCA basis and the rotation themselves are only needed to encode
//! vectors at build time ([`RecordCodes`]); an opened index holds this.

use stratavec_simd::{fastscan, F16Matrix};

use super::rabitq::QueryLut;
use super::record_codes::RecordCodes;
use crate::data::Metric;
use crate::layout::laser::NeighbourCodes;

pub struct RecordScorer {
    dim: usize,
    code_dim: usize,
    /// `R·P`, `code_dim × dim` f16 (on AMX tiles where the process has
    /// them: `stratavec_simd::F16Matrix`).
    map: F16Matrix,
    /// `(R·P)·m` with the held matrix (bf16 on tiles), so that the mean
    /// cancels exactly as the query is mapped, whatever the matrix's
    /// rounding.
    mean_image: Vec<f32>,
    /// `R·c`: RaBitQ's centre, rotated.
    centre_image: Vec<f32>,
    /// The PCA mean m, for `‖q − m‖²`.
    mean: Vec<f32>,
    metric: Metric,
}

/// One query's prepared state; reusing it across queries allocates nothing.
#[derive(Default)]
pub struct RecordTable {
    pub(crate) lut: QueryLut,
    /// ‖q_res‖²: the query's norm outside the principal subspace.
    pub(crate) residual: f32,
    sums: [u16; fastscan::GROUP],
}

impl RecordScorer {
    /// Fuses the basis and the rotation of `codes` (runs on the caller's
    /// pool; ~10 ms at 768 → 696).
    pub fn new(codes: &RecordCodes) -> RecordScorer {
        use rayon::prelude::*;
        let (dim, cd) = (codes.pca.dim, codes.code_dim());
        let (rot, basis) = (codes.rabitq.rotation(), &codes.pca.components);
        // Row i of R·P is Σ_j R[i][j] · P[j]: a sum of basis rows, which
        // the compiler vectorises as axpy.
        let mut map = vec![0u8; cd * dim * 2];
        map.par_chunks_mut(dim * 2).enumerate().for_each_init(
            || vec![0f32; dim],
            |row, (i, out)| {
                row.fill(0.0);
                for (&r, p) in rot[i * cd..(i + 1) * cd]
                    .iter()
                    .zip(basis.chunks_exact(dim))
                {
                    for (o, &b) in row.iter_mut().zip(p) {
                        *o += r * b;
                    }
                }
                stratavec_simd::half::encode_f16(row, out);
            },
        );
        // The map's image is quantized to u8 tables: bf16 tiles will do.
        let map = F16Matrix::from_f16_bytes_on_tiles(map, dim);
        let mean = codes.pca.mean.clone();
        let mut mean_image = vec![0f32; cd];
        map.apply(&mean, &mut mean_image);
        let c = &codes.rabitq.centre;
        let centre_image = rot
            .chunks_exact(cd)
            .map(|row| stratavec_simd::dot_f32(row, c))
            .collect();
        RecordScorer {
            dim,
            code_dim: cd,
            map,
            mean_image,
            centre_image,
            mean,
            metric: codes.metric(),
        }
    }

    pub fn code_dim(&self) -> usize {
        self.code_dim
    }

    /// Prepares `query` (as searched: normalised for cosine): one pass of
    /// the fused matrix gives `u = R·P(q − m)`; `‖q_res‖² = ‖q − m‖² − ‖u‖²`
    /// (R and P have orthonormal rows); RaBitQ's tables are built from
    /// `u − R·c`.
    pub fn prepare(&self, query: &[f32], t: &mut RecordTable) {
        assert_eq!(
            query.len(),
            self.dim,
            "record scorer: query must be dim wide"
        );
        let rotated = &mut t.lut.rotated;
        rotated.resize(self.code_dim, 0.0);
        self.map.apply(query, rotated);
        self.finish(query, t);
    }

    /// The fused matrix applied to several queries (row-major, dim wide)
    /// at once, `code_dim` floats a query into `images`: the first step of
    /// [`Self::prepare`], with the matrix streamed once for the group
    /// (`F16Matrix::apply_many`) instead of once a query. Finish each
    /// query with [`Self::prepare_mapped`]; the tables equal `prepare`'s
    /// bit for bit.
    pub fn map_many(&self, queries: &[f32], images: &mut Vec<f32>) {
        assert_eq!(
            queries.len() % self.dim,
            0,
            "record scorer: queries must be whole rows of dim"
        );
        images.resize(queries.len() / self.dim * self.code_dim, 0.0);
        self.map.apply_many(queries, images);
    }

    /// Prepares `query` from `image`, its row of [`Self::map_many`].
    pub fn prepare_mapped(&self, query: &[f32], image: &[f32], t: &mut RecordTable) {
        assert_eq!(
            (query.len(), image.len()),
            (self.dim, self.code_dim),
            "record scorer: a dim-wide query and its code_dim-wide image"
        );
        t.lut.rotated.clear();
        t.lut.rotated.extend_from_slice(image);
        self.finish(query, t);
    }

    /// From `t.lut.rotated` = `(R·P)·q`: subtract the mean's image, take
    /// the residual norm, centre and build the tables.
    fn finish(&self, query: &[f32], t: &mut RecordTable) {
        let rotated = &mut t.lut.rotated;
        for (v, &mi) in rotated.iter_mut().zip(&self.mean_image) {
            *v -= mi;
        }
        let total = stratavec_simd::l2_sq_f32(query, &self.mean);
        t.residual = (total - stratavec_simd::norm_sq_f32(rotated)).max(0.0);
        for (v, &c) in rotated.iter_mut().zip(&self.centre_image) {
            *v -= c;
        }
        t.lut.build();
    }

    /// Estimated distances (in the index's internal unit: squared L2, or
    /// −cos for cosine) of a record's first `degree` neighbours, into
    /// `out[..degree]`.
    pub fn estimate(
        &self,
        t: &mut RecordTable,
        codes: &NeighbourCodes<'_>,
        degree: usize,
        out: &mut Vec<f32>,
    ) {
        out.clear();
        for g in 0..degree.div_ceil(fastscan::GROUP) {
            fastscan::scan_group(codes.group(g), &t.lut.lut, codes.m, &mut t.sums);
            let in_group = (degree - g * fastscan::GROUP).min(fastscan::GROUP);
            for (j, &sum) in t.sums[..in_group].iter().enumerate() {
                let i = g * fastscan::GROUP + j;
                let (norm, dot, res) = (codes.factor(0, i), codes.factor(1, i), codes.factor(2, i));
                let principal = t.lut.distance(sum as u32, norm, dot);
                // Measured on wordnet-minilm 20k (128-d codes, R@10 at
                // L = 50): 0.843 with the residual norms, 0.816 with the
                // principal part alone or scaled by the variance it explains.
                let l2 = principal + t.residual + res;
                out.push(match self.metric {
                    // ‖q − o‖² = 2 − 2 cos for unit vectors.
                    Metric::Cosine => 0.5 * l2 - 1.0,
                    _ => l2,
                });
            }
        }
    }

    /// Bytes held in RAM: the fused matrix, its two images and the mean.
    pub fn resident_bytes(&self) -> usize {
        self.map.resident_bytes()
            + 4 * (self.mean_image.len() + self.centre_image.len() + self.mean.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quant::rabitq::QueryLut;

    /// The fused f16 projection prepares the query as the two f32 steps
    /// (project, then rotate) do, to within f16's rounding: the same
    /// residual norm, the same rotated unit query, the same table sums
    /// within a step or two.
    #[test]
    fn fused_projection_matches_the_two_steps() {
        let (dim, code_dim) = (96, 64);
        let (base, queries) = crate::synthetic::clustered(&crate::synthetic::SyntheticSpec {
            n: 2000,
            queries: 30,
            dim,
            clusters: 10,
            seed: 9,
        });
        let rc = RecordCodes::train(&base, dim, code_dim, Metric::L2, 5);
        let scorer = RecordScorer::new(&rc);
        assert_eq!(scorer.code_dim(), code_dim);
        let (mut t, mut lut, mut proj) = (RecordTable::default(), QueryLut::default(), vec![]);
        for q in queries.chunks_exact(dim) {
            scorer.prepare(q, &mut t);
            proj.resize(code_dim, 0.0);
            rc.pca.project(q, &mut proj);
            let residual = rc.pca.residual_norm_sq(q, &proj);
            rc.rabitq.prepare(&proj, &mut lut);
            let total = stratavec_simd::l2_sq_f32(q, &rc.pca.mean);
            assert!(
                (t.residual - residual).abs() <= 2e-3 * total,
                "residual {} vs {residual} (of {total})",
                t.residual
            );
            assert!(
                (t.lut.norm - lut.norm).abs() <= 2e-3 * lut.norm,
                "norm {} vs {}",
                t.lut.norm,
                lut.norm
            );
            // Unit vectors: the angle between them is tiny.
            let cos = stratavec_simd::dot_f32(&t.lut.rotated, &lut.rotated);
            assert!(cos > 0.99999, "cos = {cos}");
            for (a, b) in t.lut.lut.iter().zip(&lut.lut) {
                assert!(a.abs_diff(*b) <= 2, "table entry {a} vs {b}");
            }
        }
        // f16 bytes, and AMX tiles where they run (bf16, rows to 16 and
        // columns to 32).
        let map = code_dim * dim * 2
            + match stratavec_simd::amx::active() {
                true => code_dim.next_multiple_of(16) * dim.next_multiple_of(32) * 2,
                false => 0,
            };
        let want = map + 4 * (2 * code_dim + dim);
        assert_eq!(scorer.resident_bytes(), want);
    }

    /// Queries prepared as a group (`map_many`, then `prepare_mapped`) get
    /// the tables one at a time gives, bit for bit, whatever the group size.
    #[test]
    fn a_group_prepares_each_query_as_alone() {
        let (dim, code_dim) = (72, 48);
        let (base, queries) = crate::synthetic::clustered(&crate::synthetic::SyntheticSpec {
            n: 1500,
            queries: 19,
            dim,
            clusters: 8,
            seed: 3,
        });
        let scorer = RecordScorer::new(&RecordCodes::train(&base, dim, code_dim, Metric::L2, 2));
        let mut images = vec![];
        for group in [1, 3, 8, 19] {
            for qs in queries.chunks(group * dim) {
                scorer.map_many(qs, &mut images);
                for (q, image) in qs.chunks_exact(dim).zip(images.chunks_exact(code_dim)) {
                    let (mut one, mut many) = (RecordTable::default(), RecordTable::default());
                    scorer.prepare(q, &mut one);
                    scorer.prepare_mapped(q, image, &mut many);
                    assert_eq!(one.residual.to_bits(), many.residual.to_bits());
                    assert_eq!(one.lut.norm.to_bits(), many.lut.norm.to_bits());
                    assert_eq!(one.lut.lut, many.lut.lut);
                    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&one.lut.rotated), bits(&many.lut.rotated));
                }
            }
        }
    }
}
