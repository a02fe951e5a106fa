//! One worker thread's event loop: keeps up to `in_flight` queries active over
//! one block reader, submits every read they ask for in one batch, and feeds
//! each completion to its query. Two cores can then keep the device at queue
//! depth 30-60 instead of the 2-8 of one-query-per-thread engines, which is
//! where the device's throughput is (REFERENCE.md: 13k reads/s at depth 1,
//! 110k/s at 64).

use super::context::SearchContext;
use super::{QueryState, Read};
use std::collections::VecDeque;
use std::time::Instant;
use stratavec_io::{BlockReader, IoError, ReadRequest};

/// A finished query, handed back with its final state.
pub struct QueryOutcome<S> {
    /// The caller's index of the query.
    pub index: usize,
    pub state: S,
    /// Set when a read failed or a record was corrupt: the query's result is
    /// incomplete and must be reported as an error (the other queries are
    /// unaffected).
    pub error: Option<String>,
}

/// What the worker measured about itself.
#[derive(Clone, Copy, Debug, Default)]
pub struct WorkerStats {
    /// Seconds blocked waiting for completions.
    pub io_wait_s: f64,
    /// Submission batches.
    pub submits: u64,
}

struct Active<S> {
    index: usize,
    state: S,
    start: Instant,
    outstanding: usize,
    dirty: bool,
    error: Option<IoError>,
}

/// Runs queries from `next` until it returns `None` and all are finished,
/// calling `done` for each. Fails only if the reader itself breaks.
pub fn run_worker<S, N, D>(
    ctx: &SearchContext,
    reader: &mut dyn BlockReader,
    in_flight: usize,
    mut next: N,
    mut done: D,
) -> Result<WorkerStats, IoError>
where
    S: QueryState,
    N: FnMut() -> Option<(usize, S)>,
    D: FnMut(QueryOutcome<S>),
{
    let mut w = Worker::new(ctx, reader, in_flight);
    loop {
        // 1. Admit new queries, advance the ones with new data, retire the
        //    finished ones (their place is refilled on the next pass).
        let retired = w.advance(&mut next, &mut done)?;

        // 2. Give queued reads to free buffer slots, submit them as one batch.
        w.push_queued();
        if w.reader.in_flight() > 0 {
            if w.reader.submit()? > 0 {
                w.stats.submits += 1;
            }
        } else if retired || !w.queue.is_empty() {
            continue;
        } else if w.exhausted && w.active.iter().all(Option::is_none) {
            return Ok(w.stats);
        } else {
            continue;
        }

        // 3. Routing first: completions already in the ring (a peek, no
        //    syscall) go to their queries, whose next reads are issued on the
        //    next pass. Only when none are waiting does deferred work run
        //    (the pipeline of Starling §4.2), one query's at a time, so it
        //    never holds back a read; and only when there is none of that
        //    either does the worker sleep until a read completes.
        w.completions.clear();
        w.reader.reap(0, &mut w.completions)?;
        if w.completions.is_empty() {
            // A query that yielded with work left runs again first: it
            // yielded so its reads could go out, and the rest of its
            // routing steers more of them.
            if w.any_wants_step() || w.run_one_deferred() {
                continue;
            }
            w.wait_for_completion()?;
        }
        w.route_completions();
    }
}

/// Stepping time after which a pass submits the reads queued so far
/// ([`Worker::advance`]): a submission costs ~1–2 µs of system time, so at
/// this spacing it stays under a tenth of the pass while a read waits at
/// most this long (a tenth of a device round trip) to go out.
const FLUSH_AFTER: std::time::Duration = std::time::Duration::from_micros(20);

/// One worker's state between the steps of its loop: the queries in
/// flight, the reads they asked for that wait for a buffer slot, and what
/// each busy slot was read for. Held in one place so the loop's steps are
/// methods; every buffer is allocated here, once, and reused by each pass.
struct Worker<'a, S> {
    ctx: &'a SearchContext<'a>,
    reader: &'a mut dyn BlockReader,
    active: Vec<Option<Active<S>>>,
    free_slots: Vec<u32>,
    /// Reads asked for and not yet given a slot: (active index, read).
    queue: VecDeque<(usize, Read)>,
    /// The span each busy slot was read for (a completion carries only its
    /// slot), and where it starts in the read (spans of a byte-granular
    /// layout are widened to the reader's alignment: `Span::aligned`).
    slot_span: Vec<(crate::layout::Span, usize)>,
    alignment: u64,
    /// `next` has returned `None`: no query will be admitted again.
    exhausted: bool,
    /// The reads of the query being stepped (reused by every step).
    reads: Vec<Read>,
    completions: Vec<stratavec_io::Completion>,
    stats: WorkerStats,
    /// Where the search for a query with deferred work starts, so each
    /// query's turn comes round.
    deferred_cursor: usize,
}

impl<'a, S: QueryState> Worker<'a, S> {
    fn new(ctx: &'a SearchContext, reader: &'a mut dyn BlockReader, in_flight: usize) -> Self {
        let in_flight = in_flight.max(1);
        let slots = reader.slots();
        Worker {
            ctx,
            active: (0..in_flight).map(|_| None).collect(),
            free_slots: (0..slots as u32).rev().collect(),
            queue: VecDeque::new(),
            slot_span: vec![(crate::layout::Span { offset: 0, len: 0 }, 0); slots],
            alignment: reader.alignment() as u64,
            reader,
            exhausted: false,
            reads: Vec::new(),
            completions: Vec::new(),
            stats: WorkerStats::default(),
            deferred_cursor: 0,
        }
    }

    /// Step 1 of the loop over every place for a query: fills an empty one
    /// from `next`, steps a query with new data (queueing the reads it asks
    /// for), and hands a finished one to `done`. True if any was retired.
    ///
    /// Reads queued during the pass go out once [`FLUSH_AFTER`] of stepping
    /// has passed since the last submission, not only at the pass's end: a
    /// new query's first step may run its whole in-RAM search stage
    /// (gorgeous with every list cached: ~90 µs on wordnet-mpnet), and a
    /// pass admitting a dozen of them held the first one's refinement reads
    /// back a millisecond — with the refinement's waves, queries then
    /// waited on the pass, not the device (13.3 of 20 CPU-seconds busy).
    #[inline]
    fn advance<N, D>(&mut self, next: &mut N, done: &mut D) -> Result<bool, IoError>
    where
        N: FnMut() -> Option<(usize, S)>,
        D: FnMut(QueryOutcome<S>),
    {
        let mut retired = false;
        let mut flushed = Instant::now();
        // The clock is read only after a step: the time between flushes is
        // the steps', and a place not stepped takes nanoseconds.
        let mut stepped = false;
        for a in 0..self.active.len() {
            if std::mem::take(&mut stepped)
                && !self.queue.is_empty()
                && flushed.elapsed() >= FLUSH_AFTER
            {
                self.push_queued();
                if self.reader.submit()? > 0 {
                    self.stats.submits += 1;
                }
                flushed = Instant::now();
            }
            let entry = &mut self.active[a];
            if entry.is_none() && !self.exhausted {
                match next() {
                    Some((index, state)) => {
                        *entry = Some(Active {
                            index,
                            state,
                            start: Instant::now(),
                            outstanding: 0,
                            dirty: true,
                            error: None,
                        })
                    }
                    None => self.exhausted = true,
                }
            }
            let Some(q) = entry else { continue };
            if q.dirty && q.error.is_none() {
                q.dirty = false;
                stepped = true;
                self.reads.clear();
                q.state.step(self.ctx, &mut self.reads);
                for &r in &self.reads {
                    let st = q.state.stats();
                    st.reads += 1;
                    st.bytes += r.span.aligned(self.alignment).0.len as u64;
                    self.queue.push_back((a, r));
                }
                q.outstanding += self.reads.len();
                q.dirty = q.state.wants_step();
            }
            let finished = q.error.is_some() || q.state.is_done() || !q.dirty;
            if q.outstanding == 0 && finished {
                retire(entry.take().expect("active"), done);
                retired = true;
            }
        }
        Ok(retired)
    }

    /// Step 2: gives queued reads to free buffer slots, in the order they
    /// were asked for, and pushes them to the reader (submitted as one
    /// batch by the loop). A read the reader refuses fails its query only.
    #[inline]
    fn push_queued(&mut self) {
        while !self.queue.is_empty() {
            let Some(slot) = self.free_slots.pop() else {
                break;
            };
            let (a, r) = self.queue.pop_front().expect("non-empty");
            let (read, shift) = r.span.aligned(self.alignment);
            self.slot_span[slot as usize] = (r.span, shift);
            let req = ReadRequest {
                offset: read.offset,
                len: read.len,
                slot,
                tag: ((a as u64) << 32) | r.key as u64,
            };
            if let Err(e) = self.reader.push(req) {
                self.free_slots.push(slot);
                let q = self.active[a].as_mut().expect("active");
                q.outstanding -= 1;
                q.error.get_or_insert(e);
            }
        }
    }

    /// True if a query yielded with work left that needs no read.
    #[inline]
    fn any_wants_step(&self) -> bool {
        self.active
            .iter()
            .flatten()
            .any(|q| q.dirty && q.error.is_none())
    }

    /// Runs the deferred work of one query, the first after the last one
    /// that ran (round-robin, so no query's pipeline starves). True if any
    /// query had some.
    #[inline]
    fn run_one_deferred(&mut self) -> bool {
        let n = self.active.len();
        for i in 0..n {
            let a = (self.deferred_cursor + i) % n;
            if let Some(q) = self.active[a].as_mut() {
                if q.error.is_none() && q.state.deferred(self.ctx) {
                    self.deferred_cursor = a + 1;
                    return true;
                }
            }
        }
        false
    }

    /// Sleeps until at least one read completes, counting the time waited.
    #[inline]
    fn wait_for_completion(&mut self) -> Result<(), IoError> {
        let t = Instant::now();
        self.reader.reap(1, &mut self.completions)?;
        self.stats.io_wait_s += t.elapsed().as_secs_f64();
        Ok(())
    }

    /// Feeds each reaped completion to its query (marking it for a step),
    /// or records why it failed (an error or a short read), and frees its
    /// slot.
    #[inline]
    fn route_completions(&mut self) {
        for c in self.completions.drain(..) {
            let a = (c.tag >> 32) as usize;
            let key = c.tag as u32;
            let (span, shift) = self.slot_span[c.slot as usize];
            let end = shift + span.len as usize;
            let q = self.active[a]
                .as_mut()
                .expect("completion for an active query");
            q.outstanding -= 1;
            match c.result {
                Ok(n) if n as usize >= end => {
                    q.state
                        .on_read(self.ctx, key, &self.reader.slot(c.slot)[shift..end]);
                    q.dirty = true;
                }
                Ok(n) => {
                    q.error.get_or_insert(short_read(self.ctx, span, end, n));
                }
                Err(e) => {
                    q.error.get_or_insert(e);
                }
            }
            self.free_slots.push(c.slot);
        }
    }
}

/// Hands a finished query to `done` with its latency and its error, if any.
#[inline]
fn retire<S: QueryState, D: FnMut(QueryOutcome<S>)>(mut q: Active<S>, done: &mut D) {
    // Added to what the query's start put there (`run_batch`: its share of
    // the work before its first read).
    q.state.stats().latency_us += q.start.elapsed().as_secs_f64() * 1e6;
    let error = q.error.map(|e| e.to_string()).or_else(|| q.state.failure());
    done(QueryOutcome {
        index: q.index,
        state: q.state,
        error,
    });
}

/// The error of a read that returned fewer bytes than its span needs.
#[cold]
fn short_read(ctx: &SearchContext, span: crate::layout::Span, end: usize, n: u32) -> IoError {
    IoError::Io {
        op: "read",
        path: ctx.pages_path.to_path_buf(),
        offset: span.offset,
        len: span.len as u64,
        cause: std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!("short read: expected {end} bytes, found {n}"),
        ),
    }
}
