//! The runtime: building one, entering it, shutting it down.
//!
//! A [`Runtime`] owns the scheduler (`procs` Ps, the worker threads started on
//! demand, the monitor thread) and is the handle for putting work into it
//! from outside: [`Runtime::block_on`] drives a future on the calling thread
//! (which holds no P, so what it spawns goes to the global queue), and
//! [`Runtime::spawn`] queues a task. Inside a task, [`crate::spawn`] and the
//! other free functions find the runtime through the thread's context.
//!
//! Start-up reads `GORO_PROCS` (when the builder sets no `procs`),
//! `GORO_POLICY` (overrides on top of the builder's policy, so any binary can
//! be A/B-tested without recompiling), `GORO_SCHEDTRACE`, `GORO_DEADLOCK`
//! (`deadlock.rs`), `GORO_STUCK` (the stuck-poll report,
//! `sched/machine/stuck.rs`) and `GORO_DUMP_SIGNAL` (`signal.rs`). Every malformed
//! value is an error naming the variable and the accepted form.
//!
//! Dropping a `Runtime` stops every worker thread, then drops every
//! unfinished task's future (queued ones directly, parked ones by waking
//! them into a scheduler that now discards what it is given).

mod builder;
pub mod cgroup;
pub mod deadlock;
pub mod dump;
pub mod metrics;
pub use crate::sched::policy;
mod monitor;
pub mod procs;
mod signal;
mod trace_api;

use crate::sched::machine::enter::{on_worker_thread, EnterGuard};
use crate::sched::task::meta::{PollScope, TaskId};
use crate::sched::task::spawn::spawn_on;
pub use crate::sched::task::spawn::{spawn, spawn_named, yield_now};
use crate::sched::task::JoinHandle;
use crate::sched::Sched;
use crate::stats::Stats;
use deadlock::Detector;
use dump::Dump;
use policy::Policy;
use std::future::Future;
use std::io;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

pub use crate::sched::MAX_PROCS;
pub use builder::{Builder, DEFAULT_POOL_CYCLE, DEFAULT_TEST_STUCK_POLL};

/// The number of live tasks of the runtime the caller runs in, the main
/// task included (Go's `runtime.NumGoroutine()`); `None` outside a goro
/// runtime (not in a task, not inside `Runtime::block_on`). A task counts
/// from its spawn until its future is dropped. Taken while tasks spawn and
/// exit, it is a snapshot, as Go's is.
///
/// ```
/// #[goro::main(procs = 1)]
/// async fn main() {
///     assert_eq!(goro::runtime::num_tasks(), Some(1)); // main itself
///     let (tx, rx) = goro::chan::bounded::<()>(0);
///     let h = goro::spawn(async move { rx.recv().await.ok() });
///     assert_eq!(goro::runtime::num_tasks(), Some(2));
///     tx.send(()).await.unwrap();
///     h.await.unwrap();
/// }
/// # main();
/// assert_eq!(goro::runtime::num_tasks(), None); // outside the runtime
/// ```
pub fn num_tasks() -> Option<usize> {
    crate::sched::context::with_current_sched(|s| s.tasks().len())
}

/// The number of Ps of the runtime the caller runs in now (Go's
/// `runtime.GOMAXPROCS(0)`); `None` outside a goro runtime. To change it,
/// [`Runtime::set_procs`].
///
/// ```
/// #[goro::main(procs = 3)]
/// async fn main() {
///     assert_eq!(goro::runtime::num_procs(), Some(3));
/// }
/// # main();
/// ```
pub fn num_procs() -> Option<usize> {
    crate::sched::context::with_current_sched(|s| s.procs())
}

/// A goro runtime: `procs` Ps, worker threads, a monitor.
///
/// ```
/// let rt = goro::Runtime::new().unwrap();
/// let v = rt.block_on(async {
///     let a = goro::spawn(async { 40 });
///     let b = goro::spawn(async { 2 });
///     a.await.unwrap() + b.await.unwrap()
/// });
/// assert_eq!(v, 42);
/// ```
pub struct Runtime {
    sched: Arc<Sched>,
    /// The likely-deadlock check's state, shared with the monitor.
    deadlock: Arc<Detector>,
    source: procs::ProcsSource,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("procs", &self.sched.procs())
            .field("policy", self.sched.policy())
            .finish()
    }
}

impl Runtime {
    /// A runtime with `GORO_PROCS` (or the available parallelism) Ps and the
    /// default policy plus `GORO_POLICY` overrides.
    pub fn new() -> io::Result<Runtime> {
        Builder::default().build()
    }

    /// A [`Builder`] for chosen settings.
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// The number of Ps now.
    pub fn procs(&self) -> usize {
        self.sched.procs()
    }

    /// Sets the number of Ps to `n` while tasks run, and returns the
    /// previous number (Go's `runtime.GOMAXPROCS(n)`). Accepted:
    /// `1..=4096`; anything else is an `InvalidInput` error naming the
    /// value and the range, and changes nothing.
    ///
    /// Removing Ps moves their queued tasks to the global queue and their
    /// timers to the remaining Ps; a removed P that a thread is running a
    /// task on is given back when that task's poll returns. Nothing is
    /// lost or run twice, and no timer fires early. The call never waits
    /// for other threads, so a task may call it. It also stops the
    /// monitor's following of the CPU limit ([`Builder::update_procs`]).
    ///
    /// ```
    /// let rt = goro::Runtime::builder().procs(4).build().unwrap();
    /// assert_eq!(rt.set_procs(1).unwrap(), 4);
    /// assert_eq!(rt.procs(), 1);
    /// assert_eq!(rt.block_on(async { goro::spawn(async { 5 }).await.unwrap() }), 5);
    /// assert!(rt.set_procs(0).is_err());
    /// ```
    pub fn set_procs(&self, n: usize) -> io::Result<usize> {
        if !(1..=MAX_PROCS).contains(&n) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("goro: set_procs({n}) is out of range: accepted 1..={MAX_PROCS}"),
            ));
        }
        Ok(self.sched.resize_to(n, true))
    }

    /// Where the number of Ps the runtime started with came from: the
    /// builder, `GORO_PROCS`, or the machine (with the affinity count, the
    /// cgroup limit, or why the cgroup files could not be read).
    ///
    /// ```
    /// let rt = goro::Runtime::builder().procs(2).build().unwrap();
    /// assert_eq!(rt.procs_source(), &goro::runtime::procs::ProcsSource::Builder);
    /// ```
    pub fn procs_source(&self) -> &procs::ProcsSource {
        &self.source
    }

    /// Whether the monitor follows the machine's CPU limit now (see
    /// [`Builder::update_procs`]).
    pub fn follows_procs(&self) -> bool {
        self.sched.follows_procs()
    }

    /// The policy in force (after `GORO_POLICY` overrides).
    pub fn policy(&self) -> &Policy {
        self.sched.policy()
    }

    /// Runs `future` to completion on the calling thread and returns its
    /// output. The future need not be `Send`; tasks it spawns run on the
    /// runtime's workers.
    ///
    /// The future is not a task: it runs beside the scheduler, outside
    /// every P, and the calling thread sleeps in the kernel whenever it
    /// waits, so each wake of it from a task is a wake of another thread
    /// (tokio's `block_on` works the same way). For a future that waits
    /// often on tasks (a collector, a `select!` loop, a `WaitGroup`), use
    /// [`Runtime::run`], which runs it as the main task on a P; `block_on`
    /// is for a future that is not `Send`, or that waits once (a join).
    ///
    /// # Panics
    /// When called from inside a goro task (that would block a worker thread
    /// holding a P): use `.await`, [`crate::spawn`] or [`crate::block_in_place`].
    ///
    /// ```
    /// let rt = goro::Runtime::builder().procs(1).build().unwrap();
    /// assert_eq!(rt.block_on(async { 7 }), 7);
    /// ```
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        if on_worker_thread() {
            panic!(
                "goro: Runtime::block_on called from inside a goro task; this would block a worker thread \
                 holding a P. Await the future, or use goro::spawn / goro::block_in_place"
            );
        }
        let _enter = EnterGuard::enter(self.sched.clone());
        let parker = Arc::new(ThreadWaker {
            thread: std::thread::current(),
            notified: AtomicBool::new(false),
        });
        let waker = Waker::from(parker.clone());
        let mut cx = Context::from_waker(&waker);
        let mut future = pin!(future);
        let _caller = BlockOnCaller::enter(&self.sched, &self.deadlock);
        let deadlock = &self.deadlock;
        let reports_seen = deadlock.reports();
        loop {
            // Not a task (id 0): what it spawns has no parent, and the
            // reason it parks goes to the deadlock check.
            let scope = PollScope::enter(TaskId(0));
            if let Poll::Ready(v) = future.as_mut().poll(&mut cx) {
                return v;
            }
            self.sched.set_block_on_reason(scope.reason().0);
            drop(scope);
            // Acquire: pairs with the Release swap in `wake`, so what the
            // waker published before waking us is visible to the next poll.
            if !parker.notified.swap(false, Ordering::Acquire) {
                let _parked = BlockOnParked::enter(&self.sched);
                if deadlock.grace().is_some() {
                    self.sched.block_on_new_wait();
                }
                while !parker.notified.swap(false, Ordering::Acquire) {
                    std::thread::park();
                    if let Some(report) = deadlock.failure_after(reports_seen) {
                        panic!("{report}");
                    }
                }
            }
        }
    }

    /// Runs `future` as this runtime's main task (Go's main goroutine) and
    /// blocks the calling thread until it finishes; returns its output, or
    /// resumes its panic. This is what `#[goro::main]` and `#[goro::test]`
    /// do with their body.
    ///
    /// Use it rather than [`Runtime::block_on`] for a future that waits
    /// often: the main task runs on a P like every other task, so a
    /// channel operation with another task is a hand-off on one P (the
    /// woken task goes to the waker's `runnext`), not a wake of the
    /// calling thread through the kernel. A collector fed by 4 senders
    /// per P at procs 1 (goro-bench `fan_in/main` against `fan_in/local`)
    /// costs about a tenth as much per value this way as polled by
    /// `block_on` (BENCH_RESULTS.md, "Go's shapes: `main` as a task, and
    /// the contended rows"). The task is named `main` in [`Runtime::dump`].
    ///
    /// The future must be `Send + 'static`, as for [`Runtime::spawn`]; for
    /// one that is not, [`Runtime::block_on`] polls it on the calling
    /// thread (`#[goro::main(local)]`).
    ///
    /// # Panics
    /// When called from inside a goro task, as [`Runtime::block_on`]; and
    /// with the main task's own panic, or if it was aborted.
    ///
    /// ```
    /// let rt = goro::Runtime::builder().procs(2).build().unwrap();
    /// let sum = rt.run(async {
    ///     let (tx, rx) = goro::chan::bounded::<u64>(8);
    ///     for w in 0..4 {
    ///         let tx = tx.clone();
    ///         goro::spawn(async move {
    ///             for i in 0..100 {
    ///                 tx.send(w * 100 + i).await.unwrap();
    ///             }
    ///         });
    ///     }
    ///     drop(tx);
    ///     let mut sum = 0;
    ///     while let Ok(v) = rx.recv().await {
    ///         sum += v;
    ///     }
    ///     sum
    /// });
    /// assert_eq!(sum, (0..400).sum::<u64>());
    /// ```
    #[track_caller]
    pub fn run<F>(&self, future: F) -> F::Output
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        if on_worker_thread() {
            panic!(
                "goro: Runtime::run called from inside a goro task; this would block a worker thread \
                 holding a P. Await the future, or use goro::spawn"
            );
        }
        let main = spawn_on(&self.sched, future, Some("main".into()));
        // Cleared however `block_on` ends: a panic out of it (a deadlock
        // report under `Deadlock::Fail`) must not leave a later `block_on`
        // reported as the main task.
        struct MainTask<'a>(&'a Detector);
        impl Drop for MainTask<'_> {
            fn drop(&mut self) {
                self.0.set_main(None);
            }
        }
        self.deadlock.set_main(Some(main.id()));
        let guard = MainTask(&self.deadlock);
        let out = self.block_on(main);
        drop(guard);
        match out {
            Ok(v) => v,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => panic!("goro: the main task did not finish: {e}"),
        }
    }

    /// Every live task of this runtime: id, name, spawn site, parent,
    /// state and for how long (see [`Dump`]). Never waits for a task: a
    /// task stuck in a long poll shows as running for that long.
    pub fn dump(&self) -> Dump {
        Dump::take(&self.sched)
    }

    /// Spawns a task on this runtime from any thread.
    ///
    /// ```
    /// let rt = goro::Runtime::builder().procs(2).build().unwrap();
    /// let h = rt.spawn(async { "done" });
    /// assert_eq!(rt.block_on(h).unwrap(), "done");
    /// ```
    #[track_caller]
    pub fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        spawn_on(&self.sched, future, None)
    }

    /// [`Runtime::spawn`] with a name that the task dump shows (Go's
    /// goroutine labels, tokio's `task::Builder::name`).
    ///
    /// ```
    /// let rt = goro::Runtime::builder().procs(1).build().unwrap();
    /// let h = rt.spawn_named("flusher", async { 1 });
    /// assert_eq!(rt.block_on(h).unwrap(), 1);
    /// ```
    #[track_caller]
    pub fn spawn_named<F>(&self, name: impl Into<String>, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        spawn_on(&self.sched, future, Some(name.into().into_boxed_str()))
    }

    /// Runs `f` on this runtime's blocking pool (see [`crate::spawn_blocking`]).
    #[track_caller]
    pub fn spawn_blocking<F, R>(&self, f: F) -> JoinHandle<R>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        crate::sched::machine::blocking::spawn_blocking_on(&self.sched, f)
    }

    /// A snapshot of the counters (see [`Stats`]).
    pub fn stats(&self) -> Stats {
        let mut s = self.sched.stats();
        // Pools are process-wide; so are their cycles.
        s.pool_cycles = crate::sync::pool::cycles();
        s.procs = self.sched.procs() as u64;
        s
    }

    /// Latency and load metrics: wake-to-run and poll-duration histograms
    /// (sampled), per-P queue depths, and every counter (see
    /// [`metrics::Metrics`]).
    pub fn metrics(&self) -> metrics::Metrics {
        metrics::Metrics::take(&self.sched, self.stats())
    }

    /// One line in Go's `schedtrace` shape describing the scheduler now.
    ///
    /// ```
    /// let rt = goro::Runtime::builder().procs(2).build().unwrap();
    /// assert!(rt.schedtrace().starts_with("SCHED "));
    /// ```
    pub fn schedtrace(&self) -> String {
        crate::sched::machine::sysmon::schedtrace_line(&self.sched)
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.sched.shutdown();
        crate::sched::trace::runtime_dropped(&self.sched, self.stats());
    }
}

/// Counts a `block_on` caller for the dump while it lives.
struct BlockOnCaller<'a>(&'a Sched, &'a Detector);

impl<'a> BlockOnCaller<'a> {
    fn enter(sched: &'a Sched, deadlock: &'a Detector) -> BlockOnCaller<'a> {
        sched.block_on_polling(true);
        deadlock.enter_block_on();
        BlockOnCaller(sched, deadlock)
    }
}

impl Drop for BlockOnCaller<'_> {
    fn drop(&mut self) {
        self.1.leave_block_on();
        self.0.block_on_polling(false);
    }
}

/// Moves a `block_on` caller from polling to parked while it lives.
struct BlockOnParked<'a>(&'a Sched);

impl<'a> BlockOnParked<'a> {
    fn enter(sched: &'a Sched) -> BlockOnParked<'a> {
        sched.block_on_parked(true);
        BlockOnParked(sched)
    }
}

impl Drop for BlockOnParked<'_> {
    fn drop(&mut self) {
        self.0.block_on_parked(false);
    }
}

/// Wakes a `block_on` caller.
struct ThreadWaker {
    thread: std::thread::Thread,
    notified: AtomicBool,
}

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // Release: pairs with the Acquire swap in block_on.
        if !self.notified.swap(true, Ordering::Release) {
            self.thread.unpark();
        }
    }
}
