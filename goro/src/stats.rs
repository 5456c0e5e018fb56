//! Counters and the schedule trace.
//!
//! Every P keeps its own cache-padded block of counters, written only by the
//! thread that holds the P (a relaxed load and store, no read-modify-write, so
//! counting costs a few cycles and no cache-line traffic). Events that happen
//! without a P (a thread parking or being woken) go to one shared block with
//! `fetch_add`; they are rare by construction. The pool counters of a
//! `Pool` operation go to the block of the P (or runtime) of the calling
//! thread; operations on threads outside every runtime are not counted, and
//! `pool_cycles` is a process-wide count. [`Runtime::stats`] sums all
//! blocks into a [`Stats`] snapshot; a snapshot taken while tasks run is
//! approximate, as Go's `schedtrace` is.
//!
//! [`Runtime::stats`]: crate::Runtime::stats

// Plain std atomics, also under loom: counters are statistics, not
// synchronization, and modelling them would only multiply loom's states.
use std::sync::atomic::{AtomicU64, Ordering};

macro_rules! counters {
    ($( $(#[$doc:meta])* $name:ident ),* $(,)?) => {
        /// A snapshot of the runtime's counters, summed over all Ps.
        ///
        /// ```
        /// let rt = goro::Runtime::builder().procs(2).build().unwrap();
        /// rt.block_on(async { goro::spawn(async {}).await.unwrap() });
        /// assert!(rt.stats().tasks_spawned >= 1);
        /// ```
        #[derive(Debug, Clone, Default, PartialEq, Eq)]
        #[non_exhaustive]
        pub struct Stats {
            $( $(#[$doc])* pub $name: u64, )*
        }

        /// One block of counters (per P, plus one shared).
        #[derive(Default)]
        pub(crate) struct Counters {
            $( pub(crate) $name: AtomicU64, )*
        }

        impl Stats {
            /// Calls `f` with each counter's name and value.
            pub fn for_each(&self, mut f: impl FnMut(&'static str, u64)) {
                $( f(stringify!($name), self.$name); )*
            }
        }

        impl Counters {
            pub(crate) fn add_to(&self, s: &mut Stats) {
                $( s.$name += self.$name.load(Ordering::Relaxed); )*
            }
        }
    };
}

counters! {
    /// Tasks spawned.
    tasks_spawned,
    /// Task polls (one per run of a task).
    tasks_polled,
    /// Polls of a task taken from `runnext`.
    runnext_hits,
    /// Tasks put into `runnext` that displaced another task to the ring.
    runnext_bumps,
    /// Tasks moved by steals (including the one run at once).
    steals,
    /// Steal attempts (one per victim examined).
    steal_attempts,
    /// Steal attempts made on the last pass (where `runnext` may be taken).
    steal_attempts_last_pass,
    /// `runnext` tasks stolen.
    runnext_steals,
    /// Times a thief paused before taking a busy P's `runnext`.
    runnext_steal_pauses,
    /// Batches taken from the global queue.
    global_batches,
    /// Tasks taken from the global queue.
    global_tasks,
    /// Overflows of a full local ring into the global queue.
    runq_overflows,
    /// Rounds of active spinning in runtime waits.
    spins,
    /// `sched_yield` calls in runtime waits.
    yields,
    /// Times a worker thread went to sleep.
    parks,
    /// Times a sleeping worker thread was handed a P.
    unparks,
    /// Worker threads started.
    threads_started,
    /// Nanoseconds spent in find-runnable's slow path (after the local queue
    /// was empty), including stealing; seed 002's measure.
    find_runnable_ns,
    /// Nanoseconds of that spent in steal passes.
    steal_ns,
    /// Entries into find-runnable's slow path (the local queue was empty);
    /// the denominator of seed 002's per-search measures.
    find_runnable_calls,
    /// Other Ps' run queues read by searches: one per victim a steal pass
    /// looks at (whether or not it takes anything), plus one per P whose
    /// queue the give-up re-check reads. Each costs about one cache line
    /// (the queue's head and tail), so this is also seed 002's proxy for
    /// lines pulled; Ps skipped by the idle mask are not read.
    queues_inspected,
    /// Steal attempts (victims looked at) that took nothing.
    steal_fails,
    /// Thread CPU nanoseconds spent in find-runnable's slow path, parked
    /// time excluded; counted only when the runtime was built with
    /// `Builder::measure_find_cpu(true)` (two `CLOCK_THREAD_CPUTIME_ID`
    /// reads per search), else zero.
    find_cpu_ns,
    /// Times the monitor marked a P stuck in one poll.
    retakes,
    /// Polls the monitor reported as stuck past `Builder::stuck_poll`'s
    /// threshold (one per poll, with its stack on stderr).
    stuck_polls,
    /// Changes of the number of Ps (`Runtime::set_procs`, or the monitor
    /// following the machine's CPU limit).
    procs_changes,
    /// The number of Ps when the snapshot was taken (a value, not a
    /// counter: set by `Runtime::stats`).
    procs,
    /// Tasks moved off Ps that a resize removed.
    procs_tasks_moved,
    /// Timers moved off Ps that a resize removed.
    procs_timers_moved,
    /// Times an M parked as the hand-off watcher (seed 004: it looks at
    /// busy Ps' `runnext` every 50 µs instead of being woken for each put).
    watches,
    /// Tasks preempted at a safe point after spending their budget
    /// (cooperative preemption, `Policy::preempt`).
    preemptions,
    /// `block_in_place` calls that handed a P to another thread.
    handoffs,
    /// Timers armed (heap entries pushed).
    timers_armed,
    /// Timers fired.
    timers_fired,
    /// Timers stopped before firing.
    timers_stopped,
    /// Times a parked thread woke for a timer deadline (or, sleeping in
    /// the poller, for readiness).
    timer_sleeper_wakes,
    /// `epoll_wait` calls (non-blocking ones from find-runnable and the
    /// monitor, blocking ones by the sleeper).
    netpolls,
    /// Tasks (and other wakers) readied by the poller.
    netpoll_ready,
    /// `Pool::get` calls served from the primary cache (own, stolen, or
    /// the list of threads without a P).
    pool_hits,
    /// `Pool::get` calls the primary cache could not serve (served by the
    /// victim cache or by `new`): `pool_victim_hits + pool_new_calls`.
    pool_misses,
    /// `Pool::get` calls served from the victim cache (seed 003).
    pool_victim_hits,
    /// Calls of a pool's `new` function from `Pool::get`.
    pool_new_calls,
    /// Pool cycles in the whole process (pools are global, so this one is
    /// not per runtime: every runtime's snapshot shows the process total).
    pool_cycles,
}

/// Adds `n` to a counter owned by the current thread (single writer).
#[inline]
pub(crate) fn bump(c: &AtomicU64, n: u64) {
    // Relaxed load + store: only the P's owner writes this counter; readers
    // tolerate a stale value.
    c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
}

/// Adds `n` to a shared counter (many writers).
#[inline]
pub(crate) fn bump_shared(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}
