//! A `POST /insert` or `POST /delete` request as a batch of writes, or the
//! 4xx that says what is wrong with it (the field, what was expected, what
//! was found). JSON only; a pure function of the body, as `request.rs`.
//!
//! - insert: `{"vectors": [[...]]}` or `{"vector": [...]}`, with `"ids"`
//!   (one integer a vector; without them the index gives the next unused)
//!   and `"batch"` (an integer id for the batch: a retry of an applied
//!   batch is answered again and not applied twice), and `"labels"` (one
//!   list of integer label ids a vector, for an index built with labels),
//!   all optional.
//! - delete: `{"ids": [...]}` and an optional `"batch"`.

use super::errors::ApiError;
use super::limits::Limits;
use super::request::{a_type_name, json_object, json_rows, show, Shape};
use serde_json::{Map, Value};

const INSERT_FIELDS: [&str; 5] = ["vectors", "vector", "ids", "labels", "batch"];
const DELETE_FIELDS: [&str; 2] = ["ids", "batch"];

/// A checked write.
#[derive(Clone, Debug, PartialEq)]
pub enum WriteRequest {
    Insert {
        vectors: Vec<f32>,
        n: usize,
        ids: Option<Vec<i64>>,
        /// One label set a vector, or empty: none given.
        labels: Vec<Vec<u32>>,
        batch: u64,
    },
    Delete {
        ids: Vec<i64>,
        batch: u64,
    },
}

pub fn parse_insert(body: &[u8], shape: &Shape, limits: &Limits) -> Result<WriteRequest, ApiError> {
    let doc = json_object(
        body,
        &INSERT_FIELDS,
        "{\"vectors\": [[...]], \"ids\": [...]}",
        "",
    )?;
    let (vectors, n) = json_rows(&doc, shape, limits, "vectors to insert")?;
    let ids = match present(&doc, "ids") {
        None => None,
        Some(v) => {
            let ids = id_list(v, limits.max_queries)?;
            if ids.len() != n {
                return Err(ApiError::bad(format!(
                    "ids: expected {n} (one a vector), found {}",
                    ids.len()
                )));
            }
            Some(ids)
        }
    };
    let labels = match present(&doc, "labels") {
        None => Vec::new(),
        Some(v) => label_lists(v, n)?,
    };
    Ok(WriteRequest::Insert {
        vectors,
        n,
        ids,
        labels,
        batch: batch(&doc)?,
    })
}

/// `"labels"`: `n` lists of label ids (integers in 0..2^32-1), one a
/// vector; a vector without labels has an empty list.
fn label_lists(v: &Value, n: usize) -> Result<Vec<Vec<u32>>, ApiError> {
    let rows = match v {
        Value::Array(rows) if rows.len() == n => rows,
        Value::Array(rows) => {
            return Err(ApiError::bad(format!(
                "labels: expected {n} lists (one a vector), found {}",
                rows.len()
            )))
        }
        other => {
            return Err(ApiError::bad(format!(
                "labels: expected a list of label id lists, found {}",
                a_type_name(other)
            )))
        }
    };
    rows.iter()
        .enumerate()
        .map(|(i, row)| {
            let Value::Array(ls) = row else {
                return Err(ApiError::bad(format!(
                    "labels[{i}]: expected a list of label ids, found {}",
                    a_type_name(row)
                )));
            };
            ls.iter()
                .enumerate()
                .map(|(j, x)| {
                    integer(x)
                        .filter(|&l| (0..u32::MAX as i64).contains(&l))
                        .map(|l| l as u32)
                        .ok_or_else(|| {
                            ApiError::bad(format!(
                                "labels[{i}][{j}]: expected a label id (an integer in 0..{}), found {}",
                                u32::MAX,
                                show(x)
                            ))
                        })
                })
                .collect()
        })
        .collect()
}

pub fn parse_delete(body: &[u8]) -> Result<WriteRequest, ApiError> {
    let doc = json_object(body, &DELETE_FIELDS, "{\"ids\": [...]}", "")?;
    let Some(v) = present(&doc, "ids") else {
        return Err(ApiError::bad(
            "missing field: expected \"ids\" (a list of the ids to delete)",
        ));
    };
    // Ids cost 8 bytes each once parsed: the body bound keeps a request's
    // list to ~2M of them, and a delete is cheap per id.
    let ids = id_list(v, usize::MAX)?;
    Ok(WriteRequest::Delete {
        ids,
        batch: batch(&doc)?,
    })
}

/// A field that is there and not null.
fn present<'a>(doc: &'a Map<String, Value>, field: &str) -> Option<&'a Value> {
    doc.get(field).filter(|v| !v.is_null())
}

/// A non-empty list of at most `max` integer ids, none of them -1.
fn id_list(v: &Value, max: usize) -> Result<Vec<i64>, ApiError> {
    let list = match v {
        Value::Array(l) if !l.is_empty() => l,
        other => {
            return Err(ApiError::bad(format!(
                "ids: expected a non-empty list of integer ids, found {}",
                a_type_name(other)
            )))
        }
    };
    if list.len() > max {
        return Err(ApiError::too_large(format!(
            "ids: expected at most {max} a request (max_queries), found {}",
            list.len()
        )));
    }
    list.iter()
        .enumerate()
        .map(|(i, x)| match integer(x) {
            Some(-1) => Err(ApiError::bad(format!(
                "ids[{i}]: expected any id but -1 (which marks an empty result), found -1"
            ))),
            Some(id) => Ok(id),
            None => Err(ApiError::bad(format!(
                "ids[{i}]: expected an integer id (64-bit), found {}",
                show(x)
            ))),
        })
        .collect()
}

/// `"batch"`: absent or null is 0 (no retry protection); else an integer
/// in 1..=2^63-1.
fn batch(doc: &Map<String, Value>) -> Result<u64, ApiError> {
    match present(doc, "batch") {
        None => Ok(0),
        Some(v) => match integer(v) {
            Some(b) if b >= 1 => Ok(b as u64),
            _ => Err(ApiError::bad(format!(
                "batch: expected an integer in 1..{} (an id that makes a retried write \
                 apply once), found {}",
                i64::MAX,
                show(v)
            ))),
        },
    }
}

/// A JSON number with an integer value that fits i64 (10.0 counts: JSON
/// writers may print 10 so).
fn integer(v: &Value) -> Option<i64> {
    let Value::Number(n) = v else { return None };
    n.as_i64().or_else(|| {
        n.as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
            .map(|f| f as i64)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use stratavec::data::DType;

    fn shape() -> Shape {
        Shape {
            kind: "index",
            dim: 2,
            n: 10,
            max_k: 10,
            segments: None,
            dtype: DType::F32,
            default_complexity: 64,
        }
    }

    fn insert(doc: Value) -> Result<WriteRequest, ApiError> {
        parse_insert(doc.to_string().as_bytes(), &shape(), &Limits::default())
    }

    fn delete(doc: Value) -> Result<WriteRequest, ApiError> {
        parse_delete(doc.to_string().as_bytes())
    }

    #[test]
    fn good_writes_parse() {
        assert_eq!(
            insert(json!({"vectors": [[1, 2], [3, 4.5]], "ids": [7, 8.0], "labels": [[3, 1], []], "batch": 3})).unwrap(),
            WriteRequest::Insert {
                vectors: vec![1.0, 2.0, 3.0, 4.5],
                n: 2,
                ids: Some(vec![7, 8]),
                labels: vec![vec![3, 1], vec![]],
                batch: 3
            }
        );
        assert_eq!(
            insert(json!({"vector": [1, 2], "ids": null})).unwrap(),
            WriteRequest::Insert {
                vectors: vec![1.0, 2.0],
                n: 1,
                ids: None,
                labels: vec![],
                batch: 0
            }
        );
        assert_eq!(
            delete(json!({"ids": [5, -7]})).unwrap(),
            WriteRequest::Delete {
                ids: vec![5, -7],
                batch: 0
            }
        );
    }

    #[test]
    fn bad_writes_say_what_is_wrong() {
        let cases: Vec<(Result<WriteRequest, ApiError>, u16, &str)> = vec![
            (
                insert(json!({"vectors": [[1, 2]], "id": [1]})),
                400,
                "field 'id': expected one of vectors, vector, ids, labels, batch",
            ),
            (
                insert(json!({"vectors": [[1, 2]], "labels": [[1], [2]]})),
                400,
                "labels: expected 1 lists (one a vector), found 2",
            ),
            (
                insert(json!({"vectors": [[1, 2]], "labels": [[-1]]})),
                400,
                "labels[0][0]: expected a label id (an integer in 0..4294967295), found -1",
            ),
            (
                insert(json!({"vectors": [[1, 2]], "labels": [3]})),
                400,
                "labels[0]: expected a list of label ids, found a number",
            ),
            (
                insert(json!({"vectors": [[1, 2, 3]]})),
                400,
                "vectors: expected vectors of 2 numbers (the index's dimension), found 3",
            ),
            (
                insert(json!({"vectors": [[1, 2]], "ids": [1, 2]})),
                400,
                "ids: expected 1 (one a vector), found 2",
            ),
            (
                insert(json!({"vectors": [[1, 2]], "ids": ["a"]})),
                400,
                "ids[0]: expected an integer id (64-bit), found \"a\"",
            ),
            (
                insert(json!({"vectors": [[1, 2]], "ids": [-1]})),
                400,
                "ids[0]: expected any id but -1",
            ),
            (
                insert(json!({"vectors": [[1, 2]], "batch": 0})),
                400,
                "batch: expected an integer in 1..9223372036854775807",
            ),
            (
                insert(json!({"vectors": [[1, 2]], "batch": "x"})),
                400,
                "found \"x\"",
            ),
            (delete(json!({})), 400, "missing field: expected \"ids\""),
            (
                delete(json!({"ids": []})),
                400,
                "ids: expected a non-empty list of integer ids, found an empty list",
            ),
            (delete(json!({"ids": 3})), 400, "found a number"),
            (
                delete(json!([1, 2])),
                400,
                "body: expected a JSON object, found a JSON list",
            ),
        ];
        for (got, status, words) in cases {
            let e = got.unwrap_err();
            assert_eq!(e.status.as_u16(), status, "{}", e.message);
            assert!(e.message.contains(words), "{:?} lacks {words:?}", e.message);
        }
        let many: Vec<Vec<f32>> = vec![vec![0.0, 0.0]; Limits::default().max_queries + 1];
        let e = insert(json!({ "vectors": many })).unwrap_err();
        assert_eq!(e.status.as_u16(), 413);
        assert!(
            e.message
                .contains("vectors to insert a request (max_queries)"),
            "{}",
            e.message
        );
    }
}
