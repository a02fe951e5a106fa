//! Who belongs to which cluster, and where each vector is stored, for the
//! decoupled cluster index of paper 002 §6 (the `ivf` profile).
//!
//! - **Balanced clusters** (SPANN/SPFresh style): k-means centroids on a
//!   seeded sample; each vector's primary cluster is its nearest one with
//!   room (a cap of `balance` × n/k), vectors nearest their centroid
//!   claiming first, so no cluster read grows without bound.
//! - **Replication** (§6.1): a vector near a boundary also joins up to
//!   `replicas - 1` further clusters — the nearest ones within (1 + ε) of
//!   its primary distance (SPANN's closure). SPANN's RNG rule (skip a
//!   cluster whose centroid is nearer a chosen centroid than to the vector)
//!   is not used: in embedding spaces centroids are much nearer each other
//!   than any vector is to them, and on wordnet-minilm it rejected every
//!   replica. In the decoupled layout a replica is an address (4 bytes),
//!   not a copy of the vector.
//! - **Grouping** (§6.2): each vector is stored once, beside the vectors of
//!   one of its clusters, so that reading a cluster is one large read of its
//!   group plus a small read per member stored elsewhere. The paper's greedy
//!   — store a vector in the group of its most frequently read cluster — is
//!   optimal for the weighted count of small reads, Σ_j h_j · |members of j
//!   outside j's group| (each vector's term is independent of the others').

use crate::util::rng::Rng;

/// Build parameters of the cluster assignment.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AssignParams {
    pub clusters: usize,
    /// Clusters a vector may be in, 1..=8 (1: no replication).
    pub replicas: usize,
    /// ε of the closure rule: a further cluster is joined when its centroid
    /// is within (1 + ε) of the primary's distance.
    pub closure: f32,
    /// A cluster holds at most `balance` × n / clusters primary members.
    pub balance: f32,
    pub iters: usize,
    pub seed: u64,
}

/// Where each vector is stored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Grouping {
    /// In id order, apart from every cluster: each member is a small read
    /// (the decoupled layout of §6.1 before grouping).
    None,
    /// In its primary cluster's group.
    Primary,
    /// In the group of its most frequently read cluster (§6.2's greedy).
    #[default]
    Frequency,
}

impl Grouping {
    const NAMES: [(Grouping, &'static str); 3] = [
        (Grouping::None, "none"),
        (Grouping::Primary, "primary"),
        (Grouping::Frequency, "frequency"),
    ];
}

impl std::fmt::Display for Grouping {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = Self::NAMES
            .iter()
            .find(|g| g.0 == *self)
            .expect("every grouping")
            .1;
        f.write_str(name)
    }
}

impl std::str::FromStr for Grouping {
    type Err = String;
    fn from_str(s: &str) -> Result<Grouping, String> {
        Self::NAMES
            .iter()
            .find(|g| g.1 == s)
            .map(|g| g.0)
            .ok_or_else(|| format!("expected none, primary or frequency, found {s:?}"))
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Assignment {
    pub dim: usize,
    /// Row-major `clusters x dim`.
    pub centroids: Vec<f32>,
    /// Each cluster's members (primary and replicated), ascending, each once.
    pub members: Vec<Vec<u32>>,
    /// Each vector's primary cluster.
    pub primary: Vec<u32>,
}

/// The stored order of the vectors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Storage {
    /// Position → vector id: every id exactly once.
    pub order: Vec<u32>,
    /// Vector id → position.
    pub position: Vec<u32>,
    /// Each cluster's group: the positions `start..start + len`, whose
    /// vectors one large read brings.
    pub groups: Vec<(u32, u32)>,
}

fn l2(a: &[f32], b: &[f32]) -> f32 {
    stratavec_simd::l2_sq_f32(a, b)
}

/// The `count` nearest centroids of `v`, nearest first, as (cluster, squared
/// distance); ties by cluster number.
fn nearest(v: &[f32], centroids: &[f32], dim: usize, count: usize) -> Vec<(u32, f32)> {
    let mut all: Vec<(u32, f32)> = centroids
        .chunks_exact(dim)
        .enumerate()
        .map(|(c, x)| (c as u32, l2(v, x)))
        .collect();
    let count = count.min(all.len());
    all.select_nth_unstable_by(count.saturating_sub(1), |a, b| {
        a.1.total_cmp(&b.1).then(a.0.cmp(&b.0))
    });
    all.truncate(count);
    all.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    all
}

impl Assignment {
    /// Clusters `data` (row-major, `dim` wide). Runs on the caller's rayon
    /// pool; the result depends only on the data and `p` (not on threads).
    pub fn build(data: &[f32], dim: usize, p: &AssignParams) -> Assignment {
        let n = data.len() / dim;
        assert!(n > 0, "clusters of no vectors");
        let k = p.clusters.clamp(1, n);
        let mut rng = Rng::new(p.seed ^ 0x4956_4643);
        let mut sample = rng.sample(n, (64 * k).min(n));
        sample.sort_unstable();
        let mut points = Vec::with_capacity(sample.len() * dim);
        for &i in &sample {
            points.extend_from_slice(&data[i * dim..(i + 1) * dim]);
        }
        let centroids = crate::quant::kmeans::train(&points, dim, k, p.iters, &mut rng);
        Assignment::to_centroids(data, dim, centroids, p)
    }

    /// Assigns `data` to given `centroids` (row-major, `dim` wide; their
    /// count, not `p.clusters`, is the cluster count): the balanced primary
    /// and the replicas of [`Assignment::build`] without training. A merge
    /// keeps a generation's centroids (as FreshDiskANN keeps its PQ
    /// codebook, §4.3): the new and kept vectors join the clusters they are
    /// nearest, and a cluster may end empty.
    pub fn to_centroids(
        data: &[f32],
        dim: usize,
        centroids: Vec<f32>,
        p: &AssignParams,
    ) -> Assignment {
        use rayon::prelude::*;
        let n = data.len() / dim;
        assert!(n > 0, "clusters of no vectors");
        let k = centroids.len() / dim;
        assert!(k > 0, "no centroids");
        let replicas = p.replicas.clamp(1, 8);
        // Candidates: enough to find room under the cap and the replicas.
        let want = (replicas + 8).min(k);
        let cands: Vec<Vec<(u32, f32)>> = data
            .par_chunks_exact(dim)
            .map(|v| nearest(v, &centroids, dim, want))
            .collect();
        // Primary: nearest first claim; a full cluster passes the vector on.
        // (f32 1.2 is 1.2000000477: rounded, so 1.2 x 2000 / 20 is 120.)
        let balance = (p.balance.max(1.0) as f64 * 1e6).round() / 1e6;
        let cap = ((balance * n as f64 / k as f64).ceil() as usize).max(1);
        let mut by_closeness: Vec<u32> = (0..n as u32).collect();
        by_closeness.sort_by(|&a, &b| {
            cands[a as usize][0]
                .1
                .total_cmp(&cands[b as usize][0].1)
                .then(a.cmp(&b))
        });
        let mut size = vec![0usize; k];
        let mut primary = vec![0u32; n];
        let mut primary_dist = vec![0f32; n];
        for &v in &by_closeness {
            let c = &cands[v as usize];
            let (j, d) = c
                .iter()
                .copied()
                .find(|&(j, _)| size[j as usize] < cap)
                // Every candidate full (k·cap ≥ n makes this rare): the
                // least full cluster takes it.
                .unwrap_or_else(|| {
                    let j = (0..k).min_by_key(|&j| (size[j], j)).expect("k >= 1") as u32;
                    (
                        j,
                        l2(
                            &data[v as usize * dim..(v as usize + 1) * dim],
                            &centroids[j as usize * dim..(j as usize + 1) * dim],
                        ),
                    )
                });
            size[j as usize] += 1;
            primary[v as usize] = j;
            primary_dist[v as usize] = d;
        }
        let mut members = vec![Vec::new(); k];
        let limit = (1.0 + p.closure.max(0.0)).powi(2);
        for v in 0..n {
            let mut chosen = vec![primary[v]];
            for &(j, d) in &cands[v] {
                if chosen.len() >= replicas || d > limit * primary_dist[v] {
                    break;
                }
                if !chosen.contains(&j) {
                    chosen.push(j);
                }
            }
            for j in chosen {
                members[j as usize].push(v as u32);
            }
        }
        Assignment {
            dim,
            centroids,
            members,
            primary,
        }
    }

    pub fn clusters(&self) -> usize {
        self.members.len()
    }

    /// Memberships over vectors (1: no replication).
    pub fn replication(&self) -> f64 {
        let total: usize = self.members.iter().map(Vec::len).sum();
        total as f64 / self.primary.len().max(1) as f64
    }

    /// How often each cluster is read by `queries` probing `nprobe` clusters
    /// each: the h_j of §6.2, from sample queries (at build time, a seeded
    /// sample of the data stands in for the workload).
    pub fn frequencies(&self, queries: &[f32], nprobe: usize) -> Vec<u64> {
        let mut h = vec![0u64; self.clusters()];
        for q in queries.chunks_exact(self.dim) {
            for (j, _) in nearest(q, &self.centroids, self.dim, nprobe) {
                h[j as usize] += 1;
            }
        }
        h
    }

    /// Each vector's group under `grouping` (`None` for id order); `h` is
    /// used by [`Grouping::Frequency`] only (ties: the primary, then the
    /// lower cluster number).
    pub fn group_of(&self, grouping: Grouping, h: &[u64]) -> Option<Vec<u32>> {
        match grouping {
            Grouping::None => None,
            Grouping::Primary => Some(self.primary.clone()),
            Grouping::Frequency => {
                let n = self.primary.len();
                let mut best: Vec<(u64, bool, std::cmp::Reverse<u32>)> =
                    vec![(0, false, std::cmp::Reverse(u32::MAX)); n];
                let mut group = self.primary.clone();
                for (j, m) in self.members.iter().enumerate() {
                    for &v in m {
                        let key = (
                            h[j],
                            self.primary[v as usize] == j as u32,
                            std::cmp::Reverse(j as u32),
                        );
                        if key > best[v as usize] {
                            best[v as usize] = key;
                            group[v as usize] = j as u32;
                        }
                    }
                }
                Some(group)
            }
        }
    }

    /// The stored order for `group_of` (from [`Assignment::group_of`]).
    pub fn storage(&self, group_of: Option<&[u32]>) -> Storage {
        let n = self.primary.len();
        let k = self.clusters();
        let (order, groups) = match group_of {
            None => ((0..n as u32).collect(), vec![(0, 0); k]),
            Some(g) => {
                let mut counts = vec![0u32; k];
                for &j in g {
                    counts[j as usize] += 1;
                }
                let mut groups = Vec::with_capacity(k);
                let mut at = 0u32;
                for &c in &counts {
                    groups.push((at, c));
                    at += c;
                }
                let mut next: Vec<u32> = groups.iter().map(|g| g.0).collect();
                let mut order = vec![0u32; n];
                for (v, &j) in g.iter().enumerate() {
                    order[next[j as usize] as usize] = v as u32;
                    next[j as usize] += 1;
                }
                (order, groups)
            }
        };
        let mut position = vec![0u32; n];
        for (p, &v) in order.iter().enumerate() {
            position[v as usize] = p as u32;
        }
        Storage {
            order,
            position,
            groups,
        }
    }
}

impl Storage {
    /// Members of cluster `j` stored outside its group: its small reads.
    pub fn outsiders(&self, j: usize, members: &[u32]) -> usize {
        let (s, l) = self.groups[j];
        members
            .iter()
            .filter(|&&v| !(s..s + l).contains(&self.position[v as usize]))
            .count()
    }

    /// Σ_j h_j · outsiders(j): the small reads of a workload (§6.2, Eq. 4).
    pub fn small_reads(&self, a: &Assignment, h: &[u64]) -> u64 {
        a.members
            .iter()
            .enumerate()
            .map(|(j, m)| h[j] * self.outsiders(j, m) as u64)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::rng::Rng;
    use proptest::prelude::*;

    fn data(n: usize, dim: usize, seed: u64) -> Vec<f32> {
        let mut rng = Rng::new(seed);
        let centres: Vec<f32> = (0..8 * dim).map(|_| 4.0 * rng.normal()).collect();
        (0..n)
            .flat_map(|i| {
                let c = (i * 5) % 8;
                let centre = centres[c * dim..(c + 1) * dim].to_vec();
                let noise: Vec<f32> = (0..dim).map(|_| rng.normal()).collect();
                centre
                    .into_iter()
                    .zip(noise)
                    .map(|(a, b)| a + b)
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    fn params(clusters: usize, replicas: usize, seed: u64) -> AssignParams {
        AssignParams {
            clusters,
            replicas,
            closure: 0.3,
            balance: 1.5,
            iters: 6,
            seed,
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        /// Whatever the grouping: every vector is stored exactly once, and
        /// every member of every cluster (primary or replica) resolves to
        /// the one stored copy of itself; groups tile the positions.
        #[test]
        fn grouping_never_loses_or_duplicates_a_vector(n in 1usize..400, dim in 1usize..12,
                                                       k in 1usize..40, r in 1usize..9, seed in 0u64..50) {
            let x = data(n, dim, seed);
            let a = Assignment::build(&x, dim, &params(k, r, seed));
            prop_assert_eq!(a.clusters(), k.min(n));
            let h = a.frequencies(&x, 3);
            for g in [Grouping::None, Grouping::Primary, Grouping::Frequency] {
                let s = a.storage(a.group_of(g, &h).as_deref());
                let mut sorted = s.order.clone();
                sorted.sort_unstable();
                prop_assert_eq!(sorted, (0..n as u32).collect::<Vec<_>>());
                for (j, m) in a.members.iter().enumerate() {
                    prop_assert!(m.windows(2).all(|w| w[0] < w[1]), "cluster {} repeats a member", j);
                    for &v in m {
                        prop_assert_eq!(s.order[s.position[v as usize] as usize], v);
                    }
                }
                if g != Grouping::None {
                    let total: u32 = s.groups.iter().map(|g| g.1).sum();
                    prop_assert_eq!(total as usize, n);
                    prop_assert!(s.groups.windows(2).all(|w| w[0].0 + w[0].1 == w[1].0));
                }
            }
            // Each vector: in its primary, in at most r clusters.
            let mut count = vec![0usize; n];
            for m in &a.members {
                for &v in m {
                    count[v as usize] += 1;
                }
            }
            for (v, (&c, &p)) in count.iter().zip(&a.primary).enumerate() {
                prop_assert!(a.members[p as usize].binary_search(&(v as u32)).is_ok());
                prop_assert!((1..=r.min(8)).contains(&c));
            }
        }

        /// §6.2: the greedy's small reads are never more than storing each
        /// vector with its primary cluster, nor than id order.
        #[test]
        fn the_greedy_minimises_weighted_small_reads(n in 50usize..400, k in 2usize..30, r in 2usize..9, seed in 0u64..50) {
            let x = data(n, 6, seed);
            let a = Assignment::build(&x, 6, &params(k, r, seed));
            let h = a.frequencies(&x, 4);
            let cost = |g| a.storage(a.group_of(g, &h).as_deref()).small_reads(&a, &h);
            let (none, primary, freq) = (cost(Grouping::None), cost(Grouping::Primary), cost(Grouping::Frequency));
            prop_assert!(freq <= primary && primary <= none, "{} {} {}", freq, primary, none);
        }
    }

    /// Balanced: no cluster's primaries exceed the cap; no replication
    /// means one membership a vector.
    #[test]
    fn clusters_are_balanced_and_replication_is_bounded() {
        let x = data(2000, 8, 3);
        let mut p = params(20, 1, 3);
        p.balance = 1.2;
        let a = Assignment::build(&x, 8, &p);
        let cap = (1.2f64 * 2000.0 / 20.0).ceil() as usize;
        let mut primaries = vec![0usize; 20];
        for &j in &a.primary {
            primaries[j as usize] += 1;
        }
        assert!(primaries.iter().all(|&c| c <= cap), "{primaries:?}");
        assert_eq!(a.replication(), 1.0);
        let a8 = Assignment::build(
            &x,
            8,
            &AssignParams {
                replicas: 8,
                closure: 10.0,
                ..p
            },
        );
        assert!(
            a8.replication() > 1.5 && a8.replication() <= 8.0,
            "{}",
            a8.replication()
        );
        // The same parameters, the same assignment.
        assert_eq!(
            a8,
            Assignment::build(
                &x,
                8,
                &AssignParams {
                    replicas: 8,
                    closure: 10.0,
                    ..p
                }
            )
        );
    }
}
