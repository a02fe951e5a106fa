//! Starling's in-memory navigation graph (§4.3): a Vamana graph over a seeded
//! sample of the vectors (ratio μ), kept in RAM with the sample's full
//! vectors. Each query first searches it (no I/O) and starts the disk search
//! from the sample nodes nearest to it, instead of from the medoid, which
//! cuts the first hops of every disk search.
//!
//! `nav.bin`: magic "STRVNAV1", u32 dim, u64 m, u32 medoid (local index),
//! u32 entries returned per query, m u32 global ids, m*dim f32 vectors, then
//! per node u32 degree and that many u32 local neighbour indices.

use super::EntryPoints;
use crate::data::Metric;
use crate::error::{Error, FileContext, Result};
use crate::graph::{build, BuildSpace, VamanaParams};
use crate::util::candidates::CandidateList;
use crate::util::rng::Rng;
use crate::util::visited::VisitedSet;
use std::io::Write;
use std::path::Path;

const MAGIC: &[u8; 8] = b"STRVNAV1";

pub struct NavGraph {
    dim: usize,
    metric: Metric,
    ids: Vec<u32>,
    vectors: Vec<f32>,
    lists: Vec<Vec<u32>>,
    medoid: u32,
    /// Start nodes handed to the disk search per query.
    entries: usize,
}

impl NavGraph {
    /// Builds over a seeded sample of `ratio * n` rows (at least one) of
    /// `data` (already normalised for cosine). Runs on the caller's pool.
    pub fn build(
        data: &[f32],
        dim: usize,
        metric: Metric,
        ratio: f32,
        degree: usize,
        seed: u64,
    ) -> NavGraph {
        let n = data.len() / dim;
        let m = ((n as f64 * ratio as f64).round() as usize).clamp(1, n);
        let mut ids: Vec<usize> = Rng::new(seed ^ 0x4E41_5647).sample(n, m);
        ids.sort_unstable();
        let mut vectors = Vec::with_capacity(m * dim);
        for &i in &ids {
            vectors.extend_from_slice(&data[i * dim..(i + 1) * dim]);
        }
        let space = BuildSpace::new(&vectors, dim, metric);
        let params = VamanaParams {
            degree,
            complexity: degree * 2,
            seed,
            ..Default::default()
        };
        let (g, _) = build(&space, &params, &|_, _| {});
        NavGraph {
            dim,
            metric,
            ids: ids.into_iter().map(|i| i as u32).collect(),
            vectors,
            lists: g.lists,
            medoid: g.medoid,
            entries: 4,
        }
    }

    fn dist(&self, q: &[f32], local: u32) -> f32 {
        let v = &self.vectors[local as usize * self.dim..(local as usize + 1) * self.dim];
        match self.metric {
            Metric::L2 => stratavec_simd::l2_sq_f32(q, v),
            Metric::InnerProduct | Metric::Cosine => -stratavec_simd::dot_f32(q, v),
        }
    }

    /// The graph's greedy search for `query` with list size `complexity`.
    /// Also returns how many f32 distances it computed.
    fn search(&self, query: &[f32], complexity: usize) -> (CandidateList, usize) {
        let mut list = CandidateList::new(complexity);
        let mut visited = VisitedSet::with_capacity(complexity * 16);
        visited.insert(self.medoid);
        list.insert(self.medoid, self.dist(query, self.medoid));
        let mut distances = 1;
        while let Some(c) = list.pop_closest_unexpanded() {
            for &v in &self.lists[c.id as usize] {
                if visited.insert(v) {
                    list.insert(v, self.dist(query, v));
                    distances += 1;
                }
            }
        }
        (list, distances)
    }

    /// [`EntryPoints::starts`], returning how many f32 distances the
    /// graph's search computed (what the memory planner weighs the
    /// graph's own CPU by, `memory::nav_plan`).
    pub fn starts_counted(&self, query: &[f32], complexity: usize, out: &mut Vec<u32>) -> usize {
        let (list, distances) = self.search(query, complexity.max(self.entries));
        out.extend(
            list.as_slice()
                .iter()
                .take(self.entries)
                .map(|c| self.ids[c.id as usize]),
        );
        distances
    }

    /// The distance from `point` to the nearest node of the graph that a
    /// search with list size `complexity` finds (Gorgeous §4.1 ranks the
    /// graph cache by it).
    pub fn nearest_distance(&self, point: &[f32], complexity: usize) -> f32 {
        self.search(point, complexity.max(1))
            .0
            .as_slice()
            .first()
            .map_or(f32::INFINITY, |c| c.dist)
    }

    pub fn write(&self, out: &mut impl Write) -> std::io::Result<()> {
        out.write_all(MAGIC)?;
        out.write_all(&(self.dim as u32).to_le_bytes())?;
        out.write_all(&(self.ids.len() as u64).to_le_bytes())?;
        out.write_all(&self.medoid.to_le_bytes())?;
        out.write_all(&(self.entries as u32).to_le_bytes())?;
        for id in &self.ids {
            out.write_all(&id.to_le_bytes())?;
        }
        for x in &self.vectors {
            out.write_all(&x.to_le_bytes())?;
        }
        for l in &self.lists {
            out.write_all(&(l.len() as u32).to_le_bytes())?;
            for v in l {
                out.write_all(&v.to_le_bytes())?;
            }
        }
        Ok(())
    }

    /// Reads and validates `nav.bin` for an index of `n` vectors of `dim`.
    pub fn read(path: &Path, n: usize, dim: usize, metric: Metric) -> Result<NavGraph> {
        let b = std::fs::read(path).at("read", path)?;
        let bad = |field: &str, want: String, got: String| Error::index(path, field, want, got);
        if b.len() < 28 || &b[..8] != MAGIC {
            return Err(bad("magic", "\"STRVNAV1\"".into(), "other bytes".into()));
        }
        let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().expect("4 bytes"));
        let fdim = u32_at(8) as usize;
        let m = u64::from_le_bytes(b[12..20].try_into().expect("8 bytes")) as usize;
        let (medoid, entries) = (u32_at(20), u32_at(24) as usize);
        if fdim != dim {
            return Err(bad("dim", dim.to_string(), fdim.to_string()));
        }
        if m == 0 || m > n || medoid as usize >= m {
            return Err(bad(
                "sample size / medoid",
                format!("1..={n} / < sample size"),
                format!("{m} / {medoid}"),
            ));
        }
        // A search's list is at least `entries` long (`starts_counted`):
        // held to the sample size, which a list of that size already holds
        // whole, so a damaged count cannot size a huge list (the same
        // results for every count an index was built with).
        let entries = entries.clamp(1, m);
        let mut o = 28;
        let need = |o: usize, k: usize| {
            if o as u128 + k as u128 > b.len() as u128 {
                Err(Error::index(
                    path,
                    "size",
                    format!("at least {} bytes", o + k),
                    b.len(),
                ))
            } else {
                Ok(())
            }
        };
        need(o, 4usize.saturating_mul(m).saturating_mul(dim + 1))?;
        let ids: Vec<u32> = (0..m).map(|i| u32_at(o + 4 * i)).collect();
        if let Some(&bad_id) = ids.iter().find(|&&i| i as usize >= n) {
            return Err(bad("sample id", format!("< {n}"), bad_id.to_string()));
        }
        o += 4 * m;
        let vectors: Vec<f32> = b[o..o + 4 * m * dim]
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        o += 4 * m * dim;
        let mut lists = Vec::with_capacity(m);
        for u in 0..m {
            need(o, 4)?;
            let deg = u32_at(o) as usize;
            o += 4;
            need(o, 4usize.saturating_mul(deg))?;
            let l: Vec<u32> = (0..deg).map(|i| u32_at(o + 4 * i)).collect();
            if let Some(&v) = l.iter().find(|&&v| v as usize >= m) {
                return Err(bad(
                    &format!("node {u}: neighbour"),
                    format!("< {m}"),
                    v.to_string(),
                ));
            }
            o += 4 * deg;
            lists.push(l);
        }
        if o != b.len() {
            return Err(bad("size", o.to_string(), b.len().to_string()));
        }
        Ok(NavGraph {
            dim,
            metric,
            ids,
            vectors,
            lists,
            medoid,
            entries,
        })
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
}

impl EntryPoints for NavGraph {
    fn name(&self) -> &'static str {
        "nav-graph"
    }

    /// Best-first search of the in-memory graph from its medoid with a list
    /// of `complexity` (at least the number of entries); the nearest
    /// `entries` sample nodes (as global ids) start the disk search.
    fn starts(&self, query: &[f32], complexity: usize, out: &mut Vec<u32>) {
        self.starts_counted(query, complexity, out);
    }

    fn resident_bytes(&self) -> usize {
        let lists: usize = self.lists.iter().map(|l| l.capacity() * 4 + 24).sum();
        self.ids.capacity() * 4 + self.vectors.capacity() * 4 + lists
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_finds_near_entries() {
        let mut rng = Rng::new(1);
        let (n, dim) = (2000, 8);
        let data: Vec<f32> = (0..n * dim).map(|_| rng.normal()).collect();
        let nav = NavGraph::build(&data, dim, Metric::L2, 0.1, 16, 7);
        assert_eq!(nav.len(), 200);
        let mut bytes = vec![];
        nav.write(&mut bytes).unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("nav.bin");
        std::fs::write(&path, &bytes).unwrap();
        let back = NavGraph::read(&path, n, dim, Metric::L2).unwrap();
        assert_eq!(back.ids, nav.ids);
        assert_eq!(back.lists, nav.lists);
        // The entries are sample nodes, and the first is the sample's nearest
        // to the query (brute force over the sample).
        let q = &data[5 * dim..6 * dim];
        let mut starts = vec![];
        back.starts(q, 64, &mut starts);
        assert_eq!(starts.len(), 4);
        let best = nav
            .ids
            .iter()
            .min_by(|&&a, &&b| {
                let da =
                    stratavec_simd::l2_sq_f32(q, &data[a as usize * dim..(a as usize + 1) * dim]);
                let db =
                    stratavec_simd::l2_sq_f32(q, &data[b as usize * dim..(b as usize + 1) * dim]);
                da.total_cmp(&db)
            })
            .copied()
            .unwrap();
        assert_eq!(starts[0], best);
        // A list shorter than the entries handed out is widened to them.
        let mut few = vec![];
        back.starts(q, 1, &mut few);
        assert_eq!(few.len(), 4);
        // Truncation is reported, not mis-read.
        std::fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
        assert!(NavGraph::read(&path, n, dim, Metric::L2).is_err());
    }
}
