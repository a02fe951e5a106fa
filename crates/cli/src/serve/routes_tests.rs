//! The server in process over a fake target (one whose searches can be
//! slow, fail one query, or fail whole), through real connections: what
//! only such a target can show — 200 with per-query errors, a 500 with an
//! id and no details, the deadline (504) and the queue (503) — and that the
//! server answers normally after each.

use crate::search_target::{Answer, Target};
use crate::serve::limits::Limits;
use crate::serve::routes::router;
use crate::serve::test_http as http;
use crate::serve::work::Plan;
use crate::serve::{listen, App};
use http::{get, post_json};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use stratavec::collection::Probe;
use stratavec::data::{DType, Metric};
use stratavec::search::Switches;
use stratavec::update::live::Applied;
use stratavec::{BatchResult, Index, SearchParams};

/// Query row q's answer is ids q, q+1, ... at distances 0, 1, ...; a query
/// whose first component is negative fails alone; one whose first is 999
/// fails the whole call; every call takes `delay`.
struct Fake {
    delay: Duration,
}

impl Target for Fake {
    fn kind(&self) -> &'static str {
        "index"
    }
    fn metric(&self) -> Metric {
        Metric::L2
    }
    fn dtype(&self) -> DType {
        DType::F32
    }
    fn segment_count(&self) -> usize {
        1
    }
    fn partition(&self) -> Option<String> {
        None
    }
    fn max_k(&self) -> usize {
        100
    }
    fn answer(
        &self,
        queries: &[f32],
        dim: usize,
        p: &SearchParams,
        _: Option<&Probe>,
    ) -> anyhow::Result<Answer> {
        std::thread::sleep(self.delay);
        let nq = queries.len() / dim;
        let mut a = Answer {
            k: p.k,
            ..Answer::default()
        };
        for q in queries.chunks(dim) {
            if q[0] == 999.0 {
                anyhow::bail!("/secret/path/pages.bin: the device is gone");
            }
            let failed = q[0] < 0.0;
            for j in 0..p.k {
                a.ids.push(if failed { -1 } else { q[0] as i64 + j as i64 });
                a.dists.push(if failed { f32::INFINITY } else { j as f32 });
            }
            a.errors
                .push(failed.then(|| "read /secret/path/pages.bin: EIO".to_string()));
        }
        a.segment_queries = vec![];
        assert_eq!(a.errors.len(), nq);
        Ok(a)
    }
    fn dim(&self) -> usize {
        4
    }
    fn len(&self) -> usize {
        100
    }
    fn profile(&self) -> String {
        "fake".into()
    }
    fn memory(&self) -> String {
        String::new()
    }
    fn memory_bytes(&self) -> usize {
        0
    }
    fn cached_nodes(&self) -> usize {
        0
    }
    fn is_clusters(&self) -> bool {
        false
    }
    fn search_defaults(&self, _: &Switches) -> SearchParams {
        SearchParams::default()
    }
    fn check_search(&self, _: &SearchParams, _: usize) -> anyhow::Result<()> {
        Ok(())
    }
    fn search(
        &self,
        _: &[f32],
        _: usize,
        _: &SearchParams,
        _: Option<&Probe>,
    ) -> anyhow::Result<(BatchResult, Option<f64>)> {
        anyhow::bail!("not used by the server")
    }
    fn result_ids(&self, rows: &[u32]) -> Vec<i64> {
        rows.iter().map(|&r| r as i64).collect()
    }
    fn with_single(&self, _: &mut dyn FnMut(&Index) -> anyhow::Result<()>) -> anyhow::Result<()> {
        anyhow::bail!("no index")
    }
    /// A first component of -5 is a bad batch, 777 another writer, 999 a
    /// failure; else the ids run on from 100.
    fn insert(
        &self,
        vectors: &[f32],
        ids: Option<&[i64]>,
        _labels: &[Vec<u32>],
        batch: u64,
    ) -> anyhow::Result<Applied> {
        let dir = std::path::Path::new("/secret/path");
        match vectors[0] {
            -5.0 => {
                Err(stratavec::Error::argument("vector to insert, row 0", "a good one", -5).into())
            }
            777.0 => {
                Err(
                    stratavec::Error::index(dir, "writer lock", "no other writer", "held by pid 1")
                        .into(),
                )
            }
            999.0 => anyhow::bail!("/secret/path/updates.wal: the device is gone"),
            _ => Ok(Applied {
                seq: batch.max(1),
                count: vectors.len() / 4,
                missing: 0,
                repeated: false,
                first_id: ids.map_or(100, |i| i[0]),
            }),
        }
    }
    fn delete(&self, ids: &[i64], _batch: u64) -> anyhow::Result<Applied> {
        Ok(Applied {
            seq: 1,
            count: ids.iter().filter(|&&i| i < 100).count(),
            missing: ids.iter().filter(|&&i| i >= 100).count(),
            repeated: false,
            first_id: -1,
        })
    }
    fn pending(&self) -> (usize, usize) {
        (0, 0)
    }
}

/// A server over `Fake { delay }` on 127.0.0.1, its runtime on a thread of
/// its own; dropped with the test process.
fn start(delay: Duration, limits: Limits) -> (String, Arc<App>) {
    start_with(delay, limits, false)
}

fn start_with(delay: Duration, limits: Limits, read_only: bool) -> (String, Arc<App>) {
    let target: Arc<dyn Target> = Arc::new(Fake { delay });
    let plan = Plan::new(
        target.search_defaults(&Switches::default()),
        2,
        limits.max_concurrent,
        Duration::ZERO,
    );
    let app = Arc::new(App::new(target, limits, plan, true, read_only));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let r = router(app.clone());
    std::thread::spawn(move || {
        rt.block_on(listen::serve(
            listener,
            r,
            Duration::from_secs(5),
            std::future::pending(),
        ))
    });
    (addr, app)
}

fn still_serving(addr: &str) {
    let r = post_json(addr, "/search", &json!({"vector": [1, 0, 0, 0], "k": 2}));
    assert_eq!(r.status, 200, "{:?}", r.error());
    assert_eq!(r.json()["ids"], json!([[1, 2]]));
}

#[test]
fn a_failed_query_is_a_row_of_blanks_and_a_message_with_an_id() {
    let (addr, _) = start(Duration::ZERO, Limits::default());
    let r = post_json(
        &addr,
        "/search",
        &json!({"vectors": [[5, 0, 0, 0], [-1, 0, 0, 0]], "k": 2}),
    );
    assert_eq!(r.status, 200);
    let doc = r.json();
    assert_eq!(doc["ids"], json!([[5, 6], [-1, -1]]));
    assert_eq!(doc["distances"], json!([[0.0, 1.0], [null, null]]));
    assert_eq!(doc["errors"][0], json!(null));
    let e = doc["errors"][1].as_str().unwrap();
    assert!(
        e.starts_with("this query's search failed (id ") && !e.contains("secret"),
        "{e}"
    );
    // No "errors" when every query succeeded.
    let doc = post_json(&addr, "/search", &json!({"vector": [5, 0, 0, 0], "k": 2})).json();
    assert!(doc.get("errors").is_none(), "{doc}");
}

#[test]
fn a_failed_search_is_a_500_with_an_id_and_no_details() {
    let (addr, app) = start(Duration::ZERO, Limits::default());
    let r = post_json(&addr, "/search", &json!({"vector": [999, 0, 0, 0]}));
    assert_eq!(r.status, 500);
    let doc = r.json();
    let id = doc["id"].as_str().unwrap();
    assert_eq!(doc["error"], json!(format!("internal error (id {id})")));
    assert!(!String::from_utf8_lossy(&r.body).contains("secret"));
    still_serving(&addr);
    let stats = get(&addr, "/stats").json();
    assert_eq!(stats["server"]["status"]["500"], json!(1));
    assert_eq!(app.admission.running(), 0);
}

#[test]
fn a_search_past_its_deadline_is_a_504_and_stops() {
    let limits = Limits {
        search_timeout: Duration::from_millis(300),
        ..Limits::default()
    };
    let (addr, app) = start(Duration::from_millis(100), limits);
    // 640 queries: 10 chunks of 100 ms, so the deadline falls mid-search.
    let rows = vec![[1, 0, 0, 0]; 640];
    let r = post_json(&addr, "/search", &json!({"vectors": rows, "k": 1}));
    assert_eq!(r.status, 504);
    assert_eq!(
        r.error(),
        "search: did not finish within 0.3 s (search_timeout_s); its work was cancelled"
    );
    assert!(r.json()["id"].is_string());
    // The work stopped at its next chunk: at most a few chunks ran.
    std::thread::sleep(Duration::from_millis(200));
    let stats = get(&addr, "/stats").json();
    assert_eq!(stats["server"]["rejected"]["deadline"], json!(1));
    let searched = stats["index"]["queries"].as_u64().unwrap();
    assert!(
        searched <= 4 * 64,
        "{searched} queries searched after the deadline"
    );
    assert_eq!(app.admission.running(), 0);
    still_serving(&addr);
}

#[test]
fn a_search_whose_client_left_stops() {
    let (addr, app) = start(Duration::from_millis(100), Limits::default());
    let body = serde_json::to_vec(&json!({"vectors": vec![[1, 0, 0, 0]; 640], "k": 1})).unwrap();
    let mut c = http::Conn::open(&addr).unwrap();
    c.send("POST", "/search", Some("application/json"), &body)
        .unwrap();
    while app.admission.running() == 0 {
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(c);
    let t0 = std::time::Instant::now();
    while app.admission.running() > 0 {
        assert!(t0.elapsed() < Duration::from_secs(5), "the search went on");
        std::thread::sleep(Duration::from_millis(5));
    }
    let stats = get(&addr, "/stats").json();
    assert_eq!(stats["server"]["abandoned"], json!(1));
    let searched = stats["index"]["queries"].as_u64().unwrap();
    assert!(
        searched < 640,
        "all {searched} queries searched for a client that left"
    );
    still_serving(&addr);
}

#[test]
fn a_full_queue_is_a_503_with_retry_after() {
    let limits = Limits {
        max_concurrent: 1,
        max_queue: 1,
        ..Limits::default()
    };
    let (addr, app) = start(Duration::from_millis(400), limits);
    let slow = |addr: String| {
        std::thread::spawn(move || post_json(&addr, "/search", &json!({"vector": [1, 0, 0, 0]})))
    };
    let running = slow(addr.clone());
    while app.admission.running() == 0 {
        std::thread::sleep(Duration::from_millis(5));
    }
    let waiting = slow(addr.clone());
    while app.admission.waiting() == 0 {
        std::thread::sleep(Duration::from_millis(5));
    }
    let r = post_json(&addr, "/search", &json!({"vector": [1, 0, 0, 0]}));
    assert_eq!(r.status, 503);
    assert_eq!(r.header("retry-after"), Some("1"));
    assert_eq!(
        r.error(),
        "server busy: 1 searches running and 1 waiting (max_queue); retry later"
    );
    assert_eq!(running.join().unwrap().status, 200);
    assert_eq!(waiting.join().unwrap().status, 200);
    let stats = get(&addr, "/stats").json();
    assert_eq!(stats["server"]["rejected"]["queue_full"], json!(1));
    still_serving(&addr);
}

#[test]
fn routes_methods_and_health() {
    let (addr, _) = start(Duration::ZERO, Limits::default());
    let r = get(&addr, "/nowhere");
    assert_eq!(
        (r.status, r.error().as_str()),
        (
            404,
            "path /nowhere: expected POST /search, POST /insert, POST /delete, GET /health or GET /stats"
        )
    );
    let r = get(&addr, "/search");
    assert_eq!(
        (r.status, r.error().as_str()),
        (405, "/search: expected method POST, found GET")
    );
    assert_eq!(r.header("allow"), Some("POST"));
    let r = http::request(&addr, "POST", "/health", Some("application/json"), b"{}");
    assert_eq!((r.status, r.header("allow")), (405, Some("GET")));
    let doc = get(&addr, "/health/").json();
    assert_eq!(doc["status"], "ok");
    assert_eq!(
        (
            doc["n"].as_u64(),
            doc["dim"].as_u64(),
            doc["segments"].as_u64()
        ),
        (Some(100), Some(4), Some(1))
    );
    assert_eq!(doc["metric"], "l2");
    let r = http::request(
        &addr,
        "POST",
        "/search/",
        Some("text/plain"),
        b"{\"vector\": [1, 0, 0, 0]}",
    );
    assert_eq!(r.status, 415);
    still_serving(&addr);
}

#[test]
fn writes_answer_what_was_applied_and_refusals_by_their_cause() {
    let (addr, _) = start(Duration::ZERO, Limits::default());
    let r = post_json(
        &addr,
        "/insert",
        &json!({"vectors": [[1, 0, 0, 0], [2, 0, 0, 0]]}),
    );
    assert_eq!(r.status, 200, "{:?}", r.error());
    assert_eq!(
        r.json(),
        json!({"inserted": 2, "seq": 1, "repeated": false, "ids": [100, 101]})
    );
    // Ids given are not echoed.
    let r = post_json(
        &addr,
        "/insert",
        &json!({"vector": [1, 0, 0, 0], "ids": [7], "batch": 5}),
    );
    assert_eq!(
        r.json(),
        json!({"inserted": 1, "seq": 5, "repeated": false})
    );
    let r = post_json(&addr, "/delete", &json!({"ids": [1, 2, 300]}));
    assert_eq!(
        r.json(),
        json!({"deleted": 2, "missing": 1, "seq": 1, "repeated": false})
    );
    // (body, status, words in the error; never the machine's details)
    let cases = [
        (
            json!({"vector": [-5, 0, 0, 0]}),
            400,
            "insert: vector to insert, row 0: expected a good one, found -5",
        ),
        (
            json!({"vector": [777, 0, 0, 0]}),
            409,
            "another process is writing this index",
        ),
        (
            json!({"vector": [999, 0, 0, 0]}),
            500,
            "internal error (id ",
        ),
        (json!({"vector": [1, 0, 0]}), 400, "expected 4 numbers"),
    ];
    for (body, status, words) in cases {
        let r = post_json(&addr, "/insert", &body);
        assert_eq!(r.status, status, "{body}: {:?}", r.error());
        let text = String::from_utf8_lossy(&r.body).to_string();
        assert!(text.contains(words) && !text.contains("secret"), "{text}");
    }
    still_serving(&addr);
    let stats = get(&addr, "/stats").json();
    assert_eq!(
        stats["server"]["writes"],
        json!({"requests": 3, "inserted": 3, "deleted": 2})
    );
    let r = get(&addr, "/insert");
    assert_eq!(r.status, 405);
}

#[test]
fn a_read_only_server_refuses_writes_and_still_searches() {
    let (addr, _) = start_with(Duration::ZERO, Limits::default(), true);
    for path in ["/insert", "/delete"] {
        let r = post_json(&addr, path, &json!({"ids": [1]}));
        assert_eq!(r.status, 403, "{path}");
        assert!(r.error().contains("read-only"), "{}", r.error());
    }
    assert_eq!(get(&addr, "/health").json()["writes"], json!(false));
    still_serving(&addr);
}
