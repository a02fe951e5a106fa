//! Filter expressions (issue #56): a label, and AND / OR / NOT of them, by
//! name or id — `lex:noun.animal AND pos:n`, `NOT (pos:v OR pos:r)`, `17`.
//!
//! Grammar (keywords in any case; AND binds tighter than OR, NOT tighter
//! than both; `&`, `|`, `!` are the same operators):
//!
//! ```text
//! expr  := and ("OR" and)*
//! and   := unary ("AND" unary)*
//! unary := "NOT" unary | "(" expr ")" | label
//! label := a run of characters other than space, "(", ")", "&", "|", "!"
//!          and '"'; or a "quoted" name (\" and \\ escaped) — a name that
//!          is a keyword or holds those characters
//! ```
//!
//! A label is looked up by name first; a run of digits that names no label
//! is a label id. An unknown label or a malformed expression is an error
//! naming the token and its position (a character offset, from 0).

use super::Labels;
use crate::error::{Error, Result};
use roaring::RoaringBitmap;

/// A parsed filter; label ids are resolved against one index's labels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expr {
    Label(u32),
    Not(Box<Expr>),
    And(Vec<Expr>),
    Or(Vec<Expr>),
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    And,
    Or,
    Not,
    Open,
    Close,
    Name(String, bool), // the text, and whether it was quoted
}

fn err(text: &str, at: usize, expected: &str, found: impl ToString) -> Error {
    Error::argument(
        format!("filter {:?} at position {at}", text),
        expected,
        found,
    )
}

fn special(c: char) -> bool {
    c.is_whitespace() || matches!(c, '(' | ')' | '&' | '|' | '!' | '"')
}

/// The tokens of `text`, each with the character offset it starts at.
fn tokens(text: &str) -> Result<Vec<(Tok, usize)>> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let start = i;
        let tok = match c {
            _ if c.is_whitespace() => {
                i += 1;
                continue;
            }
            '(' => Tok::Open,
            ')' => Tok::Close,
            '&' => Tok::And,
            '|' => Tok::Or,
            '!' => Tok::Not,
            '"' => {
                let mut name = String::new();
                i += 1;
                loop {
                    match chars.get(i) {
                        None => {
                            return Err(err(text, start, "a closing '\"'", "the end of the filter"))
                        }
                        Some('"') => break,
                        Some('\\') if matches!(chars.get(i + 1), Some('"') | Some('\\')) => {
                            name.push(chars[i + 1]);
                            i += 2;
                        }
                        Some(&ch) => {
                            name.push(ch);
                            i += 1;
                        }
                    }
                }
                Tok::Name(name, true)
            }
            _ => {
                while i < chars.len() && !special(chars[i]) {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                out.push((
                    match word.to_ascii_uppercase().as_str() {
                        "AND" => Tok::And,
                        "OR" => Tok::Or,
                        "NOT" => Tok::Not,
                        _ => Tok::Name(word, false),
                    },
                    start,
                ));
                continue;
            }
        };
        out.push((tok, start));
        i += 1;
    }
    Ok(out)
}

struct Parser<'a> {
    text: &'a str,
    toks: Vec<(Tok, usize)>,
    at: usize,
    labels: &'a Labels,
}

fn shown(t: &Tok) -> String {
    match t {
        Tok::And => "AND".into(),
        Tok::Or => "OR".into(),
        Tok::Not => "NOT".into(),
        Tok::Open => "'('".into(),
        Tok::Close => "')'".into(),
        Tok::Name(n, _) => format!("{n:?}"),
    }
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.at).map(|t| &t.0)
    }

    /// Where the next token starts (the text's length at its end).
    fn pos(&self) -> usize {
        self.toks
            .get(self.at)
            .map_or(self.text.chars().count(), |t| t.1)
    }

    fn found(&self) -> String {
        self.peek().map_or("the end of the filter".into(), shown)
    }

    fn expr(&mut self) -> Result<Expr> {
        let mut terms = vec![self.and()?];
        while self.peek() == Some(&Tok::Or) {
            self.at += 1;
            terms.push(self.and()?);
        }
        Ok(if terms.len() == 1 {
            terms.pop().expect("one")
        } else {
            Expr::Or(terms)
        })
    }

    fn and(&mut self) -> Result<Expr> {
        let mut terms = vec![self.unary()?];
        while self.peek() == Some(&Tok::And) {
            self.at += 1;
            terms.push(self.unary()?);
        }
        Ok(if terms.len() == 1 {
            terms.pop().expect("one")
        } else {
            Expr::And(terms)
        })
    }

    fn unary(&mut self) -> Result<Expr> {
        let at = self.pos();
        match self.peek().cloned() {
            Some(Tok::Not) => {
                self.at += 1;
                Ok(Expr::Not(Box::new(self.unary()?)))
            }
            Some(Tok::Open) => {
                self.at += 1;
                let e = self.expr()?;
                if self.peek() != Some(&Tok::Close) {
                    return Err(err(
                        self.text,
                        self.pos(),
                        &format!("')' closing the '(' at position {at}"),
                        self.found(),
                    ));
                }
                self.at += 1;
                Ok(e)
            }
            Some(Tok::Name(name, quoted)) => {
                self.at += 1;
                self.label(&name, quoted, at).map(Expr::Label)
            }
            _ => Err(err(self.text, at, "a label, NOT or '('", self.found())),
        }
    }

    fn label(&self, name: &str, quoted: bool, at: usize) -> Result<u32> {
        if let Some(id) = self.labels.id_of(name) {
            return Ok(id);
        }
        let n = self.labels.n_labels();
        if !quoted && !name.is_empty() && name.bytes().all(|b| b.is_ascii_digit()) {
            return match name.parse::<u32>() {
                Ok(id) if id < n => Ok(id),
                _ => Err(err(
                    self.text,
                    at,
                    format!("a label id in 0..{n}").as_str(),
                    name,
                )),
            };
        }
        let expected = match self.labels.has_names() {
            true => format!("a label of this index (one of its {n} names, or an id in 0..{n})"),
            false => format!("a label id in 0..{n} (this index has no label names)"),
        };
        Err(err(
            self.text,
            at,
            &expected,
            format!("unknown label {name:?}"),
        ))
    }
}

impl Expr {
    /// Parses `text` against `labels` (names and ids resolved now).
    pub fn parse(text: &str, labels: &Labels) -> Result<Expr> {
        let mut p = Parser {
            text,
            toks: tokens(text)?,
            at: 0,
            labels,
        };
        if p.toks.is_empty() {
            return Err(err(text, 0, "a filter expression", "an empty one"));
        }
        let e = p.expr()?;
        if p.at < p.toks.len() {
            return Err(err(
                text,
                p.pos(),
                "AND, OR or the end of the filter",
                p.found(),
            ));
        }
        Ok(e)
    }

    /// The AND of `ids` (a filter-track query row); None for no labels.
    pub fn all_of(ids: &[u32]) -> Option<Expr> {
        match ids {
            [] => None,
            [one] => Some(Expr::Label(*one)),
            _ => Some(Expr::And(ids.iter().map(|&i| Expr::Label(i)).collect())),
        }
    }

    /// The rows of `labels` that match.
    pub fn rows(&self, labels: &Labels) -> RoaringBitmap {
        match self {
            Expr::Label(id) => labels.posting(*id),
            Expr::Not(e) => {
                let mut all = RoaringBitmap::new();
                all.insert_range(0..labels.len() as u32);
                all - e.rows(labels)
            }
            Expr::And(terms) => {
                // Smallest first: each intersection is at most its size.
                let mut sets: Vec<RoaringBitmap> = terms.iter().map(|t| t.rows(labels)).collect();
                sets.sort_by_key(|s| s.len());
                let mut it = sets.into_iter();
                let first = it.next().unwrap_or_default();
                it.fold(first, |acc, s| acc & s)
            }
            Expr::Or(terms) => terms
                .iter()
                .fold(RoaringBitmap::new(), |acc, t| acc | t.rows(labels)),
        }
    }

    /// Whether a vector with the (sorted) labels `row` matches.
    pub fn matches(&self, row: &[u32]) -> bool {
        match self {
            Expr::Label(id) => row.binary_search(id).is_ok(),
            Expr::Not(e) => !e.matches(row),
            Expr::And(terms) => terms.iter().all(|t| t.matches(row)),
            Expr::Or(terms) => terms.iter().any(|t| t.matches(row)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::labels::LabelSets;
    use proptest::prelude::*;

    fn named() -> Labels {
        let rows: Vec<Vec<u32>> = vec![vec![0, 2], vec![1], vec![0, 1, 3], vec![], vec![2, 3]];
        let names = ["pos:n", "pos:v", "lex:noun.animal", "AND"]
            .map(String::from)
            .to_vec();
        Labels::from_sets(
            &LabelSets::from_rows(rows.iter().map(|r| r.as_slice()), 4),
            Some(names),
        )
    }

    fn rows_of(text: &str) -> Vec<u32> {
        let l = named();
        Expr::parse(text, &l).unwrap().rows(&l).iter().collect()
    }

    #[test]
    fn precedence_names_ids_and_quotes() {
        assert_eq!(rows_of("pos:n"), [0, 2]);
        assert_eq!(rows_of("pos:n AND lex:noun.animal"), [0]);
        assert_eq!(rows_of("pos:v OR pos:n and lex:noun.animal"), [0, 1, 2]);
        assert_eq!(rows_of("(pos:v OR pos:n) & !lex:noun.animal"), [1, 2]);
        assert_eq!(rows_of("NOT pos:n"), [1, 3, 4]);
        assert_eq!(rows_of("not not 1"), [1, 2]);
        assert_eq!(rows_of("\"AND\" | 1"), [1, 2, 4]);
        assert_eq!(rows_of("pos:n AND NOT pos:n"), Vec::<u32>::new());
        assert_eq!(rows_of("pos:n OR NOT pos:n"), [0, 1, 2, 3, 4]);
    }

    #[test]
    fn a_bad_filter_names_the_token_and_its_position() {
        let l = named();
        let cases: [(&str, &[&str]); 9] = [
            (
                "pos:x",
                &[
                    "position 0",
                    "unknown label \"pos:x\"",
                    "one of its 4 names",
                ],
            ),
            (
                "pos:n AND",
                &["position 9", "a label, NOT or '('", "the end of the filter"],
            ),
            (
                "pos:n pos:v",
                &["position 6", "AND, OR or the end", "\"pos:v\""],
            ),
            (
                "(pos:n OR pos:v",
                &["position 15", "')' closing the '(' at position 0"],
            ),
            ("pos:n)", &["position 5", "')'"]),
            ("  ", &["position 0", "an empty one"]),
            ("7", &["position 0", "a label id in 0..4", "found 7"]),
            ("\"pos:n", &["position 0", "a closing '\"'"]),
            ("pos:n OR AND", &["position 9", "found AND"]),
        ];
        for (text, parts) in cases {
            let e = Expr::parse(text, &l).unwrap_err().to_string();
            for p in parts {
                assert!(e.contains(p), "{text:?}: {p:?} not in {e}");
            }
        }
        let unnamed = Labels::from_sets(&LabelSets::from_rows([&[0u32][..]], 2), None);
        let e = Expr::parse("pos:n", &unnamed).unwrap_err().to_string();
        assert!(e.contains("this index has no label names"), "{e}");
    }

    fn expr(n_labels: u32) -> impl Strategy<Value = Expr> {
        let leaf = (0..n_labels).prop_map(Expr::Label);
        leaf.prop_recursive(4, 24, 3, |inner| {
            prop_oneof![
                inner.clone().prop_map(|e| Expr::Not(Box::new(e))),
                prop::collection::vec(inner.clone(), 2..4).prop_map(Expr::And),
                prop::collection::vec(inner, 2..4).prop_map(Expr::Or),
            ]
        })
    }

    /// Prints an expression so that `parse` reads it back (ids as labels).
    fn text(e: &Expr) -> String {
        match e {
            Expr::Label(id) => id.to_string(),
            Expr::Not(e) => format!("NOT ({})", text(e)),
            Expr::And(t) => t
                .iter()
                .map(|e| format!("({})", text(e)))
                .collect::<Vec<_>>()
                .join(" AND "),
            Expr::Or(t) => t
                .iter()
                .map(|e| format!("({})", text(e)))
                .collect::<Vec<_>>()
                .join(" OR "),
        }
    }

    proptest! {
        /// The bitmap an expression selects is exactly the rows whose
        /// labels match it one by one, and printing and parsing it again
        /// selects the same rows.
        #[test]
        fn rows_are_the_rows_that_match(
            rows in prop::collection::vec(prop::collection::vec(0u32..8, 0..4), 1..80),
            e in expr(8),
        ) {
            let sets = LabelSets::from_rows(rows.iter().map(|r| r.as_slice()), 8);
            let labels = Labels::from_sets(&sets, None);
            let got: Vec<u32> = e.rows(&labels).iter().collect();
            let want: Vec<u32> = (0..rows.len() as u32).filter(|&r| e.matches(sets.row(r as usize))).collect();
            prop_assert_eq!(&got, &want);
            let again = Expr::parse(&text(&e), &labels).unwrap();
            prop_assert_eq!(again.rows(&labels).iter().collect::<Vec<_>>(), want);
        }
    }
}
