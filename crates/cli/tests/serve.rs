//! `stratavec serve` end to end: the binary on 127.0.0.1 (a free port it
//! picks and prints), searched over HTTP, its answers compared with the
//! in-process index's and `stratavec search`'s; each bound refused with its
//! status and the next request answered; SIGTERM with a request in flight.

mod common;
#[path = "common/http.rs"]
mod http;

use common::{ok, run, small_graph};
use http::{f32_rows, get, post_json, Conn};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use stratavec::search::Switches;
use stratavec::{Index, OpenOptions, SearchParams};

const DIM: usize = 16;

struct Fixture {
    root: PathBuf,
    data: PathBuf,
    index: PathBuf,
}

/// A small index (2,000 x 16), built once per run at a fixed path.
fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("serve-fixture");
        let _ = std::fs::remove_dir_all(&root);
        let (data, index) = (root.join("data"), root.join("index"));
        let dim = DIM.to_string();
        ok(run(&[
            &"synth",
            &data,
            &"--n",
            &"2000",
            &"--queries",
            &"50",
            &"--dim",
            &dim,
            &"--clusters",
            &"8",
            &"--threads",
            &"2",
        ]));
        ok(run(&small_graph(&[
            &"build",
            &data.join("base.fbin"),
            &index,
        ])));
        Fixture { root, data, index }
    })
}

fn queries() -> Vec<f32> {
    stratavec::data::open(fixture().data.join("query.fbin"))
        .unwrap()
        .to_f32_vec()
}

/// A running `stratavec serve`, killed when dropped (a test that fails
/// leaves no server behind). Its log goes to a file the test can read.
struct Server {
    child: Child,
    addr: String,
    log: PathBuf,
}

impl Server {
    fn start(dir: &Path, extra: &[&str]) -> Server {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let log = fixture()
            .root
            .join(format!("serve-{}-{n}.log", std::process::id()));
        let mut child = Command::new(env!("CARGO_BIN_EXE_stratavec"))
            .arg("serve")
            .arg(dir)
            .args(["--port", "0", "--threads", "2"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("start stratavec serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .split_once("http://")
            .and_then(|(_, rest)| rest.split_once(' '))
            .map(|(a, _)| a.to_string())
            .unwrap_or_else(|| {
                panic!(
                    "no address in {line:?}; log: {}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                )
            });
        assert!(
            line.contains("(POST /search") && line.ends_with("GET /health, GET /stats)\n"),
            "{line:?}"
        );
        Server { child, addr, log }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The exit code once it has exited (within `limit`), else panics.
    fn wait_exit(&mut self, limit: Duration) -> Option<i32> {
        let t0 = Instant::now();
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s.code();
            }
            assert!(
                t0.elapsed() < limit,
                "still running after {limit:?}; log:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn ids_of(doc: &Value) -> Vec<Vec<i64>> {
    serde_json::from_value(doc["ids"].clone()).unwrap()
}

/// The int64 rows of an `.npy` file `search --output` wrote.
fn read_npy_i64(path: &Path) -> Vec<i64> {
    let bytes = std::fs::read(path).unwrap();
    let header = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    bytes[10 + header..]
        .chunks_exact(8)
        .map(|b| i64::from_le_bytes(b.try_into().unwrap()))
        .collect()
}

/// `stratavec search DIR` of the fixture's queries at k 10, L 40: the ids
/// `--output` wrote (into `NAME-PID.npy` beside the fixture).
fn cli_search_ids(dir: &Path, name: &str) -> Vec<i64> {
    let f = fixture();
    let out = f.root.join(format!("{name}-{}.npy", std::process::id()));
    ok(run(&[
        &"search",
        &dir,
        &f.data.join("query.fbin"),
        &"-k",
        &"10",
        &"-L",
        &"40",
        &"--output",
        &out,
    ]));
    read_npy_i64(&out)
}

#[test]
fn answers_equal_the_in_process_index_and_search() {
    let f = fixture();
    let server = Server::start(&f.index, &[]);
    let q = queries();
    let nq = q.len() / DIM;
    let rows: Vec<&[f32]> = q.chunks(DIM).collect();
    let r = post_json(
        &server.addr,
        "/search",
        &json!({"vectors": rows, "k": 10, "complexity": 40}),
    );
    assert_eq!(r.status, 200, "{}", r.error());
    let doc = r.json();
    // The in-process index, at the same parameters.
    let index = Index::open(&f.index, &OpenOptions::default()).unwrap();
    let params = SearchParams {
        k: 10,
        complexity: 40,
        threads: 1,
        ..index.search_defaults(&Switches::default())
    };
    let res = index.search_batch(&q, DIM, &params).unwrap();
    let want: Vec<Vec<i64>> = index
        .result_ids(&res.ids)
        .chunks(10)
        .map(<[i64]>::to_vec)
        .collect();
    assert_eq!(ids_of(&doc), want);
    let dists: Vec<Vec<f32>> = serde_json::from_value(doc["distances"].clone()).unwrap();
    assert_eq!(dists.concat(), res.dists);
    // `stratavec search --output`, the same ids.
    assert_eq!(cli_search_ids(&f.index, "ids"), want.concat());
    // A binary body with the options in the query string.
    let r = http::request(
        &server.addr,
        "POST",
        "/search?k=10&complexity=40",
        Some("application/octet-stream"),
        &f32_rows(&q),
    );
    assert_eq!(r.status, 200, "{}", r.error());
    assert_eq!(ids_of(&r.json()), want);
    // One vector, default k.
    let doc = post_json(
        &server.addr,
        "/search/",
        &json!({"vector": rows[3], "complexity": 40}),
    )
    .json();
    assert_eq!(ids_of(&doc), vec![want[3].clone()]);
    // Health and stats.
    let h = get(&server.addr, "/health").json();
    assert_eq!(
        (h["status"].as_str(), h["n"].as_u64(), h["dim"].as_u64()),
        (Some("ok"), Some(2000), Some(DIM as u64))
    );
    assert_eq!(
        (h["kind"].as_str(), h["segments"].as_u64()),
        (Some("index"), Some(1))
    );
    let s = get(&server.addr, "/stats").json();
    assert_eq!(s["server"]["searches"], json!(3));
    assert_eq!(s["server"]["queries"], json!(2 * nq + 1));
    assert_eq!(s["index"]["queries"], json!(2 * nq + 1));
    assert!(s["index"]["reads"].as_u64().unwrap() > 0, "{s}");
}

#[test]
fn a_collection_answers_as_in_process_with_and_without_probe() {
    let f = fixture();
    let dir = f.root.join("collection");
    if !dir.join("collection.json").is_file() {
        ok(run(&small_graph(&[
            &"build-collection",
            &f.data.join("base.fbin"),
            &dir,
            &"--segments",
            &"3",
            &"--partition",
            &"kmeans",
        ])));
    }
    let server = Server::start(&dir, &[]);
    let q = queries();
    let c = stratavec::collection::Collection::open(&dir, &OpenOptions::default()).unwrap();
    for probe in [None, Some(1)] {
        let params = SearchParams {
            k: 5,
            complexity: 40,
            threads: 1,
            ..c.search_defaults(&Switches::default())
        };
        let res = c
            .search_batch(
                &q,
                DIM,
                &params,
                &stratavec::collection::Probe::nearest(probe),
            )
            .unwrap();
        let want: Vec<Vec<i64>> = res.ids.chunks(5).map(<[i64]>::to_vec).collect();
        let mut body =
            json!({"vectors": q.chunks(DIM).collect::<Vec<_>>(), "k": 5, "complexity": 40});
        if let Some(p) = probe {
            body["probe"] = json!(p);
        }
        let r = post_json(&server.addr, "/search", &body);
        assert_eq!(r.status, 200, "{}", r.error());
        assert_eq!(ids_of(&r.json()), want, "probe {probe:?}");
    }
    let r = post_json(
        &server.addr,
        "/search",
        &json!({"vector": vec![0.0; DIM], "probe": 4}),
    );
    assert_eq!(
        (
            r.status,
            r.error().starts_with("probe: expected an integer in 1..3")
        ),
        (400, true),
        "{}",
        r.error()
    );
    let h = get(&server.addr, "/health").json();
    assert_eq!(
        (
            h["kind"].as_str(),
            h["segments"].as_u64(),
            h["partition"].as_str()
        ),
        (Some("collection"), Some(3), Some("kmeans"))
    );
    assert!(get(&server.addr, "/stats").json()["collection"]["segment_queries"].is_array());
}

/// Each bound refused with its status and message, and the next request
/// answered normally.
#[test]
fn every_bound_is_refused_and_the_server_goes_on() {
    let f = fixture();
    let server = Server::start(
        &f.index,
        &[
            "--max-body-bytes",
            "65536",
            "--body-timeout-s",
            "0.5",
            "--max-queries",
            "100",
            "--max-results",
            "500",
        ],
    );
    let addr = server.addr.as_str();
    let good = || {
        let r = post_json(addr, "/search", &json!({"vector": vec![0.5; DIM], "k": 3}));
        assert_eq!(r.status, 200, "{}", r.error());
        assert_eq!(ids_of(&r.json())[0].len(), 3);
    };
    let v = |n: usize| json!({"vectors": vec![vec![0.5; DIM]; n], "k": 1});
    let mut cases: Vec<(u16, String, &str)> = vec![];
    // Slow body: 10 of 1000 bytes, then nothing.
    let mut c = Conn::open(addr).unwrap();
    let head = "POST /search HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n";
    c.stream()
        .write_all(format!("{head}{{\"vector\":").as_bytes())
        .unwrap();
    let r = c.read_reply().unwrap();
    cases.push((r.status, r.error(), "408 body: expected the whole body within 0.5 s (body_timeout_s), found 10 bytes of 1000 after 0.5 s"));
    // Oversized, by Content-Length: answered before the body is sent.
    let mut c = Conn::open(addr).unwrap();
    let head = "POST /search HTTP/1.1\r\nHost: t\r\nContent-Type: application/octet-stream\r\nContent-Length: 70000\r\n\r\n";
    c.stream().write_all(head.as_bytes()).unwrap();
    let r = c.read_reply().unwrap();
    cases.push((
        r.status,
        r.error(),
        "413 body: expected at most 65536 bytes (max_body_bytes), found Content-Length 70000",
    ));
    // Oversized, chunked (no length declared): refused once more arrived.
    let mut c = Conn::open(addr).unwrap();
    let head = "POST /search HTTP/1.1\r\nHost: t\r\nContent-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
    c.stream().write_all(head.as_bytes()).unwrap();
    for _ in 0..17 {
        c.stream()
            .write_all(format!("1000\r\n{}\r\n", "\0".repeat(4096)).as_bytes())
            .unwrap();
    }
    let r = c.read_reply().unwrap();
    cases.push((
        r.status,
        r.error(),
        "413 body: expected at most 65536 bytes (max_body_bytes), found more",
    ));
    let r = http::request(
        addr,
        "POST",
        "/search",
        Some("text/plain"),
        b"{\"vector\": [1]}",
    );
    cases.push((r.status, r.error(), "415 Content-Type: expected application/json or application/octet-stream, found 'text/plain'"));
    let r = http::request(addr, "POST", "/search", None, b"{}");
    cases.push((
        r.status,
        r.error(),
        "415 Content-Type: expected application/json or application/octet-stream, found none",
    ));
    let r = post_json(addr, "/search", &v(101));
    cases.push((
        r.status,
        r.error(),
        "413 vectors: expected at most 100 queries a request (max_queries), found 101",
    ));
    let mut body = v(60);
    body["k"] = json!(10);
    let r = post_json(addr, "/search", &body);
    cases.push((
        r.status,
        r.error(),
        "413 k × queries: expected at most 500 (max_results), found 600 (k=10 × 60 queries)",
    ));
    let r = post_json(addr, "/search", &json!({"vectors": [[1.0, 2.0]]}));
    cases.push((
        r.status,
        r.error(),
        "400 vectors: expected vectors of 16 numbers (the index's dimension), found 2",
    ));
    let r = post_json(
        addr,
        "/search",
        &json!({"vector": vec![0.5; DIM], "k": 2001}),
    );
    cases.push((r.status, r.error(), "400 k: expected an integer in 1..1000 (at most the index's 2000 vectors and the server's max_k 1000), found 2001"));
    for (status, message, want) in &cases {
        assert_eq!(format!("{status} {message}"), *want);
        good();
    }
    // Headers sent too slowly: the connection is closed.
    let mut c = Conn::open(addr).unwrap();
    c.stream()
        .write_all(b"POST /search HTTP/1.1\r\nHost:")
        .unwrap();
    let t0 = Instant::now();
    let mut rest = vec![];
    let _ = c.stream().read_to_end(&mut rest);
    assert!(
        t0.elapsed() < Duration::from_secs(5),
        "held {:?}",
        t0.elapsed()
    );
    good();
    let s = get(addr, "/stats").json();
    let (status, rejected) = (&s["server"]["status"], &s["server"]["rejected"]);
    assert_eq!(
        (
            status["413"].as_u64(),
            status["415"].as_u64(),
            status["408"].as_u64()
        ),
        (Some(4), Some(2), Some(1)),
        "{s}"
    );
    assert_eq!(rejected["slow_body"], json!(1));
}

/// SIGTERM while a search is in flight: that search is answered, then the
/// server exits 0; a new connection is refused meanwhile.
#[test]
fn sigterm_lets_the_request_in_flight_finish_and_exits_0() {
    let f = fixture();
    let mut server = Server::start(&f.index, &["--chunk-delay-ms", "1500"]);
    let addr = server.addr.clone();
    let in_flight = std::thread::spawn(move || {
        post_json(&addr, "/search", &json!({"vector": vec![0.5; DIM], "k": 4}))
    });
    // Wait until the search holds its slot.
    let t0 = Instant::now();
    while get(&server.addr, "/stats").json()["server"]["running"] != json!(1) {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the search never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = server.child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let r = in_flight.join().unwrap();
    assert_eq!(r.status, 200, "{}", r.error());
    assert_eq!(ids_of(&r.json())[0].len(), 4);
    assert_eq!(server.wait_exit(Duration::from_secs(10)), Some(0));
    let log = server.log();
    assert!(
        log.contains("SIGTERM: not accepting new connections") && log.contains("stopped"),
        "{log}"
    );
}

/// Eight clients at once on kept-alive connections: every answer 200 and
/// equal to the in-process index's. (The 10,000-request load check with
/// its timings is `examples/serve_load.rs`: about 30 s in a debug build.)
#[test]
fn eight_clients_at_once_get_every_answer_right() {
    let f = fixture();
    let server = Server::start(&f.index, &["--quiet"]);
    let q = queries();
    let index = Index::open(&f.index, &OpenOptions::default()).unwrap();
    let params = SearchParams {
        k: 5,
        complexity: 30,
        threads: 1,
        ..index.search_defaults(&Switches::default())
    };
    let want = index.result_ids(&index.search_batch(&q, DIM, &params).unwrap().ids);
    let clients: Vec<_> = (0..8)
        .map(|c| {
            let (addr, q, want) = (server.addr.clone(), q.clone(), want.clone());
            std::thread::spawn(move || {
                let mut conn = Conn::open(&addr).unwrap();
                for i in 0..60 {
                    let row = (c * 60 + i) % (q.len() / DIM);
                    let body = serde_json::to_vec(
                        &json!({"vector": &q[row * DIM..][..DIM], "k": 5, "complexity": 30}),
                    )
                    .unwrap();
                    let r = conn
                        .request("POST", "/search", Some("application/json"), &body)
                        .unwrap();
                    assert_eq!(r.status, 200, "{}", r.error());
                    assert_eq!(ids_of(&r.json())[0], want[row * 5..][..5]);
                }
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
    let s = get(&server.addr, "/stats").json();
    assert_eq!(
        (
            s["server"]["searches"].as_u64(),
            s["server"]["status"]["200"].as_u64()
        ),
        (Some(480), Some(480))
    );
}

/// A copy of the fixture's index at a path of its own (writes change it).
fn writable_copy(name: &str) -> PathBuf {
    let f = fixture();
    let dir = f.root.join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for e in std::fs::read_dir(&f.index).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
    }
    dir
}

/// Writes over HTTP (issue #55): an inserted vector is the next search's
/// nearest to itself, a retried batch is applied once, deleted ids never
/// come back, /health counts the live set, and once the server is killed
/// `stratavec search` of the directory (the log replayed) answers as the
/// server did. A --read-only server refuses writes.
#[test]
fn writes_over_http_are_searched_and_outlive_the_server() {
    let dir = writable_copy("writes");
    let server = Server::start(&dir, &[]);
    let q = queries();
    let rows: Vec<&[f32]> = q.chunks(DIM).take(5).collect();
    let insert = json!({"vectors": rows, "ids": [5000, 5001, 5002, 5003, 5004], "batch": 9});
    let r = post_json(&server.addr, "/insert", &insert);
    assert_eq!(r.status, 200, "{}", r.error());
    assert_eq!(
        r.json(),
        json!({"inserted": 5, "seq": 1, "repeated": false})
    );
    let search = json!({"vectors": rows, "k": 3, "complexity": 40});
    let ids = ids_of(&post_json(&server.addr, "/search", &search).json());
    for (i, row) in ids.iter().enumerate() {
        assert_eq!(row[0], 5000 + i as i64, "query {i}: {row:?}");
    }
    let again = post_json(&server.addr, "/insert", &insert).json();
    assert_eq!(again["repeated"], json!(true), "{again}");
    let gone = ids[0].clone();
    let r = post_json(&server.addr, "/delete", &json!({"ids": gone})).json();
    assert_eq!(
        (r["deleted"].as_u64(), r["missing"].as_u64()),
        (Some(3), Some(0)),
        "{r}"
    );
    let after = ids_of(&post_json(&server.addr, "/search", &search).json());
    assert!(
        after[0].iter().all(|id| !gone.contains(id)),
        "{after:?} {gone:?}"
    );
    let h = get(&server.addr, "/health").json();
    assert_eq!(h["n"], json!(2002), "{h}");
    let of_delta = gone.iter().filter(|&&id| id >= 5000).count();
    assert_eq!(
        h["pending"],
        json!({"inserted": 5 - of_delta, "deleted": 3 - of_delta}),
        "{h}"
    );
    // Every query, then the server killed (SIGKILL): what it acknowledged
    // is in the log, and `stratavec search` replays it.
    let all: Vec<&[f32]> = q.chunks(DIM).collect();
    let served = ids_of(
        &post_json(
            &server.addr,
            "/search",
            &json!({"vectors": all, "k": 10, "complexity": 40}),
        )
        .json(),
    );
    drop(server);
    assert_eq!(cli_search_ids(&dir, "writes-ids"), served.concat());
    // Read-only: 403, and searches go on.
    let server = Server::start(&dir, &["--read-only"]);
    let r = post_json(&server.addr, "/delete", &json!({"ids": [1]}));
    assert_eq!(r.status, 403, "{}", r.error());
    let h = get(&server.addr, "/health").json();
    assert_eq!(
        (h["n"].as_u64(), h["writes"].as_bool()),
        (Some(2002), Some(false))
    );
}

/// Filtered search over HTTP (issue #56): a labelled index answers a body's
/// `"filter"` (one for all, or one a query) with matching rows only, as
/// `stratavec search --filter` does; an unknown label is a 400 naming it
/// and its position, a filter on an unlabelled index a 400, and the server
/// goes on.
#[test]
fn filters_over_http_return_only_matches() {
    let f = fixture();
    let dir = f.root.join(format!("labelled-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // Label 0 on rows divisible by 3, label 1 on rows divisible by 10.
    let n = 2000i64;
    let rows: Vec<Vec<i32>> = (0..n)
        .map(|r| {
            [(0, 3), (1, 10)]
                .iter()
                .filter(|(_, e)| r % e == 0)
                .map(|(l, _)| *l)
                .collect()
        })
        .collect();
    let labels = dir.join("base.labels.spmat");
    common::write_spmat(&labels, &rows, 2);
    std::fs::write(
        dir.join("names.tsv"),
        "id\tname\tcount\n0\tthird\t667\n1\ttenth\t200\n",
    )
    .unwrap();
    let index = dir.join("index");
    ok(run(&small_graph(&[
        &"build",
        &f.data.join("base.fbin"),
        &index,
        &"--labels",
        &labels,
        &"--label-names",
        &dir.join("names.tsv"),
    ])));
    let server = Server::start(&index, &[]);
    let q = queries();
    let rows: Vec<&[f32]> = q.chunks(DIM).take(6).collect();
    let body = json!({"vectors": rows, "k": 5, "complexity": 40, "filter": "third AND NOT tenth"});
    let r = post_json(&server.addr, "/search", &body);
    assert_eq!(r.status, 200, "{}", r.error());
    for row in ids_of(&r.json()) {
        assert!(row.iter().all(|&id| id % 3 == 0 && id % 10 != 0), "{row:?}");
    }
    let each =
        json!({"vectors": &rows[..2], "k": 5, "filter": ["tenth", null], "filter_way": "pre"});
    let got = ids_of(&post_json(&server.addr, "/search", &each).json());
    assert!(got[0].iter().all(|&id| id % 10 == 0), "{got:?}");
    assert!(
        got[1].iter().any(|&id| id % 10 != 0),
        "the unfiltered query was filtered: {got:?}"
    );
    let bad = json!({"vectors": &rows[..1], "filter": "third AND thrid"});
    let r = post_json(&server.addr, "/search", &bad);
    assert_eq!(r.status, 400);
    assert!(
        r.error().contains("position 10") && r.error().contains("unknown label \"thrid\""),
        "{}",
        r.error()
    );
    let r = post_json(
        &server.addr,
        "/search",
        &json!({"vectors": &rows[..1], "filter": 3}),
    );
    assert_eq!(r.status, 400, "{}", r.error());
    // Inserted with labels: the first of two queries, labelled "tenth", is
    // its own nearest through that filter; the unlabelled second is not.
    let ins = json!({"vectors": &rows[..2], "labels": [[1], []]});
    let r = post_json(&server.addr, "/insert", &ins);
    assert_eq!(r.status, 200, "{}", r.error());
    let find = json!({"vectors": &rows[..2], "k": 1, "complexity": 40, "filter": "tenth"});
    let got = ids_of(&post_json(&server.addr, "/search", &find).json());
    assert_eq!(got[0], vec![n], "{got:?}");
    assert_ne!(got[1], vec![n + 1], "{got:?}");
    let unnamed = json!({"vectors": &rows[..1], "labels": [[5]]});
    let r = post_json(&server.addr, "/insert", &unnamed);
    assert_eq!(r.status, 400, "{}", r.error());
    assert!(r.error().contains("labels of row 0"), "{}", r.error());
    drop(server);
    let plain = Server::start(&f.index, &[]);
    let r = post_json(
        &plain.addr,
        "/search",
        &json!({"vectors": &rows[..1], "filter": "third"}),
    );
    assert_eq!(r.status, 400);
    assert!(
        r.error().contains("built with labels") && !r.error().contains('/'),
        "{}",
        r.error()
    );
    let r = post_json(&plain.addr, "/search", &json!({"vectors": &rows[..1]}));
    assert_eq!(r.status, 200, "{}", r.error());
}
