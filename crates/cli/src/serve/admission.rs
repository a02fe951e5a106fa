//! Which searches run now, which wait, and which are turned away: at most
//! `max_concurrent` run (a semaphore permit each, held until the search's
//! work has really stopped), at most `max_queue` more wait for a permit,
//! and a request beyond both gets 503 at once. A bounded queue keeps a
//! burst from piling up work the clients will have given up on; the 503's
//! Retry-After tells them when to come back.

use super::errors::ApiError;
use super::limits::secs;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

pub struct Admission {
    permits: Arc<Semaphore>,
    max_concurrent: usize,
    max_queue: usize,
    waiting: AtomicUsize,
}

/// One place in the queue, given back when the request stops waiting
/// (admitted, timed out, or dropped with its connection).
struct Place<'a>(&'a AtomicUsize);

impl Drop for Place<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Admission {
    pub fn new(max_concurrent: usize, max_queue: usize) -> Admission {
        Admission {
            permits: Arc::new(Semaphore::new(max_concurrent)),
            max_concurrent,
            max_queue,
            waiting: AtomicUsize::new(0),
        }
    }

    /// Searches holding a permit now.
    pub fn running(&self) -> usize {
        self.max_concurrent - self.permits.available_permits()
    }

    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Acquire)
    }

    /// A permit to search: at once if one is free, else after waiting in
    /// the queue until `deadline` (504 then: the search never started);
    /// 503 when the queue is full.
    pub async fn admit(
        &self,
        deadline: Instant,
        timeout: Duration,
    ) -> Result<OwnedSemaphorePermit, ApiError> {
        if let Ok(p) = self.permits.clone().try_acquire_owned() {
            return Ok(p);
        }
        let place = self.take_place()?;
        let permit = tokio::time::timeout_at(deadline, self.permits.clone().acquire_owned()).await;
        drop(place);
        match permit {
            Ok(Ok(p)) => Ok(p),
            // The semaphore is never closed; were it, the server is going away.
            Ok(Err(_)) => Err(ApiError::internal("admission semaphore closed")),
            Err(_) => Err(ApiError::deadline(format!(
                "search: did not finish within {} s (search_timeout_s); its work was cancelled \
                 (it waited for a slot the whole time)",
                secs(timeout)
            ))),
        }
    }

    fn take_place(&self) -> Result<Place<'_>, ApiError> {
        let mut now = self.waiting.load(Ordering::Acquire);
        loop {
            if now >= self.max_queue {
                return Err(ApiError::busy(format!(
                    "server busy: {} searches running and {now} waiting (max_queue); retry later",
                    self.running()
                )));
            }
            match self
                .waiting
                .compare_exchange(now, now + 1, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Ok(Place(&self.waiting)),
                Err(seen) => now = seen,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn runs_waits_and_turns_away() {
        let a = Arc::new(Admission::new(1, 1));
        let far = Instant::now() + Duration::from_secs(60);
        let first = a.admit(far, Duration::from_secs(60)).await.unwrap();
        assert_eq!((a.running(), a.waiting()), (1, 0));
        // The second waits in the queue...
        let a2 = a.clone();
        let second =
            tokio::spawn(async move { a2.admit(far, Duration::from_secs(60)).await.map(|_| ()) });
        while a.waiting() == 0 {
            tokio::task::yield_now().await;
        }
        // ...so the third finds it full.
        let e = a.admit(far, Duration::from_secs(60)).await.unwrap_err();
        assert_eq!(e.status.as_u16(), 503);
        assert_eq!(
            e.message,
            "server busy: 1 searches running and 1 waiting (max_queue); retry later"
        );
        drop(first);
        second.await.unwrap().unwrap();
        assert_eq!((a.running(), a.waiting()), (0, 0));
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_wait_past_the_deadline_is_a_504() {
        let a = Admission::new(1, 4);
        let far = Instant::now() + Duration::from_secs(60);
        let _held = a.admit(far, Duration::from_secs(60)).await.unwrap();
        let soon = Instant::now() + Duration::from_millis(20);
        let e = a.admit(soon, Duration::from_millis(20)).await.unwrap_err();
        assert_eq!(e.status.as_u16(), 504);
        assert!(
            e.message
                .starts_with("search: did not finish within 0.02 s (search_timeout_s)"),
            "{}",
            e.message
        );
        assert_eq!(a.waiting(), 0);
    }
}
