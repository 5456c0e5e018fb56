//! P: the right to run tasks.
//!
//! A P owns a local run queue with `runnext`, a timer heap and per-P
//! counters, and its pool slot. Holding one is a value, `idle::HeldP`. There are exactly `procs` of them; a thread
//! must hold one to run tasks, which is what bounds parallelism to `procs`
//! however many threads exist (some may be blocked in `block_in_place`).
//!
//! Fields written by the owner only are atomics so that thieves, the monitor
//! and `stats()` can read them; the owner uses relaxed single-writer updates.

pub(crate) mod allp;
pub(crate) mod idle;
pub(crate) mod pool_hooks;
pub(crate) mod resize;
pub(crate) mod sampling;

// std atomics even under loom: these are progress hints for the monitor and
// thieves (a stale value delays or repeats a retake), not synchronization.
use crate::sched::runq::RunQueue;
use crate::sched::timer::queue::TimerQueue;
use crate::stats::Counters;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

pub(crate) struct Processor {
    pub(crate) id: usize,
    /// The shared view of the run queue (reads and steals); pushing needs
    /// the owner's handle, `runq::Local`, which only the P's holder makes.
    pub(crate) runq: RunQueue,
    /// Incremented by the owner at the start of every new time slice (a task
    /// taken from `runnext` inherits the slice and does not count). The
    /// monitor sees a P whose tick has not moved for a slice as stuck.
    pub(crate) schedtick: AtomicU64,
    /// Set by the monitor when the current poll has run longer than a slice
    /// while the P has queued work; thieves then take its `runnext` without
    /// pausing. Cleared by the owner when the poll returns.
    pub(crate) stuck: AtomicBool,
    /// The monitor's last observation of `schedtick` and when (ns since the
    /// runtime started). Written by the monitor only.
    pub(crate) mon_tick: AtomicU64,
    pub(crate) mon_when: AtomicU64,
    /// The id of the task polled now, or last, on this P: stored by the
    /// owner before each poll (`Machine::execute`), cleared when a poll
    /// hands the P away (`block_in_place`). Read by the stuck-poll report
    /// only (`machine/stuck.rs`), with `counters.tasks_polled`.
    pub(crate) poll_task: AtomicU64,
    /// The `pthread_t` of the M that holds this P, stored at each acquire:
    /// the thread the stuck-poll report signals (`machine/stack.rs`).
    pub(crate) m_thread: AtomicU64,
    pub(crate) counters: Counters,
    /// This P's timer heap (seed 001).
    pub(crate) timers: Arc<TimerQueue>,
    /// Pool hook: this P's process-wide pool slot and pin record, allocated
    /// on its first pool use (see `sync::pool::local`).
    pub(crate) pool: pool_hooks::PoolSlot,
    /// Latency and queue-depth histograms (`runtime/metrics.rs`).
    pub(crate) metrics: crate::sched::processor::sampling::ProcMetrics,
}

impl Processor {
    pub(crate) fn new(id: usize, sched: std::sync::Weak<crate::sched::Sched>) -> Processor {
        Processor {
            id,
            runq: RunQueue::new(),
            schedtick: AtomicU64::new(0),
            stuck: AtomicBool::new(false),
            mon_tick: AtomicU64::new(0),
            mon_when: AtomicU64::new(0),
            poll_task: AtomicU64::new(0),
            m_thread: AtomicU64::new(0),
            counters: Counters::default(),
            timers: TimerQueue::new(sched),
            pool: pool_hooks::PoolSlot::new(),
            metrics: crate::sched::processor::sampling::ProcMetrics::new(),
        }
    }

    pub(crate) fn is_stuck(&self) -> bool {
        // Relaxed: a hint; a stale read only delays or repeats a pause.
        self.stuck.load(Ordering::Relaxed)
    }
}
