//! `docs/architecture.md` is the map of the code, and a map that misses a
//! module (or names one that is gone) sends a newcomer to the wrong file.
//! Its "Module index" has one heading per source root (`` ### `crates/core/src/` ``)
//! and under it one table row per module, the row's first cell being the
//! module's name in backticks: its path relative to the source root
//! (`layout/coupled.rs`), a folder's `mod.rs` named by its folder
//! (`layout/`). This test holds every source root to that rule: every `.rs`
//! file under `crates/*/src` and `python/src` and every `.py` file under
//! `python/stratavec` has a row, and every row names a file that exists.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const DOC: &str = "docs/architecture.md";

fn root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// Every file under `dir` whose name ends in `ext`, as paths relative to `dir`.
fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    fn walk(base: &Path, dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
        let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(base, &path, ext, out);
            } else if path.to_string_lossy().ends_with(ext) {
                out.push(path.strip_prefix(base).unwrap().to_path_buf());
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, ext, &mut out);
    out.sort();
    out
}

/// The name a module goes by in the index: its path relative to its source
/// root, with `/` separators; a Rust folder's `mod.rs` by the folder.
fn module_name(rel: &Path) -> String {
    let name = rel.to_string_lossy().replace('\\', "/");
    match name.strip_suffix("/mod.rs") {
        Some(folder) => format!("{folder}/"),
        None => name,
    }
}

/// The modules each source root must list: root (relative to the
/// workspace, without a trailing slash) → module names.
fn source_modules(ws: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut roots: Vec<(String, &str)> = Vec::new();
    let crates = std::fs::read_dir(ws.join("crates")).unwrap();
    for krate in crates {
        let src = krate.unwrap().path().join("src");
        if src.is_dir() {
            let rel = src
                .strip_prefix(ws)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            roots.push((rel, ".rs"));
        }
    }
    roots.push(("python/src".into(), ".rs"));
    roots.push(("python/stratavec".into(), ".py"));
    roots
        .into_iter()
        .map(|(root, ext)| {
            let names = files(&ws.join(&root), ext)
                .iter()
                .map(|f| module_name(f))
                .collect();
            (root, names)
        })
        .collect()
}

/// The rows of the doc's module index: source root → the names in the
/// first cell of each row under its `### \`root/\`` heading (a section ends
/// at the next heading of level 3 or higher; `####` headings stay inside).
fn indexed_modules(doc: &str) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in doc.lines() {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if (1..=3).contains(&hashes) && line[hashes..].starts_with(' ') {
            let title = line[hashes..].trim();
            current = (hashes == 3)
                .then(|| title.strip_prefix('`')?.strip_suffix("/`"))
                .flatten()
                .map(str::to_string);
            if let Some(root) = &current {
                out.entry(root.clone()).or_default();
            }
            continue;
        }
        let (Some(root), Some(row)) = (&current, line.trim().strip_prefix('|')) else {
            continue;
        };
        let first = row.split('|').next().unwrap_or("").trim();
        if let Some(name) = first.strip_prefix('`').and_then(|s| s.strip_suffix('`')) {
            out.get_mut(root).unwrap().push(name.to_string());
        }
    }
    out
}

/// What is wrong with the doc's module index against the source tree, one
/// line per problem; empty when the map is complete and current.
fn problems(
    sources: &BTreeMap<String, BTreeSet<String>>,
    indexed: &BTreeMap<String, Vec<String>>,
) -> Vec<String> {
    let mut out = Vec::new();
    for (root, modules) in sources {
        let Some(rows) = indexed.get(root) else {
            out.push(format!(
                "no `### \\`{root}/\\`` heading in the module index (its {} modules are unnamed)",
                modules.len()
            ));
            continue;
        };
        let named: BTreeSet<&str> = rows.iter().map(String::as_str).collect();
        for m in modules.iter().filter(|m| !named.contains(m.as_str())) {
            out.push(format!("{root}/: module `{m}` has no row"));
        }
        let mut seen = BTreeSet::new();
        for row in rows {
            if !modules.contains(row) {
                out.push(format!(
                    "{root}/: row `{row}` names no file (renamed or removed?)"
                ));
            } else if !seen.insert(row) {
                out.push(format!("{root}/: row `{row}` appears twice"));
            }
        }
    }
    for root in indexed.keys().filter(|r| !sources.contains_key(*r)) {
        out.push(format!("heading `{root}/` is not a source root"));
    }
    out
}

#[test]
fn every_source_module_has_a_row_in_the_architecture_doc() {
    let ws = root();
    let doc = std::fs::read_to_string(ws.join(DOC)).unwrap_or_else(|e| panic!("{DOC}: {e}"));
    let sources = source_modules(&ws);
    // A walk that found nothing would pass every check vacuously.
    assert!(
        sources["crates/core/src"].contains("index/open.rs")
            && sources["crates/core/src"].contains("layout/")
            && sources["python/stratavec"].contains("__init__.py"),
        "the source walk missed known modules: {sources:?}"
    );
    let found = problems(&sources, &indexed_modules(&doc));
    assert!(
        found.is_empty(),
        "{DOC}'s module index does not match the source tree (rule: a row per module, \
         its first cell the path relative to the source root in backticks, a folder's \
         mod.rs as `folder/`):\n  {}",
        found.join("\n  ")
    );
}

#[test]
fn the_index_check_names_missing_stale_and_duplicate_rows() {
    let doc = "\
# map
### `crates/x/src/`
| module | what |
|---|---|
| `lib.rs` | root |
| `gone.rs` | stale |
#### `a/` folder
| `a/` | the folder |
| `a/` | again |
## Other
| `b.rs` | outside the index, does not count |
";
    let mut sources = BTreeMap::new();
    sources.insert(
        "crates/x/src".to_string(),
        ["lib.rs", "a/", "b.rs"].map(String::from).into(),
    );
    sources.insert("python/src".to_string(), ["lib.rs".to_string()].into());
    let found = problems(&sources, &indexed_modules(doc));
    assert_eq!(
        found,
        [
            "crates/x/src/: module `b.rs` has no row",
            "crates/x/src/: row `gone.rs` names no file (renamed or removed?)",
            "crates/x/src/: row `a/` appears twice",
            "no `### \\`python/src/\\`` heading in the module index (its 1 modules are unnamed)",
        ]
    );
    assert_eq!(
        module_name(Path::new("layout/shuffle/mod.rs")),
        "layout/shuffle/"
    );
    assert_eq!(
        module_name(Path::new("layout/shuffle/bnf.rs")),
        "layout/shuffle/bnf.rs"
    );
}
