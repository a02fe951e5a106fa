//! Progress bars with ETA on stderr; indicatif hides them when stderr is not
//! a terminal, so logs and pipes stay clean.

use indicatif::{ProgressBar, ProgressStyle};
use std::path::Path;
use std::sync::Mutex;

#[derive(Default)]
pub struct Bars {
    bar: Mutex<Option<ProgressBar>>,
}

impl stratavec::progress::Progress for Bars {
    fn stage(&self, name: &str, total: u64) {
        let bar = if total > 0 {
            let b = ProgressBar::new(total);
            b.set_style(
                ProgressStyle::with_template("{msg:>12} [{bar:40}] {pos}/{len} ({eta} left)")
                    .expect("template")
                    .progress_chars("=> "),
            );
            b
        } else {
            let b = ProgressBar::new_spinner();
            b.set_style(
                ProgressStyle::with_template("{msg:>12} {spinner} {elapsed}").expect("template"),
            );
            b.enable_steady_tick(std::time::Duration::from_millis(200));
            b
        };
        bar.set_message(name.to_string());
        if let Ok(mut g) = self.bar.lock() {
            *g = Some(bar);
        }
    }

    fn set(&self, done: u64) {
        if let Ok(g) = self.bar.lock() {
            if let Some(b) = g.as_ref() {
                b.set_position(done);
            }
        }
    }

    fn finish(&self) {
        if let Ok(mut g) = self.bar.lock() {
            if let Some(b) = g.take() {
                b.finish_and_clear();
            }
        }
    }

    /// Set by the SIGINT/SIGTERM handler that `build` installs
    /// (`stratavec_io::signals`); never true for commands that install none.
    fn cancelled(&self) -> bool {
        stratavec_io::signals::caught().is_some()
    }
}

/// Ends a build stopped by a signal: one line, and the shell's status for
/// death by that signal (128 + its number: 130 for SIGINT, 143 for SIGTERM).
/// The build has already removed its staging directory.
pub fn exit_interrupted(index_dir: &Path) -> ! {
    let sig = stratavec_io::signals::caught().unwrap_or(2);
    let name = match sig {
        2 => "SIGINT",
        15 => "SIGTERM",
        _ => "a signal",
    };
    eprintln!(
        "stratavec: build stopped by {name}; nothing was written to {} (a previous index there is unchanged)",
        index_dir.display()
    );
    std::process::exit(128 + sig)
}
