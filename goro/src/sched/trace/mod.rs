//! The execution tracer's recorder: what every P, M and task did, and
//! when, recorded in a compact binary form and written in Perfetto's own
//! format when read (the public face is `crate::trace`).
//!
//! # What is recorded
//!
//! Go's vocabulary (`runtime/trace`): a P is taken and given back (by
//! which M), an M spins, parks and is woken, a P steals from another, a
//! task is created (with its parent and spawn site), starts a poll, ends
//! it (parked on what, yielded, or finished), is unblocked (by which
//! task) and destroyed; `block_in_place` begins and ends, and a blocking
//! pool thread runs a `spawn_blocking` call; timers fire, the network
//! poller readies tasks, the coop budget preempts a task, the monitor
//! cycles pools and reports a stuck poll (`machine/stuck.rs`).
//! [`Runtime::trace_start`](crate::Runtime::trace_start) records this
//! until `trace_stop` and writes it to a writer in Perfetto's format; `GORO_TRACE=path` does it for the life of each
//! runtime; `GORO_TRACE_RAW=path` writes the compact form as it is
//! recorded, for `goro-trace` (or [`to_perfetto`]) to convert later; a
//! [`FlightRecorder`] keeps only the last stretch of it, in bounded
//! memory, and converts it on demand.
//!
//! # Why this shape
//!
//! It follows the design of Go's tracer (`trace2*.go`), for the same
//! reasons:
//!
//! * **Per-P buffers.** The thread holding a P appends to that P's
//!   buffer with plain stores and one Release store, no lock and no
//!   read-modify-write (`buf.rs`): the only thread that could race it
//!   would have to hold the same P. Events without a P (a `block_on`
//!   caller, a parked M, a blocking-pool thread, the monitor) go to one
//!   buffer under a mutex; they are rare by construction, as for the
//!   counters (`stats.rs`).
//! * **Compact now, Perfetto later.** An event is a kind byte and a few
//!   varints (`compact/`): the time since the chunk's previous event in
//!   units of 16 clock ticks, the thread only when it changed, task ids
//!   as deltas from the previous one, spawn sites and names as indices
//!   into strings the chunk defines once. A ring's hop (a wake, a poll
//!   end, a poll start) is 11 bytes. Nothing is converted while the
//!   program runs: the streaming writer thread copies the chunks' bytes
//!   to the file (`GORO_TRACE_RAW`) or to a spill that is converted to
//!   Perfetto's format when the session stops (`trace_start`,
//!   `GORO_TRACE`), as `go tool trace` converts Go's binary trace after
//!   the fact. A poll pays for a clock read and a few stores.
//! * **Generations.** Starting or stopping a session bumps a generation
//!   number; a P's owner sees it on its next event and takes a fresh
//!   buffer. Nobody has to stop the world or visit each P (an idle P has
//!   no owner to visit).
//! * **Off costs one branch.** Every hook is an inlined check of a flag
//!   that is false unless some session runs: a relaxed load of the
//!   runtime's `on` flag where the hook has the runtime at hand, else of
//!   a process-wide count of sessions (`ANY_ON`). No clock is read and
//!   nothing is written while tracing is off.
//!
//! What was rejected:
//!
//! * **Perfetto packets while running** (the first version): the writer
//!   thread turned each hop into seven packets, ~350 bytes, on the cores
//!   the program was using; with four-word raw events (96 bytes a hop)
//!   the trace cost 4.4-5.2x CPU per op on the hand-off rows
//!   (`BENCH_RESULTS.md`, "Trace overhead").
//! * **Interning across the session** (one table of names and sites for
//!   the whole trace, as Go's string table per generation): it needs a
//!   shared table on the spawn path, and a flight recorder that drops old
//!   chunks would drop definitions the chunks left still use. Per-chunk
//!   interning costs one definition per site per 64 KiB.
//! * **Fewer clock reads, for a flight recorder.** A hop's three TSC
//!   reads (17-30 ns each on the 2-core VM) were half of what a recorded
//!   event cost, but a hop's events cannot share them: a wake stamped
//!   with its poll's start, or a poll's start with the previous poll's
//!   end, put an event before what caused it on another P, and
//!   `scripts/check-trace.sh --snapshot` failed (`buf::Stamps`). What a
//!   flight recorder (`GORO_FLIGHT`, [`FlightRecorder`]) saves instead:
//!   a spawn's and a preemption's clock read (they take their poll's
//!   start), and the destroy a task's own last poll makes (its end says
//!   "finished"). `trace_start`, `GORO_TRACE` and `GORO_TRACE_RAW`
//!   record every event with its own read. With that and an out-of-line
//!   copy of `emit` per kind, the flight recorder's cost on the hand-off
//!   rows fell from 1.6-2.4x to 1.2-1.6x at the median, and from 73-85%
//!   to 46-52% more instructions (`BENCH_RESULTS.md`).
//! * **Nanoseconds in the file**: a `clock_gettime` costs ~60 ns here,
//!   the TSC 17-30 ns; ticks become nanoseconds when converted, through
//!   two stamps in the file (`clock.rs`).
//!
//! Converting merges the sources in time order, round by round: each
//! round, the writer thread reads the clock, steps back a lag (20 ms) to
//! get the round's *mark*, copies what each buffer has published and
//! writes the mark after it; the converter sorts what it has and
//! converts the events older than the mark, keeping the rest for the
//! next round (`compact/convert.rs`). An event's timestamp is read by
//! the thread that then appends it, so an event older than the mark is
//! missing from the round only if its thread was preempted for longer
//! than the lag between the two; such a straggler is written at the time
//! of the last event written (the packets never go back in time, and
//! slices stay well nested).
//!
//! # The flight recorder
//!
//! Go 1.25's `FlightRecorder` keeps the last `MinAge` of the trace within
//! `MaxBytes`. goro's does the same with the buffers above: a full buffer
//! joins a list; the list drops its oldest buffers while they hold more
//! than `max_bytes`, and drops a buffer whose last event is older than
//! the window. Buffers of one P fill in order, so what is left of each
//! source is an unbroken stretch that ends now: within the window no
//! event is missing as long as the window's events fit in `max_bytes`
//! (when they do not, the byte bound wins, as in Go). The chunks hold
//! compact events, about 5 bytes each, so 64 MiB keeps some 13 million
//! events (the four-word form kept 2.8 million). Memory is at most
//! `max_bytes` plus one 64 KiB buffer per P and one for events without a
//! P ([`FlightRecorder::buffered_bytes`]).
//!
//! # What Perfetto shows
//!
//! One process track with three groups: a track per P (slices "held by
//! M3", and inside them one slice per poll, named after the task), a
//! track per thread (spinning, parked, `block_in_place`, blocking-pool
//! runs), and a track per task (`running on P1`, `parked: chan receive`).
//! An arrow (a flow) goes from each wake-up, and from each spawn, to the
//! poll it led to. Open the file at <https://ui.perfetto.dev>.

pub(crate) mod auto;
mod buf;
pub(crate) mod clock;
mod compact;
mod emit;
mod env;
mod flight;
mod perfetto;
mod proto;
mod session;

pub use auto::{DEFAULT_FLIGHT_INTERVAL, DEFAULT_FLIGHT_LATENCY, FLIGHT_BYTES, FLIGHT_WINDOW};
pub use compact::Converted;
pub(crate) use env::{env_session_var, from_env, runtime_dropped};
pub(crate) use flight::flight_start;
pub use flight::{FlightRecorder, DEFAULT_FLIGHT_BYTES};
pub(crate) use session::{start_stream, stop_stream, Sink};

/// Reads a raw trace (the file `GORO_TRACE_RAW` writes) from `raw` and
/// writes it to `out` in Perfetto's format, as the `goro-trace` binary
/// does. A file cut off in the middle (its program died) converts as far
/// as its events are whole, and says so in [`Converted::cut_off`]; input
/// that is not a raw trace of this version is an `InvalidData` error
/// saying what is wrong and what is accepted.
///
/// ```
/// let r = goro::trace::to_perfetto(&b"not a trace"[..], Vec::new());
/// let e = r.unwrap_err();
/// assert_eq!(e.kind(), std::io::ErrorKind::InvalidData);
/// assert!(e.to_string().contains("GORO_TRACE_RAW"));
/// ```
pub fn to_perfetto(
    raw: impl std::io::Read,
    out: impl std::io::Write,
) -> std::io::Result<Converted> {
    compact::to_perfetto(raw, out)
}

use crate::sched::context::{current_p, CTX};
use crate::sched::task::meta::{Reason, TaskId, TaskMeta};
use crate::sched::Sched;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// Sessions running in the process, over every runtime: the check made
/// by hooks that do not have their runtime at hand.
pub(crate) static ANY_ON: AtomicUsize = AtomicUsize::new(0);

/// Event kinds (the first byte of an event's header word).
pub(crate) mod kind {
    pub(crate) const PROC_START: u8 = 1;
    pub(crate) const PROC_STOP: u8 = 2;
    pub(crate) const SPIN_START: u8 = 3;
    pub(crate) const SPIN_STOP: u8 = 4;
    pub(crate) const STEAL: u8 = 5;
    pub(crate) const M_PARK: u8 = 6;
    pub(crate) const M_UNPARK: u8 = 7;
    pub(crate) const M_WAKE: u8 = 8;
    pub(crate) const CREATE: u8 = 9;
    pub(crate) const POLL_START: u8 = 10;
    pub(crate) const POLL_END: u8 = 11;
    pub(crate) const UNBLOCK: u8 = 12;
    pub(crate) const DESTROY: u8 = 13;
    pub(crate) const BIP_BEGIN: u8 = 14;
    pub(crate) const BIP_END: u8 = 15;
    pub(crate) const TIMERS: u8 = 16;
    pub(crate) const NETPOLL: u8 = 17;
    pub(crate) const POOL_CYCLE: u8 = 18;
    pub(crate) const PREEMPT: u8 = 19;
    pub(crate) const STUCK: u8 = 20;
}

/// How a poll ended, after the wait reasons' own codes (`Reason as u8`).
pub(crate) const OUT_YIELD: u64 = 32;
pub(crate) const OUT_PREEMPTED: u64 = 33;
pub(crate) const OUT_FINISHED: u64 = 34;

/// A runtime's tracing state (a field of `Sched`).
pub(crate) struct Trace {
    on: AtomicBool,
    gen: AtomicU64,
    buf: buf::Chunks,
    /// Flight recorder bounds, read when a buffer fills: 0 bytes means a
    /// streaming session.
    flight_max_bytes: AtomicUsize,
    flight_window_ticks: AtomicU64,
    session: std::sync::Mutex<Option<session::Session>>,
    /// Wakes the streaming writer early when buffers pile up.
    kick: session::Kick,
    /// The `GORO_TRACE` session's file, stopped when the runtime drops.
    env: std::sync::Mutex<Option<env::EnvTrace>>,
    /// The always-on flight recorder (`GORO_FLIGHT`).
    pub(crate) auto: auto::Auto,
}

impl Trace {
    /// Ps with a buffer of their own: those the runtime started with.
    pub(crate) fn procs(&self) -> usize {
        self.buf.procs()
    }

    pub(crate) fn new(procs: usize) -> Trace {
        Trace {
            on: AtomicBool::new(false),
            gen: AtomicU64::new(0),
            buf: buf::Chunks::new(procs),
            flight_max_bytes: AtomicUsize::new(0),
            flight_window_ticks: AtomicU64::new(0),
            session: std::sync::Mutex::new(None),
            kick: session::Kick::default(),
            env: std::sync::Mutex::new(None),
            auto: auto::Auto::default(),
        }
    }

    /// How this session records P events: a flight recorder's way when
    /// it is one (its bytes bound is set), every event with its own
    /// clock read otherwise (`buf::Stamps`).
    #[inline(always)]
    fn stamps(&self) -> buf::Stamps {
        if self.flight_max_bytes.load(Ordering::Relaxed) != 0 {
            buf::Stamps::Flight
        } else {
            buf::Stamps::PerEvent
        }
    }

    /// Whether a session runs: the one check every hook makes.
    #[inline(always)]
    pub(crate) fn on(&self) -> bool {
        // Relaxed: a hook that misses the start (or the stop) by a moment
        // records one event less (or more); nothing synchronizes on it.
        self.on.load(Ordering::Relaxed)
    }
}

impl buf::OnFull for Trace {
    fn full(&self, lists: &mut buf::ChunkLists) {
        let max = self.flight_max_bytes.load(Ordering::Relaxed);
        if max == 0 {
            if lists.full.len() >= 8 {
                self.kick.kick();
            }
            return;
        }
        while lists.full_bytes > max {
            lists.full.pop_front();
            lists.full_bytes -= buf::CHUNK_BYTES;
        }
        let window = self.flight_window_ticks.load(Ordering::Relaxed);
        let cut = clock::ticks().saturating_sub(window);
        while lists
            .full
            .front()
            .is_some_and(|c| c.last_ts.load(Ordering::Relaxed) < cut)
        {
            lists.full.pop_front();
            lists.full_bytes -= buf::CHUNK_BYTES;
        }
    }
}

pub(crate) use emit::THREAD_NAMES;
use emit::{emit, event, p_and_tid, record, tid, traced_here};

// ---- hooks: each inlined to a flag check, the work out of line ----

/// A task was created (`new_task_with`).
#[inline]
pub(crate) fn create(sched: &Sched, meta: &TaskMeta, blocking: bool) {
    if sched.trace.on() {
        create_slow(sched, meta, blocking);
    }
}

#[cold]
fn create_slow(sched: &Sched, meta: &TaskMeta, blocking: bool) {
    let c = compact::Create {
        parent: meta.parent().map_or(0, |p| p.0),
        blocking,
        site: meta.location,
        name: meta.name(),
    };
    let (p, tid) = p_and_tid(sched);
    record(sched, p, tid, kind::CREATE, meta.id.0, 0, Some(&c));
}

/// A task's poll begins (`TaskFuture::poll`).
#[inline]
pub(crate) fn poll_start(id: TaskId) {
    if ANY_ON.load(Ordering::Relaxed) != 0 {
        poll_start_slow(id);
    }
}

#[cold]
fn poll_start_slow(id: TaskId) {
    let _ = CTX.try_with(|c| c.trace_note.set(0));
    if let Some((s, p, tid)) = traced_here() {
        emit::<{ kind::POLL_START }>(s, p, tid, id.0, 0);
    }
}

/// A task's poll returned `Pending`, having said why (`blocked_on`).
#[inline]
pub(crate) fn poll_parked(id: TaskId, reason: Reason) {
    if ANY_ON.load(Ordering::Relaxed) != 0 {
        let note = CTX.try_with(|c| c.trace_note.replace(0)).unwrap_or(0);
        let out = if note != 0 { note } else { reason as u64 };
        poll_end_slow(id, out);
    }
}

/// A task's poll returned its output (or panicked): it is done.
#[inline]
pub(crate) fn poll_finished(id: TaskId) {
    if ANY_ON.load(Ordering::Relaxed) != 0 {
        poll_end_slow(id, OUT_FINISHED);
    }
}

#[cold]
fn poll_end_slow(id: TaskId, out: u64) {
    if let Some((s, p, tid)) = traced_here() {
        emit::<{ kind::POLL_END }>(s, p, tid, id.0, out);
    }
}

/// `yield_now` is about to return `Pending`.
#[inline]
pub(crate) fn yielded() {
    if ANY_ON.load(Ordering::Relaxed) != 0 {
        let _ = CTX.try_with(|c| c.trace_note.set(OUT_YIELD));
    }
}

/// The coop budget preempted the running task (`coop::exhausted`).
#[inline]
pub(crate) fn preempted() {
    if ANY_ON.load(Ordering::Relaxed) != 0 {
        preempted_slow();
    }
}

#[cold]
fn preempted_slow() {
    let _ = CTX.try_with(|c| c.trace_note.set(OUT_PREEMPTED));
    if let Some((s, p, tid)) = traced_here() {
        let id = crate::sched::task::meta::current_task().map_or(0, |t| t.0);
        emit::<{ kind::PREEMPT }>(s, p, tid, id, 0);
    }
}

/// A task's future is gone (finished, aborted, shut down).
#[inline]
pub(crate) fn destroy(meta: &TaskMeta) {
    if ANY_ON.load(Ordering::Relaxed) != 0 {
        destroy_slow(meta.id);
    }
}

#[cold]
fn destroy_slow(id: TaskId) {
    if let Some((s, p, tid)) = traced_here() {
        emit::<{ kind::DESTROY }>(s, p, tid, id.0, 0);
    }
}

/// A parked or yielding task was woken (`Sched::schedule`), by the task
/// polled on this thread if any.
#[inline]
pub(crate) fn unblock(sched: &Sched, meta: &TaskMeta) {
    if sched.trace.on() {
        unblock_slow(sched, meta.id);
    }
}

#[cold]
fn unblock_slow(sched: &Sched, id: TaskId) {
    let by = crate::sched::task::meta::current_task().map_or(0, |t| t.0);
    event::<{ kind::UNBLOCK }>(sched, id.0, by);
}

/// The current M took P `p` (`acquirep`).
#[inline]
pub(crate) fn proc_start(sched: &Sched, p: usize) {
    if sched.trace.on() {
        emit::<{ kind::PROC_START }>(sched, Some(p), tid(), p as u64, 0);
    }
}

/// The current M is about to give its P back (`dropp`).
#[inline]
pub(crate) fn proc_stop(sched: &Sched) {
    if sched.trace.on() {
        if let Some(p) = current_p(sched) {
            emit::<{ kind::PROC_STOP }>(sched, Some(p), tid(), p as u64, 0);
        }
    }
}

/// The current M starts spinning (looking for work with a P).
#[inline]
pub(crate) fn spin_start(sched: &Sched) {
    if sched.trace.on() {
        event::<{ kind::SPIN_START }>(sched, 0, 0);
    }
}

/// The current M found work and stops spinning.
#[inline]
pub(crate) fn spin_stop(sched: &Sched) {
    if sched.trace.on() {
        event::<{ kind::SPIN_STOP }>(sched, 0, 0);
    }
}

/// The current P stole `n` tasks from P `victim`.
#[inline]
pub(crate) fn steal(sched: &Sched, victim: usize, n: usize) {
    if sched.trace.on() {
        event::<{ kind::STEAL }>(sched, victim as u64, n as u64);
    }
}

/// The current M parks on the idle list (`stopm`).
#[inline]
pub(crate) fn m_park(sched: &Sched) {
    if sched.trace.on() {
        event::<{ kind::M_PARK }>(sched, 0, 0);
    }
}

/// The current M's park returned.
#[inline]
pub(crate) fn m_unpark(sched: &Sched) {
    if sched.trace.on() {
        event::<{ kind::M_UNPARK }>(sched, 0, 0);
    }
}

/// The current thread wakes a parked M to run P `p` (`startm`).
#[inline]
pub(crate) fn m_wake(sched: &Sched, p: usize) {
    if sched.trace.on() {
        event::<{ kind::M_WAKE }>(sched, p as u64, 0);
    }
}

/// `block_in_place` is about to hand P `p` away.
#[inline]
pub(crate) fn block_in_place_begin(sched: &Sched, p: usize) {
    if sched.trace.on() {
        emit::<{ kind::BIP_BEGIN }>(sched, Some(p), tid(), p as u64, 0);
    }
}

/// `block_in_place`'s closure returned; `p` is the P taken back, if any.
#[inline]
pub(crate) fn block_in_place_end(sched: &Sched, p: Option<usize>) {
    if sched.trace.on() {
        let a = p.map_or(0, |p| p as u64 + 1);
        emit::<{ kind::BIP_END }>(sched, p, tid(), a, 0);
    }
}

/// The current P ran `n` timers.
#[inline]
pub(crate) fn timers_fired(sched: &Sched, n: usize) {
    if sched.trace.on() {
        event::<{ kind::TIMERS }>(sched, n as u64, 0);
    }
}

/// A network poll readied `n` wakers.
#[inline]
pub(crate) fn netpoll(sched: &Sched, n: usize) {
    if sched.trace.on() && n > 0 {
        event::<{ kind::NETPOLL }>(sched, n as u64, 0);
    }
}

/// The monitor cycled the pools.
#[inline]
pub(crate) fn pool_cycle(sched: &Sched) {
    if sched.trace.on() {
        event::<{ kind::POOL_CYCLE }>(sched, 0, 0);
    }
}

/// The monitor reports task `id`'s poll on P `p` as stuck, running for
/// `running` (`machine/stuck.rs`).
#[inline]
pub(crate) fn stuck_poll(sched: &Sched, id: u64, p: usize, running: std::time::Duration) {
    if sched.trace.on() {
        // P in the low 16 bits (`MAX_PROCS` < 2^13), ns above: 2^48 ns is
        // 78 hours.
        let b = (running.as_nanos() as u64) << 16 | p as u64;
        event::<{ kind::STUCK }>(sched, id, b);
    }
}

/// Runs a blocking-pool thread's body with its runtime known to the
/// trace's hooks (the thread has no runtime in its context: it never holds a P).
pub(crate) fn blocking_thread<R>(sched: &Sched, body: impl FnOnce() -> R) -> R {
    let _ = CTX.try_with(|c| c.trace_blocking.set(sched));
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            let _ = CTX.try_with(|c| c.trace_blocking.set(std::ptr::null()));
        }
    }
    let _reset = Reset;
    body()
}
