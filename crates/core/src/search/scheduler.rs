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
    let in_flight = in_flight.max(1);
    let mut active: Vec<Option<Active<S>>> = (0..in_flight).map(|_| None).collect();
    let mut free_slots: Vec<u32> = (0..reader.slots() as u32).rev().collect();
    let mut queue: VecDeque<(usize, Read)> = VecDeque::new();
    // The span each busy slot was read for (a completion carries only its
    // slot), and where it starts in the read (spans of a byte-granular
    // layout are widened to the reader's alignment: `Span::aligned`).
    let mut slot_span = vec![(crate::layout::Span { offset: 0, len: 0 }, 0); reader.slots()];
    let alignment = reader.alignment() as u64;
    let mut exhausted = false;
    let mut reads = Vec::new();
    let mut completions = Vec::new();
    let mut stats = WorkerStats::default();
    let mut deferred_cursor = 0;
    loop {
        // 1. Admit new queries, advance the ones with new data, retire the
        //    finished ones (their place is refilled on the next pass).
        let mut retired = false;
        for (a, entry) in active.iter_mut().enumerate() {
            if entry.is_none() && !exhausted {
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
                    None => exhausted = true,
                }
            }
            let Some(q) = entry else { continue };
            if q.dirty && q.error.is_none() {
                q.dirty = false;
                reads.clear();
                q.state.step(ctx, &mut reads);
                for &r in &reads {
                    let st = q.state.stats();
                    st.reads += 1;
                    st.bytes += r.span.aligned(alignment).0.len as u64;
                    queue.push_back((a, r));
                }
                q.outstanding += reads.len();
                q.dirty = q.state.wants_step();
            }
            let finished = q.error.is_some() || q.state.is_done() || !q.dirty;
            if q.outstanding == 0 && finished {
                let mut q = entry.take().expect("active");
                // Added to what the query's start put there (`run_batch`:
                // its share of the work before its first read).
                q.state.stats().latency_us += q.start.elapsed().as_secs_f64() * 1e6;
                let error = q.error.map(|e| e.to_string()).or_else(|| q.state.failure());
                done(QueryOutcome {
                    index: q.index,
                    state: q.state,
                    error,
                });
                retired = true;
            }
        }

        // 2. Give queued reads to free buffer slots, submit them as one batch.
        while !queue.is_empty() {
            let Some(slot) = free_slots.pop() else { break };
            let (a, r) = queue.pop_front().expect("non-empty");
            let (read, shift) = r.span.aligned(alignment);
            slot_span[slot as usize] = (r.span, shift);
            let req = ReadRequest {
                offset: read.offset,
                len: read.len,
                slot,
                tag: ((a as u64) << 32) | r.key as u64,
            };
            if let Err(e) = reader.push(req) {
                free_slots.push(slot);
                let q = active[a].as_mut().expect("active");
                q.outstanding -= 1;
                q.error.get_or_insert(e);
            }
        }
        if reader.in_flight() > 0 {
            if reader.submit()? > 0 {
                stats.submits += 1;
            }
        } else if retired || !queue.is_empty() {
            continue;
        } else if exhausted && active.iter().all(Option::is_none) {
            return Ok(stats);
        } else {
            continue;
        }

        // 3. Routing first: completions already in the ring (a peek, no
        //    syscall) go to their queries, whose next reads are issued on the
        //    next pass. Only when none are waiting does deferred work run
        //    (the pipeline of Starling §4.2), one query's at a time, so it
        //    never holds back a read; and only when there is none of that
        //    either does the worker sleep until a read completes.
        completions.clear();
        reader.reap(0, &mut completions)?;
        // A query that yielded with work left runs again first: it yielded
        // so its reads could go out, and the rest of its routing steers
        // more of them.
        if completions.is_empty()
            && active
                .iter()
                .flatten()
                .any(|q| q.dirty && q.error.is_none())
        {
            continue;
        }
        if completions.is_empty() {
            let n = active.len();
            let mut ran = false;
            for i in 0..n {
                let a = (deferred_cursor + i) % n;
                if let Some(q) = active[a].as_mut() {
                    if q.error.is_none() && q.state.deferred(ctx) {
                        deferred_cursor = a + 1;
                        ran = true;
                        break;
                    }
                }
            }
            if ran {
                continue;
            }
            let t = Instant::now();
            reader.reap(1, &mut completions)?;
            stats.io_wait_s += t.elapsed().as_secs_f64();
        }
        for c in completions.drain(..) {
            let a = (c.tag >> 32) as usize;
            let key = c.tag as u32;
            let (span, shift) = slot_span[c.slot as usize];
            let end = shift + span.len as usize;
            let q = active[a].as_mut().expect("completion for an active query");
            q.outstanding -= 1;
            match c.result {
                Ok(n) if n as usize >= end => {
                    q.state.on_read(ctx, key, &reader.slot(c.slot)[shift..end]);
                    q.dirty = true;
                }
                Ok(n) => {
                    q.error.get_or_insert(IoError::Io {
                        op: "read",
                        path: ctx.pages_path.to_path_buf(),
                        offset: span.offset,
                        len: span.len as u64,
                        cause: std::io::Error::new(
                            std::io::ErrorKind::UnexpectedEof,
                            format!("short read: expected {end} bytes, found {n}"),
                        ),
                    });
                }
                Err(e) => {
                    q.error.get_or_insert(e);
                }
            }
            free_slots.push(c.slot);
        }
    }
}
