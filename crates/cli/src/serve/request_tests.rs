//! `parse_search`: every refused case's status and message (a table), the
//! bounds, and that no body up to some size gets anything but a 4xx.

use super::*;
use proptest::prelude::*;
use serde_json::json;

fn collection() -> Shape {
    Shape {
        kind: "collection",
        dim: 4,
        n: 100,
        max_k: 100,
        segments: Some(3),
        dtype: DType::F32,
        default_complexity: 64,
    }
}

fn index() -> Shape {
    Shape {
        kind: "index",
        segments: None,
        ..collection()
    }
}

fn limits() -> Limits {
    Limits {
        max_k: 50,
        ..Limits::default()
    }
}

fn parse(shape: &Shape, media: Media, body: &[u8], query: &str) -> Result<SearchRequest, ApiError> {
    let q = (!query.is_empty()).then_some(query);
    parse_search(media, body, q, shape, &limits())
}

fn json_body(v: serde_json::Value) -> Vec<u8> {
    serde_json::to_vec(&v).unwrap()
}

#[test]
fn json_and_binary_requests_parse() {
    let s = collection();
    let body = json_body(
        json!({"vectors": [[1, 2, 3, 4], [0, 0, 0, 0.5]], "k": 5, "complexity": 40, "probe": 2}),
    );
    let r = parse(&s, Media::Json, &body, "").unwrap();
    assert_eq!(
        (r.nq, r.k, r.complexity, r.probe),
        (2, 5, Some(40), Some(2))
    );
    assert_eq!(r.queries, [1.0, 2.0, 3.0, 4.0, 0.0, 0.0, 0.0, 0.5]);
    let r = parse(
        &s,
        Media::Json,
        &json_body(json!({"vector": [1, 2, 3, 4], "k": 3.0})),
        "",
    )
    .unwrap();
    assert_eq!((r.nq, r.k, r.complexity, r.probe), (1, 3, None, None));
    let rows: Vec<u8> = (0..12).flat_map(|i| (i as f32).to_le_bytes()).collect();
    let r = parse(&s, Media::Binary, &rows, "k=3&probe=1").unwrap();
    assert_eq!((r.nq, r.k, r.probe), (3, 3, Some(1)));
    assert_eq!(r.queries[11], 11.0);
    // Nulls are absent options; the default k is 10.
    let r = parse(
        &s,
        Media::Json,
        &json_body(json!({"vector": [1, 2, 3, 4], "k": null, "complexity": null})),
        "",
    )
    .unwrap();
    assert_eq!((r.k, r.complexity), (10, None));
    assert_eq!(r.complexity_used(&s), 64);
}

/// (shape, media, body, query string, status, message substring).
type Case = (Shape, Media, Vec<u8>, &'static str, u16, &'static str);

fn refused_cases() -> Vec<Case> {
    let (c, i) = (collection(), index());
    let j = |v| json_body(v);
    let v4 = json!([1, 2, 3, 4]);
    vec![
        (c.clone(), Media::Json, j(json!({"vectors": [[1, 2, 3]]})), "", 400,
         "vectors: expected vectors of 4 numbers (the collection's dimension), found 3"),
        (i.clone(), Media::Json, j(json!({"vectors": [[1, 2, 3]]})), "", 400,
         "vectors: expected vectors of 4 numbers (the index's dimension), found 3"),
        (c.clone(), Media::Json, j(json!({"vectors": [[1, 2, 3, 4], [1, 2]]})), "", 400,
         "vectors[1]: expected 4 numbers (the collection's dimension), found 2"),
        (c.clone(), Media::Json, j(json!({"vectors": [[1, 2, "x", 4]]})), "", 400,
         "vectors[0][2]: expected a number, found \"x\""),
        (c.clone(), Media::Json, j(json!({"vectors": [[1, 2, 3, 4], 7]})), "", 400,
         "vectors[1]: expected a list of 4 numbers, found a number"),
        (c.clone(), Media::Json, j(json!({"vectors": []})), "", 400,
         "vectors: expected a non-empty list of vectors, found an empty list"),
        (c.clone(), Media::Json, j(json!({"vectors": "abc"})), "", 400,
         "vectors: expected a non-empty list of vectors, found a string"),
        (c.clone(), Media::Json, b"{\"vectors\": [[1, 2, 3, 1e39]]}".to_vec(), "", 400,
         "vectors[0][3]: expected a number within float32's range, found 1e+39"),
        (c.clone(), Media::Json, j(json!({"vector": v4, "k": 0})), "", 400,
         "k: expected an integer in 1..50 (at most the collection's 100 vectors and the server's max_k 50), found 0"),
        (c.clone(), Media::Json, j(json!({"vector": v4, "k": 51})), "", 400, "found 51"),
        (Shape { max_k: 30, ..c.clone() }, Media::Json, j(json!({"vector": v4, "k": 31})), "", 400,
         "k: expected an integer in 1..30 (at most the 30 vectors of the collection's smallest segment and the server's max_k 50), found 31"),
        (c.clone(), Media::Json, j(json!({"vector": v4, "k": "ten"})), "", 400,
         "k: expected an integer in 1..50"),
        (c.clone(), Media::Json, j(json!({"vector": v4, "k": 2.5})), "", 400, "found 2.5"),
        (c.clone(), Media::Json, j(json!({"vector": v4, "complexity": 0})), "", 400,
         "complexity: expected an integer in 1..10000"),
        (c.clone(), Media::Json, j(json!({"vector": v4, "probe": 4})), "", 400,
         "probe: expected an integer in 1..3 (segments a query visits, of 3), found 4"),
        (i.clone(), Media::Json, j(json!({"vector": v4, "probe": 1})), "", 400,
         "probe: expected none for an index"),
        (c.clone(), Media::Json, j(json!({"vector": v4, "complexty": 40})), "", 400,
         "field 'complexty': expected one of vectors, vector, k, complexity, probe"),
        (c.clone(), Media::Json, j(json!({"k": 10})), "", 400, "missing field: expected \"vectors\""),
        (c.clone(), Media::Json, j(json!({"vector": v4, "vectors": [v4]})), "", 400,
         "vectors, vector: expected one of them, found both"),
        (c.clone(), Media::Json, j(json!({"vector": [[1, 2, 3, 4]]})), "", 400,
         "vector: expected one vector (a list of numbers); use \"vectors\" for several"),
        (c.clone(), Media::Json, j(json!({"vector": {"a": 1}})), "", 400,
         "vector: expected a list of 4 numbers, found an object"),
        (c.clone(), Media::Json, j(json!({"vector": [1, 2, 3]})), "", 400,
         "vector: expected 4 numbers (the collection's dimension), found 3"),
        (c.clone(), Media::Json, j(json!([1, 2, 3, 4])), "", 400, "expected a JSON object, found a JSON list"),
        (c.clone(), Media::Json, b"{not json".to_vec(), "", 400, "body: expected JSON"),
        (c.clone(), Media::Json, b"\xff\xfe".to_vec(), "", 400, "found invalid JSON"),
        (c.clone(), Media::Json, b"{\"vector\": [NaN, 1, 2, 3]}".to_vec(), "", 400, "found invalid JSON"),
        (c.clone(), Media::Json, b"".to_vec(), "", 400, "found an empty body"),
        (c.clone(), Media::Json, [b"[".repeat(33), b"]".repeat(33)].concat(), "", 400,
         "body: expected JSON nested at most 32 deep, found deeper nesting at byte 32"),
        (c.clone(), Media::Json, j(json!({"vector": v4})), "k=3", 400,
         "query parameter k: expected none with a JSON body (give k in the body), or Content-Type: application/octet-stream"),
        (c.clone(), Media::Binary, vec![0; 20], "", 400,
         "body: expected a multiple of 16 bytes (rows of 4 little-endian float32), found 20 bytes"),
        (c.clone(), Media::Binary, vec![], "", 400, "expected a multiple of 16 bytes"),
        (c.clone(), Media::Binary, vec![0; 16], "k=x", 400, "query parameter k: expected an integer, found 'x'"),
        (c.clone(), Media::Binary, vec![0; 16], "kk=3", 400,
         "query parameter kk: expected one of k, complexity, probe, found 'kk'"),
        (c.clone(), Media::Binary, vec![0; 16], "k=3&k=4", 400, "query parameter k: expected one value, found 2"),
        (c.clone(), Media::Binary, vec![0; 16], "k=0", 400, "k: expected an integer in 1..50"),
        (i.clone(), Media::Binary, vec![0; 16], "probe=1", 400, "probe: expected none for an index"),
        (c.clone(), Media::Binary, [0f32, 0.0, f32::NAN, 0.0].iter().flat_map(|x| x.to_le_bytes()).collect(), "", 400,
         "body row 0: expected finite numbers, found NaN or infinity"),
        (Shape { dtype: DType::U8, ..i.clone() }, Media::Json, j(json!({"vector": [1, 2, 3.5, 4]})), "", 400,
         "vector[2]: expected an integer in 0..=255 (a u8 index), found 3.5"),
    ]
}

#[test]
fn every_refused_case_gets_its_status_and_message() {
    let mut failures = vec![];
    for (n, (shape, media, body, query, status, message)) in refused_cases().into_iter().enumerate()
    {
        match parse(&shape, media, &body, query) {
            Ok(r) => failures.push(format!("case {n}: accepted as {r:?}")),
            Err(e) if e.status.as_u16() != status || !e.message.contains(message) => {
                failures.push(format!(
                    "case {n}: {} {:?}, expected {status} with {message:?}",
                    e.status, e.message
                ))
            }
            Err(_) => {}
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn each_bound_is_refused_with_its_message() {
    let s = collection();
    let small = Limits {
        max_queries: 3,
        max_results: 20,
        max_work: 500,
        ..limits()
    };
    let rows = |n: usize| json_body(json!({"vectors": vec![[0, 0, 0, 1]; n], "k": 1}));
    let p = |body: &[u8], q: Option<&str>, m| parse_search(m, body, q, &s, &small);
    let e = p(&rows(4), None, Media::Json).unwrap_err();
    assert_eq!(
        (e.status.as_u16(), e.message.as_str()),
        (
            413,
            "vectors: expected at most 3 queries a request (max_queries), found 4"
        )
    );
    let e = p(&[0; 16 * 4], None, Media::Binary).unwrap_err();
    assert_eq!(
        e.message,
        "body: expected at most 3 queries a request (max_queries), found 4"
    );
    let e = p(
        &json_body(json!({"vectors": vec![[0, 0, 0, 1]; 3], "k": 7})),
        None,
        Media::Json,
    )
    .unwrap_err();
    assert_eq!(
        (e.status.as_u16(), e.message.as_str()),
        (
            413,
            "k × queries: expected at most 20 (max_results), found 21 (k=7 × 3 queries)"
        )
    );
    let e = p(&[0; 16 * 3], Some("k=1&complexity=200"), Media::Binary).unwrap_err();
    assert_eq!((e.status.as_u16(), e.message.as_str()),
        (413, "complexity × queries: expected at most 500 (max_work), found 600 (complexity=200 × 3 queries)"));
    // The default list size counts too: 64 x 3 = 192 is within 500, 64 x 3 at k 1.
    assert!(p(&rows(3), None, Media::Json).is_ok());
    let e = p(
        &json_body(json!({"vector": [0, 0, 0, 1], "complexity": 10001})),
        None,
        Media::Json,
    )
    .unwrap_err();
    assert_eq!(e.status.as_u16(), 400);
    assert!(
        e.message
            .starts_with("complexity: expected an integer in 1..10000"),
        "{}",
        e.message
    );
}

#[test]
fn content_types_json_and_binary_only() {
    use axum::http::HeaderValue;
    let m = |t: &str| media(Some(&HeaderValue::from_str(t).unwrap()));
    assert_eq!(m("application/json").unwrap(), Media::Json);
    assert_eq!(m("Application/JSON; charset=utf-8").unwrap(), Media::Json);
    assert_eq!(m("application/vnd.api+json").unwrap(), Media::Json);
    assert_eq!(m("application/octet-stream").unwrap(), Media::Binary);
    let e = m("text/plain").unwrap_err();
    assert_eq!((e.status.as_u16(), e.message.as_str()),
        (415, "Content-Type: expected application/json or application/octet-stream, found 'text/plain'"));
    let e = media(None).unwrap_err();
    assert!(e.message.ends_with("found none"), "{}", e.message);
}

#[test]
fn depth_is_counted_outside_strings_only() {
    assert_eq!(too_deep(b"[[[]]]", 3), None);
    assert_eq!(too_deep(b"[[[[]]]]", 3), Some(3));
    assert_eq!(too_deep(br#"{"a": "[[[[[[\"[[[["}"#, 2), None);
}

/// Any JSON document (nested, of any types) a request body.
fn any_json() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(serde_json::Value::from),
        "[a-z\"\\\\]{0,8}".prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(40, 256, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(serde_json::Value::from),
            prop::collection::hash_map(
                prop_oneof![
                    Just("vectors".to_string()),
                    Just("vector".to_string()),
                    Just("k".to_string()),
                    Just("complexity".to_string()),
                    Just("probe".to_string()),
                    "[a-z]{1,4}"
                ],
                inner,
                0..5
            )
            .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// The parser answers every JSON body with a request or a 4xx, never
    /// anything else (and never panics).
    #[test]
    fn any_json_body_is_a_request_or_a_4xx(doc in any_json(), index_shape in any::<bool>()) {
        let shape = if index_shape { index() } else { collection() };
        if let Err(e) = parse(&shape, Media::Json, &json_body(doc), "") {
            prop_assert!(e.status.is_client_error(), "{} {}", e.status, e.message);
        }
    }

    /// So does any byte string, as JSON or as binary rows.
    #[test]
    fn any_bytes_are_a_request_or_a_4xx(body in prop::collection::vec(any::<u8>(), 0..4096),
                                        query in "[a-z=&%0-9]{0,12}") {
        for m in [Media::Json, Media::Binary] {
            if let Err(e) = parse(&collection(), m, &body, &query) {
                prop_assert!(e.status.is_client_error(), "{} {}", e.status, e.message);
            }
        }
    }
}
