//! The search side of the codes a laser record carries (AlayaLaser §3.2,
//! §4): what a query needs in RAM to score a record's neighbours, and
//! nothing else.
//!
//! A query is projected onto the principal components and then rotated by
//! RaBitQ's random orthogonal matrix. Both are linear, so the search does
//! them as one: `R·P(q − m)`, one `code_dim × dim` matrix instead of a
//! `code_dim × dim` and a `code_dim × code_dim` one. At 768-d with 696-d
//! codes that halves the multiply-adds of preparing a query (534k instead
//! of 1.02M).
//!
//! The fused matrix is held for speed at the precision the answer needs:
//! its image becomes u8 tables, and the 1-bit codes' own error is ~1/√D of
//! an inner product (3.8% at 696-d). Where the process has AMX tiles it is
//! held in bf16 on them (`F16Matrix`, within 2^-8); elsewhere in i8 with
//! the query rounded to 7 bits (`I8Matrix`): measured on wordnet-mpnet
//! (AMD EPYC, perf through RAM), the f16 products were 28% of a laser
//! query's search CPU, and the integer ones take about half as long
//! (`stratavec-simd`'s `f16_matrix_time`). Their ~2% noise on the image
//! falls on the estimate of `⟨ō, q'⟩` as ~0.02/√D, a few hundredths of
//! the estimator's own variance (the tests below bound it, and the laser
//! search's recall tests run through it).
//!
//! The PCA basis and the rotation themselves are only needed to encode
//! vectors at build time ([`RecordCodes`]); an opened index holds this.

use stratavec_simd::{fastscan, F16Matrix, I8Matrix};

use super::rabitq::QueryLut;
use super::record_codes::RecordCodes;
use crate::data::Metric;
use crate::layout::laser::NeighbourCodes;

/// How the fused matrix is held (module notes): one choice per process.
enum Holding {
    /// bf16 on AMX tiles.
    Tiles(F16Matrix),
    /// i8 rows, the query in 7 bits.
    Int8(I8Matrix),
}

impl Holding {
    fn apply_many(&self, xs: &[f32], out: &mut [f32]) {
        match self {
            Holding::Tiles(m) => m.apply_many(xs, out),
            Holding::Int8(m) => m.apply_many(xs, out),
        }
    }

    fn resident_bytes(&self) -> usize {
        match self {
            Holding::Tiles(m) => m.resident_bytes(),
            Holding::Int8(m) => m.resident_bytes(),
        }
    }
}

pub struct RecordScorer {
    dim: usize,
    code_dim: usize,
    /// `R·P`, `code_dim × dim` ([`Holding`]).
    map: Holding,
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
    /// Scratch: the query less the mean.
    centred: Vec<f32>,
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
        let mut map = vec![0f32; cd * dim];
        map.par_chunks_mut(dim).enumerate().for_each(|(i, row)| {
            for (&r, p) in rot[i * cd..(i + 1) * cd]
                .iter()
                .zip(basis.chunks_exact(dim))
            {
                for (o, &b) in row.iter_mut().zip(p) {
                    *o += r * b;
                }
            }
        });
        let map = if stratavec_simd::amx::active() {
            let mut bytes = vec![0u8; map.len() * 2];
            stratavec_simd::half::encode_f16(&map, &mut bytes);
            Holding::Tiles(F16Matrix::from_f16_bytes_on_tiles(bytes, dim))
        } else {
            Holding::Int8(I8Matrix::quantize(&map, dim))
        };
        let mean = codes.pca.mean.clone();
        let c = &codes.rabitq.centre;
        let centre_image = rot
            .chunks_exact(cd)
            .map(|row| stratavec_simd::dot_f32(row, c))
            .collect();
        RecordScorer {
            dim,
            code_dim: cd,
            map,
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
        self.centre(query, &mut t.centred);
        let rotated = &mut t.lut.rotated;
        rotated.resize(self.code_dim, 0.0);
        self.map.apply_many(&t.centred, rotated);
        self.finish(query, t);
    }

    /// `out = xs − m` row by row: the query is centred before it is mapped,
    /// so the mean never passes through the held matrix's rounding.
    fn centre(&self, xs: &[f32], out: &mut Vec<f32>) {
        out.clear();
        out.extend(
            xs.chunks_exact(self.dim)
                .flat_map(|x| x.iter().zip(&self.mean).map(|(v, m)| v - m)),
        );
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
        let mut centred = Vec::new();
        self.centre(queries, &mut centred);
        self.map.apply_many(&centred, images);
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

    /// From `t.lut.rotated` = `(R·P)(q − m)`: take the residual norm,
    /// centre on RaBitQ's centre and build the tables.
    fn finish(&self, query: &[f32], t: &mut RecordTable) {
        let rotated = &mut t.lut.rotated;
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
    ///
    /// A group's 32 estimates are computed over fixed-size arrays, so the
    /// compiler vectorises them (one at a time, reading each factor through
    /// a bounds-checked slice, this was 6% of a laser query's search CPU:
    /// perf, wordnet-mpnet through RAM). Each lane does exactly the
    /// arithmetic of `QueryLut::distance` in its order, so the estimates
    /// are the same bits (`record_codes`' tests compare them).
    pub fn estimate(
        &self,
        t: &mut RecordTable,
        codes: &NeighbourCodes<'_>,
        degree: usize,
        out: &mut Vec<f32>,
    ) {
        const G: usize = fastscan::GROUP;
        out.clear();
        let lut = &t.lut;
        let (nq, offset, step, residual) = (lut.norm, lut.ip_offset, lut.ip_step, t.residual);
        let floats = |b: &[u8; 4 * G]| -> [f32; G] {
            std::array::from_fn(|j| {
                f32::from_le_bytes([b[4 * j], b[4 * j + 1], b[4 * j + 2], b[4 * j + 3]])
            })
        };
        for g in 0..degree.div_ceil(G) {
            fastscan::scan_group(codes.group(g), &lut.lut, codes.m, &mut t.sums);
            let (norm, dot, res) = (
                floats(codes.factor_group(0, g)),
                floats(codes.factor_group(1, g)),
                floats(codes.factor_group(2, g)),
            );
            let est: [f32; G] = std::array::from_fn(|j| {
                // `QueryLut::distance`, lane by lane.
                let ip_bar = offset + step * t.sums[j] as f32;
                let (n, d) = (norm[j], dot[j].clamp(f32::MIN_POSITIVE, 1.0));
                let cross = 2.0 * n * nq;
                let principal = n * n + nq * nq - cross * ip_bar * (1.0 / d);
                // Measured on wordnet-minilm 20k (128-d codes, R@10 at
                // L = 50): 0.843 with the residual norms, 0.816 with the
                // principal part alone or scaled by the variance it explains.
                let l2 = principal + residual + res[j];
                match self.metric {
                    // ‖q − o‖² = 2 − 2 cos for unit vectors.
                    Metric::Cosine => 0.5 * l2 - 1.0,
                    _ => l2,
                }
            });
            out.extend_from_slice(&est[..(degree - g * G).min(G)]);
        }
    }

    /// Bytes held in RAM: the fused matrix, the centre's image and the
    /// mean.
    pub fn resident_bytes(&self) -> usize {
        self.map.resident_bytes() + 4 * (self.centre_image.len() + self.mean.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quant::rabitq::QueryLut;

    /// The fused projection prepares the query as the two f32 steps
    /// (project, then rotate) do, to within the holding's rounding: the
    /// same residual norm, nearly the same rotated unit query, the same
    /// table entries within a few steps. The i8 holding's figures here
    /// (96-d, 64-d codes, 30 queries): cos ≥ 0.99990, the residual within
    /// 0.5% of ‖q − m‖² (a constant a query, so it ranks nothing
    /// differently), entries within 4 steps of 255, 0.57 on average.
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
        let tiles = matches!(scorer.map, Holding::Tiles(_));
        // (cos, relative norm and residual, largest and mean entry step)
        let (min_cos, rel, steps, mean_steps) = match tiles {
            true => (0.99999, 2e-3, 2, 0.5),
            false => (0.9995, 1e-2, 6, 0.8),
        };
        let (mut t, mut lut, mut proj) = (RecordTable::default(), QueryLut::default(), vec![]);
        let (mut worst_cos, mut worst_step, mut total_steps, mut entries) = (1f32, 0u8, 0u64, 0u64);
        for q in queries.chunks_exact(dim) {
            scorer.prepare(q, &mut t);
            proj.resize(code_dim, 0.0);
            rc.pca.project(q, &mut proj);
            let residual = rc.pca.residual_norm_sq(q, &proj);
            rc.rabitq.prepare(&proj, &mut lut);
            let total = stratavec_simd::l2_sq_f32(q, &rc.pca.mean);
            assert!(
                (t.residual - residual).abs() <= rel * total,
                "residual {} vs {residual} (of {total})",
                t.residual
            );
            assert!(
                (t.lut.norm - lut.norm).abs() <= rel * lut.norm,
                "norm {} vs {}",
                t.lut.norm,
                lut.norm
            );
            // Unit vectors: the angle between them is small.
            let cos = stratavec_simd::dot_f32(&t.lut.rotated, &lut.rotated);
            worst_cos = worst_cos.min(cos);
            for (a, b) in t.lut.lut.iter().zip(&lut.lut) {
                worst_step = worst_step.max(a.abs_diff(*b));
                total_steps += u64::from(a.abs_diff(*b));
                entries += 1;
            }
        }
        let mean = total_steps as f64 / entries as f64;
        eprintln!(
            "tiles {tiles}: cos >= {worst_cos}, entries within {worst_step}, {mean:.2} on average"
        );
        assert!(worst_cos > min_cos, "cos = {worst_cos}");
        assert!(
            worst_step <= steps && mean <= mean_steps,
            "entries within {worst_step}, {mean} on average"
        );
        // The holding's bytes: f16 and AMX tiles (bf16, rows to 16 and
        // columns to 32), or i8 with a step, a sum and a size a row.
        let map = match tiles {
            true => {
                code_dim * dim * 2 + code_dim.next_multiple_of(16) * dim.next_multiple_of(32) * 2
            }
            false => code_dim * dim + 12 * code_dim,
        };
        let want = map + 4 * (code_dim + dim);
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
