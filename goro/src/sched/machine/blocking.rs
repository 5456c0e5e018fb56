//! Blocking inside and beside the runtime.
//!
//! * [`block_in_place`] is Go's `entersyscall`/`handoffp`: the calling M gives
//!   its P to another M (or to the idle list when there is no work for it)
//!   *before* running the blocking closure, so the other tasks of that P keep
//!   running; afterwards it takes an idle P if there is one, or finishes the
//!   current poll without a P (whatever it spawns or wakes meanwhile goes to
//!   the global queue) and then parks as a spare M. Go hands the P off lazily
//!   (sysmon retakes it after 20 µs in a syscall); we know the call will
//!   block, so we hand off at once.
//! * [`spawn_blocking`] runs a closure on a separate pool of threads that
//!   never hold a P (tokio's blocking pool). Threads are started on demand,
//!   up to [`MAX_BLOCKING_THREADS`], and exit after [`KEEP_ALIVE`] idle, so an
//!   idle process keeps no spare thread waking up.

use crate::loom::Ordering;
use crate::loom::Unpoison;
use crate::sched::context::{current_p, current_sched, set_p, take_p};
use crate::sched::task::meta::State;
use crate::sched::task::{new_task_with, JoinHandle, Runnable, Spawn};
use crate::sched::Sched;
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// Most threads in the blocking pool; more closures wait in its queue.
pub const MAX_BLOCKING_THREADS: usize = 512;
/// An idle blocking-pool thread exits after this long.
pub const KEEP_ALIVE: Duration = Duration::from_secs(10);

/// Runs `f`, which may block, without stalling the other tasks of this P.
///
/// On a worker thread the P is handed to another thread for the duration of
/// `f`; anywhere else `f` simply runs. If `f` panics, the panic propagates
/// to the caller and the P has already been handed off, so the runtime loses
/// nothing.
///
/// ```
/// let rt = goro::Runtime::builder().procs(1).build().unwrap();
/// let n = rt.block_on(async {
///     goro::spawn(async {
///         goro::block_in_place(|| std::fs::read_dir(".").map(|d| d.count()).unwrap_or(0))
///     })
///     .await
///     .unwrap()
/// });
/// assert!(n > 0);
/// ```
pub fn block_in_place<F, R>(f: F) -> R
where
    F: FnOnce() -> R,
{
    let Some(sched) = current_sched() else {
        return f();
    };
    let Some(p) = current_p(&sched) else {
        return f();
    };
    crate::sched::trace::block_in_place_begin(&sched, p);
    // This poll stops being the P's: the stuck-poll report must not take
    // the next owner's stack for it (stuck.rs).
    sched.ps[p].poll_task.store(0, Ordering::Relaxed);
    // The held P leaves this thread's context: from here until the
    // reacquire, whatever `f` spawns or wakes goes to the global queue.
    let held = take_p().expect("goro: the P just read from the context");
    sched.handoffp(held);

    /// Takes an idle P back when `f` returns or unwinds.
    struct Reacquire(Arc<Sched>);
    impl Drop for Reacquire {
        fn drop(&mut self) {
            let p = self.0.acquire_idle_p();
            let id = p.as_ref().map(|p| p.id());
            if let Some(p) = p {
                let proc = &self.0.ps[p.id()];
                proc.stuck.store(false, Ordering::Relaxed);
                proc.m_thread.store(
                    crate::sched::machine::stack::this_thread(),
                    Ordering::Relaxed,
                );
                set_p(p);
            }
            crate::sched::trace::block_in_place_end(&self.0, id);
        }
    }
    let _reacquire = Reacquire(sched);
    f()
}

/// Runs `f` on the blocking thread pool and returns a handle to its result.
///
/// Outside a runtime this panics, as [`crate::spawn`] does.
///
/// ```
/// let rt = goro::Runtime::builder().procs(1).build().unwrap();
/// let v = rt.block_on(async { goro::spawn_blocking(|| 2 + 2).await.unwrap() });
/// assert_eq!(v, 4);
/// ```
#[track_caller]
pub fn spawn_blocking<F, R>(f: F) -> JoinHandle<R>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    let sched = current_sched().unwrap_or_else(|| {
        panic!("goro::spawn_blocking called outside a goro runtime; call it from a task or inside Runtime::block_on")
    });
    spawn_blocking_on(&sched, f)
}

#[track_caller]
pub(crate) fn spawn_blocking_on<F, R>(sched: &Arc<Sched>, f: F) -> JoinHandle<R>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    let s = sched.clone();
    let spawn = Spawn {
        location: std::panic::Location::caller(),
        name: None,
        // Queued in the blocking pool, not on a P.
        p: None,
        parent: crate::sched::task::meta::Parent::SPAWNER,
    };
    let (runnable, handle) =
        new_task_with(sched, async move { f() }, spawn, move |r: Runnable, _| {
            s.blocking.push(&s, r)
        });
    crate::sched::trace::create(sched, runnable.metadata(), true);
    runnable.schedule();
    handle
}

pub(crate) struct BlockingPool {
    state: Mutex<PoolState>,
    cv: Condvar,
}

struct PoolState {
    queue: VecDeque<Runnable>,
    threads: usize,
    /// Threads waiting for work.
    idle: usize,
    /// Wakeups sent to idle threads and not yet consumed.
    notified: usize,
    shutdown: bool,
}

impl BlockingPool {
    pub(crate) fn new() -> BlockingPool {
        BlockingPool {
            state: Mutex::new(PoolState {
                queue: VecDeque::new(),
                threads: 0,
                idle: 0,
                notified: 0,
                shutdown: false,
            }),
            cv: Condvar::new(),
        }
    }

    /// Whether a call is queued or running (it could wake a task).
    pub(crate) fn busy(&self) -> bool {
        let st = self.state.lock().unpoison();
        !st.queue.is_empty() || st.threads > st.idle
    }

    fn push(&self, sched: &Arc<Sched>, task: Runnable) {
        let mut st = self.state.lock().unpoison();
        if st.shutdown {
            drop(st);
            drop(task); // cancels it: the JoinHandle reports Cancelled
            return;
        }
        st.queue.push_back(task);
        if st.idle > st.notified {
            st.notified += 1;
            drop(st);
            self.cv.notify_one();
            return;
        }
        if st.threads < MAX_BLOCKING_THREADS {
            st.threads += 1;
            let n = st.threads;
            drop(st);
            let s = sched.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("{}-blocking{n}", sched.thread_name))
                .spawn(move || crate::sched::trace::blocking_thread(&s, || s.blocking.worker()));
            if let Err(e) = spawned {
                eprintln!("goro: failed to start a blocking-pool thread: {e}");
                self.state.lock().unpoison().threads -= 1;
            }
        }
    }

    fn worker(&self) {
        let mut st = self.state.lock().unpoison();
        loop {
            if let Some(task) = st.queue.pop_front() {
                drop(st);
                task.metadata()
                    .set(State::Running(None), crate::sched::timer::clock::coarse());
                task.run();
                st = self.state.lock().unpoison();
                continue;
            }
            if st.shutdown {
                break;
            }
            st.idle += 1;
            let (s, res) = self.cv.wait_timeout(st, KEEP_ALIVE).unpoison();
            st = s;
            st.idle -= 1;
            st.notified = st.notified.saturating_sub(1);
            if res.timed_out() && st.queue.is_empty() {
                break;
            }
        }
        st.threads -= 1;
    }

    /// Stops accepting work, wakes idle threads so they exit, and drops
    /// closures that have not started. Running closures finish on their own.
    pub(crate) fn shutdown(&self) {
        let queued: Vec<Runnable> = {
            let mut st = self.state.lock().unpoison();
            st.shutdown = true;
            st.queue.drain(..).collect()
        };
        self.cv.notify_all();
        drop(queued);
    }
}
