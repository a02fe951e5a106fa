//! The batch ids a generation remembers (issue #55: "a retried call is
//! idempotent by batch id"). A writer answers a retried batch from what it
//! applied; those answers live in memory and in the log, and a merge
//! empties the log — so the merge writes the most recent of them beside
//! the new generation (`batches.json`), and an open of that generation
//! starts from them. A retry that arrives after the batch was merged (a
//! Ray actor restarted while its segment merged, say) is then still
//! answered again instead of applied twice.
//!
//! The file keeps the [`KEPT`] batches with the newest log records: a
//! retry follows its first try within seconds, not thousands of batches
//! later, and the file stays small (~100 bytes a batch).

use super::live::Applied;
use crate::error::{Error, FileContext, Result};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::Path;

pub const BATCHES_FILE: &str = "batches.json";
/// Batches a generation carries over from the one it replaced.
pub const KEPT: usize = 4096;
const VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
struct Entry {
    batch: u64,
    seq: u64,
    count: usize,
    missing: usize,
    first_id: i64,
}

#[derive(Serialize, Deserialize)]
struct File {
    version: u32,
    batches: Vec<Entry>,
}

/// The [`KEPT`] batches of `applied` with the newest records, oldest first.
fn newest(applied: &HashMap<u64, Applied>) -> Vec<Entry> {
    let mut all: Vec<Entry> = applied
        .iter()
        .filter(|(&b, _)| b != 0)
        .map(|(&batch, a)| Entry {
            batch,
            seq: a.seq,
            count: a.count,
            missing: a.missing,
            first_id: a.first_id,
        })
        .collect();
    all.sort_by_key(|e| (e.seq, e.batch));
    let drop = all.len().saturating_sub(KEPT);
    all.drain(..drop);
    all
}

/// Writes `applied`'s newest batches into `dir` (a generation being
/// staged: the publish makes it durable with the rest).
pub fn write(dir: &Path, applied: &HashMap<u64, Applied>) -> Result<()> {
    let path = dir.join(BATCHES_FILE);
    let doc = File {
        version: VERSION,
        batches: newest(applied),
    };
    let text = serde_json::to_string(&doc).expect("batches serialise") + "\n";
    std::fs::write(&path, text).at("write the merged batches", &path)?;
    std::fs::File::open(&path)
        .and_then(|f| f.sync_all())
        .at("fsync the merged batches", &path)
}

/// The batches the generation in `dir` carries, empty when it has no file
/// (a build, or a generation from before the file existed).
pub fn read(dir: &Path) -> Result<HashMap<u64, Applied>> {
    let path = dir.join(BATCHES_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(HashMap::new()),
        Err(e) => return Err(Error::file("read the merged batches", &path, e)),
    };
    let doc: File = serde_json::from_str(&text).map_err(|e| {
        Error::index(
            &path,
            format!("line {} column {}", e.line(), e.column()),
            "a JSON object {\"version\": 1, \"batches\": [...]}",
            e,
        )
    })?;
    if doc.version != VERSION {
        return Err(Error::index(&path, "version", VERSION, doc.version));
    }
    Ok(doc
        .batches
        .into_iter()
        .map(|e| {
            let a = Applied {
                seq: e.seq,
                count: e.count,
                missing: e.missing,
                repeated: false,
                first_id: e.first_id,
            };
            (e.batch, a)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn applied(seq: u64) -> Applied {
        Applied {
            seq,
            count: seq as usize % 7,
            missing: 1,
            repeated: false,
            first_id: seq as i64 * 3 - 5,
        }
    }

    #[test]
    fn a_generation_reads_back_the_newest_batches() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read(dir.path()).unwrap().is_empty(), "no file: no batches");
        let n = KEPT as u64 + 10;
        // Batch ids unrelated to their order: the newest records are kept.
        let all: HashMap<u64, Applied> =
            (1..=n).map(|s| (s * 7919 % 100_003, applied(s))).collect();
        write(dir.path(), &all).unwrap();
        let back = read(dir.path()).unwrap();
        assert_eq!(back.len(), KEPT);
        for (b, a) in &all {
            match a.seq > 10 {
                true => assert_eq!(back.get(b), Some(a), "batch {b}"),
                false => assert!(!back.contains_key(b), "batch {b} is among the oldest"),
            }
        }
    }

    #[test]
    fn a_damaged_file_names_itself_and_where() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(BATCHES_FILE),
            "{\"version\": 1, \"batches\": [{]}",
        )
        .unwrap();
        let e = read(dir.path()).unwrap_err().to_string();
        assert!(
            e.contains(BATCHES_FILE) && e.contains("line 1 column"),
            "{e}"
        );
        std::fs::write(
            dir.path().join(BATCHES_FILE),
            "{\"version\": 9, \"batches\": []}",
        )
        .unwrap();
        let e = read(dir.path()).unwrap_err().to_string();
        assert!(e.contains("version") && e.contains('9'), "{e}");
    }
}
