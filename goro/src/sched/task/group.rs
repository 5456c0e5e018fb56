//! [`TaskGroup`]: a set of tasks owned by one value (tokio's `JoinSet`,
//! with structure): results come back in completion order, and no member
//! outlives the group unless it is detached on purpose.
//!
//! # Why a group, when `spawn` exists
//!
//! A Go goroutine, like a dropped [`JoinHandle`], runs on after whoever
//! started it has gone; the leaks that follow are a classic Go bug (a
//! handler returns early, its helpers block forever on a channel nobody
//! reads). A group ties its members to one value: dropping the group
//! aborts every member still running, so work started for a request ends
//! with the request. [`TaskGroup::detach_all`] is the spelled-out way to
//! let members run on.
//!
//! # How a member reports
//!
//! Each member runs inside a wrapper whose last field, dropped after the
//! member's own future, pushes the member's key onto the group's ready
//! list and wakes the task waiting in [`TaskGroup::join_next`]. The future
//! is dropped once, however the member ends (it returns, panics, is
//! aborted, or the runtime shuts down), and only after the task has left
//! the runtime's task table (`TaskFuture::drop_future`, `sched/task/mod.rs`):
//! so when `join_next` returns a member's result, that member is gone from
//! [`Runtime::dump`](crate::Runtime::dump) and everything its future owned
//! has been dropped. `join_next` then takes the result through the
//! member's [`JoinHandle`], which for a finished member is ready at once
//! (or wakes the group's task once the output is stored).
//!
//! `join_next` is cancel-safe: the ready list and the handles live in the
//! group, not in the `join_next` future, and a key leaves the list only
//! with the result it stands for.
//!
//! # Ownership in the dump
//!
//! The group remembers the task that created it, its *owner*. Members are
//! recorded with the owner as their parent and flagged as group members
//! (`TaskInfo::in_group`), even when another task calls
//! [`spawn`](TaskGroup::spawn) on a group it was handed, so the dump
//! lists a group's members under the task that answers for them. A group
//! made outside any task (in `block_on`) has no owner: its members' parent
//! is `None`.
//!
//! # Rejected
//!
//! - Returning an abort handle from `spawn`: the group already aborts its
//!   members ([`abort_all`](TaskGroup::abort_all), drop); one member that
//!   needs its own cancel button is a plain [`spawn`](crate::spawn) with a
//!   [`JoinHandle`]. `spawn` returns the member's [`TaskId`], the one the
//!   dump shows.
//! - An `async` block around the member's future, with the report as a
//!   guard: the block drops its guard when the future returns, before the
//!   task leaves the task table, and `join_next` could return while an
//!   aborted member still shows in the dump. The wrapper keeps the future
//!   inline (a projection by `pin-project-lite`, as errgroup's member
//!   task) and drops the report after it, with the task's own future.
//! - Delivering completions through a goro channel: the channel would sit
//!   above the scheduler (`chan` is a layer up) and a bounded one could
//!   refuse a member's report; the ready list is a `VecDeque` under a lock
//!   held for a push or a pop.
//!
//! Locks: one `std::sync::Mutex` per group (the ready list and the waker),
//! never held across user code or a wake.

use crate::loom::Unpoison;
use crate::sched::task::meta::{blocked_on, Parent, Reason, TaskId};
use crate::sched::task::{JoinError, JoinHandle};
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

/// A set of tasks whose results come back in the order they finish, and
/// which are aborted when the group is dropped (tokio's `JoinSet`).
///
/// ```
/// let rt = goro::Runtime::builder().procs(2).build().unwrap();
/// rt.block_on(async {
///     let mut g = goro::TaskGroup::new();
///     for i in 0..10u64 {
///         g.spawn(async move { i * i });
///     }
///     let _hung = g.spawn(std::future::pending()); // never finishes
///     let mut sum = 0;
///     for _ in 0..10 {
///         sum += g.join_next().await.unwrap().unwrap(); // completion order
///     }
///     assert_eq!(sum, 285);
///     assert_eq!(g.len(), 1);
///     g.abort_all();
///     assert!(g.join_next().await.unwrap().unwrap_err().is_cancelled());
///     assert!(g.join_next().await.is_none(), "empty");
/// });
/// ```
pub struct TaskGroup<T> {
    /// Members not joined yet, by key.
    members: HashMap<u64, JoinHandle<T>>,
    shared: Arc<Shared>,
    next_key: u64,
    /// The ready list's epoch (a copy; see [`Ready::epoch`]).
    epoch: u64,
    /// The task that created the group.
    owner: Option<TaskId>,
}

struct Shared {
    ready: Mutex<Ready>,
}

struct Ready {
    /// Keys of members whose future has been dropped, in that order.
    done: VecDeque<u64>,
    /// The task waiting in `join_next`.
    waker: Option<Waker>,
    /// Bumped when the group lets its members go (`detach_all`, drop):
    /// members of an older epoch no longer report.
    epoch: u64,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Ready> {
        // Never held across user code: a poisoned lock holds consistent state.
        self.ready.lock().unpoison()
    }
}

pin_project_lite::pin_project! {
    /// A member's future, and the report its drop makes.
    struct Member<F> {
        // Dropped first (fields drop in order): the report below comes
        // after. Inline: a member costs its task's one allocation.
        #[pin]
        future: F,
        _report: Report,
    }
}

impl<F: Future> Future for Member<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        self.project().future.poll(cx)
    }
}

/// Tells the group that member `key` is gone, when dropped.
struct Report {
    shared: Arc<Shared>,
    key: u64,
    epoch: u64,
}

impl Drop for Report {
    fn drop(&mut self) {
        let waker = {
            let mut r = self.shared.lock();
            if r.epoch != self.epoch {
                return; // detached, or the group is gone
            }
            r.done.push_back(self.key);
            r.waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }
}

impl<T> TaskGroup<T> {
    /// An empty group, owned by the current task (none outside a task).
    pub fn new() -> TaskGroup<T> {
        TaskGroup {
            members: HashMap::new(),
            shared: Arc::new(Shared {
                ready: Mutex::new(Ready {
                    done: VecDeque::new(),
                    waker: None,
                    epoch: 0,
                }),
            }),
            next_key: 0,
            epoch: 0,
            owner: crate::sched::task::meta::current_task(),
        }
    }

    /// Starts `future` as a member, in a task of its own; returns its id
    /// (the one [`Runtime::dump`](crate::Runtime::dump) shows, with the
    /// group's owner as its parent).
    ///
    /// # Panics
    /// Outside a goro runtime (not in a task, not inside `Runtime::block_on`).
    ///
    /// ```
    /// let rt = goro::Runtime::builder().procs(1).build().unwrap();
    /// rt.block_on(async {
    ///     let mut g = goro::TaskGroup::new();
    ///     let id = g.spawn(async { "hi" });
    ///     assert_ne!(goro::TaskId::current(), Some(id));
    ///     assert_eq!(g.join_next().await.unwrap().unwrap(), "hi");
    /// });
    /// ```
    #[track_caller]
    pub fn spawn<F>(&mut self, future: F) -> TaskId
    where
        F: Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        let location = std::panic::Location::caller();
        let key = self.next_key;
        let (shared, epoch) = (&self.shared, self.epoch);
        let owner = Parent::group_owner(self.owner);
        // The runtime borrowed from the thread's context (`spawn_at` takes
        // the task's one reference count of it); the member is made only
        // inside one, so a failed spawn reports no member gone.
        let spawned = crate::sched::context::with_current(|sched, p| {
            let member = Member {
                future,
                _report: Report {
                    shared: shared.clone(),
                    key,
                    epoch,
                },
            };
            crate::sched::task::spawn::spawn_at(sched, p, member, None, location, owner)
        });
        let Some(handle) = spawned else {
            panic!(
                "goro::TaskGroup::spawn called outside a goro runtime: call it from a goro \
                 task or inside Runtime::block_on"
            );
        };
        self.next_key += 1;
        let id = handle.id();
        self.members.insert(key, handle);
        id
    }

    /// Waits for the next member to finish and returns its result, in the
    /// order they finish; `None` when the group has no members left.
    ///
    /// When it returns a member's result, that member's task is gone (not
    /// in [`Runtime::dump`](crate::Runtime::dump)) and its future dropped.
    /// A member that panicked or was aborted comes back as a
    /// [`JoinError`].
    ///
    /// Cancel-safe: dropped before it completes (a `select!` that took
    /// another case), it loses no result; the next call returns it.
    pub async fn join_next(&mut self) -> Option<Result<T, JoinError>> {
        std::future::poll_fn(|cx| self.poll_join_next(cx)).await
    }

    /// [`join_next`](TaskGroup::join_next) as a poll function, for
    /// hand-written futures.
    pub fn poll_join_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<T, JoinError>>> {
        loop {
            if self.members.is_empty() {
                return Poll::Ready(None);
            }
            let key = {
                let mut r = self.shared.lock();
                match r.done.front() {
                    Some(&k) => k,
                    None => {
                        if !r.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                            r.waker = Some(cx.waker().clone());
                        }
                        drop(r);
                        blocked_on(Reason::TaskGroup, 0);
                        return Poll::Pending;
                    }
                }
            };
            let Some(handle) = self.members.get_mut(&key) else {
                // Not ours any more (cannot happen: a key is reported once,
                // and the epoch keeps detached members out); skip it.
                self.shared.lock().done.pop_front();
                continue;
            };
            // The member's future is dropped: its output is stored, or
            // about to be (it is stored after the poll returns);
            // the handle wakes us then.
            let out = std::task::ready!(Pin::new(handle).poll(cx));
            self.shared.lock().done.pop_front();
            self.members.remove(&key);
            return Poll::Ready(Some(out));
        }
    }

    /// Aborts every member (see [`JoinHandle::abort`]): each one's future
    /// is dropped at its next scheduling point (at once if parked), and
    /// [`join_next`](TaskGroup::join_next) returns it as cancelled, or with
    /// its result if it had already finished. Members stay in the group
    /// until joined: abort, then join until `None`, to know they are gone
    /// ([`shutdown`](TaskGroup::shutdown) does both).
    pub fn abort_all(&mut self) {
        for h in self.members.values() {
            h.abort();
        }
    }

    /// Aborts every member and waits until all are gone (tokio's
    /// `JoinSet::shutdown`); their results are dropped.
    ///
    /// ```
    /// let rt = goro::Runtime::builder().procs(2).build().unwrap();
    /// rt.block_on(async {
    ///     let mut g = goro::TaskGroup::<()>::new();
    ///     let id = g.spawn(std::future::pending());
    ///     g.shutdown().await;
    ///     assert!(g.is_empty());
    ///     assert!(rt.dump().tasks().iter().all(|t| t.id != id), "the member is gone");
    /// });
    /// ```
    pub async fn shutdown(&mut self) {
        self.abort_all();
        while self.join_next().await.is_some() {}
    }

    /// Lets every member run on outside the group, as if spawned with
    /// [`spawn`](crate::spawn) and its handle dropped: the group forgets
    /// them, so neither `join_next` nor dropping the group reaches them.
    /// They stay listed under the group's owner in the dump.
    pub fn detach_all(&mut self) {
        self.epoch += 1;
        {
            let mut r = self.shared.lock();
            r.epoch = self.epoch;
            r.done.clear();
        }
        // Dropping a handle detaches its task.
        self.members.clear();
    }

    /// Members not joined yet (running, or finished with a result that
    /// `join_next` has not returned).
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// True when the group has no members left to join.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }
}

impl<T> Drop for TaskGroup<T> {
    /// Aborts every member still running (see
    /// [`abort_all`](TaskGroup::abort_all)): each is gone at its next
    /// scheduling point, which for a parked member is queued at once. A
    /// member being polled on another thread at this moment ends when that
    /// poll returns.
    fn drop(&mut self) {
        {
            let mut r = self.shared.lock();
            r.epoch = r.epoch.wrapping_add(1);
            r.done.clear();
            r.waker = None;
        }
        self.abort_all();
    }
}

impl<T> Default for TaskGroup<T> {
    fn default() -> Self {
        TaskGroup::new()
    }
}

impl<T> fmt::Debug for TaskGroup<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskGroup")
            .field("len", &self.members.len())
            .field("owner", &self.owner)
            .finish_non_exhaustive()
    }
}
