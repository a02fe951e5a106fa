//! An open index: the parts its memory plan keeps in RAM, and batch search
//! over worker threads that each own one block reader.

use super::cache_load::{load_bfs, load_ranked};
use super::ids::{IdMap, IDS_FILE};
use super::manifest::Manifest;
use crate::data::{DType, Metric};
use crate::entry::clusters::ENTRY_FILE;
use crate::entry::{ClusterEntries, EntryPoints, Medoid, NavGraph};
use crate::error::{Error, FileContext, Result};
use crate::layout::ivf_members::{ClusterMembers, MEMBERS_FILE};
use crate::layout::{Layout, PagesHeader};
use crate::memory::adjacency_cache::{self, GRAPH_FILE};
use crate::memory::cache_order::{self, ORDER_FILE};
use crate::memory::node_cache::bytes_per_node;
use crate::memory::planner::{self, granted, Demand, Part};
use crate::memory::{AdjacencyCache, MemoryReport, NodeCache};
use crate::profile::Profile;
use crate::quant::record_codes::{RecordCodes, RECORD_CODES_FILE};
use crate::quant::record_scorer::RecordScorer;
use crate::quant::{pq_file, Quantizer};
use crate::search::batch::{run_batch, BatchShape};
use crate::search::ivf::Ivf;
use crate::search::ivf_pq::IvfPq;
use crate::search::query::internal_distance;
use crate::search::{in_flight_for, read_slots, PIPELINED_WIDTH, READ_SLOTS};
use crate::search::{
    Beam, Laser, Pipe, RangeRule, SearchContext, SearchParams, Switches, TwoStage,
};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;
use stratavec_io::{open_reader, proc_self_io, Backend, BlockReader, FaultyReader, ReaderOptions};

pub use crate::search::batch::BatchResult;

#[derive(Clone)]
pub struct OpenOptions {
    /// Bytes the index may hold in RAM (codes + cache + I/O buffers). `None`:
    /// codes only, no node cache.
    pub memory_budget_bytes: Option<u64>,
    pub io: Backend,
    /// io_uring readers submit through a kernel thread (SQPOLL) that also
    /// takes their completions' work off the searching thread. For latency
    /// mode (one thread, one query in flight) on a spare core: a query's
    /// own CPU then carries no read's submission or completion, which on a
    /// virtual machine's disk is several µs each (BENCHMARKS.md, issue
    /// #22). Each reader's kernel thread spins while reads come (idle
    /// 200 ms before it sleeps), a core each; the other backends ignore it.
    pub sqpoll: bool,
    /// I/O buffers are reserved out of the budget for this many threads x
    /// queries in flight x beam width (at most `search::READ_SLOTS` a thread).
    pub reserve_threads: usize,
    pub reserve_in_flight: usize,
    pub reserve_beam_width: usize,
    /// Re-hash every file against the manifest (slow on big indexes).
    pub verify_checksums: bool,
    /// Start searches from the navigation graph when the index has one
    /// (Starling §4.3); false starts from the medoid and leaves its memory
    /// to the node cache (an ablation, or a budget where the cache pays more).
    pub navigation_graph: bool,
    /// Hold adjacency lists in the graph cache when the index has one
    /// (Gorgeous §4.1); false leaves its memory to the node cache (an
    /// ablation).
    pub graph_cache: bool,
    /// Fill the node cache from what the budget has left; false holds no
    /// records (an ablation: the laser layout alone, AlayaLaser §5.3).
    pub node_cache: bool,
    /// Test hook: reads at offsets for which this returns true fail with an
    /// injected EIO (proves that an I/O error fails one query, not the batch).
    pub fault_injection: Option<FaultPredicate>,
}

impl OpenOptions {
    /// Reserves I/O buffers for searches with this beam width and queries in
    /// flight, each `None` when left to the index's defaults: every default
    /// (32 x 4, block search's 64 x 2, the pipelined search's 16 x 8, a
    /// given W without a given number of queries) needs `READ_SLOTS`
    /// buffers per thread; a given number of queries without a given W is
    /// reserved for the widest default W (the pipelined search's).
    pub fn reserve_for(self, beam_width: Option<usize>, in_flight: Option<usize>) -> Self {
        let w = beam_width.unwrap_or(PIPELINED_WIDTH);
        OpenOptions {
            reserve_in_flight: in_flight.unwrap_or_else(|| in_flight_for(w)),
            reserve_beam_width: w,
            ..self
        }
    }
}

/// Which read offsets of the pages file fail (see `OpenOptions::fault_injection`).
pub type FaultPredicate = std::sync::Arc<dyn Fn(u64) -> bool + Send + Sync>;

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            memory_budget_bytes: None,
            io: Backend::Auto,
            sqpoll: false,
            reserve_threads: 2,
            reserve_in_flight: in_flight_for(4),
            reserve_beam_width: 4,
            verify_checksums: false,
            navigation_graph: true,
            graph_cache: true,
            node_cache: true,
            fault_injection: None,
        }
    }
}

pub struct Index {
    pub dir: PathBuf,
    pub manifest: Manifest,
    /// The composition the manifest names.
    pub profile: &'static Profile,
    pages_path: PathBuf,
    layout: Box<dyn Layout>,
    quantizer: Box<dyn Quantizer>,
    /// Laser indexes: the per-index part of the codes their records carry.
    record_codes: Option<RecordScorer>,
    /// Cluster indexes built with codes: each cluster's member ids.
    members: Option<ClusterMembers>,
    cache: NodeCache,
    pub(crate) adjacency: AdjacencyCache,
    /// Ids given with the data, mapped (`index::ids`); `None`: row numbers.
    ids: Option<IdMap>,
    entry: Box<dyn EntryPoints>,
    memory: MemoryReport,
    io: Backend,
    sqpoll: bool,
    fault: Option<FaultPredicate>,
    /// Name of the I/O backend actually used ("io_uring+direct", ...).
    io_name: Mutex<String>,
    /// I/O buffer bytes reserved out of the budget at open.
    buffer_bytes: usize,
    /// Readers (rings and their registered buffers) kept between batches, so
    /// a batch does not pay for ring set-up and probe reads.
    readers: Mutex<Vec<Box<dyn BlockReader>>>,
}

fn check_file_size(manifest: &Manifest, dir: &Path, name: &str) -> Result<PathBuf> {
    let path = dir.join(name);
    let entry = manifest.files.get(name).ok_or_else(|| {
        Error::index(
            &dir.join(super::manifest::MANIFEST),
            "files",
            name,
            "missing entry",
        )
    })?;
    let meta = std::fs::metadata(&path).map_err(|e| {
        Error::index(
            &path,
            "file",
            format!("{} bytes", entry.bytes),
            format!("cannot stat: {e}"),
        )
    })?;
    if meta.len() != entry.bytes {
        return Err(Error::index(
            &path,
            "size",
            format!("{} bytes (manifest)", entry.bytes),
            format!("{} bytes (truncated or replaced)", meta.len()),
        ));
    }
    Ok(path)
}

impl Index {
    pub fn open(dir: impl AsRef<Path>, opts: &OpenOptions) -> Result<Index> {
        let dir = dir.as_ref().to_path_buf();
        let manifest = Manifest::read(&dir)?;
        let pages_path = check_file_size(&manifest, &dir, "pages.bin")?;
        // Laser indexes keep no codes in RAM (their records carry them).
        let has_codes = manifest.files.contains_key("codes.bin");
        if has_codes {
            check_file_size(&manifest, &dir, "codes.bin")?;
        }
        if opts.verify_checksums {
            for (name, entry) in &manifest.files {
                let got = super::commit::file_entry(&dir.join(name))?;
                if got.sha256 != entry.sha256 {
                    return Err(Error::index(
                        &dir.join(name),
                        "sha256",
                        &entry.sha256,
                        got.sha256,
                    ));
                }
            }
        }

        // The pages header must describe the same index as the manifest.
        let page_size = manifest.page_size;
        let mut header_reader = open_reader(
            &pages_path,
            &ReaderOptions {
                backend: opts.io,
                slots: 64,
                slot_bytes: page_size.max(4096),
                ..Default::default()
            },
        )?;
        let header = read_header(&mut *header_reader, &pages_path, page_size)?;
        // (reopened below if the layout's reads are wider than a page)
        let want = crate::layout::header::Expected::from_manifest(&manifest);
        let layout = crate::layout::kind::from_header(&header, &pages_path, &want, |name| {
            check_file_size(&manifest, &dir, name)
        })?;
        let expect = |field: &str, want: String, got: String| -> Result<()> {
            if want != got {
                return Err(Error::index(
                    &pages_path,
                    field,
                    format!("{want} (manifest)"),
                    got,
                ));
            }
            Ok(())
        };
        expect("n", manifest.n.to_string(), header.n.to_string())?;
        expect("dim", manifest.dim.to_string(), header.dim.to_string())?;
        expect(
            "dtype",
            manifest.dtype.as_str().into(),
            header.dtype.as_str().into(),
        )?;
        expect(
            "page size",
            page_size.to_string(),
            header.page_size.to_string(),
        )?;
        expect("layout", manifest.layout.clone(), header.layout.clone())?;
        expect(
            "file size",
            layout.file_bytes().to_string(),
            manifest.files["pages.bin"].bytes.to_string(),
        )?;
        if header.medoid as usize >= manifest.n {
            return Err(Error::index(
                &pages_path,
                "medoid",
                format!("< {}", manifest.n),
                header.medoid,
            ));
        }

        let quantizer: Box<dyn Quantizer> = match has_codes {
            true => Box::new(pq_file::load(&dir, &manifest)?),
            false => Box::new(crate::quant::NoCodes),
        };
        let record_codes = match manifest.files.contains_key(RECORD_CODES_FILE) {
            true => Some(RecordScorer::new(&RecordCodes::read(
                &check_file_size(&manifest, &dir, RECORD_CODES_FILE)?,
                manifest.dim,
                manifest.metric,
            )?)),
            false => None,
        };

        // A cluster index built with codes: each cluster's members in RAM
        // beside the codes (the IVF-PQ search, `layout::ivf_members`).
        let members = match (manifest.files.contains_key(MEMBERS_FILE), layout.clusters()) {
            (true, Some(ivf)) => Some(ClusterMembers::read(
                &check_file_size(&manifest, &dir, MEMBERS_FILE)?,
                manifest.n,
                ivf.clusters.len(),
            )?),
            _ => None,
        };
        let members_bytes = members.as_ref().map_or(0, |m| m.resident_bytes());

        // The memory plan (memory::planner): codes, I/O buffers and the
        // layout's map first; then the profile's parts in its order.
        let profile = crate::profile::get(&manifest.profile).map_err(|_| {
            Error::index(
                &dir.join(super::manifest::MANIFEST),
                "profile",
                crate::profile::names().join(", "),
                &manifest.profile,
            )
        })?;
        let buffers = opts.reserve_threads.max(1)
            * read_slots(opts.reserve_in_flight, opts.reserve_beam_width)
            * layout.max_span_bytes();
        // Read before the plan (a small sample of the vectors), so the plan
        // charges the bytes it holds; dropped if the budget has no room.
        let nav: Option<Box<dyn EntryPoints>> = if !opts.navigation_graph {
            None
        } else if manifest.files.contains_key(ENTRY_FILE) {
            let path = check_file_size(&manifest, &dir, ENTRY_FILE)?;
            Some(Box::new(ClusterEntries::read(
                &path,
                manifest.n,
                manifest.dim,
                manifest.metric,
            )?))
        } else if manifest.files.contains_key("nav.bin") {
            let path = check_file_size(&manifest, &dir, "nav.bin")?;
            Some(Box::new(NavGraph::read(
                &path,
                manifest.n,
                manifest.dim,
                manifest.metric,
            )?))
        } else {
            None
        };
        let node_bytes = bytes_per_node(layout.record_bytes());
        let graph_path = match opts.graph_cache && manifest.files.contains_key(GRAPH_FILE) {
            true => Some(check_file_size(&manifest, &dir, GRAPH_FILE)?),
            false => None,
        };
        let mut demands = vec![
            Demand {
                part: Part::Codes,
                bytes: quantizer.resident_bytes()
                    + record_codes.as_ref().map_or(0, |c| c.resident_bytes())
                    + members_bytes,
            },
            Demand {
                part: Part::Buffers,
                bytes: buffers,
            },
            Demand {
                part: Part::Map,
                bytes: layout.resident_bytes(),
            },
        ];
        for &part in profile.memory {
            let bytes = match part {
                Part::Nav => match &nav {
                    Some(g) => g.resident_bytes(),
                    None => continue,
                },
                Part::Adjacency => match &graph_path {
                    Some(p) => adjacency_cache::demand(p)?,
                    None => continue,
                },
                // A cached record without its vector saves nothing the
                // graph cache does not save better.
                Part::Nodes if !layout.records_hold_vectors() || !opts.node_cache => continue,
                Part::Nodes => manifest.n * node_bytes,
                _ => continue,
            };
            demands.push(Demand { part, bytes });
        }
        let grants = planner::plan(opts.memory_budget_bytes.map(|b| b as usize), &demands)?;
        let entry: Box<dyn EntryPoints> = match nav.filter(|_| granted(&grants, Part::Nav) > 0) {
            Some(g) => g,
            None => Box::new(Medoid(header.medoid)),
        };
        let cache_nodes = granted(&grants, Part::Nodes) / node_bytes;
        if cache_nodes > 0 && layout.max_span_bytes() > header_reader.slot_bytes() {
            header_reader = open_reader(
                &pages_path,
                &ReaderOptions {
                    backend: opts.io,
                    slots: 64,
                    slot_bytes: layout.max_span_bytes(),
                    ..Default::default()
                },
            )?;
        }
        // A cache order ranked at build time (laser: by in-degree), else
        // breadth-first from the medoid (DiskANN).
        let cache = match manifest.files.contains_key(ORDER_FILE) && cache_nodes > 0 {
            true => {
                let order =
                    cache_order::read(&check_file_size(&manifest, &dir, ORDER_FILE)?, manifest.n)?;
                load_ranked(&*layout, &mut *header_reader, &order, cache_nodes)?
            }
            false => load_bfs(
                &*layout,
                &mut *header_reader,
                header.medoid,
                cache_nodes,
                manifest.n,
                &pages_path,
            )?,
        };
        let adjacency = match &graph_path {
            Some(p) => AdjacencyCache::load(p, manifest.n, granted(&grants, Part::Adjacency))?,
            None => AdjacencyCache::default(),
        };
        let ids = match manifest.files.contains_key(IDS_FILE) {
            true => Some(IdMap::open(
                &check_file_size(&manifest, &dir, IDS_FILE)?,
                manifest.n,
            )?),
            false => None,
        };
        let io_name = header_reader.name().to_string();
        drop(header_reader);
        // What is held, part by part: the sum the budget is enforced on.
        let mut memory = MemoryReport::default();
        memory.add(
            "codes",
            quantizer.resident_bytes() + record_codes.as_ref().map_or(0, |c| c.resident_bytes()),
        );
        if members_bytes > 0 {
            memory.add("members", members_bytes);
        }
        memory.add("cache", cache.resident_bytes());
        if adjacency.resident_bytes() > 0 {
            memory.add("adjacency", adjacency.resident_bytes());
        }
        memory.add("buffers", buffers);
        if layout.resident_bytes() > 0 {
            memory.add("map", layout.resident_bytes());
        }
        if entry.resident_bytes() > 0 {
            memory.add("nav", entry.resident_bytes());
        }
        memory.plan = grants;
        Ok(Index {
            record_codes,
            members,
            ids,
            adjacency,
            profile,
            dir,
            entry,
            manifest,
            pages_path,
            layout,
            quantizer,
            cache,
            memory,
            io: opts.io,
            sqpoll: opts.sqpoll,
            fault: opts.fault_injection.clone(),
            io_name: Mutex::new(io_name),
            buffer_bytes: buffers,
            readers: Mutex::new(Vec::new()),
        })
    }

    /// Mean records one read brings (1 for large records in id order).
    pub fn records_per_block(&self) -> f64 {
        self.layout.records_per_block()
    }

    /// How the pages file is laid out.
    pub(crate) fn layout(&self) -> &dyn Layout {
        self.layout.as_ref()
    }

    /// The pages file.
    pub(crate) fn pages_path(&self) -> &Path {
        &self.pages_path
    }

    /// The search defaults of this index: its profile's (block search and
    /// the pipeline for starling, the two-stage search for gorgeous) under
    /// the caller's switches, then the beam width and queries in flight
    /// that suit its blocks (`with_io_defaults`).
    pub fn search_defaults(&self, switches: &Switches) -> SearchParams {
        let profile = SearchParams::for_profile(self.profile);
        SearchParams {
            page_search: switches.page_search.unwrap_or(profile.page_search),
            pipeline: switches.pipeline.unwrap_or(profile.pipeline),
            two_stage: switches.two_stage.unwrap_or(profile.two_stage),
            pipelined: switches.pipelined.unwrap_or(profile.pipelined),
            width: switches.width.unwrap_or(profile.width),
            ..profile
        }
        .with_io_defaults(self.records_per_block())
    }

    /// The ids the index was built with (`ids=`, a table's id column), if
    /// any: search results hold row numbers, which [`IdMap::translate`]
    /// turns into these.
    pub fn ids(&self) -> Option<&IdMap> {
        self.ids.as_ref()
    }

    /// What search results report for `rows`: the ids the index was built
    /// with, else the row numbers; -1 ([`super::ids::NO_ID`]) for a slot
    /// with no neighbour.
    pub fn result_ids(&self, rows: &[u32]) -> Vec<i64> {
        match &self.ids {
            Some(map) => map.translate(rows),
            None => rows
                .iter()
                .map(|&r| match r {
                    u32::MAX => super::ids::NO_ID,
                    r => r as i64,
                })
                .collect(),
        }
    }

    pub fn dim(&self) -> usize {
        self.manifest.dim
    }

    pub fn len(&self) -> usize {
        self.manifest.n
    }

    pub fn is_empty(&self) -> bool {
        self.manifest.n == 0
    }

    pub fn metric(&self) -> Metric {
        self.manifest.metric
    }

    /// RAM held, by part (the budget is enforced on this sum).
    pub fn memory(&self) -> &MemoryReport {
        &self.memory
    }

    pub fn cached_nodes(&self) -> usize {
        self.cache.len()
    }

    /// Adjacency lists the graph cache holds (Gorgeous §4.1 ③).
    pub fn cached_lists(&self) -> usize {
        self.adjacency.len()
    }

    pub fn io_backend(&self) -> String {
        self.io_name.lock().map(|s| s.clone()).unwrap_or_default()
    }

    pub(crate) fn context(&self, params: &SearchParams) -> SearchContext<'_> {
        SearchContext {
            entry_complexity: params.nav_complexity,
            layout: &*self.layout,
            quantizer: &*self.quantizer,
            record_codes: self.record_codes.as_ref(),
            members: self.members.as_ref(),
            cache: &self.cache,
            adjacency: &self.adjacency,
            entry: &*self.entry,
            metric: self.manifest.metric,
            dtype: self.manifest.dtype,
            n: self.manifest.n,
            pages_path: &self.pages_path,
        }
    }

    /// Whether `params` can search this index with `nq` queries: every check
    /// [`Index::search_batch`] makes that needs no query values, so a caller
    /// can validate all its arguments before any output or work.
    pub fn check_search(&self, params: &SearchParams, nq: usize) -> Result<()> {
        params.check()?;
        let chosen = strategy_for(
            params,
            self.metric(),
            self.record_codes.is_some(),
            self.layout.clusters().is_some(),
            self.members.is_some(),
        );
        if self.layout.clusters().is_some() && params.radius.is_some() {
            return Err(Error::argument(
                format!("search of {} (profile ivf)", self.dir.display()),
                "a k-NN search (range search is not built for the cluster index)",
                "a radius",
            ));
        }
        if self.record_codes.is_some() && params.radius.is_some() {
            return Err(Error::argument(
                format!("search of {} (profile laser)", self.dir.display()),
                "a k-NN search (range search needs codes in RAM)",
                "a radius",
            ));
        }
        let two_stage = matches!(chosen, Chosen::TwoStage(_));
        if !two_stage && !self.layout.records_hold_vectors() {
            return Err(Error::argument(
                format!(
                    "search of {} (layout {})",
                    self.dir.display(),
                    self.layout.name()
                ),
                "the two-stage search (--two-stage true; k-NN only): its graph blocks hold no vectors",
                if params.radius.is_some() {
                    "a range search"
                } else {
                    "the beam search"
                },
            ));
        }
        if params.k > self.len() {
            return Err(Error::argument(
                "k",
                format!("at most the number of indexed vectors ({})", self.len()),
                params.k,
            ));
        }
        self.check_buffers(params, nq)
    }

    /// The I/O buffers a search of `nq` queries needs fit those reserved at open.
    fn check_buffers(&self, params: &SearchParams, nq: usize) -> Result<()> {
        let threads = params.threads.max(1).min(nq.max(1));
        let in_flight = params.in_flight.max(1);
        let slots = read_slots(in_flight, params.beam_width);
        let need = threads * slots * self.layout.max_span_bytes();
        if need > self.buffer_bytes {
            return Err(Error::argument(
                format!("I/O buffers for this search (threads x min(in_flight x beam_width, {READ_SLOTS}) x page)"),
                format!(
                    "at most the {} bytes of I/O buffers reserved when the index was opened \
                     (search with fewer threads or queries in flight, or open it for more)",
                    self.buffer_bytes
                ),
                format!(
                    "{threads} x min({in_flight} x {}, {READ_SLOTS}) x {} = {need} bytes",
                    params.beam_width,
                    self.layout.max_span_bytes()
                ),
            ));
        }
        Ok(())
    }

    fn check_queries(&self, queries: &[f32], params: &SearchParams) -> Result<usize> {
        let dim = self.dim();
        self.check_search(params, (queries.len() / dim).max(1))?;
        if queries.is_empty() || !queries.len().is_multiple_of(dim) {
            return Err(Error::argument(
                "queries",
                format!("a non-empty multiple of the index dimension {dim}"),
                format!("{} values", queries.len()),
            ));
        }
        if let Some(i) = queries.iter().position(|x| !x.is_finite()) {
            return Err(Error::argument(
                format!("query {}, component {}", i / dim, i % dim),
                "a finite number",
                queries[i],
            ));
        }
        let range = match self.manifest.dtype {
            DType::F32 | DType::F16 => None,
            DType::U8 => Some((0.0, 255.0)),
            DType::I8 => Some((-128.0, 127.0)),
        };
        if let Some((lo, hi)) = range {
            if let Some(i) = queries
                .iter()
                .position(|&x| x.fract() != 0.0 || x < lo || x > hi)
            {
                return Err(Error::argument(
                    format!("query {}, component {}", i / dim, i % dim),
                    format!(
                        "an integer in {lo}..={hi} ({} index)",
                        self.manifest.dtype.as_str()
                    ),
                    queries[i],
                ));
            }
        }
        Ok(queries.len() / dim)
    }

    /// A reader with at least `slots` buffer slots: a pooled one, or a new one.
    pub(crate) fn take_reader(&self, slots: usize) -> Result<Box<dyn BlockReader>> {
        if let Ok(mut pool) = self.readers.lock() {
            if let Some(i) = pool.iter().position(|r| r.slots() >= slots) {
                return Ok(pool.swap_remove(i));
            }
        }
        let mut reader = open_reader(
            &self.pages_path,
            &ReaderOptions {
                backend: self.io,
                slots,
                slot_bytes: self.layout.max_span_bytes(),
                sqpoll: self.sqpoll,
            },
        )?;
        if let Some(fail) = self.fault.clone() {
            reader = Box::new(
                FaultyReader::new(reader, Box::new(move |o| fail(o)))
                    .with_path(self.pages_path.clone()),
            );
        }
        Ok(reader)
    }

    /// Searches every query (row-major, `dim` wide; `dim` must be the
    /// index's). Queries run on `params.threads` workers, each keeping
    /// `params.in_flight` queries in flight; a query whose read fails (or
    /// that meets a corrupt record) gets an error, the rest go on.
    pub fn search_batch(
        &self,
        queries: &[f32],
        dim: usize,
        params: &SearchParams,
    ) -> Result<BatchResult> {
        if dim != self.dim() {
            return Err(Error::argument(
                "query dimension",
                format!("{} (the index dimension)", self.dim()),
                dim,
            ));
        }
        let nq = self.check_queries(queries, params)?;
        let threads = params.threads.max(1).min(nq);
        let in_flight = params.in_flight.max(1);
        let slots = read_slots(in_flight, params.beam_width);
        let ctx = self.context(params);
        let mut readers = Vec::with_capacity(threads);
        for _ in 0..threads {
            let mut reader = self.take_reader(slots)?;
            reader.set_poll(std::time::Duration::from_micros(params.poll_us.into()));
            readers.push(reader);
        }
        let shape = BatchShape {
            queries,
            dim,
            k: params.k,
            in_flight,
            ranges: params.radius.is_some(),
        };
        // Snapshot after the readers exist: opening one may do probe reads.
        let io_before = proc_self_io();
        let t0 = Instant::now();
        // The one place a strategy is chosen (COMPOSITION.md, example A).
        let clusters = ctx.layout.clusters().is_some();
        let (mut out, ends) = match strategy_for(
            params,
            ctx.metric,
            ctx.record_codes.is_some(),
            clusters,
            ctx.members.is_some(),
        ) {
            Chosen::Beam(s) => run_batch(&ctx, &s, readers, &shape),
            Chosen::TwoStage(s) => run_batch(&ctx, &s, readers, &shape),
            Chosen::Laser(s) => run_batch(&ctx, &s, readers, &shape),
            Chosen::Pipe(s) => run_batch(&ctx, &s, readers, &shape),
            Chosen::Ivf(s) => run_batch(&ctx, &s, readers, &shape),
            Chosen::IvfPq(s) => run_batch(&ctx, &s, readers, &shape),
        };
        let wall = t0.elapsed().as_secs_f64();
        let io_after = proc_self_io();
        let mut io_wait = 0.0;
        let mut first_err = None;
        for end in ends {
            match end.io_wait {
                Ok(w) => {
                    io_wait += w;
                    // A reader whose worker failed may hold stale reads;
                    // only healthy ones go back to the pool.
                    if let Some(reader) = end.reader.filter(|r| r.in_flight() == 0) {
                        if let Ok(mut pool) = self.readers.lock() {
                            pool.push(reader);
                        }
                    }
                }
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        if let Some(e) = first_err {
            return Err(e);
        }
        let name = self
            .readers
            .lock()
            .ok()
            .and_then(|p| p.first().map(|r| r.name().to_string()))
            .unwrap_or_default();
        if let Ok(mut g) = self.io_name.lock() {
            *g = name.clone();
        }
        out.wall_s = wall;
        out.io_wait_s = io_wait;
        out.io_backend = name;
        out.proc_read_bytes = match (io_before, io_after) {
            (Some(a), Some(b)) => Some(b.read_bytes.saturating_sub(a.read_bytes)),
            _ => None,
        };
        Ok(out)
    }
}

/// The strategies a search can run, each a part of its own.
enum Chosen {
    Beam(Beam),
    TwoStage(TwoStage),
    Laser(Laser),
    Pipe(Pipe),
    Ivf(Ivf),
    IvfPq(IvfPq),
}

/// The strategy `params` ask for.
fn strategy_for(
    params: &SearchParams,
    metric: Metric,
    record_codes: bool,
    clusters: bool,
    members: bool,
) -> Chosen {
    // A cluster index is read cluster by cluster: -L is the clusters
    // probed (paper 002 §6). Built with codes, its probed members are
    // scored on them and only the best few vectors read (IVF-PQ), unless
    // the caller asks for every member read (rerank factor 0).
    if clusters && members && params.rerank_factor > 0.0 {
        return Chosen::IvfPq(IvfPq {
            nprobe: params.complexity,
            rerank: (params.rerank_factor as f64 * params.k as f64).ceil() as usize,
        });
    }
    if clusters {
        return Chosen::Ivf(Ivf {
            nprobe: params.complexity,
        });
    }
    // An index whose records carry the codes has none in RAM: only the
    // laser search can estimate its neighbours.
    if record_codes {
        return Chosen::Laser(Laser {
            complexity: params.complexity,
            beam_width: params.beam_width,
            adaptive_beam: params.adaptive_beam,
            dispatch_ratio: params.dispatch_ratio,
        });
    }
    if params.two_stage && params.radius.is_none() {
        return Chosen::TwoStage(TwoStage {
            complexity: params.complexity,
            beam_width: params.beam_width,
            refine_ratio: params.refine_ratio,
            pipelined: params.pipelined,
        });
    }
    if params.pipelined && params.radius.is_none() {
        return Chosen::Pipe(Pipe {
            complexity: params.complexity,
            beam_width: params.beam_width,
            width: params.width,
            page_search: params.page_search.then_some(params.prune_ratio),
        });
    }
    Chosen::Beam(Beam {
        complexity: params.complexity,
        beam_width: params.beam_width,
        width: params.width,
        pipeline: params.pipeline,
        page_search: params.page_search.then_some(params.prune_ratio),
        range: params.radius.map(|r| RangeRule {
            radius: internal_distance(metric, r),
            phi: params.range_phi,
            max_window: params.range_max_complexity,
        }),
    })
}

fn read_header(reader: &mut dyn BlockReader, path: &Path, page_size: usize) -> Result<PagesHeader> {
    reader.push(stratavec_io::ReadRequest {
        offset: 0,
        len: page_size as u32,
        slot: 0,
        tag: 0,
    })?;
    reader.submit()?;
    let mut done = Vec::new();
    reader.reap(1, &mut done)?;
    let c = done.pop().expect("one completion");
    let n = c.result?;
    if (n as usize) < page_size {
        return Err(Error::index(
            path,
            "size",
            format!("at least one {page_size}-byte page"),
            format!("{n} bytes"),
        ));
    }
    PagesHeader::decode(&reader.slot(0)[..page_size])
        .map_err(|e| Error::index(path, "header", "a stratavec pages header", e))
}

/// Sizes of the files an index directory holds (for reports).
pub fn index_bytes(dir: &Path) -> Result<u64> {
    let m = Manifest::read(dir)?;
    let _ = std::fs::metadata(dir).at("stat", dir)?;
    Ok(m.files.values().map(|f| f.bytes).sum())
}
