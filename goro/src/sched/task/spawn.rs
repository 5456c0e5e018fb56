//! Spawning (Go's `newproc`) and yielding (`Gosched`): the task record
//! is made, the task is counted on the spawning P and placed in its
//! `runnext` (or on the global queue from a thread without a P).
//!
//! [`TaskGroup`] (`task_group.rs`) spawns its members through here.

use crate::sched::context::with_current;
use crate::sched::task::meta::Parent;
use crate::sched::task::{new_task, JoinHandle, Spawn};
use crate::sched::Sched;
use crate::stats::{bump, bump_shared};
use std::future::Future;
use std::task::{Context, Poll};

#[track_caller]
pub(crate) fn spawn_on<F>(sched: &Sched, future: F, name: Option<Box<str>>) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    spawn_at(
        sched,
        crate::sched::context::current_p(sched),
        future,
        name,
        std::panic::Location::caller(),
        Parent::SPAWNER,
    )
}

/// [`spawn_on`] with the spawn site given (a caller that spawns from a
/// closure, where `#[track_caller]` does not reach) and the parent the
/// record names (a `TaskGroup` member's is the group's owner).
pub(crate) fn spawn_at<F>(
    sched: &Sched,
    p: Option<usize>,
    future: F,
    name: Option<Box<str>>,
    location: &'static std::panic::Location<'static>,
    parent: Parent,
) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    if sched.sim.is_some() {
        let spawn = Spawn {
            location,
            name,
            p,
            parent,
        };
        return crate::sched::sim::spawn(sched, future, spawn);
    }
    // The task's own count of the runtime (its schedule function's): the
    // one reference-count update a spawn makes.
    let Some(owner) = sched.me.upgrade() else {
        panic!("goro: spawn on a runtime that is being dropped");
    };
    match p {
        Some(p) => bump(&sched.ps[p].counters.tasks_spawned, 1),
        None => bump_shared(&sched.counters.tasks_spawned, 1),
    }
    let spawn = Spawn {
        location,
        name,
        p,
        parent,
    };
    let (runnable, handle) = new_task(owner, future, spawn);
    if sched.is_shutdown() {
        drop(runnable); // cancels the task: its handle reports Cancelled
    } else {
        sched.place(p, runnable);
    }
    handle
}

/// Spawns a task on the current runtime (Go's `go` statement).
///
/// The new task goes to the current P's `runnext`: it runs as soon as the
/// spawning task yields, unless another P steals it first.
///
/// # Panics
/// Outside a goro runtime (not in a task, not inside `Runtime::block_on`).
///
/// ```
/// let rt = goro::Runtime::builder().procs(2).build().unwrap();
/// let v = rt.block_on(async { goro::spawn(async { 1 }).await.unwrap() });
/// assert_eq!(v, 1);
/// ```
#[track_caller]
pub fn spawn<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let location = std::panic::Location::caller();
    in_current("spawn", |s, p| {
        spawn_at(s, p, future, None, location, Parent::SPAWNER)
    })
}

/// [`spawn`] with a name that the task dump shows (Go's goroutine labels).
///
/// # Panics
/// Outside a goro runtime, as [`spawn`].
///
/// ```
/// let rt = goro::Runtime::builder().procs(1).build().unwrap();
/// rt.block_on(async {
///     let h = goro::spawn_named("worker-1", async { 2 });
///     assert_eq!(h.await.unwrap(), 2);
/// });
/// ```
#[track_caller]
pub fn spawn_named<F>(name: impl Into<String>, future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let name = Some(name.into().into_boxed_str());
    let location = std::panic::Location::caller();
    in_current("spawn_named", |s, p| {
        spawn_at(s, p, future, name, location, Parent::SPAWNER)
    })
}

/// Runs `f` with the runtime of the current thread (no reference count
/// taken), or panics naming `what` outside one.
#[track_caller]
fn in_current<R>(what: &str, f: impl FnOnce(&Sched, Option<usize>) -> R) -> R {
    with_current(f).unwrap_or_else(|| {
        panic!(
            "goro::{what} called outside a goro runtime: call it from a goro task or inside \
             Runtime::block_on, or use Runtime::{what}"
        )
    })
}

/// Yields the P to the other runnable tasks (Go's `runtime.Gosched`).
///
/// The task goes to the tail of its P's local queue (Go puts it on the
/// global queue; the local tail keeps it on its warm P and costs no lock).
///
/// ```
/// let rt = goro::Runtime::builder().procs(1).build().unwrap();
/// rt.block_on(async { goro::yield_now().await });
/// ```
pub async fn yield_now() {
    struct YieldNow(bool);
    impl Future for YieldNow {
        type Output = ();
        fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            if self.0 {
                return Poll::Ready(());
            }
            self.0 = true;
            crate::sched::trace::yielded();
            // Woken while running: the schedule function puts it at the tail.
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
    YieldNow(false).await
}
