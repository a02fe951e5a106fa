//! A `/search` body's filter (issue #56): `"filter"` — one expression for
//! every query, or a list with one a query (`null`: unfiltered) — and
//! `"filter_way"` (`auto`, `pre`, `in-search`, `post`). Checked here for
//! its shape only; the expressions are parsed against the target's labels
//! before the search is admitted (`routes.rs`), where an unknown label or
//! a malformed expression is a 400 naming the token and its position.

use super::errors::ApiError;
use super::request::{a_type_name, show};
use serde_json::{Map, Value};
use stratavec::index::filtered::FilterWay;

/// The filter a request gives: one text a query (`None`: unfiltered).
#[derive(Clone, Debug, PartialEq)]
pub struct FilterSpec {
    pub texts: Vec<Option<String>>,
    pub way: FilterWay,
}

const WAYS: [(&str, FilterWay); 4] = [
    ("auto", FilterWay::Auto),
    ("pre", FilterWay::Pre),
    ("in-search", FilterWay::InSearch),
    ("post", FilterWay::Post),
];

/// The filter of a JSON body with `nq` queries, if it gives one.
pub fn parse(doc: &Map<String, Value>, nq: usize) -> Result<Option<FilterSpec>, ApiError> {
    let way = match doc.get("filter_way").filter(|v| !v.is_null()) {
        None => FilterWay::Auto,
        Some(Value::String(s)) => match WAYS.iter().find(|w| w.0 == s) {
            Some(w) => w.1,
            None => return Err(bad_way(&show(&Value::String(s.clone())))),
        },
        Some(other) => return Err(bad_way(&a_type_name(other))),
    };
    let texts = match doc.get("filter").filter(|v| !v.is_null()) {
        None if doc.get("filter_way").is_some_and(|v| !v.is_null()) => {
            return Err(ApiError::bad(
                "filter_way: expected it only with a \"filter\", found no filter",
            ))
        }
        None => return Ok(None),
        Some(Value::String(s)) => vec![Some(s.clone()); nq],
        Some(Value::Array(list)) => {
            if list.len() != nq {
                return Err(ApiError::bad(format!(
                    "filter: expected one a query ({nq}), found {}",
                    list.len()
                )));
            }
            list.iter()
                .enumerate()
                .map(|(i, v)| match v {
                    Value::Null => Ok(None),
                    Value::String(s) => Ok(Some(s.clone())),
                    other => Err(ApiError::bad(format!(
                        "filter[{i}]: expected an expression (a string) or null, found {}",
                        a_type_name(other)
                    ))),
                })
                .collect::<Result<_, _>>()?
        }
        Some(other) => {
            return Err(ApiError::bad(format!(
                "filter: expected an expression such as \"pos:n AND NOT lex:noun.animal\" or a \
                 list of them (one a query), found {}",
                a_type_name(other)
            )))
        }
    };
    Ok(Some(FilterSpec { texts, way }))
}

fn bad_way(found: &str) -> ApiError {
    ApiError::bad(format!(
        "filter_way: expected one of auto, pre, in-search, post, found {found}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn one_filter_or_one_a_query_and_the_way() {
        let one = parse(&doc(json!({"filter": "pos:n"})), 2).unwrap().unwrap();
        assert_eq!(one.texts, vec![Some("pos:n".to_string()); 2]);
        assert_eq!(one.way, FilterWay::Auto);
        let each = parse(
            &doc(json!({"filter": ["a", null], "filter_way": "in-search"})),
            2,
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            (each.texts, each.way),
            (vec![Some("a".into()), None], FilterWay::InSearch)
        );
        assert_eq!(parse(&doc(json!({"filter": null})), 2).unwrap(), None);
    }

    #[test]
    fn a_bad_filter_names_the_field() {
        let cases = [
            (json!({"filter": 3}), "filter: expected an expression"),
            (
                json!({"filter": ["a"]}),
                "filter: expected one a query (2), found 1",
            ),
            (
                json!({"filter": ["a", 7]}),
                "filter[1]: expected an expression (a string) or null",
            ),
            (
                json!({"filter": "a", "filter_way": "sideways"}),
                "filter_way: expected one of auto, pre, in-search, post",
            ),
            (
                json!({"filter_way": "pre"}),
                "filter_way: expected it only with a \"filter\"",
            ),
        ];
        for (body, part) in cases {
            let e = parse(&doc(body.clone()), 2).unwrap_err();
            assert!(e.message.contains(part), "{body}: {}", e.message);
        }
    }
}
