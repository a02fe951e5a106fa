//! No function outside the tests is longer than 150 lines (issue #52): a
//! function that long holds several steps that each deserve a name, and
//! every change to one of them is read (and reviewed) against all the
//! others. This walks `crates/*/src/**/*.rs`, finds every `fn` outside a
//! `#[cfg(test)]` item and measures it from the line of its `fn` to the
//! line of its closing brace.
//!
//! The braces are matched on the source with its comments, string literals
//! (raw ones too) and char literals blanked out, so a `"{"` or a `'}'` or a
//! `/* } */` does not end a function early; lifetimes (`'a`) are not char
//! literals. `scanner_*` tests below hold the matcher to tricky snippets.

use std::path::{Path, PathBuf};

/// The longest a non-test function may be, in lines (`fn` line to `}` line).
const LIMIT: usize = 150;

/// Functions allowed over the limit, each (path from the workspace root,
/// name): none since issue #52 split the build and the open into parts.
/// The test fails when one listed is no longer over the limit, so an entry
/// cannot outlive the function it excuses.
const KNOWN_LONG: &[(&str, &str)] = &[];

#[test]
fn no_function_in_the_crates_is_longer_than_150_lines() {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let mut files = Vec::new();
    for krate in std::fs::read_dir(root.join("crates")).expect("read crates/") {
        let src = krate.expect("crates/ entry").path().join("src");
        if src.is_dir() {
            rust_files(&src, &mut files);
        }
    }
    files.sort();
    assert!(
        files.len() > 50,
        "found only {} .rs files under {}/crates/*/src: is the root right?",
        files.len(),
        root.display()
    );
    let sources: Vec<(String, String)> = files
        .iter()
        .map(|f| {
            let rel = f.strip_prefix(root).expect("under the root");
            let text =
                std::fs::read_to_string(f).unwrap_or_else(|e| panic!("read {}: {e}", f.display()));
            (rel.to_string_lossy().into_owned(), text)
        })
        .collect();
    let found = check(&sources, KNOWN_LONG);
    assert!(
        found.is_empty(),
        "{}",
        report(&found, "functions outside the tests longer than 150 lines")
    );
}

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries =
        std::fs::read_dir(dir).unwrap_or_else(|e| panic!("read_dir {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// What is wrong with `sources` (path, text): each function over the limit
/// that `known` does not list, each entry of `known` that is no longer over
/// it, and each file the scanner could not read.
fn check(sources: &[(String, String)], known: &[(&str, &str)]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut excused = vec![false; known.len()];
    let (sources, test_files) = out_of_line_tests(sources);
    for (path, text) in &sources {
        if test_files.contains(path) {
            continue;
        }
        let functions = match functions(text) {
            Ok(f) => f,
            Err(e) => {
                problems.push(format!("{path}: cannot be scanned: {e}"));
                continue;
            }
        };
        for f in functions.iter().filter(|f| f.lines > LIMIT) {
            match known.iter().position(|&(p, n)| p == path && n == f.name) {
                Some(k) => excused[k] = true,
                None => problems.push(format!("{path}:{} {} ({} lines)", f.line, f.name, f.lines)),
            }
        }
    }
    for (&(path, name), excused) in known.iter().zip(excused) {
        if !excused {
            problems.push(format!(
                "{path} {name}: listed in KNOWN_LONG but no longer over {LIMIT} lines \
                 (or gone): delete its entry"
            ));
        }
    }
    problems
}

/// Test modules kept in a file of their own, declared as
/// `#[cfg(test)] #[path = "x_tests.rs"] mod tests;`: each declaration is
/// read as an empty inline test module, and the file it names (from the
/// declaring file's folder) is left out of the scan, as the tests are.
/// Without the `#[path]` the scanner cannot tell where the file is, and the
/// declaration stays an error.
fn out_of_line_tests(sources: &[(String, String)]) -> (Vec<(String, String)>, Vec<String>) {
    let mut files = Vec::new();
    let out = sources
        .iter()
        .map(|(path, text)| {
            let mut text = text.clone();
            let marker = "#[cfg(test)]";
            let mut from = 0;
            while let Some(at) = text[from..].find(marker).map(|i| i + from) {
                from = at + marker.len();
                let rest = text[from..].trim_start();
                let Some(attr) = rest.strip_prefix("#[path = \"") else {
                    continue;
                };
                let Some(close) = attr.find("\"]") else {
                    continue;
                };
                let target = &attr[..close];
                let decl = attr[close + 2..].trim_start();
                let Some(semi) = decl.find(';') else { continue };
                let head = &decl[..semi];
                if !head.starts_with("mod ") || head.contains('{') {
                    continue;
                }
                let dir = std::path::Path::new(path).parent().unwrap_or(Path::new(""));
                files.push(normalise(&dir.join(target)));
                let end = text.len() - decl.len() + semi;
                text.replace_range(end..end + 1, " {}");
            }
            (path.clone(), text)
        })
        .collect();
    (out, files)
}

/// `a/b/../c.rs` as `a/c.rs` (paths stay relative to the workspace root).
fn normalise(p: &Path) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for c in p.iter().map(|c| c.to_str().unwrap_or("")) {
        match c {
            ".." => {
                parts.pop();
            }
            "." | "" => {}
            c => parts.push(c),
        }
    }
    parts.join("/")
}

fn report(problems: &[String], what: &str) -> String {
    format!(
        "{what} (limit {LIMIT}; split them into functions named for what they do):\n  {}",
        problems.join("\n  ")
    )
}

/// One function found in a source file.
#[derive(Debug, PartialEq)]
struct Function {
    name: String,
    /// 1-based line of its `fn`.
    line: usize,
    /// Lines from its `fn` to its closing brace, both included.
    lines: usize,
}

/// A token of the blanked source: an identifier (keywords and numbers too)
/// or one punctuation character, with its 1-based line.
#[derive(Debug)]
struct Token {
    text: String,
    line: usize,
}

impl Token {
    fn is(&self, s: &str) -> bool {
        self.text == s
    }

    fn is_ident(&self) -> bool {
        self.text
            .starts_with(|c: char| c.is_alphabetic() || c == '_')
    }
}

/// Every function with a body in `src`, outside items marked `#[cfg(test)]`
/// (test modules and test-only functions), nested ones included.
fn functions(src: &str) -> Result<Vec<Function>, String> {
    let toks = tokens(&blank_literals_and_comments(src)?);
    let mut found = Vec::new();
    let mut depth = 0usize;
    let mut t = 0;
    while t < toks.len() {
        if starts(&toks, t, &["#", "[", "cfg", "(", "test", ")", "]"]) {
            t = item_end(&toks, t + 7)? + 1;
            continue;
        }
        if starts(&toks, t, &["#", "!", "[", "cfg", "(", "test", ")", "]"]) {
            if depth == 0 {
                return Ok(Vec::new());
            }
            return Err(format!(
                "line {}: #![cfg(test)] inside a block is not read by this scanner",
                toks[t].line
            ));
        }
        match toks[t].text.as_str() {
            "{" => depth += 1,
            "}" => depth = depth.saturating_sub(1),
            "fn" if toks.get(t + 1).is_some_and(Token::is_ident) => {
                if let Some(close) = body_end(&toks, t + 2)? {
                    found.push(Function {
                        name: toks[t + 1].text.clone(),
                        line: toks[t].line,
                        lines: toks[close].line - toks[t].line + 1,
                    });
                }
            }
            _ => {}
        }
        t += 1;
    }
    Ok(found)
}

fn starts(toks: &[Token], t: usize, words: &[&str]) -> bool {
    toks.len() >= t + words.len() && words.iter().zip(&toks[t..]).all(|(w, tok)| tok.is(w))
}

/// The index of the token that ends the item starting at `t` (after any
/// further attributes): its closing brace, or its `;` when it has no body.
fn item_end(toks: &[Token], mut t: usize) -> Result<usize, String> {
    while starts(toks, t, &["#", "["]) {
        t = matching(toks, t + 1, "[", "]")? + 1;
    }
    let start = t;
    match first_at_depth_0(toks, t, &["{", ";"])? {
        (i, "{") => matching(toks, i, "{", "}"),
        (i, _) => {
            // `#[cfg(test)] mod tests;`: its file would be read as code.
            if let Some(m) = (start..i).find(|&k| toks[k].is("mod")) {
                return Err(format!(
                    "line {}: an out-of-line #[cfg(test)] module (`mod {};`): this \
                     scanner reads only inline ones; teach it where the file is",
                    toks[m].line,
                    toks.get(m + 1).map_or("", |n| n.text.as_str())
                ));
            }
            Ok(i)
        }
    }
}

/// The closing brace of the function whose signature goes on from `t`, or
/// `None` when it ends with `;` (no body: a trait's required method).
fn body_end(toks: &[Token], t: usize) -> Result<Option<usize>, String> {
    match first_at_depth_0(toks, t, &["{", ";"])? {
        (i, "{") => matching(toks, i, "{", "}").map(Some),
        _ => Ok(None),
    }
}

/// The first of `wanted` from `t` on outside parentheses and brackets (a
/// signature's `[u8; 4]` or a `where` bound's `Fn() -> [T; N]`).
fn first_at_depth_0<'w>(
    toks: &[Token],
    t: usize,
    wanted: &[&'w str],
) -> Result<(usize, &'w str), String> {
    let mut depth = 0i64;
    for (i, tok) in toks.iter().enumerate().skip(t) {
        match tok.text.as_str() {
            "(" | "[" => depth += 1,
            ")" | "]" => depth -= 1,
            s if depth == 0 => {
                if let Some(w) = wanted.iter().find(|w| **w == s) {
                    return Ok((i, *w));
                }
            }
            _ => {}
        }
    }
    Err(format!(
        "line {}: no {} after this point",
        toks.get(t).map_or(0, |tok| tok.line),
        wanted.join(" or ")
    ))
}

/// The index of the `close` that matches the `open` at `t`.
fn matching(toks: &[Token], t: usize, open: &str, close: &str) -> Result<usize, String> {
    let mut depth = 0usize;
    for (i, tok) in toks.iter().enumerate().skip(t) {
        if tok.is(open) {
            depth += 1;
        } else if tok.is(close) {
            depth -= 1;
            if depth == 0 {
                return Ok(i);
            }
        }
    }
    Err(format!("line {}: unmatched {open}", toks[t].line))
}

fn tokens(code: &[char]) -> Vec<Token> {
    let mut toks = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < code.len() {
        let c = code[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if is_ident(c) {
            let end = ident_end(code, i);
            toks.push(Token {
                text: code[i..end].iter().collect(),
                line,
            });
            i = end;
        } else {
            toks.push(Token {
                text: c.to_string(),
                line,
            });
            i += 1;
        }
    }
    toks
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn ident_end(s: &[char], i: usize) -> usize {
    s[i..]
        .iter()
        .position(|&c| !is_ident(c))
        .map_or(s.len(), |p| i + p)
}

/// `src` with every comment, string literal and char literal replaced by
/// spaces, its newlines kept (so lines still count), as chars.
fn blank_literals_and_comments(src: &str) -> Result<Vec<char>, String> {
    let s: Vec<char> = src.chars().collect();
    let mut out = s.clone();
    let line_at = |i: usize| s[..i].iter().filter(|&&c| c == '\n').count() + 1;
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        let next = s.get(i + 1).copied();
        let end = if c == '/' && next == Some('/') {
            s[i..]
                .iter()
                .position(|&c| c == '\n')
                .map_or(s.len(), |p| i + p)
        } else if c == '/' && next == Some('*') {
            block_comment_end(&s, i)
                .ok_or_else(|| format!("line {}: block comment never closed", line_at(i)))?
        } else if c == '"' {
            string_end(&s, i).ok_or_else(|| format!("line {}: string never closed", line_at(i)))?
        } else if c == '\'' {
            // A lifetime or a label (`'a`, `'outer:`) is left as it is.
            char_literal_end(&s, i).unwrap_or(i + 1)
        } else if is_ident(c) {
            let word = ident_end(&s, i);
            match raw_string_end(&s, i, word) {
                Some(Ok(end)) => end,
                Some(Err(())) => {
                    return Err(format!("line {}: raw string never closed", line_at(i)))
                }
                // An identifier, keyword or number; a `b` or `c` before a
                // string or char literal stays, the literal is read next.
                None => {
                    i = word;
                    continue;
                }
            }
        } else {
            i += 1;
            continue;
        };
        for o in &mut out[i..end] {
            if *o != '\n' {
                *o = ' ';
            }
        }
        i = end;
    }
    Ok(out)
}

/// The end of the (nested) block comment starting at `i`.
fn block_comment_end(s: &[char], mut i: usize) -> Option<usize> {
    let mut depth = 0usize;
    while i + 1 < s.len() {
        match (s[i], s[i + 1]) {
            ('/', '*') => {
                depth += 1;
                i += 2;
            }
            ('*', '/') => {
                depth -= 1;
                i += 2;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => i += 1,
        }
    }
    None
}

/// The end of the string literal whose opening quote is at `i`.
fn string_end(s: &[char], i: usize) -> Option<usize> {
    let mut j = i + 1;
    while j < s.len() {
        match s[j] {
            '\\' => j += 2,
            '"' => return Some(j + 1),
            _ => j += 1,
        }
    }
    None
}

/// The end of the char literal whose quote is at `i` (`'x'`, `'\''`,
/// `'\u{1F600}'`), or `None` for a lifetime or label.
fn char_literal_end(s: &[char], i: usize) -> Option<usize> {
    if s.get(i + 1) == Some(&'\\') {
        // Past the escaped char (a quote, for `'\''`), to the closing quote.
        let from = i + 3;
        return s
            .get(from..)?
            .iter()
            .position(|&c| c == '\'')
            .map(|p| from + p + 1);
    }
    (s.get(i + 2) == Some(&'\'') && s.get(i + 1) != Some(&'\n')).then_some(i + 3)
}

/// When the word at `i..word` is `r`, `br` or `cr` and starts a raw string
/// (`r"…"`, `r#"…"#`, …), its end (`Err` if never closed); `None` when it
/// does not start one (`r#type`, a raw identifier, or any other word).
fn raw_string_end(s: &[char], i: usize, word: usize) -> Option<Result<usize, ()>> {
    if i > 0 && is_ident(s[i - 1]) {
        return None;
    }
    let prefix: String = s[i..word].iter().collect();
    if !matches!(prefix.as_str(), "r" | "br" | "cr") {
        return None;
    }
    let hashes = s[word..].iter().take_while(|&&c| c == '#').count();
    let quote = word + hashes;
    if s.get(quote) != Some(&'"') {
        return None;
    }
    let closes = |j: usize| {
        s[j] == '"' && s.len() > j + hashes && s[j + 1..=j + hashes].iter().all(|&c| c == '#')
    };
    Some(
        (quote + 1..s.len())
            .find(|&j| closes(j))
            .map(|j| j + 1 + hashes)
            .ok_or(()),
    )
}

/// A function of `body` lines between its `fn` line and its `}` line.
fn function_of(name: &str, body: usize) -> String {
    let mut f = format!("fn {name}() {{\n");
    for k in 0..body {
        f += &format!("    let _x{k} = {k};\n");
    }
    f + "}\n"
}

fn names_and_lengths(src: &str) -> Vec<(String, usize)> {
    functions(src)
        .expect("scans")
        .into_iter()
        .map(|f| (f.name, f.lines))
        .collect()
}

#[test]
fn scanner_measures_from_the_fn_line_to_the_closing_brace() {
    let src = "// lead\n\n/// doc\n#[inline]\npub fn a(\n    x: u32,\n) -> u32 {\n    x\n}\n";
    let f = functions(src).expect("scans");
    assert_eq!(
        f,
        vec![Function {
            name: "a".into(),
            line: 5,
            lines: 5
        }]
    );
    assert_eq!(names_and_lengths("fn one() {}"), vec![("one".into(), 1)]);
}

#[test]
fn scanner_is_not_fooled_by_braces_in_literals_and_comments() {
    let src = r####"
fn strings() {
    let a = "}}}";
    let b = "\"}";
    let c = "\\";
    let d = b"}";
    let e = c"}";
    let f = r"}\";
    let g = r#"}"}"#;
    let h = br##"}"#}"##;
}
fn chars() {
    let a = '}';
    let b = '\'';
    let c = '\\';
    let d = b'}';
    let e = '\u{7D}';
    let f = '"';
    let g = '{';
}
fn comments() {
    // }
    /* } /* nested } */ } */
    /** } */
}
fn lifetimes<'a, 'b: 'a>(x: &'a str, _y: &'b str) -> &'a str {
    'outer: loop {
        break 'outer;
    }
    let r#type = '}';
    x
}
fn after() {
}
"####;
    assert_eq!(
        names_and_lengths(src),
        vec![
            ("strings".into(), 10),
            ("chars".into(), 9),
            ("comments".into(), 5),
            ("lifetimes".into(), 7),
            ("after".into(), 2),
        ]
    );
}

#[test]
fn scanner_skips_test_items_and_bodiless_and_pointer_fns() {
    let src = "\
trait T {
    fn required(&self) -> [u8; 4];
    fn provided(&self) -> u8 {
        0
    }
}
type F = fn(u32) -> u32;
fn generic<G: Fn([u8; 2]) -> u8>(g: G) -> u8 where G: Copy {
    fn nested() {}
    g([0; 2])
}
#[cfg(test)]
fn test_only() {
}
#[cfg(test)]
#[allow(dead_code)]
mod tests {
    fn helper() {
    }
}
fn last() {}
";
    assert_eq!(
        names_and_lengths(src),
        vec![
            ("provided".into(), 3),
            ("generic".into(), 4),
            ("nested".into(), 1),
            ("last".into(), 1),
        ]
    );
    assert!(functions("#![cfg(test)]\nfn all_test() {\n}\n")
        .expect("scans")
        .is_empty());
}

#[test]
fn scanner_refuses_what_it_cannot_read() {
    for (src, why) in [
        ("fn a() { \"}\n", "string never closed"),
        ("fn a() { /* }\n", "block comment never closed"),
        ("fn a() { r#\"}\"\n}", "raw string never closed"),
        ("fn a() {\n    {\n}\n", "unmatched {"),
        (
            "#[cfg(test)]\nmod tests;\n",
            "out-of-line #[cfg(test)] module",
        ),
    ] {
        let e = functions(src).expect_err(src);
        assert!(e.contains(why), "{src:?}: {e}");
    }
}

/// A test module in a file of its own, named by `#[path]`: the declaring
/// file scans, and the test file (whatever its length) is not read.
#[test]
fn an_out_of_line_test_module_with_a_path_is_left_out() {
    let long = function_of("long_test", LIMIT + 10);
    let sources = vec![
        (
            "crates/x/src/a/b.rs".to_string(),
            "fn short() {}\n#[cfg(test)]\n#[path = \"b_tests.rs\"]\nmod tests;\n".to_string(),
        ),
        ("crates/x/src/a/b_tests.rs".to_string(), long.clone()),
        ("crates/x/src/c.rs".to_string(), long),
    ];
    let found = check(&sources, &[]);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("crates/x/src/c.rs:"), "{found:?}");
}

/// The check fails on a function of 151 lines and passes one of 150; a
/// listed exception that is no longer over the limit fails it too.
#[test]
fn check_catches_a_151_line_function_and_a_stale_exception() {
    let at_limit = function_of("fits", LIMIT - 2);
    let over = function_of("too_long", LIMIT - 1);
    assert_eq!(names_and_lengths(&at_limit), vec![("fits".into(), LIMIT)]);
    assert_eq!(
        names_and_lengths(&over),
        vec![("too_long".into(), LIMIT + 1)]
    );
    let sources = vec![
        ("crates/x/src/a.rs".to_string(), at_limit),
        ("crates/x/src/b.rs".to_string(), format!("\n{over}")),
    ];
    assert_eq!(
        check(&sources, &[]),
        vec!["crates/x/src/b.rs:2 too_long (151 lines)".to_string()]
    );
    assert!(check(&sources, &[("crates/x/src/b.rs", "too_long")]).is_empty());
    let stale = check(
        &sources,
        &[
            ("crates/x/src/b.rs", "too_long"),
            ("crates/x/src/a.rs", "fits"),
        ],
    );
    assert_eq!(stale.len(), 1, "{stale:?}");
    assert!(stale[0].starts_with("crates/x/src/a.rs fits: listed in KNOWN_LONG but no longer"));
}
