//! Load and overhead check of `stratavec serve` (issue #54): the HTTP
//! round trip of a one-vector search against the in-process search of the
//! same query, and many requests from several client threads with no error.
//!
//! ```text
//! cargo build --release -p stratavec-cli --bin stratavec --example serve_load
//! target/release/examples/serve_load INDEX_DIR QUERIES [--requests 10000]
//!     [--clients 8] [--k 10] [--complexity 40] [--threads 2] [--io auto]
//!     [--bin PATH]
//! ```
//!
//! It starts the `stratavec` binary beside it (or `--bin`) on 127.0.0.1 at
//! a free port, then: (1) one client, each query once over HTTP and once
//! in process (one query a batch, one thread, as the server runs a
//! one-vector request), alternating, with the ids compared; p50/p99 of both
//! and of their per-query difference; (2) `--requests` one-vector requests
//! over `--clients` kept-alive connections: throughput, p50/p99, errors.
//! Every request goes to 127.0.0.1 only, bounded in count. `--io ram`
//! (both sides) measures the HTTP layer's CPU cost without device reads,
//! which on a shared machine also leaves the disk alone.

#[path = "../tests/common/http.rs"]
mod http;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use stratavec::search::Switches;
use stratavec::{Index, OpenOptions, SearchParams};

struct Opts {
    index: PathBuf,
    queries: PathBuf,
    requests: usize,
    clients: usize,
    k: usize,
    complexity: usize,
    threads: usize,
    io: String,
    bin: PathBuf,
}

fn opts() -> Opts {
    let mut args = std::env::args().skip(1);
    let mut pos = vec![];
    let exe = std::env::current_exe().unwrap();
    let mut o = Opts {
        index: PathBuf::new(),
        queries: PathBuf::new(),
        requests: 10_000,
        clients: 8,
        k: 10,
        complexity: 40,
        threads: 2,
        io: "auto".into(),
        bin: exe.parent().unwrap().parent().unwrap().join("stratavec"),
    };
    while let Some(a) = args.next() {
        let mut val = || {
            args.next()
                .unwrap_or_else(|| panic!("{a}: expected a value"))
        };
        match a.as_str() {
            "--requests" => o.requests = val().parse().unwrap(),
            "--clients" => o.clients = val().parse().unwrap(),
            "--k" => o.k = val().parse().unwrap(),
            "--complexity" => o.complexity = val().parse().unwrap(),
            "--threads" => o.threads = val().parse().unwrap(),
            "--bin" => o.bin = PathBuf::from(val()),
            "--io" => o.io = val(),
            _ => pos.push(a),
        }
    }
    assert_eq!(
        pos.len(),
        2,
        "usage: serve_load INDEX_DIR QUERIES [options]"
    );
    o.index = PathBuf::from(&pos[0]);
    o.queries = PathBuf::from(&pos[1]);
    o
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn summary(name: &str, mut us: Vec<f64>) -> (f64, f64) {
    us.sort_by(f64::total_cmp);
    let (p50, p99) = (pct(&us, 0.5), pct(&us, 0.99));
    println!(
        "{name:<34} p50 {p50:>8.1} us   p99 {p99:>8.1} us   ({} samples)",
        us.len()
    );
    (p50, p99)
}

fn main() {
    let o = opts();
    let file = stratavec::data::open(&o.queries).unwrap();
    let (dim, q) = (file.dim(), file.to_f32_vec());
    let nq = q.len() / dim;
    let opts = OpenOptions {
        io: o.io.parse().unwrap(),
        ..OpenOptions::default()
    };
    let index = Index::open(&o.index, &opts).unwrap();
    let params = SearchParams {
        k: o.k,
        complexity: o.complexity.max(o.k),
        threads: 1,
        ..index.search_defaults(&Switches::default())
    };
    let mut child = Command::new(&o.bin)
        .arg("serve")
        .arg(&o.index)
        .args([
            "--port",
            "0",
            "--quiet",
            "--threads",
            &o.threads.to_string(),
            // The same backend as the in-process side, so the difference
            // is the HTTP layer's.
            "--io",
            &o.io,
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", o.bin.display()));
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .unwrap()
        .to_string();
    println!("{}", line.trim());

    // (1) One client: HTTP and in process, query by query, alternating.
    let mut conn = http::Conn::open(&addr).unwrap();
    let rounds = (2000 / nq).max(1);
    let (mut web, mut local, mut diff) = (vec![], vec![], vec![]);
    for round in 0..=rounds {
        for row in q.chunks(dim) {
            let t = Instant::now();
            let res = index.search_batch(row, dim, &params).unwrap();
            let local_us = t.elapsed().as_secs_f64() * 1e6;
            let body = serde_json::to_vec(
                &serde_json::json!({"vector": row, "k": o.k, "complexity": o.complexity}),
            )
            .unwrap();
            let t = Instant::now();
            let r = conn
                .request("POST", "/search", Some("application/json"), &body)
                .unwrap();
            let web_us = t.elapsed().as_secs_f64() * 1e6;
            assert_eq!(r.status, 200, "{}", r.error());
            let ids: Vec<Vec<i64>> = serde_json::from_value(r.json()["ids"].clone()).unwrap();
            assert_eq!(
                ids[0],
                index.result_ids(&res.ids),
                "HTTP and in-process answers differ"
            );
            if round > 0 {
                // Round 0 warms both (page cache, readers, connection).
                web.push(web_us);
                local.push(local_us);
                diff.push(web_us - local_us);
            }
        }
    }
    println!(
        "one client, {} queries x {rounds}, k {} L {}:",
        nq, o.k, o.complexity
    );
    summary("  in-process search (1 query)", local);
    summary("  HTTP round trip (1 vector, JSON)", web);
    summary("  overhead (HTTP - in-process)", diff);

    // (2) Load: `requests` from `clients` threads, kept-alive connections.
    let t0 = Instant::now();
    let per = o.requests.div_ceil(o.clients);
    let handles: Vec<_> = (0..o.clients)
        .map(|c| {
            let (addr, q) = (addr.clone(), q.clone());
            let (k, l) = (o.k, o.complexity);
            std::thread::spawn(move || {
                let mut conn = http::Conn::open(&addr).unwrap();
                let (mut lat, mut errors) = (Vec::with_capacity(per), 0usize);
                for i in 0..per {
                    let row = &q[((c * per + i) % nq) * dim..][..dim];
                    let body = serde_json::to_vec(
                        &serde_json::json!({"vector": row, "k": k, "complexity": l}),
                    )
                    .unwrap();
                    let t = Instant::now();
                    match conn.request("POST", "/search", Some("application/json"), &body) {
                        Ok(r) if r.status == 200 => lat.push(t.elapsed().as_secs_f64() * 1e6),
                        Ok(r) => {
                            errors += 1;
                            eprintln!("{} {}", r.status, r.error());
                        }
                        Err(e) => {
                            errors += 1;
                            eprintln!("{e}");
                            conn = http::Conn::open(&addr).unwrap();
                        }
                    }
                }
                (lat, errors)
            })
        })
        .collect();
    let (mut lat, mut errors) = (vec![], 0);
    for h in handles {
        let (l, e) = h.join().unwrap();
        lat.extend(l);
        errors += e;
    }
    let wall = t0.elapsed().as_secs_f64();
    println!(
        "load: {} requests from {} clients in {wall:.2} s ({:.0} requests/s), {errors} errors",
        per * o.clients,
        o.clients,
        (per * o.clients) as f64 / wall
    );
    summary("  HTTP round trip under load", lat);
    let stats = http::get(&addr, "/stats").json();
    println!("server: {}", stats["server"]);
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let deadline = Instant::now() + Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    assert_eq!(errors, 0, "{errors} requests failed");
}
