//! The simulation bubble: a runtime whose tasks all run on one thread, in
//! virtual time, with every scheduling choice drawn from a seed
//! (`goro::sim` is its public face).
//!
//! # Why a bubble is a `Sched` without threads
//!
//! A bubble is a [`Sched`] like any other, built with `procs` Ps, so that
//! everything a task may touch works unchanged inside it: the task table
//! and records (the deadlock verdict reads them as the dump does), the
//! per-P timer heaps, the blocking pool, `after_func`'s spawns. What it
//! never does is start an M: its Ps stay off the idle list, so no `wakep`
//! or `timer_added` finds one to run, and the thread that calls
//! `goro::sim::Builder::run` polls every task itself (`run.rs`).
//!
//! Two things are routed to the bubble instead of the Ps: a spawn
//! (`task/spawn.rs` checks [`Sched::sim`], one branch), and a task's wake,
//! which its own schedule function sends here (a bubble's tasks are made
//! by [`spawn`], not `task::new_task`). The timer clock reads the bubble's
//! virtual time on the driving thread (`Ctx::sim_now`, `timer/clock.rs`).
//!
//! # Virtual Ps
//!
//! The bubble keeps one queue per P, with Go's `runnext`: a task woken or
//! spawned by the task running on virtual P `i` goes to `i`'s `runnext`
//! (the one it displaces to the tail), a task that yields to the tail of
//! its queue, and one woken by a timer or from outside to the tail of a P
//! drawn from the seed. Each step draws a P: if it has work, it runs its
//! `runnext` or its queue's head; if not, it steals the head of a P drawn
//! among those with work (choose.rs). At procs 1 that is exactly Go's
//! order on one P, with only `select!`'s choices left to the seed; at
//! procs > 1 it interleaves the tasks as parallel Ps might.

pub(crate) mod choose;
pub(crate) mod run;

use crate::loom::Unpoison;
use crate::sched::task::meta::State;
use crate::sched::task::{new_task_with, JoinHandle, Runnable, Spawn};
use crate::sched::timer::clock::coarse;
use crate::sched::Sched;
use choose::{Chooser, Strategy};
use std::collections::VecDeque;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::task::Waker;

/// What a bubble keeps beside its `Sched`.
pub(crate) struct Bubble {
    queues: Mutex<Queues>,
    /// Signalled by a wake from a thread other than the driver's (a
    /// blocking-pool thread finishing), which the driver may be waiting for.
    outside: Condvar,
    procs: usize,
    /// The bubble's simulated network, made by the net layer on first use
    /// (`net/sim/`; the scheduler only keeps it for the bubble's life).
    net: Mutex<Option<NetSlot>>,
}

/// What the bubble keeps of the net layer's simulated network.
pub(crate) type NetSlot = Arc<dyn std::any::Any + Send + Sync>;

/// One thing to poll: the root future (the driver holds it) or a task.
pub(crate) enum Job {
    Root,
    Task(Runnable),
}

/// A queued job and its number in the bubble (0: the root; tasks from 1,
/// in spawn order, so that numbers, unlike task ids, repeat run to run).
pub(crate) struct Entry {
    pub(crate) job: Job,
    pub(crate) n: u64,
}

/// One virtual P's queue, with Go's `runnext`.
#[derive(Default)]
pub(crate) struct VirtualP {
    pub(super) runnext: Option<Entry>,
    pub(super) queue: VecDeque<Entry>,
}

impl VirtualP {
    pub(super) fn has_work(&self) -> bool {
        self.runnext.is_some() || !self.queue.is_empty()
    }
}

struct Queues {
    ps: Vec<VirtualP>,
    /// The virtual P whose job the driver is polling, if it is polling.
    running: Option<usize>,
    chooser: Chooser,
    /// Tasks in `goro::sim::wait`, woken when every other task is blocked,
    /// each with the flag that tells its future the wake is the real one.
    waiters: Vec<(Waker, Arc<AtomicBool>)>,
    /// The next task number.
    next_n: u64,
    /// Each task's number, by task id (ids are process-wide: a report
    /// names a task by the number that repeats run to run).
    numbers: std::collections::HashMap<u64, u64>,
    /// The bubble is over: wakes drop their task (cancelling it).
    closed: bool,
}

impl Bubble {
    pub(crate) fn new(procs: usize, seed: u64, strategy: Strategy) -> Bubble {
        Bubble {
            queues: Mutex::new(Queues {
                ps: (0..procs).map(|_| VirtualP::default()).collect(),
                running: None,
                chooser: Chooser::new(seed, strategy),
                waiters: Vec::new(),
                next_n: 1,
                numbers: std::collections::HashMap::new(),
                closed: false,
            }),
            outside: Condvar::new(),
            procs,
            net: Mutex::new(None),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Queues> {
        self.queues.lock().unpoison()
    }

    /// Queues `job` (number `n`): on the running P's `runnext` when the
    /// driver's current poll wakes it, at the tail of that P when it woke
    /// itself (a yield), at the tail of a drawn P otherwise.
    pub(crate) fn wake(&self, job: Job, n: u64, yielded: bool) {
        let on_driver = crate::sched::context::sim_now() != 0;
        let mut q = self.lock();
        if q.closed {
            drop(q);
            drop(job); // cancels a task; the root is the driver's
            return;
        }
        q.chooser.seen(n);
        let e = Entry { job, n };
        let running = if on_driver { q.running } else { None };
        let p = match running {
            Some(p) if !yielded => {
                if let Job::Task(r) = &e.job {
                    r.metadata().set(State::Runnable(Some(p)), coarse());
                }
                if let Some(old) = q.ps[p].runnext.replace(e) {
                    q.ps[p].queue.push_back(old);
                }
                return;
            }
            Some(p) => p,
            None => q.chooser.draw(self.procs),
        };
        if let Job::Task(r) = &e.job {
            r.metadata().set(State::Runnable(Some(p)), coarse());
        }
        q.ps[p].queue.push_back(e);
        if !on_driver {
            self.outside.notify_all();
        }
    }

    /// Takes the next job to poll, and the virtual P that runs it; `None`
    /// when nothing is runnable.
    pub(crate) fn next(&self) -> Option<(Entry, usize)> {
        let mut q = self.lock();
        let Queues { ps, chooser, .. } = &mut *q;
        let (e, p) = chooser.pick(ps)?;
        q.running = Some(p);
        Some((e, p))
    }

    /// The driver's poll of the job taken by `next` returned.
    pub(crate) fn done_polling(&self) {
        self.lock().running = None;
    }

    /// Whether any job is queued.
    pub(crate) fn has_work(&self) -> bool {
        self.lock().ps.iter().any(VirtualP::has_work)
    }

    /// Parks a `goro::sim::wait` caller until every other task is blocked.
    pub(crate) fn add_waiter(&self, w: Waker, woken: Arc<AtomicBool>) {
        self.lock().waiters.push((w, woken));
    }

    /// Takes the `wait` callers to wake (everything else is blocked),
    /// their flags set.
    pub(crate) fn take_waiters(&self) -> Vec<Waker> {
        let waiters = std::mem::take(&mut self.lock().waiters);
        waiters
            .into_iter()
            .map(|(w, woken)| {
                // Relaxed: read by the waiter's poll on this same thread.
                woken.store(true, Ordering::Relaxed);
                w
            })
            .collect()
    }

    /// Waits (in real time) until a thread outside the driver queues a job.
    /// Gives up after a while, so that the caller re-reads whether the
    /// outside work is still running (a job may finish waking no one).
    pub(crate) fn wait_outside(&self) {
        let q = self.lock();
        let (q, _) = self
            .outside
            .wait_timeout_while(q, std::time::Duration::from_millis(5), |q| {
                !q.ps.iter().any(VirtualP::has_work)
            })
            .unpoison();
        drop(q);
    }

    /// Ends the bubble: every queued task is dropped (cancelled), and
    /// every later wake drops its task.
    pub(crate) fn close(&self) {
        let (jobs, waiters) = {
            let mut q = self.lock();
            q.closed = true;
            let jobs: Vec<Entry> =
                q.ps.iter_mut()
                    .flat_map(|p| p.runnext.take().into_iter().chain(p.queue.drain(..)))
                    .collect();
            (jobs, std::mem::take(&mut q.waiters))
        };
        drop(jobs);
        drop(waiters);
    }

    /// The bubble's simulated network, made by `init` on first use.
    pub(crate) fn net(&self, init: impl FnOnce() -> NetSlot) -> NetSlot {
        self.net.lock().unpoison().get_or_insert_with(init).clone()
    }

    /// Takes the network out at the bubble's end: its sockets hold wakers,
    /// whose tasks hold the scheduler, which would hold the network.
    pub(crate) fn take_net(&self) -> Option<NetSlot> {
        self.net.lock().unpoison().take()
    }

    /// 64 bits from the bubble's seed, for a choice the layers above make
    /// (which packet a lossy link drops). Deterministic when drawn on the
    /// driving thread, as every task's code is.
    pub(crate) fn random_u64(&self) -> u64 {
        self.lock().chooser.random_u64()
    }

    /// The schedule's fingerprint so far, and the steps taken.
    pub(crate) fn fingerprint(&self) -> (u64, u64) {
        let q = self.lock();
        (q.chooser.hash(), q.chooser.steps())
    }

    /// The number of the task with id `id` in this bubble.
    pub(crate) fn number_of(&self, id: u64) -> Option<u64> {
        self.lock().numbers.get(&id).copied()
    }

    fn take_number(&self) -> u64 {
        let mut q = self.lock();
        let n = q.next_n;
        q.next_n += 1;
        n
    }
}

/// Spawns `future` into the bubble of `sched` (a spawn's route when
/// [`Sched::sim`] is set): a task whose wakes go to the bubble's queues.
pub(crate) fn spawn<F>(sched: &Sched, future: F, spawn: Spawn) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let owner = sched
        .me
        .upgrade()
        .expect("goro: spawn into a sim bubble that is being dropped");
    let bubble = sched.sim.as_ref().expect("a bubble's scheduler");
    let n = bubble.take_number();
    let schedule = move |r: Runnable, woken_while_running: bool| {
        let bubble = owner.sim.as_ref().expect("a bubble's scheduler");
        bubble.wake(Job::Task(r), n, woken_while_running);
    };
    let (runnable, handle) = new_task_with(sched, future, spawn, schedule);
    bubble.lock().numbers.insert(runnable.metadata().id.0, n);
    bubble.wake(Job::Task(runnable), n, false);
    handle
}
