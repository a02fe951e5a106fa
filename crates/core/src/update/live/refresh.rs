//! A handle that does not write follows the ones that do (issue #55:
//! "open handles move to the new generation without a reopen"): a
//! generation published over the directory is opened and its log
//! replayed; records another process appends to the log are read on from
//! where the handle stopped. Searches look at most every `REFRESH_MS`.

use super::*;

impl LiveIndex {
    /// Moves this handle to what others wrote since it last looked: a
    /// generation published over the directory by another handle or
    /// process (opened, its log replayed; the old one is dropped once the
    /// searches on it end), or records another process appended to the
    /// log. A handle that has written holds the writer lock, so nobody
    /// else writes and it never needs this. Returns whether anything
    /// changed. Searches call it at most every [`REFRESH_MS`].
    pub fn refresh(&self) -> Result<bool> {
        let Ok(writer) = self.writer.try_lock() else {
            return Ok(false); // this handle is writing or merging
        };
        if writer.is_some() {
            return Ok(false);
        }
        // Read before the open: if the directory switches again meanwhile,
        // the next look sees that it changed.
        let now = dir_id(&self.dir);
        if now != *self.dir_id.lock().unwrap_or_else(|e| e.into_inner()) {
            let (state, end) = State::replayed(Index::open(&self.dir, &self.opts)?, &self.dir)?;
            *self.state.write().unwrap_or_else(|e| e.into_inner()) = state;
            *self.dir_id.lock().unwrap_or_else(|e| e.into_inner()) = now;
            self.log_end.store(end, Ordering::Release);
            return Ok(true);
        }
        let path = self.dir.join(WAL_FILE);
        let len = match std::fs::metadata(&path) {
            Ok(m) => m.len(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(Error::file("look at update log", &path, e)),
        };
        let end = self.log_end.load(Ordering::Acquire);
        if len <= end {
            return Ok(false);
        }
        let next = self.read().seq + 1;
        let (records, new_end) = wal::read_after(&path, self.dim(), end, next)?;
        if !records.is_empty() {
            let mut s = self.state.write().unwrap_or_else(|e| e.into_inner());
            s.replay(&records, &self.dir)?;
        }
        self.log_end.store(new_end, Ordering::Release);
        Ok(!records.is_empty())
    }

    /// Why the last automatic refresh failed, if it did (searches then go
    /// on over what the handle had).
    pub fn refresh_error(&self) -> Option<String> {
        self.refresh_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// A refresh if [`REFRESH_MS`] passed since the last look (one thread
    /// looks; the others go on).
    pub(super) fn maybe_refresh(&self) {
        let now = self.opened.elapsed().as_millis() as u64;
        let last = self.looked.load(Ordering::Relaxed);
        if now < last + REFRESH_MS
            || self
                .looked
                .compare_exchange(last, now, Ordering::AcqRel, Ordering::Relaxed)
                .is_err()
        {
            return;
        }
        let outcome = self.refresh().err().map(|e| e.to_string());
        *self.refresh_error.lock().unwrap_or_else(|e| e.into_inner()) = outcome;
    }
}
