//! [`ErrGroup`]: Go's `golang.org/x/sync/errgroup.Group` for tasks: a
//! [`WaitGroup`] whose members return a `Result`, with the first error
//! kept, an optional [`Context`] cancelled on that error, and an optional
//! limit on how many members run at once.
//!
//! # Shape
//!
//! A cloneable handle on one shared group (Go shares its `*Group` by
//! pointer; a clone is that pointer), so a member can start further members
//! (a crawler, a recursive walk) and several tasks can wait. Every member is
//! a goro task of its own, started by [`ErrGroup::go`] or
//! [`ErrGroup::try_go`], and carries a guard that, when the member ends
//! **whichever way it ends** (returns, panics, or is dropped unfinished at a
//! runtime shutdown), records its outcome, gives its slot back to the limit
//! and calls `done` on the group's `WaitGroup`, in that order (Go's
//! `g.done()`: the slot is free before `Wait` can return). So [`wait`] never
//! hangs on a member that went away.
//!
//! Invariants, under the group's state lock (`active` is the `WaitGroup`'s
//! counter, outside it, so that a member that succeeds ends with one
//! atomic subtraction and no lock):
//!
//! - `active` counts members started and not yet ended; `waiting` counts
//!   [`go`](ErrGroup::go) calls parked for a free slot. [`set_limit`] panics
//!   unless both are 0 (Go: "the limit must not be modified while any
//!   goroutines in the group are active"), so a limit is never swapped under
//!   a member or a waiter: a member always gives its slot back to the
//!   semaphore it took it from.
//! - `err` is the first error recorded and is never overwritten; `panic` is
//!   the first panic payload. The context (if any) is cancelled when the first
//!   of them is recorded, and again (a no-op if already done) when `wait`
//!   returns.
//!
//! # The limit
//!
//! `Some(n)` is a [`Semaphore`] of `n` permits (Go's `chan token` of capacity
//! `n`): `go` waits for a permit, `try_go` takes one only if it is free at
//! once. The semaphore is FIFO, so `try_go` never overtakes a `go` that is
//! already waiting, and a waiting `go` is not starved by later ones. `None`
//! is no limit (Go's negative `SetLimit`), and `Some(0)` admits nobody, as
//! in Go: a `go` then waits until its future is dropped.
//!
//! # Panics are not lost
//!
//! A panic in a member is caught (the panic hook has already reported it
//! where it happened, with its backtrace), cancels the context like an error
//! would, and is resumed by [`wait`] with `std::panic::resume_unwind` once
//! every member has ended, in preference to any error. Go's errgroup did
//! the same for a while (proposal golang/go#53757) and took it back
//! (golang/go#74275 and the issues its source cites): in Go a panic in a
//! goroutine kills the process at once, and turning it into a value hides
//! its stack from crash tooling. In goro a panicking task never takes the
//! process down (its `JoinHandle` returns it as a `JoinError`), so without
//! this a panicking member would look like one that succeeded.
//!
//! # Errors reach one waiter
//!
//! Rust errors are moved, not shared: the first error goes to the first
//! [`wait`] that returns after it was recorded; a later `wait` returns
//! `Ok(())` for it (the same for a resumed panic). The usual program has
//! one owner calling `wait`, as in Go; when several tasks must see the
//! error, make `E` an `Arc<...>` and share the result of the one `wait`.
//!
//! # Rejected
//!
//! - `wait(self)` consuming the group: a `wait` raced against a timeout in
//!   `select!` could then not be retried, and the clones held by members
//!   would keep the group alive anyway.
//! - Requiring `E: Clone` so that every `wait` returns the error: most error
//!   types (`Box<dyn Error>`, `io::Error`) are not `Clone`.
//! - Returning the member's [`crate::JoinHandle`] from `go`: the group
//!   already joins its members; a second way to await them would be a second
//!   place where their panics and errors could go.
//! - A limit counted by hand under the state lock with its own waiter list:
//!   [`Semaphore`] already is that, FIFO and cancel-safe.
//!
//! Locks: `std::sync::Mutex`, never held across an `.await` or user code.
//! No loom model: the group is a composition of `WaitGroup` and `Semaphore`
//! (each with its own) under one plain lock.
//!
//! [`WaitGroup`]: super::WaitGroup
//! [`wait`]: ErrGroup::wait
//! [`set_limit`]: ErrGroup::set_limit

use crate::context::{Cancel, Context};
use crate::loom::Unpoison;
use std::any::Any;
use std::fmt;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Poll;

use super::{Semaphore, WaitGroup};

/// A group of tasks working on parts of one job: the first error any of
/// them returns is kept and [`wait`](ErrGroup::wait) returns it once all
/// are done (Go's `errgroup.Group`).
///
/// Cloning gives another handle to the same group.
///
/// ```
/// use goro::sync::ErrGroup;
/// # goro::Runtime::builder().procs(2).build().unwrap().block_on(async {
/// let g = ErrGroup::<String>::new();
/// for url in ["a.example", "b.example", "bad.example"] {
///     g.go(async move {
///         if url.starts_with("bad") {
///             return Err(format!("fetching {url}: not found"));
///         }
///         Ok(())
///     })
///     .await;
/// }
/// assert_eq!(g.wait().await, Err("fetching bad.example: not found".to_string()));
/// # });
/// ```
pub struct ErrGroup<E> {
    inner: Arc<Inner<E>>,
}

struct Inner<E> {
    /// Its counter is the number of members started and not yet ended
    /// (`active` in the module docs), read under the state lock by
    /// `set_limit`. One count, not a second atomic beside it: a member's
    /// end is one contended subtraction, not two.
    wg: WaitGroup,
    /// Cancels the context of [`ErrGroup::with_context`].
    cancel: Option<Cancel>,
    state: Mutex<State<E>>,
}

struct State<E> {
    err: Option<E>,
    panic: Option<Box<dyn Any + Send + 'static>>,
    /// `None`: no limit.
    limit: Option<Arc<Semaphore>>,
    /// `go` calls waiting for a slot.
    waiting: usize,
}

impl<E> ErrGroup<E> {
    /// A group with no limit and no context (Go's zero `Group`).
    ///
    /// ```
    /// let g = goro::sync::ErrGroup::<std::io::Error>::new();
    /// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async move {
    /// assert!(g.wait().await.is_ok(), "no members: nothing failed");
    /// # });
    /// ```
    pub fn new() -> ErrGroup<E> {
        ErrGroup::with_cancel(None)
    }

    /// A group and a context derived from `parent` that is cancelled when
    /// the first member fails (returns an error or panics) or when
    /// [`wait`](ErrGroup::wait) returns, whichever comes first (Go's
    /// `errgroup.WithContext`). Hand the context to the members so that the
    /// others stop once one has failed.
    ///
    /// ```
    /// use goro::context::{Context, ContextError};
    /// use goro::sync::ErrGroup;
    /// # goro::Runtime::builder().procs(2).build().unwrap().block_on(async {
    /// let (g, ctx) = ErrGroup::with_context(&Context::background());
    /// let c = ctx.clone();
    /// g.go(async move {
    ///     let _ = c.done().recv().await; // a member that runs until cancelled
    ///     Ok(())
    /// })
    /// .await;
    /// g.go(async { Err("disk full") }).await;
    /// assert_eq!(g.wait().await, Err("disk full"));
    /// assert_eq!(ctx.err(), Some(ContextError::Canceled));
    /// # });
    /// ```
    #[must_use = "the context is how members learn that another one failed; keep it"]
    pub fn with_context(parent: &Context) -> (ErrGroup<E>, Context) {
        let (ctx, cancel) = Context::with_cancel(parent);
        (ErrGroup::with_cancel(Some(cancel)), ctx)
    }

    fn with_cancel(cancel: Option<Cancel>) -> ErrGroup<E> {
        ErrGroup {
            inner: Arc::new(Inner {
                wg: WaitGroup::new(),
                cancel,
                state: Mutex::new(State {
                    err: None,
                    panic: None,
                    limit: None,
                    waiting: 0,
                }),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<E>> {
        // Never held across user code: a poisoned lock holds consistent state.
        self.inner.state.lock().unpoison()
    }

    /// Limits the members running at once to `limit`; `None` removes the
    /// limit (Go's `SetLimit` with a negative `n`). `Some(0)` admits no new
    /// member at all, as in Go.
    ///
    /// # Panics
    ///
    /// If any member is still running or any [`go`](ErrGroup::go) is waiting
    /// for a slot (Go panics the same way: the limit may change only before
    /// the first member starts or after [`wait`](ErrGroup::wait) returned),
    /// and if `limit` exceeds [`Semaphore::MAX_PERMITS`].
    ///
    /// ```
    /// let g = goro::sync::ErrGroup::<()>::new();
    /// g.set_limit(Some(4));
    /// g.set_limit(None); // no limit again
    /// ```
    pub fn set_limit(&self, limit: Option<usize>) {
        if let Some(n) = limit {
            assert!(
                n <= Semaphore::MAX_PERMITS,
                "errgroup: set_limit(Some({n})): the limit must be at most \
                 Semaphore::MAX_PERMITS ({}); pass None for no limit",
                Semaphore::MAX_PERMITS
            );
        }
        let mut st = self.lock();
        // Acquire (in `count`): a member's end gives its slot back before
        // its `done`, so a count of 0 means every slot is back.
        let active = self.inner.wg.count();
        if active != 0 || st.waiting != 0 {
            let waiting = st.waiting;
            drop(st); // do not poison the lock for the other handles
            panic!(
                "errgroup: set_limit({limit:?}) while {active} members of the group are \
                 still active and {waiting} go() calls wait for a slot; change the limit \
                 before the first go() or after wait() returns"
            );
        }
        st.limit = limit.map(|n| Arc::new(Semaphore::new(n)));
    }

    /// Starts `fut` as a member of the group, in a task of its own (Go's
    /// `Go`). With a limit set, waits first until fewer than the limit run
    /// (Go's `Go` blocks the same way); without one it is ready at once.
    ///
    /// The member's error, if it is the first, is kept for
    /// [`wait`](ErrGroup::wait) and cancels the group's context. Dropping the
    /// returned future before it completes drops `fut` unrun.
    ///
    /// # Panics
    ///
    /// Outside a goro runtime (the member needs a task).
    ///
    /// A worker pool: at most 3 jobs run at once, the rest wait their turn.
    ///
    /// ```
    /// use goro::sync::ErrGroup;
    /// use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    /// use std::sync::Arc;
    /// # goro::Runtime::builder().procs(2).build().unwrap().block_on(async {
    /// let g = ErrGroup::<std::io::Error>::new();
    /// g.set_limit(Some(3));
    /// let (running, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    /// for _job in 0..20 {
    ///     let (running, most) = (running.clone(), most.clone());
    ///     g.go(async move {
    ///         most.fetch_max(running.fetch_add(1, SeqCst) + 1, SeqCst);
    ///         goro::yield_now().await; // ... the job ...
    ///         running.fetch_sub(1, SeqCst);
    ///         Ok(())
    ///     })
    ///     .await; // waits here while 3 jobs run
    /// }
    /// g.wait().await.unwrap();
    /// assert!(most.load(SeqCst) <= 3);
    /// # });
    /// ```
    pub async fn go<F>(&self, fut: F)
    where
        F: Future<Output = Result<(), E>> + Send + 'static,
        E: Send + 'static,
    {
        let limit = self.lock().limit.clone();
        if let Some(sem) = limit {
            let _waiting = Waiting::new(self);
            // Forgotten here, given back by the member's guard.
            sem.acquire().await.forget();
            self.start(fut, Some(sem));
        } else {
            self.start(fut, None);
        }
    }

    /// Starts `fut` as a member only if a slot is free right now (Go's
    /// `TryGo`); returns whether it was started. Without a limit it always
    /// starts. When it returns `false`, **`fut` is dropped unrun**: build it
    /// again to retry.
    ///
    /// A slot is not free while a [`go`](ErrGroup::go) waits for one (slots
    /// are handed out in arrival order), so `try_go` does not overtake it.
    ///
    /// # Panics
    ///
    /// Outside a goro runtime (the member needs a task).
    ///
    /// ```
    /// use goro::sync::ErrGroup;
    /// # goro::Runtime::builder().procs(2).build().unwrap().block_on(async {
    /// let g = ErrGroup::<()>::new();
    /// g.set_limit(Some(1));
    /// let (tx, rx) = goro::chan::bounded::<()>(0);
    /// assert!(g.try_go(async move { let _ = rx.recv().await; Ok(()) }));
    /// assert!(!g.try_go(async { unreachable!("dropped unrun: the group is full") }));
    /// tx.close(); // lets the first member finish
    /// g.wait().await.unwrap();
    /// assert!(g.try_go(async { Ok(()) }), "a slot is free again");
    /// # g.wait().await.unwrap();
    /// # });
    /// ```
    #[must_use = "when try_go returns false the future was dropped unrun"]
    pub fn try_go<F>(&self, fut: F) -> bool
    where
        F: Future<Output = Result<(), E>> + Send + 'static,
        E: Send + 'static,
    {
        let limit = self.lock().limit.clone();
        match limit {
            None => self.start(fut, None),
            Some(sem) => {
                let Some(permit) = sem.try_acquire() else {
                    return false;
                };
                permit.forget();
                self.start(fut, Some(sem));
            }
        }
        true
    }

    /// Spawns the member; `slot` is the permit it holds (already taken).
    fn start<F>(&self, fut: F, slot: Option<Arc<Semaphore>>)
    where
        F: Future<Output = Result<(), E>> + Send + 'static,
        E: Send + 'static,
    {
        // Counted before the task exists, so `wait` cannot miss it; the
        // guard undoes it if `spawn` panics (outside a runtime).
        self.inner.wg.add(1);
        let task = MemberTask {
            fut: catch_unwind_future(fut),
            member: Member {
                group: self.clone(),
                slot,
            },
        };
        drop(crate::spawn(task));
    }

    /// Waits until every member has ended, then returns the first error one
    /// of them returned (Go's `Wait`), and cancels the group's context.
    /// Cancel-safe: a `wait` dropped early (lost a `select!` to a timeout)
    /// changes nothing, and the next `wait` waits again.
    ///
    /// The error is moved to the first `wait` that returns it; a later one
    /// returns `Ok(())` (error types are rarely `Clone`: when several tasks
    /// must see the error, make `E` an `Arc<...>` and share the result of
    /// one `wait`). Members may be started again after `wait` returned, for
    /// another round.
    ///
    /// Never call it from a member: it would wait for itself.
    ///
    /// # Panics
    ///
    /// Resumes the first panic of a member (`std::panic::resume_unwind`),
    /// after every member has ended, in preference to any error.
    ///
    /// ```
    /// use goro::sync::ErrGroup;
    /// # goro::Runtime::builder().procs(2).build().unwrap().block_on(async {
    /// let g = ErrGroup::<&str>::new();
    /// g.go(async { panic!("member 1 failed") }).await;
    /// let waiter = goro::spawn(async move { g.wait().await });
    /// let panic = waiter.await.unwrap_err(); // the waiting task panicked
    /// assert!(panic.to_string().contains("member 1 failed"));
    /// # });
    /// ```
    pub async fn wait(&self) -> Result<(), E> {
        self.inner.wg.wait().await;
        if let Some(c) = &self.inner.cancel {
            c.cancel();
        }
        let (err, panic) = {
            let mut st = self.lock();
            (st.err.take(), st.panic.take())
        };
        if let Some(p) = panic {
            std::panic::resume_unwind(p);
        }
        err.map_or(Ok(()), Err)
    }
}

impl<E> Clone for ErrGroup<E> {
    fn clone(&self) -> Self {
        ErrGroup {
            inner: self.inner.clone(),
        }
    }
}

impl<E> Default for ErrGroup<E> {
    fn default() -> Self {
        ErrGroup::new()
    }
}

impl<E> fmt::Debug for ErrGroup<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.lock();
        f.debug_struct("ErrGroup")
            .field("active", &self.inner.wg.count())
            .field("waiting", &st.waiting)
            .field("failed", &(st.err.is_some() || st.panic.is_some()))
            .field("with_context", &self.inner.cancel.is_some())
            .finish_non_exhaustive()
    }
}

/// Counts a `go` waiting for a slot, until it has one or is dropped.
struct Waiting<'a, E> {
    group: &'a ErrGroup<E>,
}

impl<'a, E> Waiting<'a, E> {
    fn new(group: &'a ErrGroup<E>) -> Self {
        group.lock().waiting += 1;
        Waiting { group }
    }
}

impl<E> Drop for Waiting<'_, E> {
    fn drop(&mut self) {
        self.group.lock().waiting -= 1;
    }
}

enum Failure<E> {
    Error(E),
    Panic(Box<dyn Any + Send + 'static>),
}

/// A running member's hold on the group; dropped when the member ends,
/// however it ends.
struct Member<E> {
    group: ErrGroup<E>,
    slot: Option<Arc<Semaphore>>,
}

pin_project_lite::pin_project! {
    /// A member's task: the member's future, then its [`Member`], which the
    /// task drops with the future rather than when the future returns. The
    /// scheduler drops a finished task's future after taking the task out of
    /// its task table, so when `wait` returns, no member is left in
    /// `Runtime::dump()` (Go's `wg.Done()` runs a moment before the goroutine
    /// exits; a dump is stricter than that).
    struct MemberTask<T, E> {
        // Dropped first (fields drop in order): the member's `done` after
        // it. Inline, not boxed: a member costs the task's one allocation.
        #[pin]
        fut: T,
        member: Member<E>,
    }
}

impl<T, E> Future for MemberTask<T, E>
where
    T: Future<Output = std::thread::Result<Result<(), E>>>,
{
    type Output = ();

    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<()> {
        let this = self.project();
        match this.fut.poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(out) => {
                match out {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => this.member.fail(Failure::Error(e)),
                    Err(p) => this.member.fail(Failure::Panic(p)),
                }
                Poll::Ready(())
            }
        }
    }
}

impl<E> Member<E> {
    /// Keeps the first error and the first panic; the first failure of
    /// either kind cancels the context (Go's `errOnce`).
    fn fail(&self, f: Failure<E>) {
        let first = {
            let mut st = self.group.lock();
            let first = st.err.is_none() && st.panic.is_none();
            match f {
                Failure::Error(e) if st.err.is_none() => st.err = Some(e),
                Failure::Panic(p) if st.panic.is_none() => st.panic = Some(p),
                // A later failure: dropped, outside the lock (its `Drop` is
                // user code). A panic in a panic payload's `Drop` is not ours
                // to catch.
                later => {
                    drop(st);
                    drop(later);
                    return;
                }
            }
            first
        };
        if first {
            if let Some(c) = &self.group.inner.cancel {
                c.cancel();
            }
        }
    }
}

impl<E> Drop for Member<E> {
    fn drop(&mut self) {
        // Go's `done`: the slot is free before `wait` can return.
        if let Some(sem) = self.slot.take() {
            sem.add_permits(1);
        }
        // Its Release: a `set_limit` that reads 0 sees the slot given back.
        self.group.inner.wg.done();
    }
}

/// Polls `fut` to completion, catching a panic in any poll.
pub(super) async fn catch_unwind_future<F: Future>(fut: F) -> std::thread::Result<F::Output> {
    let mut fut = std::pin::pin!(fut);
    std::future::poll_fn(
        move |cx| match catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Err(p) => Poll::Ready(Err(p)),
        },
    )
    .await
}
