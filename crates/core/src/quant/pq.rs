//! Product quantization (Jégou et al. 2011) as DiskANN uses it: vectors are
//! centred on the data mean, split into M contiguous sub-spaces (sizes differ
//! by at most one when M does not divide the dimension), each quantized to one
//! of 256 centroids, so a code is M bytes. Distances are estimated
//! asymmetrically (ADC): per query a table of M x 256 partial distances, then
//! one table look-up per sub-space per vector.

use super::kmeans;
use super::{Quantizer, QueryTable};
use crate::data::Metric;
use crate::progress::Stop;
use crate::util::rng::Rng;
use rayon::prelude::*;

pub const KSUB: usize = 256;

#[derive(Clone, Debug, PartialEq)]
pub struct PqCodebook {
    pub dim: usize,
    pub m: usize,
    /// Sub-space j covers components `offsets[j]..offsets[j+1]`.
    pub offsets: Vec<usize>,
    /// Data mean subtracted before quantizing.
    pub center: Vec<f32>,
    /// For each sub-space j, `KSUB x dsub_j` centroids (row-major), concatenated.
    pub centroids: Vec<f32>,
}

#[derive(Clone, Debug)]
pub struct PqTrainParams {
    pub m: usize,
    pub sample: usize,
    pub iters: usize,
    pub seed: u64,
}

fn split_offsets(dim: usize, m: usize) -> Vec<usize> {
    let (base, extra) = (dim / m, dim % m);
    let mut offsets = vec![0];
    for j in 0..m {
        let len = base + usize::from(j < extra);
        offsets.push(offsets[j] + len);
    }
    offsets
}

impl PqCodebook {
    /// Trains on a seeded sample of `data` (row-major, `dim` wide). Needs
    /// `1 <= m <= dim`.
    pub fn train(data: &[f32], dim: usize, p: &PqTrainParams) -> Self {
        Self::train_until(data, dim, p, &crate::progress::never).expect("never stopped")
    }

    /// [`Self::train`] that polls `stop` before every k-means iteration of
    /// every sub-space and returns `None` when it says so.
    pub fn train_until(data: &[f32], dim: usize, p: &PqTrainParams, stop: &Stop) -> Option<Self> {
        assert!(p.m >= 1 && p.m <= dim, "PQ needs 1 <= m <= dim");
        let n = data.len() / dim;
        let rng = Rng::new(p.seed);
        let mut sample_ids = rng.fork(0).sample(n, p.sample.min(n));
        sample_ids.sort_unstable();
        let center = crate::graph::medoid::centroid(data, dim);
        let offsets = split_offsets(dim, p.m);
        let per_sub: Vec<Vec<f32>> = (0..p.m)
            .into_par_iter()
            .map(|j| {
                let (a, b) = (offsets[j], offsets[j + 1]);
                let mut pts = Vec::with_capacity(sample_ids.len() * (b - a));
                for &i in &sample_ids {
                    let row = &data[i * dim..(i + 1) * dim];
                    pts.extend(row[a..b].iter().zip(&center[a..b]).map(|(x, c)| x - c));
                }
                if stop() {
                    return Vec::new();
                }
                let mut rng = rng.fork(1 + j as u64);
                kmeans::train_until(&pts, b - a, KSUB, p.iters, &mut rng, stop)
            })
            .collect();
        if stop() {
            return None;
        }
        Some(PqCodebook {
            dim,
            m: p.m,
            offsets,
            center,
            centroids: per_sub.concat(),
        })
    }

    pub fn sub_centroids(&self, j: usize) -> &[f32] {
        let (a, b) = (self.offsets[j], self.offsets[j + 1]);
        &self.centroids[a * KSUB..b * KSUB]
    }

    /// Codes of all rows, `n x m` bytes, computed in parallel.
    pub fn encode_all(&self, data: &[f32]) -> Vec<u8> {
        self.encode_all_until(data, &crate::progress::never)
            .expect("never stopped")
    }

    /// [`Self::encode_all`] that polls `stop` every 256 rows and returns
    /// `None` when it says so.
    pub fn encode_all_until(&self, data: &[f32], stop: &Stop) -> Option<Vec<u8>> {
        let transposed: Vec<Vec<f32>> = (0..self.m)
            .map(|j| {
                let d = self.offsets[j + 1] - self.offsets[j];
                kmeans::transpose(self.sub_centroids(j), KSUB, d)
            })
            .collect();
        let mut codes = vec![0u8; data.len() / self.dim * self.m];
        codes
            .par_chunks_mut(self.m * 256)
            .zip(data.par_chunks(self.dim * 256))
            .for_each(|(out, rows)| {
                if stop() {
                    return;
                }
                let mut scratch = vec![0f32; KSUB];
                let mut resid = vec![0f32; self.dim];
                for (code, row) in out
                    .chunks_exact_mut(self.m)
                    .zip(rows.chunks_exact(self.dim))
                {
                    for ((r, x), c) in resid.iter_mut().zip(row).zip(&self.center) {
                        *r = x - c;
                    }
                    for (j, slot) in code.iter_mut().enumerate() {
                        let (a, b) = (self.offsets[j], self.offsets[j + 1]);
                        *slot =
                            kmeans::nearest(&resid[a..b], &transposed[j], KSUB, &mut scratch) as u8;
                    }
                }
            });
        (!stop()).then_some(codes)
    }

    /// Reconstruction of one code (for tests and error measurement).
    pub fn decode(&self, code: &[u8]) -> Vec<f32> {
        let mut out = self.center.clone();
        for (j, &c) in code.iter().enumerate() {
            let (a, b) = (self.offsets[j], self.offsets[j + 1]);
            let cent = &self.sub_centroids(j)[c as usize * (b - a)..(c as usize + 1) * (b - a)];
            for (o, &x) in out[a..b].iter_mut().zip(cent) {
                *o += x;
            }
        }
        out
    }

    /// ADC table: `table[j*256 + c]` is sub-space j's share of the distance
    /// from `query` to centroid c, so that `sum_j table[j*256 + code[j]]`
    /// estimates the squared L2 (or the negated inner product) to the vector.
    pub fn table(&self, query: &[f32], metric: Metric, table: &mut Vec<f32>) {
        table.clear();
        table.resize(self.m * KSUB, 0.0);
        let ip = metric == Metric::InnerProduct;
        for j in 0..self.m {
            let (a, b) = (self.offsets[j], self.offsets[j + 1]);
            let d = b - a;
            let cents = self.sub_centroids(j);
            let row = &mut table[j * KSUB..(j + 1) * KSUB];
            for (c, slot) in row.iter_mut().enumerate() {
                let cent = &cents[c * d..(c + 1) * d];
                *slot = if ip {
                    -stratavec_simd::dot_f32(&query[a..b], cent)
                } else {
                    cent.iter()
                        .zip(&query[a..b])
                        .zip(&self.center[a..b])
                        .map(|((&y, &q), &mu)| (q - mu - y) * (q - mu - y))
                        .sum()
                };
            }
        }
        if ip {
            // x ~ center + decode: the centre's share is the same for every id.
            let bias = -stratavec_simd::dot_f32(query, &self.center);
            table[..KSUB].iter_mut().for_each(|t| *t += bias);
        }
    }

    /// Bytes of the codebook itself.
    pub fn bytes(&self) -> usize {
        (self.centroids.len() + self.center.len()) * 4 + self.offsets.len() * 8
    }
}

/// A codebook together with the codes of every vector: what the `diskann`
/// profile keeps in RAM to rank neighbours before reading them.
pub struct PqQuantizer {
    pub codebook: PqCodebook,
    pub codes: Vec<u8>,
    pub metric: Metric,
    /// Each sub-space's centroids transposed (`dsub x 256`), so an L2 table
    /// row is one `l2_sq_transposed` call.
    transposed: Vec<Vec<f32>>,
}

impl PqQuantizer {
    /// Keeps only the transposed centroids (the row-major copy is dropped:
    /// every table is computed from the transposed form), so the codebook
    /// is held once.
    pub fn new(mut codebook: PqCodebook, codes: Vec<u8>, metric: Metric) -> Self {
        let transposed = (0..codebook.m)
            .map(|j| {
                let d = codebook.offsets[j + 1] - codebook.offsets[j];
                kmeans::transpose(codebook.sub_centroids(j), KSUB, d)
            })
            .collect();
        codebook.centroids = Vec::new();
        // Read at random by every estimate (`stratavec_io::huge_pages`).
        stratavec_io::huge_pages::back(&codes);
        PqQuantizer {
            codebook,
            codes,
            metric,
            transposed,
        }
    }
}

impl Quantizer for PqQuantizer {
    fn name(&self) -> String {
        format!("pq{}", self.codebook.m)
    }

    fn bytes_per_vector(&self) -> usize {
        self.codebook.m
    }

    fn resident_bytes(&self) -> usize {
        let transposed: usize = self.transposed.iter().map(|t| t.len() * 4).sum();
        self.codes.len() + self.codebook.bytes() + transposed
    }

    /// The float table, then the u16 table every estimate is taken from
    /// (`stratavec_simd::pq_adc_rows_u16`: half the bytes, exact integer
    /// sums). An estimate is off from the float table's sum by at most
    /// `m * scale / 2`, with `scale` = the table's range / 65535.
    ///
    /// The float table is scratch, one per thread: a query keeps only the
    /// u16 table. A 96-d block search's profile had 4% of its CPU in
    /// allocating and zeroing a fresh 48 KB float table for every query.
    fn prepare(&self, query: &[f32], table: &mut QueryTable) {
        thread_local! {
            static FLOATS: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        FLOATS.with_borrow_mut(|floats| {
            self.float_table(query, floats);
            let n = floats.len();
            table.words.clear();
            table.words.resize(n + 1, 0);
            let (offset, scale) = stratavec_simd::quantize_u16(floats, &mut table.words[..n]);
            table.bias = offset * self.codebook.m as f32;
            table.scale = scale;
        });
    }

    fn prefetch(&self, ids: &[u32]) {
        stratavec_simd::prefetch_rows(&self.codes, self.codebook.m, ids);
    }

    fn estimate_many(&self, table: &QueryTable, ids: &[u32], out: &mut [f32]) {
        let m = self.codebook.m;
        let mut sums = [0u32; 64];
        for (ids, out) in ids.chunks(sums.len()).zip(out.chunks_mut(sums.len())) {
            let sums = &mut sums[..ids.len()];
            stratavec_simd::pq_adc_rows_u16(&table.words, &self.codes, m, ids, sums);
            for (o, &s) in out.iter_mut().zip(sums.iter()) {
                *o = table.bias + table.scale * s as f32;
            }
        }
    }
}

impl PqQuantizer {
    /// A quantizer of `m` bytes trained on all of `data` (L2, seed 1) and
    /// holding its codes: the set-up of the tests that need codes in RAM.
    #[cfg(test)]
    pub(crate) fn fit_l2(data: &[f32], dim: usize, m: usize, iters: usize) -> PqQuantizer {
        let p = PqTrainParams {
            m,
            sample: data.len() / dim.max(1),
            iters,
            seed: 1,
        };
        let cb = PqCodebook::train(data, dim, &p);
        let codes = cb.encode_all(data);
        PqQuantizer::new(cb, codes, Metric::L2)
    }

    /// Reconstruction of vector `id` from its code into `out` (`dim`
    /// floats), from the transposed centroids: what [`PqCodebook::decode`]
    /// gives, for callers that only hold the quantizer.
    pub fn decode(&self, id: u32, out: &mut [f32]) {
        let cb = &self.codebook;
        let code = &self.codes[id as usize * cb.m..(id as usize + 1) * cb.m];
        out.copy_from_slice(&cb.center);
        for (j, &c) in code.iter().enumerate() {
            let (a, b) = (cb.offsets[j], cb.offsets[j + 1]);
            for (t, o) in out[a..b].iter_mut().enumerate() {
                *o += self.transposed[j][t * KSUB + c as usize];
            }
        }
    }

    /// The ADC table of [`PqCodebook::table`], from the transposed
    /// centroids.
    fn float_table(&self, query: &[f32], table: &mut Vec<f32>) {
        let cb = &self.codebook;
        table.clear();
        table.resize(cb.m * KSUB, 0.0);
        if self.metric == Metric::InnerProduct {
            // -<q, centre + c>: the centre's share is the same for every id,
            // added once to sub-space 0.
            for (j, row) in table.chunks_exact_mut(KSUB).enumerate() {
                let (a, b) = (cb.offsets[j], cb.offsets[j + 1]);
                for (t, &q) in query[a..b].iter().enumerate() {
                    let col = &self.transposed[j][t * KSUB..(t + 1) * KSUB];
                    for (r, &c) in row.iter_mut().zip(col) {
                        *r -= q * c;
                    }
                }
            }
            let bias = -stratavec_simd::dot_f32(query, &cb.center);
            table[..KSUB].iter_mut().for_each(|t| *t += bias);
            return;
        }
        let resid: Vec<f32> = query.iter().zip(&cb.center).map(|(q, c)| q - c).collect();
        for (j, row) in table.chunks_exact_mut(KSUB).enumerate() {
            let (a, b) = (cb.offsets[j], cb.offsets[j + 1]);
            stratavec_simd::l2_sq_transposed(&resid[a..b], &self.transposed[j], row);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::rng::Rng;
    use proptest::prelude::*;

    fn data(n: usize, dim: usize, seed: u64) -> Vec<f32> {
        let mut rng = Rng::new(seed);
        (0..n * dim).map(|_| rng.normal() + 0.5).collect()
    }

    fn params(m: usize) -> PqTrainParams {
        PqTrainParams {
            m,
            sample: 5000,
            iters: 8,
            seed: 9,
        }
    }

    #[test]
    fn uneven_split_covers_every_component() {
        let o = split_offsets(10, 4);
        assert_eq!(o, vec![0, 3, 6, 8, 10]);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(12))]
        /// ADC equals the exact distance to the decoded vector, for both metrics.
        #[test]
        fn adc_matches_distance_to_reconstruction(dim in 3usize..24, m in 1usize..6, seed in 0u64..100) {
            let m = m.min(dim);
            let x = data(600, dim, seed);
            let cb = PqCodebook::train(&x, dim, &PqTrainParams { m, sample: 600, iters: 4, seed });
            let codes = cb.encode_all(&x);
            let q: Vec<f32> = data(1, dim, seed + 1000);
            for metric in [Metric::L2, Metric::InnerProduct] {
                let mut t = vec![];
                cb.table(&q, metric, &mut t);
                for i in (0..600).step_by(37) {
                    let code = &codes[i * m..(i + 1) * m];
                    let rec = cb.decode(code);
                    let exact = match metric {
                        Metric::InnerProduct => -stratavec_simd::scalar::dot_f32(&q, &rec),
                        _ => stratavec_simd::scalar::l2_sq_f32(&q, &rec),
                    };
                    let adc = stratavec_simd::scalar::pq_adc(&t, code);
                    prop_assert!((adc - exact).abs() <= 1e-3 * (1.0 + exact.abs()), "{metric:?} {adc} {exact}");
                }
            }
        }
    }

    #[test]
    fn encoding_picks_the_nearest_centroid_and_reduces_error_with_m() {
        let dim = 16;
        let x = data(3000, dim, 1);
        let err = |m| {
            let cb = PqCodebook::train(&x, dim, &params(m));
            let codes = cb.encode_all(&x);
            (0..3000)
                .map(|i| {
                    let rec = cb.decode(&codes[i * m..(i + 1) * m]);
                    stratavec_simd::scalar::l2_sq_f32(&rec, &x[i * dim..(i + 1) * dim]) as f64
                })
                .sum::<f64>()
        };
        let (e2, e8) = (err(2), err(8));
        assert!(e8 < e2 * 0.7, "m=8 error {e8} vs m=2 {e2}");
    }

    #[test]
    fn fast_table_equals_reference_table() {
        let dim = 20;
        let x = data(1000, dim, 2);
        let cb = PqCodebook::train(&x, dim, &params(6));
        let codes = cb.encode_all(&x);
        let q = data(1, dim, 77);
        for metric in [Metric::L2, Metric::InnerProduct] {
            let pq = PqQuantizer::new(cb.clone(), codes.clone(), metric);
            let (mut fast, mut slow) = (vec![], vec![]);
            pq.float_table(&q, &mut fast);
            cb.table(&q, metric, &mut slow);
            for (a, b) in fast.iter().zip(&slow) {
                assert!(
                    (a - b).abs() <= 1e-4 * (1.0 + b.abs()),
                    "{metric:?} {a} {b}"
                );
            }
        }
    }

    /// Estimates come from the u16 table: within m * scale / 2 of the float
    /// table's sum (plus float rounding), for both metrics, one by one or
    /// many at once.
    #[test]
    fn u16_estimates_stay_within_half_a_step_per_sub_space() {
        let dim = 24;
        let x = data(2000, dim, 5);
        let m = 8;
        let cb = PqCodebook::train(&x, dim, &params(m));
        let codes = cb.encode_all(&x);
        let q = data(1, dim, 99);
        for metric in [Metric::L2, Metric::InnerProduct] {
            let pq = PqQuantizer::new(cb.clone(), codes.clone(), metric);
            let mut t = QueryTable::default();
            pq.prepare(&q, &mut t);
            let mut floats = Vec::new();
            pq.float_table(&q, &mut floats);
            let ids: Vec<u32> = (0..2000).step_by(7).collect();
            let mut many = vec![0.0; ids.len()];
            pq.estimate_many(&t, &ids, &mut many);
            for (&id, &est) in ids.iter().zip(&many) {
                let code = &codes[id as usize * m..(id as usize + 1) * m];
                let float = stratavec_simd::scalar::pq_adc(&floats, code);
                let bound = m as f32 * t.scale * 0.5 + 1e-5 * (1.0 + float.abs());
                assert!(
                    (est - float).abs() <= bound,
                    "{metric:?} id {id}: {est} vs {float} (bound {bound})"
                );
                assert_eq!(pq.estimate(&t, id), est);
            }
        }
    }

    #[test]
    fn quantizer_decode_equals_codebook_decode() {
        let dim = 22;
        let x = data(800, dim, 6);
        let m = 5;
        let cb = PqCodebook::train(&x, dim, &params(m));
        let codes = cb.encode_all(&x);
        let pq = PqQuantizer::new(cb.clone(), codes.clone(), Metric::L2);
        let mut out = vec![0.0; dim];
        for id in (0..800).step_by(13) {
            pq.decode(id as u32, &mut out);
            assert_eq!(out, cb.decode(&codes[id * m..(id + 1) * m]), "id {id}");
        }
    }

    #[test]
    fn training_is_deterministic() {
        let x = data(2000, 12, 4);
        assert_eq!(
            PqCodebook::train(&x, 12, &params(4)),
            PqCodebook::train(&x, 12, &params(4))
        );
    }
}
