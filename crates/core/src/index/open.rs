//! An open index: the parts its memory plan keeps in RAM, and batch search
//! over worker threads that each own one block reader.

use super::ids::{IdMap, IDS_FILE};
use super::manifest::Manifest;
use crate::data::{DType, Metric};
use crate::entry::EntryPoints;
use crate::error::{Error, FileContext, Result};
use crate::layout::ivf_members::ClusterMembers;
use crate::layout::{Layout, PagesHeader};
use crate::memory::{AdjacencyCache, MemoryReport, NodeCache};
use crate::plan::resident::{self, Resident, Wants};
use crate::plan::search::{choose, Chosen};
use crate::plan::{IndexFiles, Plan};
use crate::profile::Profile;
use crate::quant::record_scorer::RecordScorer;
use crate::quant::Quantizer;
use crate::search::batch::{run_batch, BatchShape};
use crate::search::{in_flight_for, read_slots, PIPELINED_WIDTH, READ_SLOTS};
use crate::search::{SearchContext, SearchParams, Switches};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;
use stratavec_io::{
    open_pinned_reader, proc_self_io, Backend, BlockReader, FaultyReader, Pinned, ReaderOptions,
};

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
    /// The parts the index was built with (`plan::plan_of`).
    pub plan: Plan,
    pages_path: PathBuf,
    /// The pages file, held open: every reader reads this generation's
    /// pages even after a rebuild or merge switched the directory (#55).
    pages: Pinned,
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
    /// Labels on the vectors, mapped (`crate::labels`); `None`: unlabelled.
    labels: Option<crate::labels::Labels>,
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
    /// What filtered searches' cost model measured of this index.
    pub(crate) calibration: super::filter_costs::Calibration,
}

impl Index {
    /// Opens the index at `dir`; one generation of it even when a rebuild
    /// or merge switches the directory meanwhile (`open_consistent`).
    pub fn open(dir: impl AsRef<Path>, opts: &OpenOptions) -> Result<Index> {
        super::commit::open_consistent(dir.as_ref(), |dir| Index::open_once(dir, opts))
    }

    fn open_once(dir: &Path, opts: &OpenOptions) -> Result<Index> {
        let dir = dir.to_path_buf();
        let manifest = Manifest::read(&dir)?;
        let files = IndexFiles {
            dir: &dir,
            manifest: &manifest,
        };
        let pages_path = files.path(crate::layout::PAGES_FILE)?;
        let pages = Pinned::open(&pages_path)?;
        if opts.verify_checksums {
            verify_checksums(&dir, &manifest)?;
        }
        let profile = crate::profile::get(&manifest.profile).map_err(|_| {
            Error::index(
                &dir.join(super::manifest::MANIFEST),
                "profile",
                crate::profile::names().join(", "),
                &manifest.profile,
            )
        })?;
        let plan = crate::plan::plan_of(&dir, &manifest)?;

        // The pages header must describe the same index as the manifest.
        let reader_for = |slot_bytes: usize| {
            open_pinned_reader(
                &pages,
                &ReaderOptions {
                    backend: opts.io,
                    slots: 64,
                    slot_bytes,
                    ..Default::default()
                },
            )
            .map_err(Error::from)
        };
        let mut header_reader = reader_for(manifest.page_size.max(4096))?;
        let header = read_header(&mut *header_reader, &pages_path, manifest.page_size)?;
        // Checked against the manifest before any layout is built from it.
        let want = crate::layout::header::Expected::from_manifest(&manifest);
        let layout =
            crate::layout::kind::from_header(&header, &pages_path, &want, |name| files.path(name))?;

        let codes = plan.codes.open(&files, &*layout)?;
        let (codes_bytes, members_bytes) = codes.resident_bytes();
        let buffers = opts.reserve_threads.max(1)
            * read_slots(opts.reserve_in_flight, opts.reserve_beam_width)
            * layout.max_span_bytes();
        // Read before the plan (a small sample of the vectors), so the plan
        // charges the bytes it holds; dropped if the budget has no room.
        let entry = match opts.navigation_graph {
            true => plan.entry.open(&files)?,
            false => None,
        };
        let wants = Wants {
            budget: opts.memory_budget_bytes.map(|b| b as usize),
            codes: codes_bytes + members_bytes,
            buffers,
            entry,
            graph_cache: opts.graph_cache,
            node_cache: opts.node_cache,
            layout: &*layout,
            medoid: header.medoid,
        };
        let resident = resident::fill(&plan, &files, wants, &mut header_reader, &reader_for)?;
        let ids = match plan.ids {
            true => Some(IdMap::open(&files.path(IDS_FILE)?, manifest.n)?),
            false => None,
        };
        let labels = match plan.labels {
            true => {
                files.path(crate::labels::LABELS_FILE)?; // listed, its size as recorded
                Some(crate::labels::Labels::open(files.dir, manifest.n)?)
            }
            false => None,
        };
        let io_name = header_reader.name().to_string();
        drop(header_reader);
        let memory = memory_report(&resident, &*layout, codes_bytes, members_bytes, buffers);
        Ok(Index {
            record_codes: codes.record_codes,
            members: codes.members,
            quantizer: codes.quantizer,
            ids,
            labels,
            adjacency: resident.adjacency,
            cache: resident.cache,
            entry: resident.entry,
            profile,
            plan,
            dir,
            manifest,
            pages_path,
            pages,
            layout,
            memory,
            io: opts.io,
            sqpoll: opts.sqpoll,
            fault: opts.fault_injection.clone(),
            io_name: Mutex::new(io_name),
            buffer_bytes: buffers,
            readers: Mutex::new(Vec::new()),
            calibration: Default::default(),
        })
    }

    /// Mean records one read brings (1 for large records in id order).
    pub fn records_per_block(&self) -> f64 {
        self.layout.records_per_block()
    }

    /// The pages file this handle reads (held open: this generation's).
    pub(crate) fn pages_file(&self) -> &std::fs::File {
        self.pages.file()
    }

    /// How the pages file is laid out.
    pub(crate) fn layout(&self) -> &dyn Layout {
        self.layout.as_ref()
    }

    /// The pages file.
    pub(crate) fn pages_path(&self) -> &Path {
        &self.pages_path
    }

    /// The search defaults of this index: its plan's (block search and
    /// the pipeline for starling, the two-stage search for gorgeous) under
    /// the caller's switches, then the beam width and queries in flight
    /// that suit its blocks (`with_io_defaults`).
    pub fn search_defaults(&self, switches: &Switches) -> SearchParams {
        let profile = self.plan.search.defaults();
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

    /// The labels the index keeps on its vectors, by row (issue #56).
    pub fn labels(&self) -> Option<&crate::labels::Labels> {
        self.labels.as_ref()
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

    /// The codes in RAM the searches estimate distances with.
    pub(crate) fn quantizer(&self) -> &dyn Quantizer {
        &*self.quantizer
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
        self.strategy(params, nq).map(|_| ())
    }

    /// The strategy `params` run on this index (chosen once a call, the
    /// only place: `plan::search::choose`), after every check that needs
    /// no query values.
    fn strategy(&self, params: &SearchParams, nq: usize) -> Result<Chosen> {
        params.check()?;
        let (search, codes) = (self.plan.search, self.plan.codes);
        let chosen = choose(search, codes, params, self.metric());
        crate::plan::search::check(
            &chosen,
            search,
            &*self.layout,
            params,
            &self.dir,
            &self.manifest.profile,
        )?;
        if params.k > self.len() {
            return Err(Error::argument(
                "k",
                format!("at most the number of indexed vectors ({})", self.len()),
                params.k,
            ));
        }
        self.check_buffers(params, nq)?;
        Ok(chosen)
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

    pub(super) fn check_queries(
        &self,
        queries: &[f32],
        params: &SearchParams,
    ) -> Result<(usize, Chosen)> {
        let dim = self.dim();
        let chosen = self.strategy(params, (queries.len() / dim).max(1))?;
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
        Ok((queries.len() / dim, chosen))
    }

    /// A reader with at least `slots` buffer slots: a pooled one, or a new one.
    pub(crate) fn take_reader(&self, slots: usize) -> Result<Box<dyn BlockReader>> {
        if let Ok(mut pool) = self.readers.lock() {
            if let Some(i) = pool.iter().position(|r| r.slots() >= slots) {
                return Ok(pool.swap_remove(i));
            }
        }
        let mut reader = open_pinned_reader(
            &self.pages,
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
        let r = self.search_batch_with(queries, dim, params, None, None)?;
        self.calibration.record(&r.stats);
        Ok(r)
    }

    /// [`Self::search_batch`] with each query's allowed rows (`allowed`,
    /// one slot a query: its result keeps only those rows) and, for a
    /// filtered search's pre-filtered queries, the pre-filter instead of
    /// the strategy `params` choose (`index/filtered.rs`).
    pub(crate) fn search_batch_with(
        &self,
        queries: &[f32],
        dim: usize,
        params: &SearchParams,
        allowed: Option<crate::search::batch::Admit>,
        pre: Option<crate::search::prefilter::PreFilter>,
    ) -> Result<BatchResult> {
        if dim != self.dim() {
            return Err(Error::argument(
                "query dimension",
                format!("{} (the index dimension)", self.dim()),
                dim,
            ));
        }
        let (nq, mut chosen) = self.check_queries(queries, params)?;
        if let Some(p) = pre {
            chosen = Chosen::Pre(p);
        }
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
            allowed,
        };
        // Snapshot after the readers exist: opening one may do probe reads.
        let io_before = proc_self_io();
        let t0 = Instant::now();
        // The one dispatch over strategies (COMPOSITION.md, example A).
        let (mut out, ends) = match chosen {
            Chosen::Beam(s) => run_batch(&ctx, &s, readers, &shape),
            Chosen::TwoStage(s) => run_batch(&ctx, &s, readers, &shape),
            Chosen::Laser(s) => run_batch(&ctx, &s, readers, &shape),
            Chosen::Pipe(s) => run_batch(&ctx, &s, readers, &shape),
            Chosen::Ivf(s) => run_batch(&ctx, &s, readers, &shape),
            Chosen::IvfPq(s) => run_batch(&ctx, &s, readers, &shape),
            Chosen::Pre(s) => run_batch(&ctx, &s, readers, &shape),
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

/// Re-hashes every file of the index against its manifest entry.
fn verify_checksums(dir: &Path, manifest: &Manifest) -> Result<()> {
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
    Ok(())
}

/// What is held, part by part: the sum the budget is enforced on.
fn memory_report(
    resident: &Resident,
    layout: &dyn Layout,
    codes: usize,
    members: usize,
    buffers: usize,
) -> MemoryReport {
    let mut memory = MemoryReport::default();
    memory.add("codes", codes);
    if members > 0 {
        memory.add("members", members);
    }
    memory.add("cache", resident.cache.resident_bytes());
    if resident.adjacency.resident_bytes() > 0 {
        memory.add("adjacency", resident.adjacency.resident_bytes());
    }
    memory.add("buffers", buffers);
    if layout.resident_bytes() > 0 {
        memory.add("map", layout.resident_bytes());
    }
    if resident.entry.resident_bytes() > 0 {
        memory.add("nav", resident.entry.resident_bytes());
    }
    memory.plan = resident.grants.clone();
    memory
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
    let c = done
        .pop()
        .ok_or_else(|| Error::index(path, "header read", "one completion", "none"))?;
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
