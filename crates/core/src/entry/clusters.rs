//! AlayaLaser's cluster-based entry points (§4.1): k-means splits the data
//! into regions at build time, and the vector nearest each centroid is a
//! candidate entry. A query scans the candidates (a few hundred exact
//! distances, no graph search, no I/O) and starts from the nearest, so the
//! disk search begins in the query's region instead of at the medoid. Unlike
//! Starling's navigation graph the candidates follow the data's
//! distribution, so a few hundred do what thousands of random samples do.
//!
//! The scan is one f16 matrix–vector product (`stratavec_simd::F16Matrix`:
//! AMX tiles where the process has them, else four entries at a time)
//! plus the entries' stored squared norms: at 768-d a few hundred entries
//! are 0.5 MB of f16 a query streams, where f32 rows one dot product at a
//! time cost as much as the rest of preparing it. The tiles hold the
//! entries in bf16, and an L2 distance from a dot product subtracts two
//! large terms, so the scan only shortlists: every entry whose distance,
//! within the matrix's stated error, could be among the nearest is then
//! measured exactly against its f16 vector (`l2_sq_f16`), and the nearest
//! by those measures win. On wordnet-mpnet that is a few entries a query.
//! f16 moves a distance by about 1e-3 of the vectors' norms, which only
//! matters for which entry starts the search, not for any exact distance.
//!
//! Without AMX the shortlist is scanned in i8 (`stratavec_simd::I8Matrix`,
//! as the laser query's map): half the bytes and about half the time of
//! the f16 products, and a looser but still exact bound a row
//! (`I8Matrix::source_error_bound`). Computed on wordnet-mpnet (its 342
//! entries, 300 queries, one start), 3.7 entries a query fall within it
//! and are measured exactly (15 for four starts).
//!
//! `entry.bin`: magic `STRVENT1`, u32 dim, u32 k, u32 starts returned per
//! query, k u32 ids, then k × dim f32 vectors (the entries' own vectors, as
//! searched: normalised for cosine; f16 values widened to f32, as the scan
//! holds them).

use super::EntryPoints;
use crate::data::Metric;
use crate::error::{Error, FileContext, Result};
use crate::util::rng::Rng;
use std::io::Write;
use std::path::Path;
use stratavec_simd::{F16Matrix, I8Matrix};

const MAGIC: &[u8; 8] = b"STRVENT1";

/// A scan's intervals (lower, upper distance) and their upper ends.
type Scratch = (Vec<(f32, f32)>, Vec<f32>);

/// The file's name in an index directory.
/// The largest finite f16: entries are held in f16.
const F16_MAX: f32 = 65504.0;
pub const ENTRY_FILE: &str = "entry.bin";

pub struct ClusterEntries {
    dim: usize,
    metric: Metric,
    ids: Vec<u32>,
    /// k × dim f16: each entry's vector (the scan on AMX tiles, and the
    /// exact measure).
    vectors: F16Matrix,
    /// The entries in i8, the scan where there are no tiles.
    shortlist: Option<I8Matrix>,
    /// ‖e‖² of each entry's f16 vector (for L2: ‖q‖² − 2⟨q, e⟩ + ‖e‖²).
    norms: Vec<f32>,
    /// ‖e‖: with ‖q‖, bounds `Σ|q_i e_i|` and so a dot product's error.
    lengths: Vec<f32>,
    /// Starts handed to the disk search per query.
    starts: usize,
}

/// Clusters for `n` vectors when not given: √n, within 16..=1024 (a scan
/// of 1024 × 768 floats is ~40 µs a query, under one read's latency).
pub fn default_clusters(n: usize) -> usize {
    ((n as f64).sqrt().round() as usize).clamp(16, 1024).min(n)
}

/// f16 values (little-endian bytes) widened to f32.
fn widen(halves: &[u8]) -> impl Iterator<Item = f32> + '_ {
    halves
        .chunks_exact(2)
        .map(|h| stratavec_simd::half::f16_to_f32(u16::from_le_bytes([h[0], h[1]])))
}

impl ClusterEntries {
    /// k-means (`iters` Lloyd steps) over a seeded sample of `data`
    /// (already normalised for cosine); each centroid's entry is the
    /// sampled vector nearest to it. Runs on the caller's pool.
    pub fn build(data: &[f32], dim: usize, metric: Metric, k: usize, seed: u64) -> ClusterEntries {
        let n = data.len() / dim;
        let k = k.clamp(1, n);
        let mut rng = Rng::new(seed ^ 0x454E_5452);
        // 64 points a cluster train its centroid well; more only costs time.
        let mut sample = rng.sample(n, (64 * k).min(n));
        sample.sort_unstable();
        let mut points = Vec::with_capacity(sample.len() * dim);
        for &i in &sample {
            points.extend_from_slice(&data[i * dim..(i + 1) * dim]);
        }
        let centroids = crate::quant::kmeans::train(&points, dim, k, 10, &mut rng);
        // The sampled vector nearest each centroid (distinct: a vector near
        // two centroids enters once).
        let mut ids: Vec<u32> = centroids
            .chunks_exact(dim)
            .map(|c| {
                let best = (0..sample.len())
                    .min_by(|&a, &b| {
                        let da = stratavec_simd::l2_sq_f32(c, &points[a * dim..(a + 1) * dim]);
                        let db = stratavec_simd::l2_sq_f32(c, &points[b * dim..(b + 1) * dim]);
                        da.total_cmp(&db).then(a.cmp(&b))
                    })
                    .expect("a non-empty sample");
                sample[best] as u32
            })
            .collect();
        ids.sort_unstable();
        ids.dedup();
        let mut vectors = Vec::with_capacity(ids.len() * dim);
        for &i in &ids {
            vectors.extend_from_slice(&data[i as usize * dim..(i as usize + 1) * dim]);
        }
        ClusterEntries::from_f32(dim, metric, ids, &vectors, 1)
    }

    fn from_f32(
        dim: usize,
        metric: Metric,
        ids: Vec<u32>,
        vectors: &[f32],
        starts: usize,
    ) -> ClusterEntries {
        let mut table = vec![0u8; vectors.len() * 2];
        stratavec_simd::half::encode_f16(vectors, &mut table);
        let norms: Vec<f32> = table
            .chunks_exact(2 * dim)
            .map(|row| widen(row).map(|v| v * v).sum())
            .collect();
        let lengths = norms.iter().map(|n| n.sqrt()).collect();
        let vectors = F16Matrix::from_f16_bytes_on_tiles(table, dim);
        // From the f16 values, which the exact measure uses.
        let shortlist = (!vectors.on_amx()).then(|| {
            let widened: Vec<f32> = (0..vectors.rows())
                .flat_map(|r| (0..dim).map(move |d| (r, d)))
                .map(|(r, d)| vectors.get(r, d))
                .collect();
            I8Matrix::quantize(&widened, dim)
        });
        ClusterEntries {
            dim,
            metric,
            ids,
            vectors,
            shortlist,
            norms,
            lengths,
            starts,
        }
    }

    /// Entry `i`'s vector as the scan holds it (f16 widened to f32).
    fn vector(&self, i: usize) -> impl Iterator<Item = f32> + '_ {
        (0..self.dim).map(move |d| self.vectors.get(i, d))
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The `count` entries nearest `query` with their distances (to the
    /// f16 vectors), nearest first (ties by id), into `out`.
    pub fn nearest(&self, query: &[f32], count: usize, out: &mut Vec<(u32, f32)>) {
        assert_eq!(
            query.len(),
            self.dim,
            "cluster entries: query must be dim wide"
        );
        thread_local! {
            static DOTS: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        DOTS.with_borrow_mut(|dots| {
            dots.resize(self.ids.len(), 0.0);
            self.scan(query, dots);
            self.rank(query, dots, count, out);
        });
    }

    /// [`Self::nearest`] for a group of queries (row-major, dim wide), one
    /// list each into `outs[i]`, with the entries' matrix streamed once for
    /// the group (`F16Matrix::apply_many`, as the laser search maps
    /// its group through the codes' matrix): each query's dot products, and
    /// so its list, are bit for bit those of `nearest`. At 768-d the scan
    /// of √n entries is ~260k multiply-adds a query, half of mapping it
    /// through the codes' matrix; one query at a time it was ~12% of a
    /// laser search's CPU through RAM (perf, wordnet-mpnet).
    pub fn nearest_many(&self, queries: &[f32], count: usize, outs: &mut [Vec<(u32, f32)>]) {
        assert_eq!(
            queries.len(),
            outs.len() * self.dim,
            "cluster entries: one dim-wide query a list"
        );
        let mut dots = vec![0f32; outs.len() * self.ids.len()];
        self.scan(queries, &mut dots);
        for ((q, d), out) in queries
            .chunks_exact(self.dim)
            .zip(dots.chunks_exact(self.ids.len()))
            .zip(outs.iter_mut())
        {
            self.rank(q, d, count, out);
        }
    }

    /// Each query's dot products with every entry (row-major), on the
    /// shortlist's holding.
    fn scan(&self, queries: &[f32], dots: &mut [f32]) {
        match &self.shortlist {
            Some(m) => m.apply_many(queries, dots),
            None => self.vectors.apply_many(queries, dots),
        }
    }

    /// The nearest `count` entries by their exact distances (f32 sums
    /// over the f16 vectors), sorted into `out`. A dot product from the
    /// scan is within a stated error of the exact one: on the f16 holding
    /// `error_bound · ‖q‖ ‖e‖` (Cauchy–Schwarz bounds `Σ|q_i e_i|`), on
    /// the i8 one `I8Matrix::source_error_bound`. So each entry's distance
    /// lies in an interval; every entry whose interval starts at or below
    /// the `count`-th smallest end is measured exactly, and the rest
    /// cannot be among the nearest.
    fn rank(&self, query: &[f32], dots: &[f32], count: usize, out: &mut Vec<(u32, f32)>) {
        out.clear();
        let count = count.min(self.ids.len());
        if count == 0 {
            return;
        }
        let qn = stratavec_simd::norm_sq_f32(query);
        let error = self.vectors.error_bound() * qn.sqrt();
        let (x_step, x_l1) = (
            I8Matrix::vector_step(query),
            query.iter().map(|v| v.abs()).sum::<f32>(),
        );
        let dot_error = |i: usize| match &self.shortlist {
            // f32 sums of the bound's own terms: a relative slack.
            Some(m) => m.source_error_bound(i, x_step, x_l1) * (1.0 + 1e-4),
            None => error * self.lengths[i],
        };
        // f32 rounding of the sums below, far under the scan's error.
        let rounding = 2f32.powi(-20);
        let interval = |i: usize| {
            let (dot, err) = (dots[i], dot_error(i));
            let (d, margin) = match self.metric {
                Metric::L2 => {
                    let norm = self.norms[i];
                    let d = qn - 2.0 * dot + norm;
                    (d, 2.0 * err + rounding * (qn + 2.0 * dot.abs() + norm))
                }
                Metric::InnerProduct | Metric::Cosine => (-dot, err + rounding * dot.abs()),
            };
            (d - margin, d + margin)
        };
        thread_local! {
            static SPANS: std::cell::RefCell<Scratch> = const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
        }
        SPANS.with_borrow_mut(|(spans, ends)| {
            spans.clear();
            spans.extend((0..self.ids.len()).map(interval));
            ends.clear();
            ends.extend(spans.iter().map(|s| s.1));
            let threshold = *ends.select_nth_unstable_by(count - 1, f32::total_cmp).1;
            out.extend(
                spans
                    .iter()
                    .enumerate()
                    .filter(|(_, s)| s.0 <= threshold)
                    .map(|(i, _)| {
                        let row = self.vectors.row(i);
                        let d = match self.metric {
                            Metric::L2 => stratavec_simd::l2_sq_f16(query, row),
                            Metric::InnerProduct | Metric::Cosine => {
                                -stratavec_simd::dot_f16(query, row)
                            }
                        };
                        (self.ids[i], d)
                    }),
            );
        });
        if count < out.len() {
            out.select_nth_unstable_by(count, |a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
            out.truncate(count);
        }
        out.sort_unstable_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    }

    pub fn write(&self, out: &mut impl Write) -> std::io::Result<()> {
        out.write_all(MAGIC)?;
        out.write_all(&(self.dim as u32).to_le_bytes())?;
        out.write_all(&(self.ids.len() as u32).to_le_bytes())?;
        out.write_all(&(self.starts as u32).to_le_bytes())?;
        for id in &self.ids {
            out.write_all(&id.to_le_bytes())?;
        }
        let bytes: Vec<u8> = (0..self.ids.len())
            .flat_map(|i| self.vector(i))
            .flat_map(|x| x.to_le_bytes())
            .collect();
        out.write_all(&bytes)
    }

    /// Reads and validates `entry.bin` for an index of `n` vectors of `dim`.
    pub fn read(path: &Path, n: usize, dim: usize, metric: Metric) -> Result<ClusterEntries> {
        let b = std::fs::read(path).at("read", path)?;
        let bad = |field: &str, want: String, got: String| Error::index(path, field, want, got);
        if b.len() < 20 || &b[..8] != MAGIC {
            return Err(bad("magic", "\"STRVENT1\"".into(), "other bytes".into()));
        }
        let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().expect("4 bytes"));
        let (fdim, k, starts) = (u32_at(8) as usize, u32_at(12) as usize, u32_at(16) as usize);
        if fdim != dim {
            return Err(bad("dim", dim.to_string(), fdim.to_string()));
        }
        if k == 0 || k > n {
            return Err(bad("entries", format!("1..={n}"), k.to_string()));
        }
        // In u128: `k <= n` and `dim` is the index's, but a size must not
        // wrap whatever they are.
        let want = 20 + 4 * k as u128 + 4 * k as u128 * dim as u128;
        if b.len() as u128 != want {
            return Err(bad(
                "size",
                format!("{want} bytes"),
                format!("{} bytes", b.len()),
            ));
        }
        let ids: Vec<u32> = (0..k).map(|i| u32_at(20 + 4 * i)).collect();
        if let Some(&id) = ids.iter().find(|&&i| i as usize >= n) {
            return Err(bad("entry id", format!("< {n}"), id.to_string()));
        }
        let vectors: Vec<f32> = b[20 + 4 * k..]
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        // Held as f16 and an i8 shortlist, which need finite values: an
        // entry is a vector of the data, which the build refuses otherwise.
        if let Some(i) = vectors.iter().position(|v| v.is_nan() || v.abs() > F16_MAX) {
            return Err(bad(
                &format!("entry {}, component {}", i / dim, i % dim),
                format!("a finite value within the f16 range (|x| <= {F16_MAX})"),
                vectors[i].to_string(),
            ));
        }
        Ok(ClusterEntries::from_f32(
            dim,
            metric,
            ids,
            &vectors,
            starts.max(1),
        ))
    }
}

impl EntryPoints for ClusterEntries {
    fn name(&self) -> &'static str {
        "clusters"
    }

    fn starts(&self, query: &[f32], _complexity: usize, out: &mut Vec<u32>) {
        let mut near = Vec::with_capacity(self.ids.len());
        self.nearest(query, self.starts, &mut near);
        out.extend(near.iter().map(|e| e.0));
    }

    fn starts_near(&self, query: &[f32], _complexity: usize, out: &mut Vec<(u32, f32)>) {
        let mut near = Vec::with_capacity(self.ids.len());
        self.nearest(query, self.starts, &mut near);
        out.extend(near);
    }

    fn starts_near_many(&self, queries: &[f32], _complexity: usize, outs: &mut [Vec<(u32, f32)>]) {
        let mut near = vec![Vec::with_capacity(self.ids.len()); outs.len()];
        self.nearest_many(queries, self.starts, &mut near);
        for (out, near) in outs.iter_mut().zip(near) {
            out.extend(near);
        }
    }

    fn resident_bytes(&self) -> usize {
        // ids, norms and lengths.
        self.ids.len() * 12
            + self.vectors.resident_bytes()
            + self.shortlist.as_ref().map_or(0, I8Matrix::resident_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Points in `c` tight clusters far apart: with 2c centroids (Lloyd's
    /// may put two in one cluster) every cluster gets an entry, and a query
    /// near a cluster starts from that cluster's entry.
    #[test]
    fn entries_land_in_the_querys_region() {
        let (c, per, dim) = (8usize, 200usize, 16usize);
        let mut rng = Rng::new(3);
        let centre = |j: usize| -> Vec<f32> {
            (0..dim)
                .map(|d| {
                    if d == j % dim {
                        100.0 * (1 + j / dim) as f32
                    } else {
                        0.0
                    }
                })
                .collect()
        };
        let mut data = Vec::new();
        for j in 0..c {
            let m = centre(j);
            for _ in 0..per {
                data.extend(m.iter().map(|&x| x + rng.unit_f32() - 0.5));
            }
        }
        let e = ClusterEntries::build(&data, dim, Metric::L2, 2 * c, 7);
        let cluster_of = |id: u32| id as usize / per;
        let mut seen: Vec<usize> = e.ids.iter().map(|&i| cluster_of(i)).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), c, "an entry in every cluster: {:?}", e.ids);
        let mut out = vec![];
        for j in 0..c {
            let q: Vec<f32> = centre(j).iter().map(|&x| x + 0.25).collect();
            e.nearest(&q, 3, &mut out);
            assert_eq!(cluster_of(out[0].0), j);
            assert!(out.windows(2).all(|w| w[0].1 <= w[1].1));
            // The distance to the f16 vector: within f16's rounding of the
            // exact one.
            let exact = stratavec_simd::l2_sq_f32(&q, &data[out[0].0 as usize * dim..][..dim]);
            let norm = stratavec_simd::norm_sq_f32(&q);
            assert!(
                (out[0].1 - exact).abs() <= 2e-3 * norm,
                "{} vs {exact}",
                out[0].1
            );
        }
        // Round trip, and a file for another index is refused.
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(ENTRY_FILE);
        let mut f = std::fs::File::create(&p).unwrap();
        e.write(&mut f).unwrap();
        drop(f);
        let r = ClusterEntries::read(&p, c * per, dim, Metric::L2).unwrap();
        let rows = |e: &ClusterEntries| {
            (0..e.len())
                .flat_map(|i| e.vector(i).map(f32::to_bits))
                .collect::<Vec<_>>()
        };
        assert_eq!((&r.ids, rows(&r), &r.norms), (&e.ids, rows(&e), &e.norms));
        let msg = ClusterEntries::read(&p, c * per, dim + 1, Metric::L2)
            .err()
            .unwrap()
            .to_string();
        assert!(msg.contains("entry.bin") && msg.contains("dim"), "{msg}");
        // A group's lists are each query's own, bit for bit.
        let queries: Vec<f32> = (0..5)
            .flat_map(|j| centre(j).into_iter().map(|x| x + 0.5))
            .collect();
        let mut many = vec![Vec::new(); 5];
        e.nearest_many(&queries, 4, &mut many);
        for (q, got) in queries.chunks_exact(dim).zip(&many) {
            e.nearest(q, 4, &mut out);
            let bits =
                |l: &[(u32, f32)]| l.iter().map(|&(i, d)| (i, d.to_bits())).collect::<Vec<_>>();
            assert_eq!(bits(got), bits(&out));
        }
        assert_eq!(default_clusters(117_000), 342);
        assert_eq!(default_clusters(100), 16);
    }

    /// Whatever holds the scan (bf16 tiles where the process has AMX, i8
    /// where it has not),
    /// the nearest entries are those the exact f16 distances rank first,
    /// with those distances: on data far from the origin, where the
    /// tiles' dot products alone would misrank nearby entries, and for
    /// every metric.
    #[test]
    fn the_nearest_are_the_exact_nearest_whatever_holds_the_scan() {
        let (n, dim) = (300usize, 40usize);
        let mut rng = Rng::new(11);
        for (metric, offset) in [
            (Metric::L2, 0.0),
            (Metric::L2, 500.0),
            (Metric::InnerProduct, 3.0),
            (Metric::Cosine, 0.0),
        ] {
            let mut data: Vec<f32> = (0..n * dim).map(|_| offset + rng.normal()).collect();
            if metric == Metric::Cosine {
                for v in data.chunks_exact_mut(dim) {
                    let len = stratavec_simd::norm_sq_f32(v).sqrt();
                    v.iter_mut().for_each(|x| *x /= len);
                }
            }
            let ids: Vec<u32> = (0..n as u32).collect();
            let e = ClusterEntries::from_f32(dim, metric, ids, &data, 1);
            let mut out = vec![];
            for q in 0..40 {
                let query: Vec<f32> = data[q * dim..(q + 1) * dim]
                    .iter()
                    .map(|&x| x + 0.05 * rng.normal())
                    .collect();
                let mut want: Vec<(u32, f32)> = (0..n)
                    .map(|i| {
                        let row = e.vectors.row(i);
                        let d = match metric {
                            Metric::L2 => stratavec_simd::l2_sq_f16(&query, row),
                            _ => -stratavec_simd::dot_f16(&query, row),
                        };
                        (i as u32, d)
                    })
                    .collect();
                want.sort_unstable_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
                for count in [1, 5, n] {
                    e.nearest(&query, count, &mut out);
                    assert_eq!(
                        out,
                        want[..count],
                        "{metric:?} offset {offset} count {count}"
                    );
                }
            }
        }
    }
}
