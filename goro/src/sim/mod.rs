//! Simulation testing: a test's tasks run in a *bubble*, on one thread, in
//! virtual time, with every scheduling choice drawn from a seed.
//!
//! Go 1.25's `testing/synctest` runs a test in a bubble whose clock is
//! fake and jumps ahead only when every goroutine in it is durably
//! blocked. A goro bubble does that, and goes further, because goro owns
//! every primitive a task can wait on:
//!
//! * **Virtual time.** Every goro timer, sleep, ticker, `after_func`,
//!   context deadline and socket deadline in the bubble reads the bubble's
//!   clock ([`crate::time::now`]). It stands still while any task can run
//!   and jumps to the next timer only when every task is blocked: a test
//!   that sleeps ten seconds takes microseconds.
//! * **Seeded schedules.** All tasks run on the calling thread; which
//!   runs next, which virtual P an idle one robs, where a timer's wake
//!   lands and which ready case of a `select!` wins all come from the seed
//!   ([`Builder::seed`]). One seed gives one run, every time: a failure
//!   prints its seed, and `GORO_SIM_SEED=N` replays it. [`Strategy::Pct`]
//!   adds probabilistic concurrency testing beside uniform choice.
//! * **Verdicts.** [`Builder::run`] returns when the root future and every
//!   task spawned in the bubble have finished. If instead every task is
//!   blocked with no timer armed, nothing can ever wake them, and `run`
//!   returns [`Error::Deadlock`] naming each task, what it waits on and
//!   where it was spawned; tasks left blocked after the root returned are
//!   a leak, reported the same way.
//!
//! ```
//! use std::time::Duration;
//! let (result, report) = goro::sim::Builder::new().seed(7).procs(4).run_report(async {
//!     let (tx, rx) = goro::chan::bounded::<u32>(0);
//!     goro::spawn(async move {
//!         goro::time::sleep(Duration::from_secs(10)).await;
//!         tx.send(42).await.unwrap();
//!     });
//!     rx.recv().await.unwrap()
//! });
//! assert_eq!(result.unwrap(), 42);
//! assert_eq!(report.virtual_elapsed(), Duration::from_secs(10));
//! ```
//!
//! # Durably blocked
//!
//! A task is durably blocked when it waits on something only the bubble
//! can end: a channel, a `select!`, a timer, a `Mutex`, `RwLock`,
//! `Semaphore`, `WaitGroup`, `OnceCell`, a join, a task group. Unlike
//! `synctest`, a lock wait is durable too (goro's locks are tasks'
//! locks). What is not:
//!
//! * a job on the blocking pool ([`crate::spawn_blocking`]): while one
//!   runs, the driver waits for it in real time instead of moving the
//!   clock;
//! * a waker that a future outside goro hands to a thread of its own (a
//!   foreign reactor, a `std::thread`): goro cannot see it, counts the wait
//!   as durable, and may move the clock past it or call it a deadlock.
//!   Use goro's primitives inside a bubble, or `spawn_blocking`;
//! * a real socket: inside a bubble there is none. `goro::net`'s
//!   `TcpListener`, `TcpStream` and `UdpSocket` made in a bubble are
//!   sockets of the bubble's own simulated network instead (in memory, in
//!   virtual time, durably blocked like a channel), with the same API, so
//!   hyper, goro-http and axum run on it unchanged; [`net`] sets its links'
//!   latency, loss, partitions and holds.
//!
//! Nested bubbles are refused, and so is a bubble started from inside a
//! goro task (it would block that task's worker thread).

mod error;
pub mod net;

pub use crate::sched::sim::choose::Strategy;
pub use error::{DeadlockReport, Error};

use crate::sched::context::with_current_sched;
use crate::sched::machine::enter::on_worker_thread;
use crate::sched::sim::run::{drive, finish, Ending};
use crate::sched::sim::Bubble;
use crate::sched::Sched;
use std::future::Future;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::pin::pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// Steps a bubble may take before [`Error::StepLimit`].
pub const DEFAULT_MAX_STEPS: u64 = 10_000_000;

/// Sets up and runs a bubble.
#[derive(Debug, Clone)]
pub struct Builder {
    seed: Option<u64>,
    procs: usize,
    strategy: Strategy,
    max_steps: u64,
}

impl Default for Builder {
    fn default() -> Builder {
        Builder::new()
    }
}

impl Builder {
    /// A bubble with 2 virtual Ps, uniform choice and a seed from
    /// `GORO_SIM_SEED`, or a random one that a failure prints.
    pub fn new() -> Builder {
        Builder {
            seed: None,
            procs: 2,
            strategy: Strategy::Uniform,
            max_steps: DEFAULT_MAX_STEPS,
        }
    }

    /// The seed every choice comes from (it wins over `GORO_SIM_SEED`).
    pub fn seed(mut self, seed: u64) -> Builder {
        self.seed = Some(seed);
        self
    }

    /// Virtual Ps (at least 1): how many tasks the schedule treats as
    /// running at once. At 1 the order is Go's on one P, and the seed
    /// only picks among `select!`'s ready cases.
    ///
    /// # Panics
    /// If `procs` is 0 or above [`crate::sched::MAX_PROCS`].
    pub fn procs(mut self, procs: usize) -> Builder {
        assert!(
            (1..=crate::sched::MAX_PROCS).contains(&procs),
            "goro::sim::Builder::procs({procs}): accepted 1 to {}",
            crate::sched::MAX_PROCS
        );
        self.procs = procs;
        self
    }

    /// How the next task is chosen.
    ///
    /// # Panics
    /// For `Strategy::Pct { depth: 0 }` (accepted: 1 or more).
    pub fn strategy(mut self, strategy: Strategy) -> Builder {
        if let Strategy::Pct { depth: 0 } = strategy {
            panic!(
                "goro::sim::Builder::strategy(Pct {{ depth: 0 }}): accepted a depth of 1 or more"
            );
        }
        self.strategy = strategy;
        self
    }

    /// Steps (polls) a run may take before it stops with
    /// [`Error::StepLimit`] (default [`DEFAULT_MAX_STEPS`]).
    pub fn max_steps(mut self, steps: u64) -> Builder {
        self.max_steps = steps;
        self
    }

    /// Runs `root` as the bubble's main until it and every task it
    /// spawned have finished; returns its output, or why it could not.
    ///
    /// A panic in `root` is resumed after the bubble ends, with its seed
    /// printed to stderr first.
    ///
    /// # Panics
    /// Inside a goro task or another bubble; with a malformed
    /// `GORO_SIM_SEED` (accepted: a decimal `u64`).
    pub fn run<F: Future>(self, root: F) -> Result<F::Output, Error> {
        self.run_report(root).0
    }

    /// [`Builder::run`], with the run's [`Report`].
    pub fn run_report<F: Future>(self, root: F) -> (Result<F::Output, Error>, Report) {
        if on_worker_thread() || with_current_sched(|_| ()).is_some() {
            panic!(
                "goro::sim::Builder::run called inside a goro runtime or another bubble: \
                 run a bubble from a plain thread (a #[test] fn, or #[goro::test(sim)])"
            );
        }
        let seed = self.seed.unwrap_or_else(seed_from_env);
        let sched = Sched::new_sim(self.procs, Bubble::new(self.procs, seed, self.strategy));
        crate::chan::select::seed_thread_rng(crate::sched::sim::choose::mix(!seed));
        let mut root = pin!(root);
        let driven = catch_unwind(AssertUnwindSafe(|| {
            drive(&sched, root.as_mut(), self.max_steps)
        }));
        let d = match driven {
            Ok(d) => d,
            Err(panic) => {
                finish(&sched);
                eprintln!("goro::sim: the bubble panicked (seed {seed}; replay with GORO_SIM_SEED={seed})");
                resume_unwind(panic);
            }
        };
        let report = Report {
            seed,
            hash: d.hash,
            steps: d.steps,
            elapsed: d.elapsed,
        };
        let result = match d.ending {
            Ending::Done(v) => Ok(v),
            Ending::Blocked { root, root_waits } => Err(Error::Deadlock(DeadlockReport::take(
                &sched,
                seed,
                root.is_some(),
                root_waits.0,
                d.elapsed,
            ))),
            Ending::StepLimit => Err(Error::StepLimit {
                seed,
                steps: self.max_steps,
            }),
        };
        finish(&sched);
        (result, report)
    }

    /// Runs a bubble made by `make` twice with the same seed and fails
    /// with [`Error::Nondeterministic`] if the two schedules differ (some
    /// choice came from outside the seed: a `HashMap`'s order, the real
    /// clock, a thread). Returns the first run's output otherwise.
    pub fn run_twice<F: Future>(self, mut make: impl FnMut() -> F) -> Result<F::Output, Error> {
        let seed = self.seed.unwrap_or_else(seed_from_env);
        let b = self.seed(seed);
        let (first, r1) = b.clone().run_report(make());
        let (_, r2) = b.run_report(make());
        if r1.hash != r2.hash || r1.steps != r2.steps {
            return Err(Error::Nondeterministic {
                seed,
                first: (r1.hash, r1.steps),
                second: (r2.hash, r2.steps),
            });
        }
        first
    }
}

impl Builder {
    /// Runs a bubble made by `make` once per seed of `seeds` (the rest of
    /// the set-up from this builder) and stops at the first run that
    /// fails: its seed and error, or `None` if every seed passed. A panic
    /// in a run is resumed, with its seed printed.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
    /// use std::sync::Arc;
    /// // A check-then-act race: the task may look at the flag too early.
    /// let found = goro::sim::Builder::new().procs(2).explore(0..100, || async {
    ///     let ready = Arc::new(AtomicBool::new(false));
    ///     let (tx, rx) = goro::chan::bounded::<()>(0);
    ///     let (r, t) = (ready.clone(), tx.clone());
    ///     goro::spawn(async move {
    ///         if r.load(Relaxed) {
    ///             t.send(()).await.unwrap();
    ///         }
    ///     });
    ///     goro::yield_now().await;
    ///     ready.store(true, Relaxed);
    ///     rx.recv().await.unwrap(); // never sent in the orders that lose
    ///     drop(tx);
    /// });
    /// let (seed, err) = found.expect("an order where the task looks first");
    /// assert!(err.to_string().contains("root: blocked on chan receive"), "seed {seed}: {err}");
    /// ```
    pub fn explore<F: Future>(
        self,
        seeds: impl IntoIterator<Item = u64>,
        mut make: impl FnMut() -> F,
    ) -> Option<(u64, Error)> {
        seeds
            .into_iter()
            .find_map(|seed| self.clone().seed(seed).run(make()).err().map(|e| (seed, e)))
    }
}

/// `GORO_SIM_SEED` if set, else a fresh random seed.
fn seed_from_env() -> u64 {
    match std::env::var("GORO_SIM_SEED") {
        Ok(v) => v.trim().parse().unwrap_or_else(|_| {
            panic!("GORO_SIM_SEED='{v}' is invalid: accepted a decimal u64 seed, for example GORO_SIM_SEED=42")
        }),
        Err(_) => {
            use std::hash::BuildHasher;
            std::collections::hash_map::RandomState::new().hash_one(std::process::id())
        }
    }
}

/// What a run did: its seed, its schedule's fingerprint, its length in
/// steps and in virtual time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    seed: u64,
    hash: u64,
    steps: u64,
    elapsed: Duration,
}

impl Report {
    /// The seed the run used.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// A hash of every step (which task, on which virtual P): equal for
    /// two runs exactly when they took the same schedule.
    pub fn schedule_hash(&self) -> u64 {
        self.hash
    }

    /// Virtual time from the bubble's start to its end.
    pub fn virtual_elapsed(&self) -> Duration {
        self.elapsed
    }

    /// Polls made (the root's and the tasks').
    pub fn steps(&self) -> u64 {
        self.steps
    }
}

/// Waits until every other task in the bubble is durably blocked (Go's
/// `synctest.Wait`); the clock does not move meanwhile.
///
/// ```
/// let r = goro::sim::Builder::new().seed(1).run(async {
///     let (tx, rx) = goro::chan::bounded::<u32>(1);
///     goro::spawn(async move { tx.send(5).await.unwrap() });
///     goro::sim::wait().await;
///     rx.try_recv().unwrap() // the task has run to its end
/// });
/// assert_eq!(r.unwrap(), 5);
/// ```
///
/// # Panics
/// Outside a bubble.
pub async fn wait() {
    Wait { woken: None }.await
}

struct Wait {
    woken: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

impl Future for Wait {
    type Output = ();

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        use std::sync::atomic::Ordering;
        if let Some(w) = &self.woken {
            // Relaxed: set and read on the driver's thread.
            return if w.load(Ordering::Relaxed) {
                Poll::Ready(())
            } else {
                Poll::Pending
            };
        }
        let woken = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let added = with_current_sched(|s| {
            s.sim()
                .map(|b| b.add_waiter(cx.waker().clone(), woken.clone()))
        })
        .flatten();
        if added.is_none() {
            panic!("goro::sim::wait called outside a sim bubble: call it from a task inside goro::sim::Builder::run");
        }
        self.woken = Some(woken);
        Poll::Pending
    }
}
