//! Driving a bubble: poll what the seed picks, and when nothing is
//! runnable, decide what happens next.
//!
//! The driver is the thread that called `goro::sim::Builder::run`. It
//! polls the root future (the bubble's `main`, which need not be `Send`:
//! it never leaves this thread) and every task, one job per step. When no
//! job is queued, every task in the bubble is blocked, and the driver
//! settles it in this order:
//!
//! 1. the root has returned and no task is left: the run is over;
//! 2. tasks wait in `goro::sim::wait`: they wake (Go's `synctest.Wait`
//!    returns once every other goroutine is durably blocked);
//! 3. the blocking pool runs a job: that wait is not durable (a real
//!    thread will wake someone), so the driver waits for it in real time;
//! 4. a timer is armed: virtual time jumps to the earliest deadline and
//!    every timer due then fires;
//! 5. otherwise nothing can ever wake anyone: a deadlock, or, when the
//!    root has returned, a leak of the tasks still blocked.
//!
//! Virtual time starts at the real clock's reading when the bubble starts,
//! so instants taken inside and outside compare sensibly, and moves only
//! in step 4: however long the tasks compute, the clock stands still.

use super::{Bubble, Job};
use crate::sched::context::CTX;
use crate::sched::machine::enter::EnterGuard;
use crate::sched::task::coop;
use crate::sched::task::meta::{PollScope, Reason, State, TaskId};
use crate::sched::timer::{clock, NEVER};
use crate::sched::Sched;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

/// How a drive ended.
pub(crate) enum Ending<T> {
    /// The root returned and every task finished.
    Done(T),
    /// Nothing runnable, no timer, no outside work: the root's output if
    /// it returned (then the tasks left leaked), and what the root waits
    /// on if it did not.
    Blocked {
        root: Option<T>,
        root_waits: (Reason, u64),
    },
    /// More steps than the limit: a livelock, or a test too long.
    StepLimit,
}

/// A drive's ending and its measures.
pub(crate) struct Drive<T> {
    pub(crate) ending: Ending<T>,
    pub(crate) hash: u64,
    pub(crate) steps: u64,
    pub(crate) elapsed: Duration,
}

/// The root future's waker: queues the root once however often it is
/// woken (a task's `Runnable` dedups itself; the root has none).
struct RootWaker {
    sched: Arc<Sched>,
    queued: AtomicBool,
    polling: AtomicBool,
}

impl Wake for RootWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref()
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // Relaxed: the bubble's lock orders the queue; the flag only dedups.
        if !self.queued.swap(true, Ordering::Relaxed) {
            let yielded = self.polling.load(Ordering::Relaxed);
            bubble(&self.sched).wake(Job::Root, 0, yielded);
        }
    }
}

fn bubble(sched: &Sched) -> &Bubble {
    sched.sim.as_ref().expect("a bubble's scheduler")
}

/// Sets the thread's virtual clock for the guard's life.
struct VirtualClock {
    prev: u64,
}

impl VirtualClock {
    fn enter(now: u64) -> VirtualClock {
        clock::bubble_driven(1);
        VirtualClock {
            prev: CTX.with(|c| c.sim_now.replace(now)),
        }
    }
}

impl Drop for VirtualClock {
    fn drop(&mut self) {
        CTX.with(|c| c.sim_now.set(self.prev));
        clock::bubble_driven(-1);
    }
}

/// Runs the bubble of `sched` with `root` as its main until one of the
/// [`Ending`]s, taking at most `max_steps` steps. A panic in the root
/// unwinds out of here; the caller ends the bubble ([`finish`]).
pub(crate) fn drive<F: Future>(
    sched: &Arc<Sched>,
    mut root: Pin<&mut F>,
    max_steps: u64,
) -> Drive<F::Output> {
    let b = bubble(sched);
    let _enter = EnterGuard::enter(sched.clone());
    let start = clock::real_now();
    let _clock = VirtualClock::enter(start);
    let mut now = start;
    let root_waker = Arc::new(RootWaker {
        sched: sched.clone(),
        queued: AtomicBool::new(false),
        polling: AtomicBool::new(false),
    });
    let waker = Waker::from(root_waker.clone());
    let mut cx = Context::from_waker(&waker);
    let budget = coop::poll_budget(sched.policy());
    let mut out = None;
    let mut root_waits = (Reason::Other, 0);
    waker.wake_by_ref();
    let ending = loop {
        if let Some((e, p)) = b.next() {
            if b.fingerprint().1 > max_steps {
                b.done_polling();
                break Ending::StepLimit;
            }
            coop::set_budget(budget);
            match e.job {
                Job::Root => {
                    root_waker.queued.store(false, Ordering::Relaxed);
                    if out.is_none() {
                        root_waker.polling.store(true, Ordering::Relaxed);
                        let scope = PollScope::enter(TaskId(0));
                        match root.as_mut().poll(&mut cx) {
                            Poll::Ready(v) => out = Some(v),
                            Poll::Pending => root_waits = scope.reason(),
                        }
                        drop(scope);
                        root_waker.polling.store(false, Ordering::Relaxed);
                    }
                }
                Job::Task(r) => {
                    r.metadata().set(State::Running(Some(p)), clock::coarse());
                    r.run();
                }
            }
            coop::set_budget(coop::UNLIMITED);
            b.done_polling();
            continue;
        }
        if out.is_some() && sched.tasks.len() == 0 {
            break Ending::Done(out.take().expect("checked"));
        }
        let waiters = b.take_waiters();
        if !waiters.is_empty() {
            waiters.into_iter().for_each(Waker::wake);
            continue;
        }
        if sched.blocking.busy() {
            b.wait_outside();
            continue;
        }
        if b.has_work() {
            continue; // the pool's last job woke a task as it finished
        }
        match fire_next_timers(sched, now) {
            Some(at) => now = at,
            None => {
                break Ending::Blocked {
                    root: out.take(),
                    root_waits,
                }
            }
        }
    };
    let (hash, steps) = b.fingerprint();
    Drive {
        ending,
        hash,
        steps,
        elapsed: Duration::from_nanos(now - start),
    }
}

/// Jumps to the earliest armed timer (the thread's virtual clock moves
/// there) and fires every timer due then; returns the new time, or `None`
/// if no timer is armed.
fn fire_next_timers(sched: &Arc<Sched>, now: u64) -> Option<u64> {
    let queues = || std::iter::once(&sched.global_timers).chain(sched.ps.iter().map(|p| &p.timers));
    // Spare sleep timers and zombies wake nobody; without them the
    // earliest deadline is a live timer's.
    queues().for_each(|q| q.settle());
    let next = sched.earliest_timer();
    if next == NEVER {
        return None;
    }
    let at = next.max(now);
    CTX.with(|c| c.sim_now.set(at));
    let mut fired = Vec::new();
    for q in queues() {
        q.run(at, &mut fired);
    }
    sched.run_fired_sim(&mut fired);
    Some(at)
}

/// Ends the bubble: every task left is cancelled (its future dropped),
/// every timer dropped, and the blocking pool stopped.
pub(crate) fn finish(sched: &Arc<Sched>) {
    let _enter = EnterGuard::enter(sched.clone());
    let b = bubble(sched);
    b.close();
    sched.shutdown();
    drop(b.take_net());
}
