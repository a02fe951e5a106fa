//! A `POST /search` request as queries and options, or the 4xx that says
//! what is wrong with it: the field, what was expected, what was found.
//! The messages are the Ray Serve server's (python/stratavec/serve.py
//! `parse_search`) for the same cases, so one test suite checks both.
//!
//! JSON bodies carry everything; a binary body (`application/octet-stream`)
//! carries little-endian float32 rows and the options come from the query
//! string. Unknown fields are refused rather than ignored, so a misspelt
//! `complexity` is not silently the default. Parsing is a pure function of
//! the request's bytes: it cannot fail otherwise than with a 4xx.

use super::errors::ApiError;
use super::limits::Limits;
use axum::http::HeaderValue;
use serde_json::{Map, Value};
use stratavec::data::DType;

const JSON_FIELDS: [&str; 7] = [
    "vectors",
    "vector",
    "k",
    "complexity",
    "probe",
    "filter",
    "filter_way",
];
const BINARY_PARAMS: [&str; 3] = ["k", "complexity", "probe"];
/// k when a request does not say.
pub const DEFAULT_K: usize = 10;
/// JSON nesting deeper than this is refused before it is parsed (the
/// deepest valid request is 3: object, list of vectors, vector).
pub const MAX_DEPTH: usize = 32;
/// The longest excerpt of a client's value a message quotes.
const QUOTE_CHARS: usize = 40;

/// What a request is checked against: the target's shape.
#[derive(Clone, Debug)]
pub struct Shape {
    /// "index" or "collection", as messages name it.
    pub kind: &'static str,
    pub dim: usize,
    /// Vectors held.
    pub n: usize,
    /// The largest k the target can search (`Target::max_k`): `n`, or a
    /// collection's smallest segment.
    pub max_k: usize,
    /// A collection's segments (`probe` is in 1..=segments); `None` for an
    /// index, which refuses `probe`.
    pub segments: Option<usize>,
    pub dtype: DType,
    /// The search list size when a request gives none (the target's default).
    pub default_complexity: usize,
}

/// A checked request: `nq` rows of `dim` finite values, and its options.
#[derive(Clone, Debug, PartialEq)]
pub struct SearchRequest {
    pub queries: Vec<f32>,
    pub nq: usize,
    pub k: usize,
    pub complexity: Option<usize>,
    pub probe: Option<usize>,
    /// The request's filter (JSON bodies only: `filter_request.rs`).
    pub filter: Option<super::filter_request::FilterSpec>,
}

impl SearchRequest {
    /// The list size the search runs at: the request's or the default,
    /// raised to k (as the engine's parameter parsing does).
    pub fn complexity_used(&self, shape: &Shape) -> usize {
        self.complexity
            .unwrap_or(shape.default_complexity)
            .max(self.k)
    }

    /// The request of `nq` queries with its checked (k, complexity, probe).
    fn new(queries: Vec<f32>, nq: usize, (k, complexity, probe): Options) -> Self {
        SearchRequest {
            queries,
            nq,
            k,
            complexity,
            probe,
            filter: None,
        }
    }
}

/// How a body is read, by its Content-Type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Media {
    Json,
    Binary,
}

/// The body's kind, or 415: JSON only with a JSON content type (a web page
/// can POST `text/plain` to 127.0.0.1 without a CORS preflight; it cannot
/// send `application/json` so).
pub fn media(content_type: Option<&HeaderValue>) -> Result<Media, ApiError> {
    let raw = content_type.map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let essence = raw.as_deref().map(|t| {
        t.split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase()
    });
    match essence.as_deref() {
        Some("application/json") => Ok(Media::Json),
        Some(t) if t.starts_with("application/") && t.ends_with("+json") => Ok(Media::Json),
        Some("application/octet-stream") => Ok(Media::Binary),
        _ => Err(ApiError::media_type(format!(
            "Content-Type: expected application/json or application/octet-stream, found {}",
            raw.map_or("none".to_string(), |t| quote(&t))
        ))),
    }
}

/// The request as queries and options, or the 4xx naming what is wrong.
pub fn parse_search(
    media: Media,
    body: &[u8],
    query: Option<&str>,
    shape: &Shape,
    limits: &Limits,
) -> Result<SearchRequest, ApiError> {
    let params: Vec<(String, String)> = form_urlencoded::parse(query.unwrap_or("").as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let req = match media {
        Media::Binary => parse_binary(body, &params, shape, limits)?,
        Media::Json => parse_json(body, &params, shape, limits)?,
    };
    check_work(&req, shape, limits)?;
    Ok(req)
}

/// The bounds on a request's answer and work (413): k x queries and
/// complexity x queries.
fn check_work(req: &SearchRequest, shape: &Shape, limits: &Limits) -> Result<(), ApiError> {
    let results = req.k.saturating_mul(req.nq);
    if results > limits.max_results {
        return Err(ApiError::too_large(format!(
            "k × queries: expected at most {} (max_results), found {results} (k={} × {} queries)",
            limits.max_results, req.k, req.nq
        )));
    }
    let l = req.complexity_used(shape);
    let work = l.saturating_mul(req.nq);
    if work > limits.max_work {
        return Err(ApiError::too_large(format!(
            "complexity × queries: expected at most {} (max_work), found {work} \
             (complexity={l} × {} queries)",
            limits.max_work, req.nq
        )));
    }
    Ok(())
}

fn too_many_queries(nq: usize, field: &str, limits: &Limits) -> Result<(), ApiError> {
    too_many(nq, field, "queries", limits)
}

/// 413 when a request carries more than `max_queries` rows (`noun`:
/// queries, or vectors to insert).
fn too_many(nq: usize, field: &str, noun: &str, limits: &Limits) -> Result<(), ApiError> {
    if nq > limits.max_queries {
        return Err(ApiError::too_large(format!(
            "{field}: expected at most {} {noun} a request (max_queries), found {nq}",
            limits.max_queries
        )));
    }
    Ok(())
}

// ---------------------------------------------------------------- binary

fn parse_binary(
    body: &[u8],
    params: &[(String, String)],
    shape: &Shape,
    limits: &Limits,
) -> Result<SearchRequest, ApiError> {
    let mut names: Vec<&str> = params.iter().map(|(k, _)| k.as_str()).collect();
    names.sort_unstable();
    if let Some(bad) = names.iter().find(|n| !BINARY_PARAMS.contains(n)) {
        return Err(ApiError::bad(format!(
            "query parameter {}: expected one of {}, found {}",
            clip(bad),
            BINARY_PARAMS.join(", "),
            quote(bad)
        )));
    }
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        let count = names.iter().filter(|n| **n == w[0]).count();
        return Err(ApiError::bad(format!(
            "query parameter {}: expected one value, found {count}",
            w[0]
        )));
    }
    let row = 4 * shape.dim;
    if body.is_empty() || !body.len().is_multiple_of(row) {
        return Err(ApiError::bad(format!(
            "body: expected a multiple of {row} bytes (rows of {} little-endian float32), \
             found {} bytes",
            shape.dim,
            body.len()
        )));
    }
    let nq = body.len() / row;
    too_many_queries(nq, "body", limits)?;
    let queries: Vec<f32> = body
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    for (i, r) in queries.chunks_exact(shape.dim).enumerate() {
        if r.iter().any(|x| !x.is_finite()) {
            return Err(ApiError::bad(format!(
                "body row {i}: expected finite numbers, found NaN or infinity"
            )));
        }
        for (j, &x) in r.iter().enumerate() {
            check_dtype(x, shape, || format!("body row {i}, component {j}"))?;
        }
    }
    let param = |name: &str| -> Result<Option<Value>, ApiError> {
        match params.iter().find(|(k, _)| k == name) {
            None => Ok(None),
            Some((_, text)) => match text.trim().parse::<i64>() {
                Ok(v) => Ok(Some(Value::from(v))),
                Err(_) => Err(ApiError::bad(format!(
                    "query parameter {name}: expected an integer, found {}",
                    quote(text)
                ))),
            },
        }
    };
    let (k, complexity, probe) = (param("k")?, param("complexity")?, param("probe")?);
    let (k, complexity, probe) = options(
        k.as_ref(),
        complexity.as_ref(),
        probe.as_ref(),
        shape,
        limits,
    )?;
    Ok(SearchRequest::new(queries, nq, (k, complexity, probe)))
}

// ---------------------------------------------------------------- JSON

fn parse_json(
    body: &[u8],
    params: &[(String, String)],
    shape: &Shape,
    limits: &Limits,
) -> Result<SearchRequest, ApiError> {
    if let Some(name) = params.iter().map(|(k, _)| k.as_str()).min() {
        let name = clip(name);
        return Err(ApiError::bad(format!(
            "query parameter {name}: expected none with a JSON body (give {name} in the body), \
             or Content-Type: application/octet-stream"
        )));
    }
    let doc = json_object(
        body,
        &JSON_FIELDS,
        "{\"vectors\": [[...]], \"k\": 10}",
        " (or Content-Type: application/octet-stream for float32 rows)",
    )?;
    let (queries, nq) = json_rows(&doc, shape, limits, "queries")?;
    let absent_if_null = |f: &str| doc.get(f).filter(|v| !v.is_null());
    let default_k = Value::from(DEFAULT_K);
    let k = absent_if_null("k").unwrap_or(&default_k);
    let options = options(
        Some(k),
        absent_if_null("complexity"),
        absent_if_null("probe"),
        shape,
        limits,
    )?;
    let mut req = SearchRequest::new(queries, nq, options);
    req.filter = super::filter_request::parse(&doc, nq)?;
    Ok(req)
}

/// The body as a JSON object of `fields` only (an unknown field is
/// refused, not ignored), or 400 saying what it is instead; `example` is
/// what an empty body is told to send, `or_else` another way to send it.
pub(super) fn json_object(
    body: &[u8],
    fields: &[&str],
    example: &str,
    or_else: &str,
) -> Result<Map<String, Value>, ApiError> {
    if body.is_empty() {
        return Err(ApiError::bad(format!(
            "body: expected a JSON object such as {example}, found an empty body"
        )));
    }
    if let Some(at) = too_deep(body, MAX_DEPTH) {
        return Err(ApiError::bad(format!(
            "body: expected JSON nested at most {MAX_DEPTH} deep, found deeper nesting at byte {at}"
        )));
    }
    let doc: Value = serde_json::from_slice(body).map_err(|e| {
        ApiError::bad(format!(
            "body: expected JSON{or_else}, found invalid JSON: {e}"
        ))
    })?;
    let Value::Object(doc) = doc else {
        return Err(ApiError::bad(format!(
            "body: expected a JSON object, found a JSON {}",
            type_name(&doc)
        )));
    };
    let mut unknown: Vec<&String> = doc
        .keys()
        .filter(|k| !fields.contains(&k.as_str()))
        .collect();
    unknown.sort();
    if let Some(name) = unknown.first() {
        return Err(ApiError::bad(format!(
            "field {}: expected one of {}",
            quote(name),
            fields.join(", ")
        )));
    }
    Ok(doc)
}

/// The rows of `"vectors"` or `"vector"`, row-major (`noun`: what a
/// message calls them).
pub(super) fn json_rows(
    doc: &Map<String, Value>,
    shape: &Shape,
    limits: &Limits,
    noun: &str,
) -> Result<(Vec<f32>, usize), ApiError> {
    let dim = shape.dim;
    match (doc.get("vectors"), doc.get("vector")) {
        (Some(_), Some(_)) => Err(ApiError::bad(
            "vectors, vector: expected one of them, found both",
        )),
        (None, None) => Err(ApiError::bad(
            "missing field: expected \"vectors\" (a list of vectors) or \"vector\" (one)",
        )),
        (Some(v), None) => vectors(v, shape, limits, noun),
        (None, Some(Value::Array(v))) => {
            if v.first().is_some_and(Value::is_array) {
                return Err(ApiError::bad(
                    "vector: expected one vector (a list of numbers); use \"vectors\" for several",
                ));
            }
            let mut out = Vec::with_capacity(dim);
            row("vector", v, shape, &mut out)?;
            Ok((out, 1))
        }
        (None, Some(other)) => Err(ApiError::bad(format!(
            "vector: expected a list of {dim} numbers, found {}",
            a_type_name(other)
        ))),
    }
}

fn vectors(
    v: &Value,
    shape: &Shape,
    limits: &Limits,
    noun: &str,
) -> Result<(Vec<f32>, usize), ApiError> {
    let dim = shape.dim;
    let rows = match v {
        Value::Array(rows) if !rows.is_empty() => rows,
        other => {
            return Err(ApiError::bad(format!(
                "vectors: expected a non-empty list of vectors, found {}",
                a_type_name(other)
            )))
        }
    };
    too_many(rows.len(), "vectors", noun, limits)?;
    // Every row of one wrong length: the client has the wrong dimension,
    // which the message says once rather than row 0's length.
    let lens: Option<Vec<usize>> = rows.iter().map(|r| r.as_array().map(Vec::len)).collect();
    if let Some(lens) = lens {
        if lens.iter().all(|&l| l == lens[0]) && lens[0] != dim {
            return Err(ApiError::bad(format!(
                "vectors: expected vectors of {dim} numbers (the {}'s dimension), found {}",
                shape.kind, lens[0]
            )));
        }
    }
    let mut out = Vec::with_capacity(rows.len() * dim);
    for (i, r) in rows.iter().enumerate() {
        let label = format!("vectors[{i}]");
        match r {
            Value::Array(r) => row(&label, r, shape, &mut out)?,
            other => {
                return Err(ApiError::bad(format!(
                    "{label}: expected a list of {dim} numbers, found {}",
                    a_type_name(other)
                )))
            }
        }
    }
    Ok((out, rows.len()))
}

/// One query vector, appended to `out`, or 400 naming its first bad
/// component.
fn row(label: &str, r: &[Value], shape: &Shape, out: &mut Vec<f32>) -> Result<(), ApiError> {
    if r.len() != shape.dim {
        return Err(ApiError::bad(format!(
            "{label}: expected {} numbers (the {}'s dimension), found {}",
            shape.dim,
            shape.kind,
            r.len()
        )));
    }
    for (j, x) in r.iter().enumerate() {
        let Some(f) = x.as_f64() else {
            return Err(ApiError::bad(format!(
                "{label}[{j}]: expected a number, found {}",
                show(x)
            )));
        };
        let v = f as f32;
        if !v.is_finite() {
            return Err(ApiError::bad(format!(
                "{label}[{j}]: expected a number within float32's range, found {}",
                show(x)
            )));
        }
        check_dtype(v, shape, || format!("{label}[{j}]"))?;
        out.push(v);
    }
    Ok(())
}

/// A u8 or i8 target takes integer components in its range only.
fn check_dtype(x: f32, shape: &Shape, at: impl Fn() -> String) -> Result<(), ApiError> {
    let (lo, hi) = match shape.dtype {
        DType::U8 => (0.0, 255.0),
        DType::I8 => (-128.0, 127.0),
        DType::F32 | DType::F16 => return Ok(()),
    };
    if x.fract() != 0.0 || x < lo || x > hi {
        return Err(ApiError::bad(format!(
            "{}: expected an integer in {lo}..={hi} (a {} {}), found {x}",
            at(),
            shape.dtype.as_str(),
            shape.kind
        )));
    }
    Ok(())
}

// ---------------------------------------------------------------- options

/// k, complexity and probe as `options` checked them.
type Options = (usize, Option<usize>, Option<usize>);

/// k (required here: the caller gives the default), complexity and probe,
/// each checked against the target and the limits.
fn options(
    k: Option<&Value>,
    complexity: Option<&Value>,
    probe: Option<&Value>,
    shape: &Shape,
    limits: &Limits,
) -> Result<Options, ApiError> {
    let kmax = shape.max_k.min(limits.max_k);
    let held = if shape.max_k == shape.n {
        format!("the {}'s {} vectors", shape.kind, shape.n)
    } else {
        format!(
            "the {} vectors of the {}'s smallest segment",
            shape.max_k, shape.kind
        )
    };
    let why = format!("at most {held} and the server's max_k {}", limits.max_k);
    let default_k = Value::from(DEFAULT_K);
    let k = int_field("k", k.unwrap_or(&default_k), kmax, &why)?;
    let complexity = complexity
        .map(|c| {
            int_field(
                "complexity",
                c,
                limits.max_complexity,
                "the search list size",
            )
        })
        .transpose()?;
    let probe = match (probe, shape.segments) {
        (None, _) => None,
        (Some(p), None) => {
            return Err(ApiError::bad(format!(
                "probe: expected none for an index (probe picks a collection's segments), found {}",
                show(p)
            )))
        }
        (Some(p), Some(s)) => Some(int_field(
            "probe",
            p,
            s,
            &format!("segments a query visits, of {s}"),
        )?),
    };
    Ok((k, complexity, probe))
}

/// `v` as an integer in 1..=hi, else 400 naming `name`. A float with an
/// integer value counts (JSON writers may print 10 as 10.0).
fn int_field(name: &str, v: &Value, hi: usize, why: &str) -> Result<usize, ApiError> {
    let int = match v {
        Value::Number(n) => n.as_i64().map(i128::from).or_else(|| {
            n.as_u64().map(i128::from).or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && f.abs() < 1e30)
                    .map(|f| f as i128)
            })
        }),
        _ => None,
    };
    match int {
        Some(i) if (1..=hi as i128).contains(&i) => Ok(i as usize),
        Some(i) => Err(ApiError::bad(format!(
            "{name}: expected an integer in 1..{hi} ({why}), found {i}"
        ))),
        None => Err(ApiError::bad(format!(
            "{name}: expected an integer in 1..{hi} ({why}), found {}",
            show(v)
        ))),
    }
}

// ---------------------------------------------------------------- helpers

/// The byte offset where `body`'s brackets nest deeper than `max`, if they
/// do: checked on the bytes, before parsing, so a deep document costs one
/// pass and never the parser's recursion.
fn too_deep(body: &[u8], max: usize) -> Option<usize> {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (i, &b) in body.iter().enumerate() {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return Some(i);
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

/// A JSON value as a message quotes it: compact JSON, clipped.
pub(super) fn show(v: &Value) -> String {
    clip(&v.to_string())
}

/// A client's text as a message quotes it: in single quotes, clipped.
fn quote(s: &str) -> String {
    format!("'{}'", clip(s))
}

fn clip(s: &str) -> String {
    match s.char_indices().nth(QUOTE_CHARS) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_string(),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "object",
    }
}

/// "a string", "an object", "an empty list".
pub(super) fn a_type_name(v: &Value) -> String {
    match v {
        Value::Array(a) if a.is_empty() => "an empty list".into(),
        Value::Object(_) => "an object".into(),
        Value::Null => "null".into(),
        other => format!("a {}", type_name(other)),
    }
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
