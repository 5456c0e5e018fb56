//! The scheduler: Go's G/M/P design with Rust futures as Gs.
//!
//! # Goroutine scheduler, goro edition
//!
//! The scheduler's job is to distribute ready-to-run tasks over worker
//! threads. The main concepts, with Go's letters:
//!
//! * **G** — a task: one spawned future (`task/`).
//! * **M** — a machine: an OS worker thread running the scheduler loop
//!   (`machine/`).
//! * **P** — a processor: the right to run tasks, with a local run queue,
//!   `runnext` and counters (`processor/`, `runq/`). An M must hold a P
//!   to run tasks; there are `procs` active Ps, a number that
//!   [`crate::Runtime::set_procs`] and the monitor may change while tasks
//!   run (`processor/resize.rs`; the Ps themselves live in `processor/allp.rs`).
//!
//! A task that becomes ready while its waker runs on an M holding a P goes to
//! that P's `runnext` (or its ring), and an idle P is woken in case the
//! waker's poll keeps running (`processor/idle.rs`, "Hand-off"); from anywhere else it
//! goes to the global queue (`runq/global.rs`). An M looks for work in Go's order (`machine/find.rs`): its
//! P's local queue (every 61st slice the global queue first), the global
//! queue, then stealing half of another P's queue (`runq/steal.rs`); when it finds
//! nothing it gives the P back and sleeps (`processor/idle.rs`, `machine/park.rs`); one
//! sleeping M waits in the network poller while sockets are open
//! (`machine/netpoll.rs`).
//!
//! Unlike Go, goro cannot interrupt a running task: a future runs until it
//! returns from `poll`. What it can do is make every goro operation a safe
//! point: past a budget of operations in one poll, the next one yields
//! (`task/coop.rs`), so a task whose operations never block cannot starve its
//! P. A `poll` that blocks, or computes without calling into goro, is out
//! of that reach; so that it does not stall the tasks queued behind it, the
//! monitor thread (`machine/sysmon.rs`: an M without a P, as in Go) marks a P whose current poll outlasts a
//! slice as stuck, and thieves drain it. Blocking on purpose goes through
//! `block_in_place`, which hands the P to another thread first
//! (`machine/blocking.rs`).
//!
//! `Sched` is the global state (Go's `schedt` plus `allp`). Its fields are
//! private to this module; the layers above reach a scheduler through the
//! methods in `api.rs` and the hooks it declares (`machine/netpoll.rs`,
//! `processor/pool_hooks.rs`, `machine/sysmon.rs`'s `MonitorHooks`, `timer/`'s
//! `TimerChan`; docs/ARCHITECTURE.md, "Layers").

mod api;
pub(crate) mod backoff;
pub(crate) mod context;
#[cfg(all(test, loom))]
mod loom;
pub(crate) mod machine;
pub mod policy;
pub(crate) mod processor;
pub(crate) mod runq;
pub(crate) mod sim;
pub(crate) mod task;
pub(crate) mod timer;
pub(crate) mod trace;

use crate::loom::{fence, AtomicBool, AtomicUsize, Ordering};
use crate::stats::{bump, bump_shared, Counters, Stats};
use crossbeam_utils::CachePadded;
use policy::Policy;
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

use context::{own_queue, WakeTarget};
use machine::park::Handoff;
use processor::idle::{HeldP, Idle};
use processor::Processor;
use runq::global::GlobalQueue;
use runq::{Local, Put};
use task::meta::State;
use task::Runnable;
use timer::clock::coarse;

/// Most Ps a runtime may have.
pub const MAX_PROCS: usize = 4096;

/// The spin policy of the runtime this thread belongs to, or the default
/// outside a runtime.
pub(crate) fn current_spin_policy() -> policy::SpinPolicy {
    context::with_current_sched(|s| s.policy.spin).unwrap_or(policy::SpinPolicy::DEFAULT)
}

/// Global scheduler state.
pub(crate) struct Sched {
    /// Active Ps: ids `0..procs` (Go's `gomaxprocs`). Changed only by a
    /// resize, under the idle lock (`processor/resize.rs`).
    procs: AtomicUsize,
    policy: Policy,
    /// Every P ever allocated (Go's `allp`): `0..procs` active, the rest
    /// removed by a shrink (`processor/allp.rs`).
    ps: processor::allp::AllP,
    global: GlobalQueue,
    idle: Idle,
    /// Resizing: its lock, the removed Ps, following (`processor/resize.rs`).
    resize: processor::resize::Resize,
    shutdown: AtomicBool,
    /// Every live task, for the dump, the deadlock check and shutdown.
    tasks: task::table::TaskTable,
    /// `block_on` callers polling their future, and parked waiting for a
    /// wake (the dump shows them; the deadlock check needs them parked).
    block_on_polling: AtomicUsize,
    block_on_parked: AtomicUsize,
    /// What the last `block_on` poll said it parked on (a `Reason`), for
    /// the dump and the deadlock check.
    block_on_reason: std::sync::atomic::AtomicU8,
    /// Counters for events that happen without a P.
    counters: CachePadded<Counters>,
    monitor: machine::sysmon::Monitor,
    /// The monitor thread, joined by [`Sched::shutdown`].
    monitor_thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    blocking: machine::blocking::BlockingPool,
    /// Worker threads ever started, and their join handles.
    threads: Mutex<Vec<std::thread::JoinHandle<()>>>,
    nthreads: AtomicUsize,
    thread_name: String,
    start: Instant,
    /// The one timer heap under `TimerPlacement::Global`.
    global_timers: Arc<timer::queue::TimerQueue>,
    /// The parked thread that sleeps until the earliest timer, if any.
    /// Through the loom facade: the sleeper holds it while it reads the
    /// heaps and unparks another sleeper (`become_timer_sleeper`), which
    /// a loom model must be able to interleave.
    timer_sleeper: crate::loom::Mutex<Option<Arc<machine::park::Parker>>>,
    /// Its deadline: `NEVER` while no thread sleeps on timers, `NEVER - 1`
    /// for a sleeper with no deadline.
    sleep_until: crate::loom::AtomicU64,
    /// Round-robin P choice for timers armed from threads without a P.
    timer_rr: AtomicUsize,
    /// Ourselves, to hand an `Arc` to new threads.
    me: Weak<Sched>,
    /// The network poller (epoll made on the first socket; net/poller.rs).
    netpoll: machine::netpoll::NetpollSlot,
    /// Pool hook: how often the monitor cycles pools (`Builder::pool_cycle`).
    pool_cycle: std::time::Duration,
    /// Whether find-runnable's slow path reads the thread CPU clock at
    /// entry and exit for the `find_cpu_ns` counter
    /// (`Builder::measure_find_cpu`; off by default: no clock reads).
    measure_find_cpu: bool,
    /// Handoffs to threads the loom model would have started.
    #[cfg(loom)]
    loom_started: Mutex<Vec<Handoff>>,
    /// The execution trace (`crate::trace`), off unless started.
    trace: crate::sched::trace::Trace,
    /// Set for a sim bubble (`sim/`): spawns and wakes go to its queues,
    /// and no M ever starts.
    sim: Option<sim::Bubble>,
}

impl Sched {
    pub(crate) fn new(
        procs: usize,
        policy: Policy,
        thread_name: String,
        schedtrace: Option<std::time::Duration>,
        pool_cycle: std::time::Duration,
        measure_find_cpu: bool,
    ) -> Arc<Sched> {
        Sched::build(
            procs,
            policy,
            thread_name,
            schedtrace,
            pool_cycle,
            measure_find_cpu,
            None,
        )
    }

    /// A sim bubble's scheduler: `procs` Ps that no thread runs, and the
    /// bubble that the caller's thread drives (`sim/`).
    pub(crate) fn new_sim(procs: usize, bubble: sim::Bubble) -> Arc<Sched> {
        Sched::build(
            procs,
            Policy::default(),
            "goro-sim".to_string(),
            None,
            std::time::Duration::from_secs(1),
            false,
            Some(bubble),
        )
    }

    fn build(
        procs: usize,
        policy: Policy,
        thread_name: String,
        schedtrace: Option<std::time::Duration>,
        pool_cycle: std::time::Duration,
        measure_find_cpu: bool,
        sim: Option<sim::Bubble>,
    ) -> Arc<Sched> {
        Arc::new_cyclic(|me| Sched {
            procs: AtomicUsize::new(procs),
            policy,
            ps: processor::allp::AllP::with(procs, |i| Processor::new(i, me.clone())),
            global: GlobalQueue::new(),
            idle: Idle::new(crate::sched::MAX_PROCS),
            resize: processor::resize::Resize::new(),
            shutdown: AtomicBool::new(false),
            tasks: task::table::TaskTable::new(),
            block_on_polling: AtomicUsize::new(0),
            block_on_parked: AtomicUsize::new(0),
            block_on_reason: std::sync::atomic::AtomicU8::new(task::meta::Reason::Other as u8),
            counters: CachePadded::new(Counters::default()),
            monitor: machine::sysmon::Monitor::new(schedtrace),
            monitor_thread: Mutex::new(None),
            blocking: machine::blocking::BlockingPool::new(),
            threads: Mutex::new(Vec::new()),
            nthreads: AtomicUsize::new(0),
            thread_name,
            start: Instant::now(),
            global_timers: timer::queue::TimerQueue::new(me.clone()),
            timer_sleeper: crate::loom::Mutex::new(None),
            sleep_until: crate::loom::AtomicU64::new(crate::sched::timer::NEVER),
            timer_rr: AtomicUsize::new(0),
            me: me.clone(),
            pool_cycle,
            measure_find_cpu,
            netpoll: machine::netpoll::NetpollSlot::new(),
            #[cfg(loom)]
            loom_started: Mutex::new(Vec::new()),
            trace: crate::sched::trace::Trace::new(procs),
            sim,
        })
    }

    /// Puts every P on the idle list (start-up: no thread runs yet).
    pub(crate) fn init_idle(&self) {
        let mut lists = self.idle.lock();
        for p in (0..self.procs()).rev() {
            // SAFETY: start-up: no P was handed out yet, each id goes once.
            unsafe {
                self.idle
                    .pidleput_free(&mut lists, p, || self.ps[p].timers.len() > 0)
            };
        }
    }

    /// The number of active Ps (ids `0..procs`).
    #[inline]
    pub(crate) fn procs(&self) -> usize {
        // Acquire: pairs with the resize's SeqCst store, so the Ps below
        // the count are seen built (`processor/allp.rs`). A stale count only makes a
        // thief look at one P too many or too few, or a timer land on a P
        // being removed, which its armer re-checks (`processor/resize.rs`).
        self.procs.load(Ordering::Acquire)
    }

    pub(crate) fn is_shutdown(&self) -> bool {
        // Relaxed: a stale "not yet" only delays a thread by one loop.
        self.shutdown.load(Ordering::Relaxed)
    }

    /// The schedule function of every task: where a woken task goes.
    ///
    /// On an M holding one of our Ps: that P's `runnext` (unless the task
    /// woke itself, i.e. yielded, or `runnext` is off), or the tail of its
    /// queue while the M hands out timer wakes; else the global queue.
    pub(crate) fn schedule(&self, task: Runnable, yielded: bool) {
        if self.is_shutdown() {
            // Dropping the Runnable cancels the task and drops its future.
            drop(task);
            return;
        }
        let target = context::wake_target(self);
        let on = match target {
            WakeTarget::Runnext(p) | WakeTarget::Quiet(p) => Some(p),
            WakeTarget::Global => None,
        };
        ready(&task, on);
        crate::sched::trace::unblock(self, task.metadata());
        let (p, quiet) = match target {
            WakeTarget::Runnext(p) => (p, false),
            WakeTarget::Quiet(p) => (p, true),
            WakeTarget::Global => return self.inject(task),
        };
        let p = &self.ps[p];
        // SAFETY: P `p` is in this thread's context (`wake_target` just
        // read it); `ready` and the trace hook since only wrote the task's
        // record and a trace buffer. Below, the handle serves one `put`
        // and dies before the `wakep` that follows it.
        let mut q = unsafe { own_queue(p) };
        if quiet {
            self.runqput_quiet(p, &mut q, task)
        } else if yielded {
            self.runqput_yield(p, &mut q, task)
        } else {
            self.runqput(p, &mut q, task, self.policy.runnext)
        }
    }

    /// Queues a new task on the caller's own P, `p` (or, with `None`,
    /// globally): `p` is the P this thread holds in this runtime, read from
    /// its context by the spawn, which has run nothing since that could
    /// give it away (making a task runs no user code). The record already
    /// says where (`TaskMeta::new`).
    pub(crate) fn place(&self, p: Option<usize>, task: Runnable) {
        sample_wake(task.metadata());
        match p {
            Some(p) => {
                debug_assert_eq!(
                    context::current_p(self),
                    Some(p),
                    "goro: place on a P not held"
                );
                let p = &self.ps[p];
                // SAFETY: P `p` is in this thread's context (the contract
                // above); the handle serves one `put` in `runqput`, before
                // its `wakep`.
                let mut q = unsafe { own_queue(p) };
                self.runqput(p, &mut q, task, self.policy.runnext)
            }
            None => self.inject(task),
        }
    }

    /// Go's `runqput` + `wakep`, on the current thread's own P: `p`, whose
    /// queue `q` is.
    pub(crate) fn runqput(&self, p: &Processor, q: &mut Local<'_>, task: Runnable, next: bool) {
        match q.put(task, next) {
            Put::Runnext => self.wake_for_runnext(),
            Put::Ring => {
                if next {
                    bump(&p.counters.runnext_bumps, 1);
                }
                self.wakep()
            }
            Put::Overflow(batch) => {
                bump(&p.counters.runq_overflows, 1);
                self.global.push_batch(batch);
                self.wakep();
            }
        }
    }

    /// Seed 004's hand-off: after a put into this P's empty `runnext`, make
    /// sure an idle P will take the task if the current poll keeps running
    /// (`processor/idle.rs`, "Hand-off"). No fence: the `runnext` swap was SeqCst.
    #[inline]
    fn wake_for_runnext(&self) {
        use crate::RunnextWake;
        match self.policy.runnext_wake {
            RunnextWake::Off => {}
            RunnextWake::Eager | RunnextWake::Watch => {
                // loom only: loom models a SeqCst read-modify-write as
                // AcqRel (its `seq_cst()` is a no-op), so it cannot see that
                // the checker's SeqCst fence after `dec_spinning` orders the
                // swap before its re-check (C++20 [atomics.order] 4.3) and
                // reports a lost hand-off that Rust's memory model forbids.
                // The fence stands in for that rule; real builds rely on the
                // swap alone. See `loom/handoff.rs`.
                #[cfg(loom)]
                fence(Ordering::SeqCst);
                self.wakep_published()
            }
        }
    }

    /// A task that woke itself while running (a yield, a preemption) goes
    /// to the tail, and wakes nobody: its poll is returning, so this P
    /// looks for work at once, and the tasks already queued each called
    /// `wakep` when they were put. Waking a thread here would only send it
    /// to steal the yielder: a task preempted every few microseconds (`hog`)
    /// bounces between two threads that the kernel often places on one CPU,
    /// and a sleeper beside it waits out their time slices (measured on
    /// `hog` at procs 2: BENCH_RESULTS.md, "Design readings quoted from
    /// module docs").
    fn runqput_yield(&self, p: &Processor, q: &mut Local<'_>, task: Runnable) {
        if let Put::Overflow(batch) = q.put(task, false) {
            bump(&p.counters.runq_overflows, 1);
            self.global.push_batch(batch);
            self.wakep();
        }
    }

    /// [`Sched::runqput`] at the tail and without `wakep`, for a batch of
    /// wakes after which the caller calls `wakep` once. The woken tasks
    /// run in the order they were woken (for timers: deadline order), and
    /// a thousand timers firing together cost one `wakep`, not a thousand.
    fn runqput_quiet(&self, p: &Processor, q: &mut Local<'_>, task: Runnable) {
        if let Put::Overflow(batch) = q.put(task, false) {
            bump(&p.counters.runq_overflows, 1);
            self.global.push_batch(batch);
        }
    }

    /// Go's `injectglist` for one task: to the global queue, then wake a thread.
    pub(crate) fn inject(&self, task: Runnable) {
        self.global.push(task);
        self.wakep();
    }

    /// Go's `wakep`: start a spinning M if a P is idle and nobody spins.
    pub(crate) fn wakep(&self) {
        // SeqCst fence: the publish side of the publish-fence-check pairing;
        // the task we just queued is visible to anyone who reads the
        // counters after us (see idle.rs).
        fence(Ordering::SeqCst);
        self.wakep_published();
    }

    /// `wakep` for a caller whose publishing store was itself SeqCst (the
    /// `runnext` swap), which is the fence.
    #[inline]
    pub(crate) fn wakep_published(&self) {
        if self.idle.try_claim_spinner() {
            self.start_spinner();
        }
    }

    /// The rest of `wakep` once a spinner is claimed: out of line, so that
    /// the common "nobody to wake" case costs the caller two loads.
    #[cold]
    fn start_spinner(&self) {
        match self.acquire_idle_p() {
            Some(p) => self.startm(p, true),
            None => {
                self.idle.dec_spinning();
            }
        }
    }

    /// Takes a P off the idle list.
    pub(crate) fn acquire_idle_p(&self) -> Option<HeldP> {
        let p = {
            let mut lists = self.idle.lock();
            self.idle.pidleget(&mut lists)
        };
        if p.is_some() {
            self.monitor.notify_busy();
        }
        p
    }

    /// Gives P `p` back to the idle list, then re-checks the global queue
    /// so a task injected concurrently is not stranded (publish-fence-check,
    /// idle side).
    pub(crate) fn release_p(&self, p: HeldP) {
        let id = p.id();
        let retired = {
            let mut lists = self.idle.lock();
            self.pidleput(&mut lists, p)
        };
        if retired {
            // A resize removed it: its work moved (resize.rs).
            self.after_retire();
            return;
        }
        fence(Ordering::SeqCst);
        if !self.global.is_empty() {
            self.wakep();
        }
        // Its timers need a thread to wake for them (Go's handoffp does the
        // same): one armed while every P was busy woke nobody.
        let when = self.ps[id].timers.next_when();
        if when != crate::sched::timer::NEVER {
            self.timer_added(when);
        }
    }

    /// Go's `startm`: runs P `p` on an idle M, or on a new thread.
    pub(crate) fn startm(&self, p: HeldP, spinning: bool) {
        let id = p.id();
        let h = Handoff::P { p, spinning };
        let m = self.idle.lock().ms.pop();
        match m {
            Some(parker) => {
                bump_shared(&self.counters.unparks, 1);
                crate::sched::trace::m_wake(self, id);
                parker.unpark(h);
            }
            None => self.spawn_m(h),
        }
    }

    /// Under loom there are no real threads to start: the model records the
    /// handoff and checks it (see `loom_park`).
    #[cfg(loom)]
    fn spawn_m(&self, h: Handoff) {
        self.loom_started.lock().unwrap().push(h);
    }

    #[cfg(not(loom))]
    fn spawn_m(&self, h: Handoff) {
        use crate::loom::Unpoison;
        let sched = self
            .me
            .upgrade()
            .expect("goro: scheduler dropped while starting a thread");
        let n = self.nthreads.fetch_add(1, Ordering::Relaxed);
        bump_shared(&self.counters.threads_started, 1);
        // The handoff goes through a slot, not the closure, so that a failed
        // spawn (which drops the closure) leaves the held P here to give back.
        let slot = Arc::new(Mutex::new(Some(h)));
        let theirs = slot.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("{}-m{n}", self.thread_name))
            .spawn(move || {
                let h = theirs.lock().unpoison().take();
                drop(theirs);
                machine::m_main(sched, h.expect("goro: a new M's handoff"))
            });
        match spawned {
            Ok(jh) => self.threads.lock().unpoison().push(jh),
            Err(e) => {
                // No thread: give the P back so nothing is lost; the work stays
                // queued for the threads that exist.
                self.nthreads.fetch_sub(1, Ordering::Relaxed);
                eprintln!("goro: failed to start a worker thread: {e}");
                let h = slot.lock().unpoison().take();
                if let Some(Handoff::P { p, spinning }) = h {
                    if spinning {
                        self.idle.dec_spinning();
                    }
                    let mut lists = self.idle.lock();
                    self.pidleput(&mut lists, p);
                }
            }
        }
    }

    /// Go's `handoffp`: the current M gives up P `p` (it is about to block).
    pub(crate) fn handoffp(&self, p: HeldP) {
        bump_shared(&self.counters.handoffs, 1);
        if !self.ps[p.id()].runq.is_empty() || !self.global.is_empty() {
            self.startm(p, false);
            return;
        }
        // No work, but make sure someone will look for work that arrives.
        if self.idle.nmspinning() + self.idle.npidle() == 0 && self.idle.claim_first_spinner() {
            self.startm(p, true);
            return;
        }
        self.release_p(p);
    }

    /// Gives the held P `p` back to the idle list (caller holds the lock),
    /// marking it in the timer mask if it has timers; or, if a resize
    /// removed it, moves its work to the active Ps and returns true
    /// (`processor/resize.rs`).
    pub(crate) fn pidleput(&self, lists: &mut processor::idle::IdleLists, p: HeldP) -> bool {
        let id = p.id();
        // Relaxed: `procs` changes only under the idle lock, which we hold.
        if id >= self.procs.load(Ordering::Relaxed) {
            self.retire_locked(p);
            return true;
        }
        self.idle
            .pidleput(lists, p, || self.ps[id].timers.len() > 0);
        false
    }

    pub(crate) fn stats(&self) -> Stats {
        let mut s = Stats::default();
        for p in self.ps.iter() {
            p.counters.add_to(&mut s);
        }
        self.counters.add_to(&mut s);
        s
    }
}

/// Records that `task` is runnable on P `on` (or globally), timing one
/// wake in `SAMPLE_EVERY` for the wake-to-run histogram.
#[inline]
fn ready(task: &Runnable, on: Option<usize>) {
    let meta = task.metadata();
    meta.set(State::Runnable(on), coarse());
    sample_wake(meta);
}

/// Times this wake if it is this thread's one in `SAMPLE_EVERY`.
#[inline]
fn sample_wake(meta: &task::meta::TaskMeta) {
    if processor::sampling::sample_wake() {
        meta.mark_woken(crate::sched::timer::clock::now());
    }
}

pub(crate) fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}
