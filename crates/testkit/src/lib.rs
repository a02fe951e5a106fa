//! Test support shared by the workspace's crates (a dev-dependency only).
//!
//! A test whose data, tool or hardware is missing must not pass silently:
//! it calls [`skipped`], which says so on stderr, appends a line to the file
//! named by `STRATAVEC_SKIP_LOG` (test.sh prints them all at the end, as
//! pytest prints its skips), and fails the test instead when the missing
//! thing is one `STRATAVEC_REQUIRE` names (a CI that has the real data sets
//! `STRATAVEC_REQUIRE=wordnet,python`, so a path or variable lost on the way
//! is a failure, not a quiet skip).

use std::io::Write;

/// What a skipped test lacked, as `STRATAVEC_REQUIRE` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// The real data set (`STRATAVEC_WORDNET_DIR`, scripts/wordnet.sh).
    Wordnet,
    /// A Python with numpy (`STRATAVEC_TEST_PYTHON`).
    Python,
    /// `/proc/self/io` (procfs; missing in some sandboxes).
    Procfs,
    /// A device or CPU feature (AMX, an I/O backend the kernel refuses).
    Hardware,
}

impl Need {
    pub fn name(self) -> &'static str {
        match self {
            Need::Wordnet => "wordnet",
            Need::Python => "python",
            Need::Procfs => "procfs",
            Need::Hardware => "hardware",
        }
    }
}

/// Reports that `test` (or a part of it) did not run for want of `need`,
/// and why; panics instead when `STRATAVEC_REQUIRE` names `need`.
pub fn skipped(test: &str, need: Need, why: &str) {
    let line = format!("skipped: {test}: {why} [{}]", need.name());
    let required = std::env::var("STRATAVEC_REQUIRE").unwrap_or_default();
    if required.split(',').any(|r| r.trim() == need.name()) {
        panic!("{line}; STRATAVEC_REQUIRE={required} says it must run");
    }
    eprintln!("{line}");
    if let Some(path) = std::env::var_os("STRATAVEC_SKIP_LOG") {
        // Test binaries run at once: one short append a line keeps the
        // lines whole.
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
        {
            let _ = f.write_all(format!("{line}\n").as_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skip_is_logged_and_a_required_one_fails() {
        let dir = std::env::temp_dir().join(format!("testkit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("skipped.txt");
        std::env::set_var("STRATAVEC_SKIP_LOG", &log);
        std::env::set_var("STRATAVEC_REQUIRE", "python, wordnet");
        skipped("t", Need::Procfs, "no procfs");
        let text = std::fs::read_to_string(&log).unwrap();
        assert_eq!(text, "skipped: t: no procfs [procfs]\n");
        let required = std::panic::catch_unwind(|| skipped("t", Need::Wordnet, "no data"));
        assert!(required.is_err());
        std::env::remove_var("STRATAVEC_REQUIRE");
        std::env::remove_var("STRATAVEC_SKIP_LOG");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
