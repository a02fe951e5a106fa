//! Estimates from the codes a laser record carries (AlayaLaser §3.2): the
//! part of the quantizer that stays in RAM is small and per index — the PCA
//! basis and the RaBitQ rotation and centre — and the per-vector codes are
//! on disk, inside the records of the nodes that link to them. This is the
//! trained quantizer (fit, encode, file); an opened index scores with
//! [`super::record_scorer::RecordScorer`], which folds the basis and the
//! rotation into one matrix.
//!
//! The estimate of ‖q − o‖² is RaBitQ's estimate on the principal
//! components plus the two residual norms ‖q_res‖² + ‖o_res‖²: the
//! residual cross term is left out (what the principal components leave is
//! nearly uncorrelated between vectors), and ‖o_res‖² is stored beside the
//! code so vectors with much or little outside the principal subspace rank
//! where they should.
//!
//! `rabitq.bin`: u32 code dimension, the PCA basis (`Pca::write`), then the
//! RaBitQ quantizer (`RabitQ::write`).

use std::io::{Read, Write};
use std::path::Path;

use rayon::prelude::*;

use super::pca::Pca;
use super::rabitq::RabitQ;
use crate::data::Metric;
use crate::error::{Error, FileContext, Result};
use crate::layout::laser::FACTORS;

/// The file's name in an index directory.
pub const RECORD_CODES_FILE: &str = "rabitq.bin";

/// Rows the PCA is fitted on: the basis of 20k rows of real embeddings
/// matches the full data's to the digits that matter for ranking.
const PCA_SAMPLE: usize = 20_000;

pub struct RecordCodes {
    pub pca: Pca,
    pub rabitq: RabitQ,
    metric: Metric,
}

impl RecordCodes {
    /// Fits the PCA basis (`code_dim` components) and the RaBitQ quantizer
    /// on `data` (normalised already for cosine). Runs on the caller's pool.
    pub fn train(data: &[f32], dim: usize, code_dim: usize, metric: Metric, seed: u64) -> Self {
        let pca = Pca::fit(data, dim, code_dim, PCA_SAMPLE, seed ^ 0x5043_4131);
        let n = data.len() / dim;
        let sample = crate::util::rng::Rng::new(seed ^ 0x5242_5131).sample(n, n.min(PCA_SAMPLE));
        let mut projected = vec![0f32; sample.len() * code_dim];
        projected
            .par_chunks_mut(code_dim)
            .zip(&sample)
            .for_each(|(out, &i)| pca.project(&data[i * dim..(i + 1) * dim], out));
        let rabitq = RabitQ::train(&projected, code_dim, seed ^ 0x5242_5132);
        RecordCodes {
            pca,
            rabitq,
            metric,
        }
    }

    pub fn code_dim(&self) -> usize {
        self.pca.main_dim
    }

    /// Every vector's code (`code_dim / 4` sub-codes a row) and its factors
    /// (RaBitQ's ‖o − c‖ and ⟨ō, o⟩, and ‖o_res‖²), as the laser layout
    /// writes them. Runs on the caller's pool.
    pub fn encode_all(&self, data: &[f32], dim: usize) -> (Vec<u8>, Vec<[f32; FACTORS]>) {
        let (cd, m_raw) = (self.code_dim(), self.code_dim() / 4);
        let n = data.len() / dim;
        let mut codes = vec![0u8; n * m_raw];
        let mut factors = vec![[0f32; FACTORS]; n];
        codes
            .par_chunks_mut(m_raw)
            .zip(factors.par_iter_mut())
            .enumerate()
            .for_each_init(
                || vec![0f32; cd],
                |proj, (i, (code, f))| {
                    let x = &data[i * dim..(i + 1) * dim];
                    self.pca.project(x, proj);
                    let (norm, dot) = self.rabitq.encode_into(proj, code);
                    *f = [norm, dot, self.pca.residual_norm_sq(x, proj)];
                },
            );
        (codes, factors)
    }

    pub fn metric(&self) -> Metric {
        self.metric
    }

    pub fn write(&self, w: &mut impl Write) -> std::io::Result<()> {
        w.write_all(&(self.code_dim() as u32).to_le_bytes())?;
        self.pca.write(w)?;
        self.rabitq.write(w)
    }

    /// Reads `rabitq.bin` for an index of `dim` dimensions.
    pub fn read(path: &Path, dim: usize, metric: Metric) -> Result<RecordCodes> {
        let bytes = std::fs::read(path).at("read", path)?;
        let bad = |what: &str, e: &dyn std::fmt::Display| {
            Error::index(path, what, "a stratavec rabitq.bin", e.to_string())
        };
        let mut r = &bytes[..];
        let mut word = [0u8; 4];
        r.read_exact(&mut word)
            .map_err(|e| bad("code dimension", &e))?;
        let code_dim = u32::from_le_bytes(word) as usize;
        let pca = Pca::read(&mut r).map_err(|e| bad("pca", &e))?;
        let rabitq = RabitQ::read(&mut r).map_err(|e| bad("rabitq", &e))?;
        if pca.dim != dim || pca.main_dim != code_dim || rabitq.dim != code_dim {
            return Err(Error::index(
                path,
                "dimensions",
                format!("{dim} -> {code_dim} (the index's and the header's)"),
                format!("{} -> {} / {}", pca.dim, pca.main_dim, rabitq.dim),
            ));
        }
        if !r.is_empty() {
            return Err(Error::index(
                path,
                "size",
                "nothing after the quantizer",
                format!("{} bytes", r.len()),
            ));
        }
        check_values(path, &pca, &rabitq)?;
        Ok(RecordCodes {
            pca,
            rabitq,
            metric,
        })
    }
}

/// The scorer multiplies the rotation by the principal components and
/// holds the product in i8, which needs finite values: both are orthonormal
/// (every entry within ±1, a little more for rounding), the means finite.
fn check_values(path: &Path, pca: &Pca, rabitq: &RabitQ) -> Result<()> {
    let unit = |x: f32| x.abs() <= 1.0 + 1e-3;
    let orthonormal = "within ±1 (orthonormal rows)";
    let parts = [
        ("pca components", &pca.components[..], true),
        ("rabitq rotation", rabitq.rotation(), true),
        ("pca mean", &pca.mean[..], false),
        ("rabitq centre", &rabitq.centre[..], false),
    ];
    for (what, values, rows) in parts {
        let ok = |x: f32| if rows { unit(x) } else { x.is_finite() };
        if let Some(i) = values.iter().position(|&x| !ok(x)) {
            let want = if rows { orthonormal } else { "finite" };
            return Err(Error::index(
                path,
                format!("{what}, value {i}"),
                want,
                values[i],
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::DType;
    use crate::layout::{LaserLayout, Layout};
    use crate::quant::record_scorer::{RecordScorer, RecordTable};

    /// Estimates read back from written laser records equal the estimates
    /// made straight from the codes (the scalar sum, no records), and rank
    /// neighbours close to their true order.
    #[test]
    fn record_estimates_match_direct_estimates() {
        let (n, dim, code_dim) = (600, 48, 32);
        let (base, queries) = crate::synthetic::clustered(&crate::synthetic::SyntheticSpec {
            n,
            queries: 20,
            dim,
            clusters: 6,
            seed: 4,
        });
        let rc = RecordCodes::train(&base, dim, code_dim, Metric::L2, 1);
        let (codes, factors) = rc.encode_all(&base, dim);
        // Every node links to 40 nodes (two groups, the second partial).
        let lists: Vec<Vec<u32>> = (0..n)
            .map(|i| (1..=40).map(|j| ((i + 7 * j) % n) as u32).collect())
            .collect();
        let layout = LaserLayout::new(16384, n, dim, DType::F32, 40, code_dim).unwrap();
        let vb = |id: u32, out: &mut [u8]| {
            for (o, x) in out
                .chunks_exact_mut(4)
                .zip(&base[id as usize * dim..(id as usize + 1) * dim])
            {
                o.copy_from_slice(&x.to_le_bytes());
            }
        };
        let mut file = vec![];
        layout
            .write(&mut file, 0, &lists, &vb, &codes, &factors)
            .unwrap();
        let scorer = RecordScorer::new(&rc);
        let mut t = RecordTable::default();
        let mut out = vec![];
        let m_raw = code_dim / 4;
        let mut agree = 0;
        for q in queries.chunks_exact(dim) {
            scorer.prepare(q, &mut t);
            for id in [0u32, 17, 599] {
                let s = layout.span_of(id);
                let rec = layout.record_slice(id, &file[s.offset as usize..][..s.len as usize]);
                let c = layout.neighbour_codes(rec).unwrap();
                scorer.estimate(&mut t, &c, 40, &mut out);
                assert_eq!(out.len(), 40);
                for (i, &nb) in lists[id as usize].iter().enumerate() {
                    let code = &codes[nb as usize * m_raw..(nb as usize + 1) * m_raw];
                    let f = factors[nb as usize];
                    let sum = crate::quant::rabitq::sum_scalar(&t.lut, code);
                    let want = rc.rabitq.estimate(&t.lut, sum, f[0], f[1]).0 + t.residual + f[2];
                    assert_eq!(out[i], want);
                }
                // Is the estimated nearest neighbour among the true 5 nearest?
                let truth: Vec<f32> = lists[id as usize]
                    .iter()
                    .map(|&nb| {
                        stratavec_simd::l2_sq_f32(
                            q,
                            &base[nb as usize * dim..(nb as usize + 1) * dim],
                        )
                    })
                    .collect();
                let best = (0..40).min_by(|&a, &b| out[a].total_cmp(&out[b])).unwrap();
                agree += (truth.iter().filter(|&&d| d < truth[best]).count() < 5) as usize;
            }
        }
        // Chance is 5 in 40 (8 of 60); 32 one-bit dimensions measured 53.
        assert!(
            agree >= 45,
            "estimated nearest among the true 5 nearest in {agree} of 60"
        );
        // The file round trips.
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(RECORD_CODES_FILE);
        let mut f = std::fs::File::create(&p).unwrap();
        rc.write(&mut f).unwrap();
        drop(f);
        let back = RecordCodes::read(&p, dim, Metric::L2).unwrap();
        assert_eq!(back.pca.components, rc.pca.components);
        let e = RecordCodes::read(&p, dim + 1, Metric::L2)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("rabitq.bin") && e.contains("dimensions"), "{e}");
    }
}
