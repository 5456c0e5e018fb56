//! Deferred reclamation: what a cycle retires is dropped by the reclaimer
//! thread, after a grace period, off the cycling thread (the pool's
//! `call_rcu`).
//!
//! A cycle's own work is pointer swaps, O(number of pools). What it retires
//! (the old victim generations, or everything with the victim cache off) is
//! O(number of values) to drop: each value's `Drop`, and freeing the rings
//! that held them (with 100,000 pooled `u64`s, about 2 MiB of rings, and
//! `munmap` for the large ones: tens of times the swaps' cost;
//! BENCH_RESULTS.md, "`pool` group after the reclaimer"). So the
//! cycle hands the retired storage to [`defer`] and returns; one process-wide
//! thread, `goro-pool-drop`, waits for a grace period (`pin::synchronize`)
//! and then drops it. This is Linux's `call_rcu` with callback offloading:
//! the writer unlinks, a helper thread waits for the readers and frees. It
//! is also where Go's cost goes: `poolCleanup` only drops references, and
//! the collector frees the values later, concurrently.
//!
//! # Guarantees kept
//!
//! * Nothing retired is reachable: a cycle unlinks storage before handing
//!   it over, so a value in it can no longer be taken by a `get`. It is
//!   dropped exactly once, by the reclaimer, soon after the cycle (not
//!   *during* it: a test that counts drops first waits for
//!   [`wait_idle`]).
//! * The grace period starts after the rotation that unlinked the storage
//!   (the queue's mutex orders the hand-over before the reclaimer's heavy
//!   barrier; see `pin.rs`), so it covers every pinned section that could
//!   have seen it. One grace period covers every batch taken at once.
//! * The thread belongs to no runtime: it serves cycles of every runtime
//!   and of threads outside them, and keeps working after a runtime shuts
//!   down. It starts on the first hand-over and then lives as long as the
//!   process, asleep on a condition variable while there is nothing to do
//!   (Go's background workers live as long, too).
//! * Bounded memory: if [`MAX_BACKLOG`] batches wait while the reclaimer is
//!   busy (starved of CPU while something forces cycles in a loop), the
//!   cycling thread drops its own batch (grace period included) instead of
//!   queueing it: what every cycle would cost without this thread, so a
//!   cycle is never slower than dropping inline. The same happens if the
//!   thread cannot be started.
//! * A panic in a value's `Drop` is caught and reported on stderr; the
//!   other values are still dropped (the storage's own `Drop`s go on past
//!   a panicking value, as a `Vec`'s does, and as there a second panic
//!   while unwinding from the first aborts). Nobody waits for the
//!   reclaimer, so there is no caller to hand the panic to.
//! * Values still queued when the process exits are not dropped, as for
//!   anything else still alive at exit (statics, leaked values).
//!
//! # Waking the reclaimer
//!
//! Waking a thread that sleeps on another CPU costs the waker a system call
//! and an inter-processor interrupt, several times the cycle's own cost,
//! and more the longer that CPU has idled (BENCH_RESULTS.md, "Design
//! readings quoted from module docs"). So after a batch the reclaimer does
//! not go straight to sleep: it *naps* [`NAP`] at a time, [`NAPS`] times,
//! with a timeout, and a cycle that finds it napping only queues its batch
//! (no system call); the reclaimer takes it when the nap ends. Only a
//! reclaimer that has napped out and sleeps for good is woken by the cycle
//! (so a process whose pools go quiet costs [`NAPS`] timer wake-ups, then
//! none), and a napping one is woken early when [`WAKE_BACKLOG`] batches
//! wait. A run of cycles thus costs one wake-up, not one per cycle; the
//! price is that values may be dropped up to [`NAP`] after their cycle
//! instead of at once.
//!
//! # A batch thread
//!
//! On Linux the reclaimer runs under `SCHED_BATCH`: it gets its fair share
//! of CPU, but waking it never preempts the thread that wakes it. As a
//! normal thread on a busy machine it would: the wake-up in `defer`
//! switches to the reclaimer, which drops the batch before the cycle can
//! return, so the cycle pays for the drop after all (BENCH_RESULTS.md,
//! "Design readings quoted from module docs").
//!
//! # Rejected
//!
//! * `SCHED_IDLE` for the reclaimer: under full load it can starve, which
//!   would leave the garbage to the backlog fallback.
//! * Dropping on the monitor thread: `pool_cycle` on a thread outside every
//!   runtime has no monitor; a monitor sleeps while its runtime is idle; and
//!   a slow `Drop` would delay its real job, retaking stuck Ps.
//! * The runtime's blocking pool (`spawn_blocking`): there is none outside a
//!   runtime, so a second path would be needed anyway; a job there queues
//!   behind user closures that may block for seconds, so "dropped by the
//!   second cycle" would depend on unrelated work; and a job discarded
//!   unrun at shutdown would drop the storage without a grace period.
//! * Dropping lazily, at the next cycle or in a later `get`/`put`: that
//!   moves the cost onto the next cycle or onto a user's operation instead
//!   of removing it, and a pool nobody touches would keep its garbage.
//! * Keeping the grace period on the cycling thread and deferring only the
//!   drop: the grace period is a `membarrier` system call and may wait for
//!   a descheduled reader (up to a scheduler tick); the reclaimer can wait
//!   for it as well as the cycle can.
//! * Waking the reclaimer at every cycle: see "Waking the reclaimer".
//!   Polling instead (a reclaimer that wakes every millisecond while pools
//!   hold values) would cost a thousand wake-ups a second in a process that
//!   cycles once a second.

use crate::loom::Unpoison;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Retired storage, type-erased: dropping an item drops its values.
pub(crate) type Garbage = Vec<Box<dyn Send>>;

/// One nap of the reclaimer after a batch (see the module docs).
pub(crate) const NAP: Duration = Duration::from_millis(1);

/// Naps without work before the reclaimer sleeps until woken.
pub(crate) const NAPS: u32 = 2;

/// Batches that make a cycle wake a napping reclaimer.
pub(crate) const WAKE_BACKLOG: usize = 32;

/// Batches waiting for a busy reclaimer before cycles drop their own.
pub(crate) const MAX_BACKLOG: usize = 128;

/// The reclaimer thread's name (at most 15 bytes: Linux truncates `comm`).
const THREAD_NAME: &str = "goro-pool-drop";

/// What the reclaimer is doing, as a cycle needs to know it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    /// No thread yet: the next hand-over starts it.
    Unstarted,
    /// Awake, or woken and about to be: takes the queue on its next round.
    Busy,
    /// In a timed wait: takes the queue when it ends, or when woken.
    Napping,
    /// In an untimed wait: a hand-over must wake it.
    Sleeping,
    /// The thread could not be started: cycles drop their own batches.
    NoThread,
}

struct State {
    /// Batches waiting for a grace period, oldest first.
    queue: Vec<Garbage>,
    mode: Mode,
    /// The reclaimer holds batches it has taken and not finished dropping.
    dropping: bool,
}

static STATE: Mutex<State> = Mutex::new(State {
    queue: Vec::new(),
    mode: Mode::Unstarted,
    dropping: false,
});

/// Signalled when the queue gets work the reclaimer must not wait for.
static WORK: Condvar = Condvar::new();

/// Signalled when the reclaimer has dropped everything handed to it.
static IDLE: Condvar = Condvar::new();

fn state() -> MutexGuard<'static, State> {
    STATE.lock().unpoison()
}

/// Hands `garbage` (storage a cycle has just unlinked) to the reclaimer,
/// which drops it after a grace period. O(1) on the caller, and without a
/// system call unless the reclaimer sleeps for good (see the module docs),
/// apart from starting the thread once and from the fallbacks.
pub(crate) fn defer(garbage: Garbage) {
    if garbage.is_empty() {
        return;
    }
    let mut st = state();
    let fallback = match st.mode {
        Mode::NoThread => true,
        Mode::Busy => st.queue.len() >= MAX_BACKLOG,
        _ => false,
    };
    if fallback {
        drop(st);
        reclaim(&mut vec![garbage]);
        return;
    }
    st.queue.push(garbage);
    match st.mode {
        Mode::Busy | Mode::NoThread => {}
        Mode::Napping if st.queue.len() < WAKE_BACKLOG => {}
        Mode::Napping | Mode::Sleeping => {
            // Busy from now on, so the next hand-over does not wake it again.
            st.mode = Mode::Busy;
            drop(st);
            WORK.notify_one();
        }
        Mode::Unstarted => {
            st.mode = Mode::Busy;
            drop(st);
            start();
        }
    }
}

/// Starts the reclaimer thread, or if that fails, drops the queue here.
#[cold]
fn start() {
    let started = std::thread::Builder::new()
        .name(THREAD_NAME.into())
        .spawn(reclaimer_main);
    if started.is_err() {
        let mut st = state();
        st.mode = Mode::NoThread;
        let mut batches = std::mem::take(&mut st.queue);
        drop(st);
        reclaim(&mut batches);
    }
}

/// The reclaimer thread's body.
fn reclaimer_main() {
    background();
    let mut naps = 0;
    // The queue's buffer and this one trade places at every round, so a
    // hand-over pushes into memory that is already allocated (growing the
    // queue inside a cycle would cost that cycle as much as its swaps).
    let mut batches: Vec<Garbage> = Vec::new();
    let mut st = state();
    loop {
        if !st.queue.is_empty() {
            std::mem::swap(&mut st.queue, &mut batches);
            st.mode = Mode::Busy;
            st.dropping = true;
            drop(st);
            reclaim(&mut batches);
            st = state();
            st.dropping = false;
            if st.queue.is_empty() {
                IDLE.notify_all();
            }
            naps = 0;
            continue;
        }
        if naps < NAPS {
            naps += 1;
            st.mode = Mode::Napping;
            st = WORK.wait_timeout(st, NAP).unpoison().0;
        } else {
            st.mode = Mode::Sleeping;
            st = WORK.wait(st).unpoison();
        }
    }
}

/// Makes the calling thread a batch thread: it gets its fair share of CPU
/// but never preempts the thread that wakes it (see the module docs).
fn background() {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: `param` is a valid sched_param for the duration of the
        // call; pid 0 is the calling thread. Failure leaves the thread as
        // it was (a normal thread), which is only slower for the waker.
        let _ = unsafe { libc::sched_setscheduler(0, libc::SCHED_BATCH, &param) };
    }
}

/// One grace period, then drops every item (catching panics), leaving
/// `batches` empty.
fn reclaim(batches: &mut Vec<Garbage>) {
    // Every batch was unlinked before it was queued, and queued before this
    // call: the grace period starts after every rotation that retired it.
    super::pin::synchronize();
    let mut panicked = 0usize;
    for item in batches.drain(..).flatten() {
        if catch_unwind(AssertUnwindSafe(|| drop(item))).is_err() {
            panicked += 1;
        }
    }
    if panicked > 0 {
        eprintln!(
            "goro: a pooled value's Drop panicked after a pool cycle ({panicked} storage item(s)); the other values were dropped"
        );
    }
}

/// Waits until everything handed to the reclaimer so far has been dropped,
/// or `limit` has passed; returns whether it was. Wakes a napping
/// reclaimer rather than waiting for its nap to end.
pub(crate) fn wait_idle(limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    let mut st = state();
    loop {
        if st.queue.is_empty() && !st.dropping {
            return true;
        }
        if st.mode == Mode::Napping {
            st.mode = Mode::Busy;
            WORK.notify_one();
        }
        let now = Instant::now();
        if now >= deadline {
            return false;
        }
        st = IDLE.wait_timeout(st, deadline - now).unpoison().0;
    }
}
