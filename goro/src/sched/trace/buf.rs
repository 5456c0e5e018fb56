//! Where events go while tracing is on: per-P chunks written by the P's
//! owner without a lock, one chunk under a mutex for events without a P,
//! and the list of chunks a consumer has not read yet.
//!
//! # Per-P chunks
//!
//! An event is a few bytes in the compact form (`compact/`), encoded
//! straight into the current chunk of the P the writing thread holds.
//! Only the thread holding P n writes P n's chunk (the P-held rule that
//! the run queue's single producer also rests on: a P changes hands only
//! through the idle lock or a parker, which order the old owner's writes
//! before the new owner's), so the append is plain stores followed by one
//! Release store of the chunk's length, which on x86 is an ordinary
//! `mov`. A reader (the streaming writer, a flight recorder snapshot)
//! loads the length with Acquire and reads only the bytes below it, which
//! the owner never touches again: no byte is read while it is written.
//!
//! The encoder writes into the chunk's free space without checking each
//! byte against the end: an event starts only where [`MAX_EVENT`] bytes
//! are free, so a chunk wastes at most that much at its end (under 1%).
//! Each chunk has its own encoder state (previous timestamp, task id,
//! thread, strings), kept beside it in the writer and reset with it, so
//! that a chunk decodes on its own.
//!
//! A full chunk is handed to [`Chunks::full`] and replaced by a new one,
//! both under [`Chunks`]'s lock, so a reader that takes the lock sees each
//! chunk exactly once, either as some P's current chunk or in the full
//! list, never neither. That switch happens once per several thousand
//! events, so the lock is off the per-event path.
//!
//! # Generations
//!
//! A session (a `trace_start`, a flight recorder) has a generation
//! number. A P's owner remembers which generation its current chunk
//! belongs to and takes a fresh chunk when the runtime's generation
//! moved on: after a stop and a new start, nothing of the old session
//! leaks into the new one, and no P has to be visited at start or stop
//! (an idle P has no owner to visit). Go's tracer (`trace2buf.go`,
//! `trace2runtime.go`) switches generations the same way.

use super::compact::{EncState, Event, MAX_EVENT};
use crossbeam_utils::CachePadded;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Bytes per chunk: 64 KiB (also the flight recorder's unit).
pub(crate) const CHUNK_BYTES: usize = 64 << 10;

/// A block of events from one source (a P, or the no-P buffer).
pub(crate) struct Chunk {
    /// The P whose events these are, or the runtime's `procs` for the
    /// no-P buffer.
    pub(crate) src: usize,
    bytes: Box<[UnsafeCell<u8>]>,
    /// Bytes written and published (module docs).
    len: AtomicUsize,
    /// Bytes a streaming consumer has read (that consumer only).
    pub(crate) read: AtomicUsize,
    /// The timestamp of the last event, for the flight recorder's window.
    pub(crate) last_ts: AtomicU64,
}

// SAFETY: the bytes below `len` are only read, and the bytes at or above
// it are written only by the chunk's one writer (module docs); `len` is
// published with Release and read with Acquire.
unsafe impl Sync for Chunk {}
// SAFETY: as above; the cells hold plain bytes.
unsafe impl Send for Chunk {}

impl Chunk {
    pub(crate) fn new(src: usize) -> Arc<Chunk> {
        Arc::new(Chunk {
            src,
            bytes: (0..CHUNK_BYTES).map(|_| UnsafeCell::new(0)).collect(),
            len: AtomicUsize::new(0),
            read: AtomicUsize::new(0),
            last_ts: AtomicU64::new(0),
        })
    }

    /// The free space an event may be encoded into: [`MAX_EVENT`]
    /// bytes at the published length, or `None` if fewer are left.
    ///
    /// # Safety
    /// The caller is the chunk's one writer, and drops the slice before
    /// it calls [`Chunk::commit`] or `space` again.
    // A `&mut` from `&self`: the bytes are in `UnsafeCell`s, and the
    // contract (one writer, one slice at a time) is what makes it unique.
    #[allow(clippy::mut_from_ref)]
    #[inline]
    unsafe fn space(&self) -> Option<&mut [u8; MAX_EVENT]> {
        // Relaxed: we are the only writer of `len`.
        let n = self.len.load(Ordering::Relaxed);
        if n + MAX_EVENT > CHUNK_BYTES {
            return None;
        }
        // SAFETY: the bytes from `n` on are touched only by this writer
        // (module docs), and the contract makes this slice its only
        // handle on them; `n + MAX_EVENT` is in bounds (checked above),
        // and `UnsafeCell<u8>` has the layout of `u8`.
        Some(unsafe {
            &mut *UnsafeCell::raw_get(self.bytes.as_ptr().add(n)).cast::<[u8; MAX_EVENT]>()
        })
    }

    /// Publishes `n` more bytes, written through [`Chunk::space`], of
    /// events up to `ts`.
    #[inline]
    fn commit(&self, n: usize, ts: u64) {
        let len = self.len.load(Ordering::Relaxed);
        self.last_ts.store(ts, Ordering::Relaxed);
        // Release: the bytes written are visible to whoever Acquires `len`.
        self.len.store(len + n, Ordering::Release);
    }

    /// The published bytes from `from` on.
    pub(crate) fn published(&self, from: usize) -> &[u8] {
        // Acquire: pairs with the Release store in `commit`.
        let n = self.len.load(Ordering::Acquire);
        let from = from.min(n);
        // SAFETY: the bytes below the published length are never written
        // again while the chunk is shared (it is reset only through
        // `Arc::get_mut`, in `switch`), and `from..n` is in bounds.
        unsafe {
            std::slice::from_raw_parts(
                UnsafeCell::raw_get(self.bytes.as_ptr().add(from)).cast_const(),
                n - from,
            )
        }
    }
}

/// A source's writer state: the session its chunk belongs to, the chunk,
/// and the encoder's running state for it.
#[derive(Default)]
pub(crate) struct WState {
    gen: u64,
    chunk: Option<Arc<Chunk>>,
    enc: EncState,
    /// The last clock read on this source, and whether a task event may
    /// still take it as its stamp ([`Stamps::Flight`]).
    last_ticks: u64,
    fresh: bool,
    /// The task whose poll this source is in (0: none): a flight
    /// recorder leaves out its destroy, which its poll's end implies.
    polling: u64,
}

/// How a P's events are stamped.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Stamps {
    /// A clock read per event (`trace_start`, `GORO_TRACE`,
    /// `GORO_TRACE_RAW`): exact times.
    PerEvent,
    /// A flight recorder's session: fewer clock reads and one event
    /// less a spawn. A spawn and a preemption take the stamp of the poll
    /// event before them on the P (the start of the poll that made them)
    /// instead of reading the clock, and the destroy a task's own last
    /// poll makes is left out (that poll's end says "finished"); every
    /// other event reads the clock. Only events that nothing on another P
    /// can precede may show up early: a spawn (its child does not exist
    /// before it, and the child's first poll reads its own stamp) and a
    /// preemption (inside its own poll), but not a destroy (an abort from
    /// a poll that began before the aborted task's last poll ended on
    /// another P). Two wider rules were tried and caught by
    /// `scripts/check-trace.sh --snapshot`: a poll's start taking the
    /// previous poll's end put a poll before the wake that led to it (a
    /// task from the global queue), and a wake taking its poll's start
    /// put it before the end of the woken task's previous poll on
    /// another P.
    Flight,
}

/// Whether an event of kind `k` may take the source's last stamp
/// ([`Stamps::Flight`]).
#[inline(always)]
fn takes_last_stamp(k: u8) -> bool {
    use super::kind::{CREATE, PREEMPT};
    matches!(k, CREATE | PREEMPT)
}

/// Whether an event of kind `k` leaves a stamp later task events may
/// take: the poll events (its start and end frame what follows).
#[inline(always)]
fn leaves_stamp(k: u8) -> bool {
    use super::kind::{POLL_END, POLL_START};
    matches!(k, POLL_START | POLL_END)
}

/// The writer's side of one P's buffer: touched only by the P's owner.
pub(crate) struct PWriter {
    state: UnsafeCell<WState>,
}

// SAFETY: `state` is only reached through `PWriter::with`, whose contract
// is that the caller holds the P (one thread at a time, module docs).
unsafe impl Sync for PWriter {}

impl PWriter {
    fn new() -> PWriter {
        PWriter {
            state: UnsafeCell::new(WState::default()),
        }
    }

    /// # Safety
    /// The caller holds the P this writer belongs to, and drops the
    /// reference before it lets go of the P.
    #[allow(clippy::mut_from_ref)]
    #[inline(always)]
    unsafe fn state(&self) -> &mut WState {
        // SAFETY: the contract makes us the only thread in here.
        unsafe { &mut *self.state.get() }
    }
}

/// Every chunk of the current session that a consumer may still want.
#[derive(Default)]
pub(crate) struct ChunkLists {
    /// The current chunk of each P (and of the no-P buffer, last).
    pub(crate) current: Vec<Option<Arc<Chunk>>>,
    /// Full chunks in the order they filled.
    pub(crate) full: std::collections::VecDeque<Arc<Chunk>>,
    /// Bytes in `full`.
    pub(crate) full_bytes: usize,
    /// The session these lists belong to.
    pub(crate) gen: u64,
    /// Chunks a streaming round has read and nobody else holds, for the
    /// next switch: a fresh 64 KiB chunk costs sixteen page faults as it
    /// fills. (Not used by the flight recorder: with it, snapshots lost
    /// their last few chunks, for a reason not yet found; see the
    /// flight snapshot check in `bench/results/`.)
    spare: Vec<Arc<Chunk>>,
}

/// Spare chunks kept at most.
const SPARES: usize = 32;

impl ChunkLists {
    /// Keeps `c` for reuse if nobody else holds it.
    pub(crate) fn recycle(&mut self, c: Arc<Chunk>) {
        if self.spare.len() < SPARES && Arc::strong_count(&c) == 1 {
            self.spare.push(c);
        }
    }
}

/// A runtime's event buffers.
pub(crate) struct Chunks {
    procs: usize,
    writers: Box<[CachePadded<PWriter>]>,
    /// The no-P buffer: its writer state, under a lock.
    shared: Mutex<WState>,
    pub(crate) lists: Mutex<ChunkLists>,
}

/// What to do with a full chunk: keep it for a streaming consumer, or
/// trim the list to a flight recorder's bound.
pub(crate) trait OnFull: Sync {
    fn full(&self, lists: &mut ChunkLists);
}

impl Chunks {
    /// Ps with a buffer (the no-P buffer's index).
    pub(crate) fn procs(&self) -> usize {
        self.procs
    }

    pub(crate) fn new(procs: usize) -> Chunks {
        Chunks {
            procs,
            writers: (0..procs)
                .map(|_| CachePadded::new(PWriter::new()))
                .collect(),
            shared: Mutex::new(WState::default()),
            lists: Mutex::new(ChunkLists::default()),
        }
    }

    /// Forgets every chunk (a new session starts; writers notice the new
    /// generation on their next event).
    pub(crate) fn reset(&self, gen: u64) {
        let mut l = self.lists.lock().unwrap_or_else(|e| e.into_inner());
        *l = ChunkLists {
            current: vec![None; self.procs + 1],
            gen,
            ..ChunkLists::default()
        };
    }

    /// Appends an event to P `p`'s chunk, stamped as `stamps` says.
    ///
    /// # Safety
    /// The calling thread holds P `p`.
    #[inline(always)]
    pub(crate) unsafe fn push_p(
        &self,
        p: usize,
        gen: u64,
        stamps: Stamps,
        ev: &Event<'_>,
        on_full: &dyn OnFull,
    ) {
        use super::kind::{DESTROY, POLL_END, POLL_START};
        // SAFETY: the caller holds P `p` (contract), and `st` dies here.
        let st = unsafe { self.writers[p].state() };
        let reuse =
            stamps == Stamps::Flight && st.fresh && st.gen == gen && takes_last_stamp(ev.kind);
        let ticks = if reuse {
            st.last_ticks
        } else {
            super::clock::ticks()
        };
        st.last_ticks = ticks;
        st.fresh = leaves_stamp(ev.kind) || reuse;
        // A task destroyed inside its last poll (it ran to its end, and
        // its handle was gone or read): the poll's end, "finished", says
        // as much, and leaving the destroy out spares a spawn's fourth
        // event. Per-event sessions keep it.
        if stamps == Stamps::Flight && ev.kind == DESTROY && ev.a == st.polling && ev.a != 0 {
            return;
        }
        match ev.kind {
            POLL_START => st.polling = ev.a,
            POLL_END => st.polling = 0,
            _ => {}
        }
        // The hot path: the chunk of this session has room (and the
        // hottest: the event needs neither definitions nor its thread).
        if st.gen == gen {
            if let Some(c) = &st.chunk {
                // SAFETY: `st` is this P's writer state, so we are the
                // chunk's one writer; the slice dies before `commit`.
                if let Some(space) = unsafe { c.space() } {
                    let n = if ev.create.is_none() && st.enc.plain(ev.tid) {
                        st.enc.encode_plain(ticks, ev.kind, ev.a, ev.b, space)
                    } else {
                        st.enc.encode(ticks, ev, space)
                    };
                    c.commit(n, ticks);
                    return;
                }
            }
        }
        self.push(p, st, gen, ticks, ev, on_full)
    }

    /// Appends an event to the no-P buffer; its timestamp is read here,
    /// under the lock, so this buffer's events are in time order like a
    /// P's.
    pub(crate) fn push_shared(&self, gen: u64, ev: &Event<'_>, on_full: &dyn OnFull) {
        let mut st = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        let ticks = super::clock::ticks();
        self.push(self.procs, &mut st, gen, ticks, ev, on_full);
    }

    #[inline(never)]
    fn push(
        &self,
        src: usize,
        st: &mut WState,
        gen: u64,
        ticks: u64,
        ev: &Event<'_>,
        on_full: &dyn OnFull,
    ) {
        if st.gen == gen {
            if let Some(c) = &st.chunk {
                // SAFETY: `st` is this source's writer state, so we are
                // the chunk's one writer; the slice dies before `commit`.
                if let Some(space) = unsafe { c.space() } {
                    let n = st.enc.encode(ticks, ev, space);
                    c.commit(n, ticks);
                    return;
                }
            }
        }
        self.switch(src, st, gen, on_full);
        if let Some(c) = &st.chunk {
            // SAFETY: as above; a fresh chunk has room for one event.
            if let Some(space) = unsafe { c.space() } {
                let n = st.enc.encode(ticks, ev, space);
                c.commit(n, ticks);
            }
        }
    }

    /// Gives the writer of `src` a fresh chunk, filing the old one.
    #[cold]
    fn switch(&self, src: usize, st: &mut WState, gen: u64, on_full: &dyn OnFull) {
        st.enc.reset();
        let mut l = self.lists.lock().unwrap_or_else(|e| e.into_inner());
        if l.gen != gen || l.current.len() <= src {
            // A writer that read the flag of a session now over: drop
            // the event rather than file it into the next session.
            st.gen = gen;
            st.chunk = None;
            return;
        }
        let fresh = match l.spare.pop() {
            Some(mut c) => match Arc::get_mut(&mut c) {
                // Ours alone (`recycle` keeps only unshared chunks, and
                // nothing clones a spare): start it over for `src`.
                Some(m) => {
                    m.src = src;
                    *m.len.get_mut() = 0;
                    *m.read.get_mut() = 0;
                    *m.last_ts.get_mut() = 0;
                    c
                }
                None => Chunk::new(src),
            },
            None => Chunk::new(src),
        };
        let old = st.chunk.replace(fresh.clone());
        if st.gen == gen {
            if let Some(old) = old {
                l.full_bytes += CHUNK_BYTES;
                l.full.push_back(old);
                on_full.full(&mut l);
            }
        }
        st.gen = gen;
        l.current[src] = Some(fresh);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::trace::compact::{Ev, TICK_SHIFT};
    use crate::sched::trace::kind::*;

    struct Keep;
    impl OnFull for Keep {
        fn full(&self, _: &mut ChunkLists) {}
    }

    fn ev(kind: u8, a: u64, b: u64) -> Event<'static> {
        Event {
            kind,
            tid: 1,
            a,
            b,
            create: None,
        }
    }

    /// Records `kinds` on P 0 as `stamps` says, letting the clock move on
    /// by at least one unit before each, and decodes them.
    fn record(stamps: Stamps, kinds: &[u8]) -> Vec<Ev> {
        let c = Chunks::new(1);
        c.reset(1);
        let spawn = crate::sched::trace::compact::Create {
            parent: 0,
            blocking: false,
            site: std::panic::Location::caller(),
            name: None,
        };
        for (i, &k) in kinds.iter().enumerate() {
            let t = super::super::clock::ticks();
            while super::super::clock::ticks() < t + (2 << TICK_SHIFT) {
                std::hint::spin_loop();
            }
            let e = Event {
                create: (k == CREATE).then_some(&spawn),
                ..ev(k, 10 + i as u64, 0)
            };
            // SAFETY: this thread is the only writer of the test's P 0.
            unsafe { c.push_p(0, 1, stamps, &e, &Keep) };
        }
        let l = c.lists.lock().unwrap();
        let chunk = l.current[0].as_ref().expect("P 0's chunk");
        let mut out = Vec::new();
        crate::sched::trace::compact::decode_chunk(chunk.published(0), &mut out);
        out
    }

    #[test]
    fn per_poll_stamps_read_the_clock_at_poll_ends_and_other_events() {
        let kinds = [
            PROC_START, POLL_START, CREATE, UNBLOCK, POLL_END, DESTROY, POLL_START, PREEMPT,
            POLL_END, STEAL, UNBLOCK, POLL_START, POLL_END,
        ];
        let evs = record(Stamps::Flight, &kinds);
        assert_eq!(evs.len(), kinds.len());
        let ts: Vec<u64> = evs.iter().map(|e| e.ts).collect();
        // Reads at: every event but a spawn and a preemption after a
        // poll event, which take the stamp before them.
        let reads = [0, 1, 3, 4, 5, 6, 8, 9, 10, 11, 12];
        for i in 1..ts.len() {
            if reads.contains(&i) {
                assert!(ts[i] > ts[i - 1], "event {i} ({}) reads: {ts:?}", kinds[i]);
            } else {
                assert_eq!(ts[i], ts[i - 1], "event {i} ({}) reuses: {ts:?}", kinds[i]);
            }
        }
        let exact = record(Stamps::PerEvent, &kinds);
        assert!(
            exact.windows(2).all(|w| w[1].ts > w[0].ts),
            "per event, every event reads the clock"
        );
    }

    #[test]
    fn a_flight_recorder_leaves_out_a_destroy_inside_the_last_poll() {
        use crate::sched::trace::OUT_FINISHED;
        // Task 7 is destroyed inside its last poll (a spawned task that
        // ran to its end); task 8 after its poll ended (its handle read
        // the output later); task 9 inside a poll of task 7's.
        let evs = [
            ev(POLL_START, 7, 0),
            ev(DESTROY, 7, 0),
            ev(POLL_END, 7, OUT_FINISHED),
            ev(POLL_START, 8, 0),
            ev(POLL_END, 8, OUT_FINISHED),
            ev(DESTROY, 8, 0),
            ev(POLL_START, 7, 0),
            ev(DESTROY, 9, 0),
            ev(POLL_END, 7, 3),
        ];
        for (stamps, destroys) in [
            (Stamps::Flight, &[8, 9][..]),
            (Stamps::PerEvent, &[7, 8, 9]),
        ] {
            let c = Chunks::new(1);
            c.reset(1);
            for e in &evs {
                // SAFETY: this thread is the only writer of the test's P 0.
                unsafe { c.push_p(0, 1, stamps, e, &Keep) };
            }
            let l = c.lists.lock().unwrap();
            let mut out = Vec::new();
            crate::sched::trace::compact::decode_chunk(
                l.current[0].as_ref().unwrap().published(0),
                &mut out,
            );
            let destroyed: Vec<u64> = out
                .iter()
                .filter(|e| e.kind == DESTROY)
                .map(|e| e.a)
                .collect();
            assert_eq!(destroyed, destroys, "{stamps:?}: {out:?}");
            assert_eq!(out.len(), evs.len() - (3 - destroys.len()), "{stamps:?}");
        }
    }
}
