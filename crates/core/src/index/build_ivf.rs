//! Building the `ivf` profile (paper 002 §6): no graph — balanced k-means
//! clusters with replication (`layout::ivf_assign`), each vector stored once
//! in the group chosen by the grouping, the clusters' address lists after
//! the vectors (`layout::ivf`), centroids and directory in `clusters.bin`.
//! Staged and committed like every index: a failed build leaves the
//! previous one as it was.

use super::build::{peak_rss_bytes, stored_dtype, write_report, BuildParams, BuildReport};
use super::commit::{file_entry, Staging};
use super::manifest::{Manifest, BUILD_REVISION, FORMAT_VERSION, MANIFEST};
use crate::data::{DType, Metric};
use crate::error::{FileContext, Result};
use crate::layout::ivf::{IvfLayout, CLUSTERS_FILE};
use crate::layout::ivf_assign::{AssignParams, Assignment, Storage};
use crate::layout::ivf_members::{ClusterMembers, MEMBERS_FILE};
use crate::layout::LayoutKind;
use crate::quant::pq::{PqCodebook, PqTrainParams};
use crate::quant::pq_file;
use crate::util::rng::Rng;
use std::collections::BTreeMap;
use std::io::{BufWriter, Write};
use std::time::Instant;

/// Vectors a cluster holds on average when `ivf_clusters` is not given:
/// a group of ~100 records at 384-d float32 is one ~150 KB read.
pub const VECTORS_PER_CLUSTER: usize = 100;
/// Sample vectors standing in for the workload when ranking clusters by how
/// often they are read (§6.2's h_j), and the clusters each probes.
const SAMPLE_QUERIES: usize = 2000;
/// The default of `BuildParams::ivf_sample_nprobe`: the default search's
/// nprobe (`SearchParams::complexity`, 64). Measured on wordnet-minilm
/// (replication 4, 1,167 clusters, the 1,000 queries at nprobe 10-120):
/// small reads cut against id order by 52-65% with 8, 54-69% with 16,
/// 55-71% with 32, 55-72% with 64 and 55-73% with 128 — higher at every
/// nprobe searched, even 10: counts over more clusters a sample vector
/// is near rank its clusters more like real queries do (the sample is
/// base vectors, the queries another distribution).
pub const SAMPLE_NPROBE: usize = 64;

/// The clusters for `n` vectors when not given.
pub fn default_clusters(n: usize) -> usize {
    n.div_ceil(VECTORS_PER_CLUSTER).max(1)
}

/// What the build is given.
pub struct Input<'a> {
    /// Row-major f32 (normalised for cosine).
    pub data: &'a [f32],
    /// The caller's element type (for `store`).
    pub data_dtype: DType,
    pub dim: usize,
    /// Ids given with the data, kept as every profile keeps them.
    pub ids: Option<&'a [i64]>,
    /// Labels given with the data (issue #56).
    pub labels: Option<crate::labels::LabelInput<'a>>,
    /// What a merge keeps of the generation it replaces (`update/merge.rs`).
    pub given: Given,
}

/// Parts a merge keeps (issue #55): the generation's centroids (the kept
/// and inserted vectors are assigned to them, nothing is re-clustered), its
/// PQ codebook for IVF-PQ (new points encoded with it), and the last
/// update-log record the new generation holds. A build gives none.
#[derive(Default)]
pub struct Given {
    pub centroids: Option<Vec<f32>>,
    pub codebook: Option<PqCodebook>,
    pub update_seq: u64,
}

/// Builds the ivf index of `input` in `staging` and commits it.
pub fn build(
    input: &Input,
    staging: Staging,
    params: &BuildParams,
    pool: &rayon::ThreadPool,
    mut report: BuildReport,
    t_all: Instant,
) -> Result<BuildReport> {
    let (data, dim) = (input.data, input.dim);
    let n = data.len() / dim;
    let dtype = stored_dtype(params.store, input.data_dtype)?;
    let t = Instant::now();
    let ap = assign_params(params, n);
    let a = pool.install(|| match &input.given.centroids {
        Some(c) => Assignment::to_centroids(data, dim, c.clone(), &ap),
        None => Assignment::build(data, dim, &ap),
    });
    report
        .stages
        .push(("clusters".into(), t.elapsed().as_secs_f64()));
    // The "write" stage counts from here: the sample, the storage order and
    // every file (the PQ stage's time too, as it always has).
    let t = Instant::now();
    let sample = SampleCounts::of(data, dim, n, params, &a);
    let storage = a.storage(a.group_of(params.ivf_grouping, &sample.h).as_deref());
    let lists = outsider_lists(&a, &storage);
    let layout = IvfLayout::new(
        params.page_size,
        dim,
        dtype,
        a.centroids.clone(),
        &storage,
        &lists,
    );
    write_pages(&staging, &layout, &storage, &lists, input, dtype)?;
    write_clusters(&staging, &layout)?;
    let mut names = vec![crate::layout::PAGES_FILE, CLUSTERS_FILE];
    let mut quantizer = "none (exact distances over clusters)".to_string();
    if params.ivf_codes {
        quantizer = write_codes(&staging, input, &a, params, pool, &mut report)?;
        names.extend([crate::plan::codes::PQ_FILE, MEMBERS_FILE]);
    }
    if let Some(ids) = input.ids {
        let path = staging.dir.join(super::ids::IDS_FILE);
        super::build::write_file(&path, |w| super::ids::write(w, ids))?;
        names.push(super::ids::IDS_FILE);
    }
    if let Some(l) = input.labels {
        use crate::labels::store;
        let bytes = store::encode(l.sets, l.n_labels());
        let path = staging.dir.join(store::LABELS_FILE);
        super::build::write_file(&path, |w| std::io::Write::write_all(w, &bytes))?;
        names.push(store::LABELS_FILE);
        if let Some(label_names) = l.names {
            let text = store::names_tsv(label_names, l.sets);
            let path = staging.dir.join(store::LABEL_NAMES_FILE);
            super::build::write_file(&path, |w| std::io::Write::write_all(w, text.as_bytes()))?;
            names.push(store::LABEL_NAMES_FILE);
        }
    }
    report
        .stages
        .push(("write".into(), t.elapsed().as_secs_f64()));
    let mut files = BTreeMap::new();
    for name in names {
        files.insert(name.to_string(), file_entry(&staging.dir.join(name))?);
    }
    report.index_bytes = files.values().map(|f| f.bytes).sum();
    let mut chosen = report.chosen.clone();
    // Keyed by the layout whose choices these are (manifests name it so).
    chosen.insert(
        crate::layout::LayoutKind::Ivf.name().into(),
        describe(&a, &storage, &sample, params),
    );
    // A cluster index enters no graph and keeps no navigation graph.
    let plan = crate::profile::plan(params)?
        .as_built(false)
        .with_ids(input.ids.is_some())
        .with_labels(input.labels.is_some());
    let mut manifest = manifest(params, dtype, dim, n, quantizer, files, chosen.clone());
    manifest.plan = Some(plan);
    manifest.update_seq = input.given.update_seq;
    let mpath = staging.dir.join(MANIFEST);
    std::fs::write(&mpath, manifest.to_json()).at("write", &mpath)?;
    report.chosen = chosen;
    report.peak_rss_bytes = peak_rss_bytes();
    report.total_s = t_all.elapsed().as_secs_f64();
    write_report(&staging.dir, &report)?;
    staging.commit()?;
    Ok(report)
}

/// The clustering asked for: the given cluster count or one for `n`
/// vectors, with the build's replication, closure and seed.
fn assign_params(params: &BuildParams, n: usize) -> AssignParams {
    AssignParams {
        clusters: params.ivf_clusters.unwrap_or_else(|| default_clusters(n)),
        replicas: params.ivf_replicas,
        closure: params.ivf_closure,
        balance: 1.5,
        iters: 10,
        seed: params.seed,
    }
}

/// How often a sample of base vectors, standing in for the workload,
/// probes each cluster (§6.2's h_j): what the grouping ranks clusters by.
struct SampleCounts {
    /// Sample vectors probed.
    queries: usize,
    /// Clusters each probed.
    nprobe: usize,
    /// Probes per cluster.
    h: Vec<u64>,
}

impl SampleCounts {
    fn of(data: &[f32], dim: usize, n: usize, params: &BuildParams, a: &Assignment) -> Self {
        let mut rng = Rng::new(params.seed ^ 0x4851_5259);
        let sample = rng.sample(n, SAMPLE_QUERIES.min(n));
        let mut queries = Vec::with_capacity(sample.len() * dim);
        for &i in &sample {
            queries.extend_from_slice(&data[i * dim..(i + 1) * dim]);
        }
        // Probing most of the clusters counts every cluster alike, and the
        // greedy then keeps each vector in its primary's group: at most a
        // quarter of them (binds below 256 clusters with the default 64).
        let nprobe = params.ivf_sample_nprobe.min((a.clusters() / 4).max(1));
        let h = a.frequencies(&queries, nprobe);
        SampleCounts {
            queries: sample.len(),
            nprobe,
            h,
        }
    }
}

/// Each cluster's members stored outside its group, as positions: the
/// addresses its list keeps after the vectors (its small reads).
fn outsider_lists(a: &Assignment, storage: &Storage) -> Vec<Vec<u32>> {
    a.members
        .iter()
        .enumerate()
        .map(|(j, m)| {
            let (s, l) = storage.groups[j];
            m.iter()
                .map(|&v| storage.position[v as usize])
                .filter(|p| !(s..s + l).contains(p))
                .collect()
        })
        .collect()
}

/// `pages.bin`: the vectors in storage order, in the stored element type,
/// then the clusters' address lists.
fn write_pages(
    staging: &Staging,
    layout: &IvfLayout,
    storage: &Storage,
    lists: &[Vec<u32>],
    input: &Input,
    dtype: DType,
) -> Result<()> {
    let (data, dim) = (input.data, input.dim);
    let pages = staging.dir.join(crate::layout::PAGES_FILE);
    let mut w =
        BufWriter::with_capacity(8 << 20, std::fs::File::create(&pages).at("create", &pages)?);
    let vector_bytes = |id: u32, out: &mut [u8]| {
        let v = &data[id as usize * dim..(id as usize + 1) * dim];
        match dtype {
            DType::F16 => stratavec_simd::half::encode_f16(v, out),
            DType::F32 => {
                for (o, x) in out.chunks_exact_mut(4).zip(v) {
                    o.copy_from_slice(&x.to_le_bytes());
                }
            }
            // The f32 rows of integer vectors hold their exact values.
            DType::U8 => out.iter_mut().zip(v).for_each(|(o, &x)| *o = x as u8),
            DType::I8 => out.iter_mut().zip(v).for_each(|(o, &x)| *o = x as i8 as u8),
        }
    };
    layout
        .write(&mut w, &storage.order, lists, &vector_bytes)
        .and_then(|_| w.flush())
        .at("write", &pages)
}

/// `clusters.bin`: the centroids and the directory of groups and lists.
fn write_clusters(staging: &Staging, layout: &IvfLayout) -> Result<()> {
    let cpath = staging.dir.join(CLUSTERS_FILE);
    let mut w = BufWriter::new(std::fs::File::create(&cpath).at("create", &cpath)?);
    layout
        .write_clusters(&mut w)
        .and_then(|_| w.flush())
        .at("write", &cpath)
}

/// IVF-PQ: codes of every vector (id order, as every profile's) and the
/// clusters' members, both held in RAM by the search. Returns the
/// manifest's quantizer line; records the "pq" stage. A `given` codebook
/// (a merge's) encodes without training.
fn write_codes(
    staging: &Staging,
    input: &Input,
    a: &Assignment,
    params: &BuildParams,
    pool: &rayon::ThreadPool,
    report: &mut BuildReport,
) -> Result<String> {
    let (data, dim) = (input.data, input.dim);
    let n = data.len() / dim;
    let t = Instant::now();
    let pq = PqTrainParams {
        m: params.pq_bytes,
        sample: params.pq_sample,
        iters: params.pq_iters,
        seed: params.seed,
    };
    let (cb, codes) = pool.install(|| {
        let cb = match &input.given.codebook {
            Some(cb) => cb.clone(),
            None => PqCodebook::train(data, dim, &pq),
        };
        let codes = cb.encode_all(data);
        (cb, codes)
    });
    let path = staging.dir.join(crate::plan::codes::PQ_FILE);
    super::build::write_file(&path, |w| pq_file::write(w, &cb, &codes))?;
    let path = staging.dir.join(MEMBERS_FILE);
    super::build::write_file(&path, |w| ClusterMembers::new(&a.members).write(w, n))?;
    report.stages.push(("pq".into(), t.elapsed().as_secs_f64()));
    Ok(format!(
        "pq{} (IVF-PQ: probed members scored on codes)",
        params.pq_bytes
    ))
}

/// The `chosen` line of the clustering: its size, replication, grouping
/// and the small reads a sample query makes.
fn describe(
    a: &Assignment,
    storage: &Storage,
    sample: &SampleCounts,
    params: &BuildParams,
) -> String {
    let small: u64 = storage.small_reads(a, &sample.h);
    format!(
        "{} clusters, replication {:.2}, grouping {} (cluster frequencies at sample \
         nprobe {}): {:.1} small reads a sample query",
        a.clusters(),
        a.replication(),
        params.ivf_grouping,
        sample.nprobe,
        small as f64 / sample.queries.max(1) as f64
    )
}

/// The manifest of an ivf index: no graph, so no medoid and degree 0.
fn manifest(
    params: &BuildParams,
    dtype: DType,
    dim: usize,
    n: usize,
    quantizer: String,
    files: BTreeMap<String, super::manifest::FileEntry>,
    chosen: BTreeMap<String, String>,
) -> Manifest {
    // As asked (the clusters used are in `chosen`), so a request for the
    // same parameters finds this index the same (`builds_same_index`).
    let mut build = params.clone();
    build.layout = Some(LayoutKind::Ivf);
    Manifest {
        format_version: FORMAT_VERSION,
        build_revision: BUILD_REVISION,
        profile: params.profile.clone(),
        dtype,
        dim,
        n,
        metric: params.metric,
        build,
        layout: LayoutKind::Ivf.name().into(),
        page_size: params.page_size,
        quantizer,
        medoid: 0,
        graph_mean_degree: 0.0,
        files,
        // Set by the caller, which knows whether ids were given.
        plan: None,
        chosen,
        update_seq: 0,
    }
}

/// The metrics the cluster search ranks centroids for (squared L2 over
/// normalised vectors ranks cosine too; inner product it does not).
pub fn supports(metric: Metric) -> bool {
    metric != Metric::InnerProduct
}
