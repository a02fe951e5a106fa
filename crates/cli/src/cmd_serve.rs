//! `stratavec serve DIR`: the index or collection at DIR over HTTP on this
//! machine (POST /search, POST /insert, POST /delete, GET /health, GET
//! /stats; see `serve` and docs/serve.md), until SIGTERM or SIGINT: then no new connection is
//! accepted, requests in flight get their answers within the grace period,
//! and the process exits 0.

use crate::search_target::{self, Target};
use crate::serve::limits::{secs, BoundFlags};
use crate::serve::work::Plan;
use crate::serve::{listen, routes, App};
use anyhow::{Context, Result};
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use stratavec::search::Switches;
use stratavec::OpenOptions;
use stratavec_io::Backend;
use tokio::signal::unix::{signal, SignalKind};

#[derive(clap::Args)]
pub struct Args {
    /// Index directory (made by `stratavec build`) or collection directory
    /// (made by `stratavec build-collection`).
    dir: PathBuf,
    /// Address to listen on. The default, 127.0.0.1, is this machine only;
    /// 0.0.0.0 (or ::) is every interface: anyone who can reach the
    /// machine can then search the vectors and read /stats, with no
    /// authentication or TLS (put a proxy in front for those).
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// Port to listen on; 0 picks a free one (printed on start).
    #[arg(long, default_value_t = 8000)]
    port: u16,
    /// Search threads, shared by the searches running at once (each gets
    /// threads / max-concurrent, at least 1). Default: all cores.
    #[arg(long)]
    threads: Option<usize>,
    /// RAM the index (or the collection's segments together) may hold, in
    /// MB (10^6 bytes). Default: codes and buffers only, no cache.
    #[arg(long)]
    memory_budget_mb: Option<f64>,
    /// I/O backend: auto, io_uring, pread, buffered, ram, mmap,
    /// simulated:LAT_NS[,GBPS] (as `search --io`).
    #[arg(long, default_value = "auto")]
    io: Backend,
    /// Seconds requests in flight get to finish after SIGTERM/SIGINT;
    /// searches still running then are stopped at their next chunk.
    #[arg(long, default_value_t = 30.0, value_name = "SECONDS")]
    grace_s: f64,
    /// No log line per request (5xx answers and failed queries are still
    /// logged, with the id their answer carries).
    #[arg(long)]
    quiet: bool,
    /// Refuse POST /insert and /delete (403), and give the whole memory
    /// budget to the index (no share kept for inserted vectors).
    #[arg(long)]
    read_only: bool,
    /// The share of --memory-budget-mb that inserted vectors and deletes
    /// may hold before the index merges them into a new generation (which
    /// the write that fills it waits for).
    #[arg(long, default_value_t = 0.1, conflicts_with = "read_only")]
    delta_share: f64,
    /// Test hook: each chunk of a search waits this long first, so a test
    /// can hold a search in flight (deadlines, shutdown) without load.
    #[arg(long, hide = true, default_value_t = 0)]
    chunk_delay_ms: u64,
    #[command(flatten)]
    bounds: BoundFlags,
}

pub fn run(a: Args) -> Result<()> {
    let limits = a.bounds.limits()?;
    if !(a.grace_s.is_finite() && a.grace_s >= 0.0) {
        anyhow::bail!(
            "--grace-s: expected a number of seconds >= 0, found {}",
            a.grace_s
        );
    }
    let threads = a.threads.unwrap_or_else(crate::default_threads);
    if threads == 0 {
        anyhow::bail!("--threads: expected at least 1, found 0");
    }
    let per_search = (threads / limits.max_concurrent).max(1);
    let opts = OpenOptions {
        memory_budget_bytes: a.memory_budget_mb.map(|mb| (mb * 1e6) as u64),
        io: a.io,
        reserve_threads: per_search * limits.max_concurrent,
        ..Default::default()
    }
    .reserve_for(None, None);
    let updates = match a.read_only {
        true => search_target::read_only(),
        false => stratavec::update::live::UpdateOptions {
            delta_share: a.delta_share,
            merge_threads: threads,
            ..Default::default()
        },
    };
    let target: Arc<dyn Target> = Arc::from(search_target::open(&a.dir, &opts, None, &updates)?);
    let plan = Plan::new(
        target.search_defaults(&Switches::default()),
        threads,
        limits.max_concurrent,
        Duration::from_millis(a.chunk_delay_ms),
    );
    check_plan(&*target, &plan, &limits)?;
    let app = Arc::new(App::new(target, limits, plan, a.quiet, a.read_only));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .thread_name("serve")
        .build()?;
    let result = rt.block_on(serve(&a, app));
    // Searches past the grace period were told to stop at their next
    // chunk; do not wait long for them.
    rt.shutdown_timeout(Duration::from_secs(2));
    result
}

/// The largest request the bounds admit must be one the target can search
/// (k, list size, threads and their I/O buffers): refused here, at start,
/// rather than as a 500 on the first such request.
fn check_plan(
    target: &dyn Target,
    plan: &Plan,
    limits: &crate::serve::limits::Limits,
) -> Result<()> {
    let k = limits.max_k.min(target.max_k()).max(1);
    let params = stratavec::SearchParams {
        k,
        complexity: plan.params.complexity.max(k),
        threads: plan.threads_per_search,
        ..plan.params.clone()
    };
    target
        .check_search(&params, plan.chunk)
        .context("the server's search parameters (--threads, --max-concurrent, --max-k)")
}

async fn serve(a: &Args, app: Arc<App>) -> Result<()> {
    let listener = tokio::net::TcpListener::bind((a.host.as_str(), a.port))
        .await
        .with_context(|| format!("--host {} --port {}: cannot listen", a.host, a.port))?;
    let addr = listener.local_addr()?;
    if addr.ip().is_unspecified() {
        eprintln!(
            "note: listening on every interface ({}): anyone who can reach this machine can \
             search and read /stats; there is no authentication",
            addr.ip()
        );
    }
    println!(
        "serving {} at http://{} (POST /search{}, GET /health, GET /stats)",
        a.dir.display(),
        shown(addr),
        match a.read_only {
            true => "",
            false => ", POST /insert, POST /delete",
        }
    );
    std::io::stdout().flush()?;
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let router = routes::router(app.clone());
    let server = tokio::spawn(listen::serve(
        listener,
        router,
        app.limits.body_timeout,
        async move {
            let _ = stop_rx.await;
        },
    ));
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let name = tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = int.recv() => "SIGINT",
    };
    let grace = Duration::from_secs_f64(a.grace_s);
    eprintln!(
        "{name}: not accepting new connections; {} searches running, waiting up to {} s for \
         requests in flight",
        app.admission.running(),
        secs(grace)
    );
    app.draining.store(true, Ordering::Release);
    let _ = stop_tx.send(());
    tokio::select! {
        _ = tokio::time::timeout(grace, server) => {}
        _ = term.recv() => eprintln!("SIGTERM again: stopping now"),
        _ = int.recv() => eprintln!("SIGINT again: stopping now"),
    }
    let left = app.admission.running();
    if left > 0 {
        eprintln!("stopping {left} searches still running");
    }
    app.stop_all.store(true, Ordering::Release);
    eprintln!("stopped");
    Ok(())
}

/// The address as a URL's host: a wildcard listen address as 127.0.0.1
/// (or [::1]), which a client on this machine can use.
fn shown(addr: SocketAddr) -> SocketAddr {
    match addr {
        SocketAddr::V4(v4) if v4.ip().is_unspecified() => {
            SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, v4.port()))
        }
        SocketAddr::V6(v6) if v6.ip().is_unspecified() => {
            SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, v6.port()))
        }
        other => other,
    }
}
