//! A streaming runbook (issue #55): big-ann-benchmarks' NeurIPS'23 format
//! (neurips23/streaming/README.md there) — a YAML map from a data set's
//! name to numbered steps, each `operation: insert | delete | search |
//! replace` with index ranges — plus stratavec's `merge`. Only the subset
//! those files use is read: two levels of `key: value` under the data
//! set's name, comments and quotes allowed. Semantics as there: an insert
//! puts data rows [start, end) in under tags equal to their row numbers; a
//! delete removes tags [start, end); a replace makes tags [tags_start,
//! tags_end) hold rows [ids_start, ids_end) instead; a search runs the
//! query set against what is live.

use std::collections::BTreeMap;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    Insert {
        start: usize,
        end: usize,
    },
    Delete {
        start: usize,
        end: usize,
    },
    Replace {
        tags_start: usize,
        tags_end: usize,
        ids_start: usize,
        ids_end: usize,
    },
    Search,
    Merge,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Runbook {
    pub dataset: String,
    pub max_pts: Option<usize>,
    pub steps: Vec<Step>,
}

/// One line's indentation and its `key: value` (value may be empty).
fn key_value(line: &str) -> Option<(usize, &str, &str)> {
    let body = line.split('#').next().unwrap_or("");
    if body.trim().is_empty() {
        return None;
    }
    let indent = body.len() - body.trim_start().len();
    let (k, v) = body.trim().split_once(':')?;
    Some((
        indent,
        k.trim(),
        v.trim().trim_matches('"').trim_matches('\''),
    ))
}

/// Reads the runbook of `dataset` from `text` (`source` names it in errors).
pub fn parse(text: &str, dataset: &str, source: &str) -> Result<Runbook, String> {
    let mut in_set = false;
    let mut max_pts = None;
    let mut steps: BTreeMap<usize, BTreeMap<String, String>> = BTreeMap::new();
    let mut current: Option<usize> = None;
    for (i, line) in text.lines().enumerate() {
        let Some((indent, key, value)) = key_value(line) else {
            if !line.split('#').next().unwrap_or("").trim().is_empty() {
                return Err(format!(
                    "{source}: line {}: expected `key: value`, found {line:?}",
                    i + 1
                ));
            }
            continue;
        };
        if indent == 0 {
            in_set = key == dataset;
            current = None;
            continue;
        }
        if !in_set {
            continue;
        }
        match (key.parse::<usize>(), value.is_empty()) {
            (Ok(n), true) => {
                if steps.insert(n, BTreeMap::new()).is_some() {
                    return Err(format!("{source}: line {}: step {n} appears twice", i + 1));
                }
                current = Some(n);
            }
            _ if key == "max_pts" => max_pts = Some(number(value, key, i, source)?),
            _ if key == "gt_url" => {}
            _ => match current {
                Some(n) => {
                    steps
                        .get_mut(&n)
                        .expect("current step")
                        .insert(key.to_string(), value.to_string());
                }
                None => {
                    return Err(format!(
                        "{source}: line {}: {key:?} outside a numbered step",
                        i + 1
                    ))
                }
            },
        }
    }
    if steps.is_empty() {
        return Err(format!("{source}: no steps for data set {dataset:?}"));
    }
    let steps = steps
        .into_iter()
        .map(|(n, fields)| step(n, &fields, source))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Runbook {
        dataset: dataset.to_string(),
        max_pts,
        steps,
    })
}

fn number(value: &str, key: &str, line: usize, source: &str) -> Result<usize, String> {
    value.parse().map_err(|_| {
        format!(
            "{source}: line {}: {key}: expected a non-negative integer, found {value:?}",
            line + 1
        )
    })
}

fn step(n: usize, f: &BTreeMap<String, String>, source: &str) -> Result<Step, String> {
    let get = |key: &str| -> Result<usize, String> {
        let v = f
            .get(key)
            .ok_or_else(|| format!("{source}: step {n}: {key}: expected a value, found none"))?;
        v.parse().map_err(|_| {
            format!("{source}: step {n}: {key}: expected a non-negative integer, found {v:?}")
        })
    };
    let range = |a: &str, b: &str| -> Result<(usize, usize), String> {
        let (s, e) = (get(a)?, get(b)?);
        if s > e {
            return Err(format!(
                "{source}: step {n}: expected {a} <= {b}, found {s} > {e}"
            ));
        }
        Ok((s, e))
    };
    let op = f.get("operation").map(String::as_str).unwrap_or("");
    Ok(match op {
        "insert" => {
            let (start, end) = range("start", "end")?;
            Step::Insert { start, end }
        }
        "delete" => {
            let (start, end) = range("start", "end")?;
            Step::Delete { start, end }
        }
        "replace" => {
            let (tags_start, tags_end) = range("tags_start", "tags_end")?;
            let (ids_start, ids_end) = range("ids_start", "ids_end")?;
            if tags_end - tags_start != ids_end - ids_start {
                return Err(format!("{source}: step {n}: expected as many tags as ids, found {} tags and {} ids", tags_end - tags_start, ids_end - ids_start));
            }
            Step::Replace { tags_start, tags_end, ids_start, ids_end }
        }
        "search" => Step::Search,
        "merge" => Step::Merge,
        other => {
            return Err(format!("{source}: step {n}: operation: expected insert, delete, replace, search or merge, found {other:?}"))
        }
    })
}

/// What is live after each step: tag -> data row. Checks that deletes
/// and replaces name live tags and inserts new ones, as the format
/// requires (an error names the step and the tag).
#[derive(Clone, Debug, Default)]
pub struct Live {
    pub rows: BTreeMap<usize, usize>,
}

impl Live {
    pub fn apply(&mut self, n: usize, step: &Step) -> Result<(), String> {
        match *step {
            Step::Insert { start, end } => {
                for t in start..end {
                    if self.rows.insert(t, t).is_some() {
                        return Err(format!("step {n}: insert of tag {t}, which is live"));
                    }
                }
            }
            Step::Delete { start, end } => {
                for t in start..end {
                    self.rows
                        .remove(&t)
                        .ok_or_else(|| format!("step {n}: delete of tag {t}, which is not live"))?;
                }
            }
            Step::Replace {
                tags_start,
                tags_end,
                ids_start,
                ..
            } => {
                for (i, t) in (tags_start..tags_end).enumerate() {
                    let row = self.rows.get_mut(&t).ok_or_else(|| {
                        format!("step {n}: replace of tag {t}, which is not live")
                    })?;
                    *row = ids_start + i;
                }
            }
            Step::Search | Step::Merge => {}
        }
        Ok(())
    }
}

/// A runbook that churns `fraction` of `n` rows in `steps` steps: the
/// first step inserts every row; then each step deletes the next
/// `fraction` slice, searches, inserts it back, searches (issue #55's
/// delete-and-re-insert test: 5% out and 5% in a step, 10 steps).
pub fn churn(name: &str, n: usize, steps: usize, fraction: f64) -> Runbook {
    let slice = ((n as f64 * fraction) as usize).max(1);
    let mut out = vec![Step::Insert { start: 0, end: n }, Step::Search];
    for s in 0..steps {
        let start = (s * slice) % n;
        let end = (start + slice).min(n);
        out.extend([
            Step::Delete { start, end },
            Step::Search,
            Step::Insert { start, end },
            Step::Search,
        ]);
    }
    Runbook {
        dataset: name.to_string(),
        max_pts: Some(n),
        steps: out,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIMPLE: &str = r#"
random-xs:
  max_pts: 10000
  1:
    operation: "insert"
    start: 0
    end: 10000
  2:
    operation: "search"
  3:
    operation: "delete"
    start: 0
    end: 5000
  4:
    operation: search   # unquoted
  5:
    tags_end: 5300
    ids_end: 10300
    operation: replace
    tags_start: 5000
    ids_start: 10000
  6:
    operation: merge
  gt_url: "https://example.invalid/simple_runbook.yaml"
msturing-1M:
  max_pts: 1000000
  1:
    operation: "insert"
    start: 0
    end: 1000000
"#;

    #[test]
    fn reads_the_big_ann_format() {
        let r = parse(SIMPLE, "random-xs", "simple.yaml").unwrap();
        assert_eq!(r.max_pts, Some(10000));
        assert_eq!(
            r.steps,
            vec![
                Step::Insert {
                    start: 0,
                    end: 10000
                },
                Step::Search,
                Step::Delete {
                    start: 0,
                    end: 5000
                },
                Step::Search,
                Step::Replace {
                    tags_start: 5000,
                    tags_end: 5300,
                    ids_start: 10000,
                    ids_end: 10300
                },
                Step::Merge,
            ]
        );
        assert_eq!(
            parse(SIMPLE, "msturing-1M", "s").unwrap().steps,
            vec![Step::Insert {
                start: 0,
                end: 1_000_000
            }]
        );
    }

    #[test]
    fn bad_runbooks_are_named_by_step_and_field() {
        let cases = [
            ("tags_end: 5300", "tags_end: 300", "step 5: expected tags_start <= tags_end, found 5000 > 300"),
            ("ids_end: 10300", "ids_end: 10400", "step 5: expected as many tags as ids, found 300 tags and 400 ids"),
            ("operation: merge", "operation: compact", "step 6: operation: expected insert, delete, replace, search or merge, found \"compact\""),
            ("    end: 5000", "    end: half", "step 3: end: expected a non-negative integer, found \"half\""),
        ];
        for (from, to, want) in cases {
            let text = SIMPLE.replacen(from, to, 1);
            let e = parse(&text, "random-xs", "s.yaml").unwrap_err();
            assert!(e.starts_with("s.yaml: ") && e.contains(want), "{e}");
        }
        let e = parse(SIMPLE, "nope", "s.yaml").unwrap_err();
        assert!(e.contains("no steps for data set \"nope\""), "{e}");
    }

    /// The live set after each step against a plain map, on the churn
    /// runbook and on a replace; steps that name a tag in the wrong state
    /// are refused.
    #[test]
    fn live_set_follows_the_steps() {
        let r = churn("set", 100, 10, 0.05);
        assert_eq!(r.steps.len(), 2 + 10 * 4);
        let mut live = Live::default();
        for (n, s) in r.steps.iter().enumerate() {
            live.apply(n, s).unwrap();
            if let Step::Delete { start, end } = s {
                assert_eq!(live.rows.len(), 100 - (end - start));
            }
        }
        assert_eq!(live.rows.len(), 100);
        assert!(live.rows.iter().all(|(t, r)| t == r));
        live.apply(
            99,
            &Step::Replace {
                tags_start: 10,
                tags_end: 12,
                ids_start: 500,
                ids_end: 502,
            },
        )
        .unwrap();
        assert_eq!(
            (live.rows[&10], live.rows[&11], live.rows[&12]),
            (500, 501, 12)
        );
        let e = live
            .apply(
                7,
                &Step::Insert {
                    start: 99,
                    end: 101,
                },
            )
            .unwrap_err();
        assert_eq!(e, "step 7: insert of tag 99, which is live");
        let e = live
            .apply(
                8,
                &Step::Delete {
                    start: 100,
                    end: 102,
                },
            )
            .unwrap_err();
        assert!(
            e.contains("step 8: delete of tag 100, which is not live"),
            "{e}"
        );
    }
}
