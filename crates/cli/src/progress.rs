//! Progress bars with ETA on stderr; indicatif hides them when stderr is not
//! a terminal, so logs and pipes stay clean.

use indicatif::{ProgressBar, ProgressStyle};
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

    fn note(&self, msg: &str) {
        // Above a bar that may be drawing, and on stderr like the bars, so
        // stdout (the report, --json) stays clean.
        match self.bar.lock().ok().as_ref().and_then(|g| g.as_ref()) {
            Some(b) => b.suspend(|| eprintln!("note: {msg}")),
            None => eprintln!("note: {msg}"),
        }
    }
}
