//! `Context`: cancellation and deadlines that flow down a tree (Go's
//! `context` package).
//!
//! A context is done when its [`Cancel`] handle's [`Cancel::cancel`] is
//! called, when its parent is done, or when its deadline passes. Being done
//! closes the context's [`Context::done`] channel (so it can be waited on in
//! `select!` with any other channel), records the reason for
//! [`Context::err`], stops its deadline timer at once (a done context
//! leaves no armed timer behind), and makes its children done.
//!
//! # Dropping the cancel handle does not cancel
//!
//! As in Go, a context lives until it is cancelled, its deadline passes or
//! its parent is done; what happens to the [`Cancel`] handle does not
//! matter. So the idiom every Go user writes, `ctx, _ :=
//! context.WithTimeout(parent, d)`, works as it reads:
//!
//! ```
//! use goro::context::{Context, ContextError};
//! use std::time::Duration;
//! # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
//! let (ctx, _) = Context::with_timeout(&Context::background(), Duration::from_millis(20));
//! assert_eq!(ctx.err(), None, "live: the discarded handle cancelled nothing");
//! let _ = ctx.done().recv().await; // closed when the deadline passes
//! assert_eq!(ctx.err(), Some(ContextError::DeadlineExceeded));
//! # });
//! ```
//!
//! Nothing leaks when the handle is gone, in goro not even what Go leaks:
//!
//! * a deadline context stops and releases its timer when its deadline
//!   passes, when its parent is done, or when the last clone of the
//!   [`Context`] is dropped, whichever comes first;
//! * a parent holds its children weakly, and a child whose last clone is
//!   dropped removes itself from its parent at once (Go keeps a
//!   `WithCancel` child whose cancel was never called in its parent until
//!   the parent is done, which is why `go vet` warns about it; goro need
//!   not).
//!
//! To cancel when a scope ends, whichever way it ends (Go's `defer
//! cancel()`), turn the handle into a guard:
//!
//! ```
//! use goro::context::{Context, ContextError};
//! let (ctx, cancel) = Context::with_cancel(&Context::background());
//! {
//!     let _guard = cancel.cancel_on_drop(); // `defer cancel()`
//!     assert_eq!(ctx.err(), None);
//! } // the guard is dropped here: the context is cancelled
//! assert_eq!(ctx.err(), Some(ContextError::Canceled));
//! ```
//!
//! Deadline timers run their callback inline on the P that fires them
//! (cancellation only takes locks and closes a channel; it never blocks).
//!
//! # Rejected
//!
//! - Cancelling when the [`Cancel`] handle is dropped (an automatic `defer
//!   cancel()`): `let (ctx, _) = Context::with_timeout(..)` then gave a
//!   context cancelled microseconds later, silently, and every Go user
//!   writes that line. The guard of [`Cancel::cancel_on_drop`] keeps the
//!   automatic cancel for those who ask for it.
//! - Cancelling on drop for `with_cancel` contexts only: the same trap for
//!   `let (ctx, _) = Context::with_cancel(..)`, and two rules where one
//!   does.

use crate::chan::{self, Receiver, Sender};
use crate::loom::Unpoison;
use crate::sched::timer::check::arm_timer;
use crate::sched::timer::clock;
use crate::sched::timer::{Action, Callback, Fire, TimerInner};
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::AtomicU8;
use std::sync::atomic::Ordering::{AcqRel, Acquire};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

/// Why a context is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContextError {
    /// Cancelled by its `Cancel` handle or by its parent's.
    Canceled,
    /// Its deadline passed.
    DeadlineExceeded,
}

impl fmt::Display for ContextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ContextError::Canceled => "context canceled",
            ContextError::DeadlineExceeded => "context deadline exceeded",
        })
    }
}

impl std::error::Error for ContextError {}

/// A handle on a context tree node; cheap to clone, `Send + Sync`.
///
/// ```
/// use goro::context::{Context, ContextError};
/// use std::time::Duration;
/// let rt = goro::Runtime::builder().procs(1).build().unwrap();
/// rt.block_on(async {
///     let (ctx, _) = Context::with_timeout(&Context::background(), Duration::from_millis(1));
///     let _ = ctx.done().recv().await; // closed when the deadline passes
///     assert_eq!(ctx.err(), Some(ContextError::DeadlineExceeded));
/// });
/// ```
#[derive(Clone)]
pub struct Context {
    inner: Arc<Inner>,
}

struct Inner {
    deadline: Option<Instant>,
    /// Made by the first [`Context::done`] (most contexts are never waited
    /// on, as in Go, whose `done` channel is lazy too); closed at once if
    /// the context is already done by then.
    done_rx: OnceLock<Receiver<()>>,
    state: Mutex<State>,
    /// The parent this context is registered with. `None` for the
    /// background context and for its children: background is never
    /// cancelled, so its children neither register with it nor hold it
    /// (which would have every P contend for its lock and count).
    parent: Option<Arc<Inner>>,
    /// Whether this is the background context.
    root: bool,
}

struct State {
    err: Option<ContextError>,
    /// `done`'s sender while `done` exists and the context is live
    /// (closing it closes `done`); never used for sending. Background keeps
    /// its sender forever, so `done` never closes.
    done_tx: Option<Sender<()>>,
    children: HashMap<usize, Weak<Inner>>,
    timer: Option<Arc<TimerInner>>,
}

/// A child's key in its parent's `children`: its address, unique while it
/// is alive (and it is removed before it is freed).
fn key(inner: &Arc<Inner>) -> usize {
    Arc::as_ptr(inner) as usize
}

impl Context {
    /// The root: never cancelled, no deadline.
    pub fn background() -> Context {
        Context {
            inner: Inner::new(None, None, true),
        }
    }

    /// A child that is done with its parent or when the returned handle's
    /// [`Cancel::cancel`] is called (Go's `context.WithCancel`). Dropping
    /// the handle does not cancel (see the [module docs](self)).
    ///
    /// ```
    /// use goro::context::{Context, ContextError};
    /// let root = Context::background();
    /// let (parent, cancel) = Context::with_cancel(&root);
    /// let (child, _keep) = Context::with_cancel(&parent);
    /// cancel.cancel();
    /// assert_eq!(child.err(), Some(ContextError::Canceled));
    /// assert!(child.done().is_closed());
    /// ```
    #[must_use = "a context nobody holds is done for nobody; keep the context (and its handle to cancel it)"]
    pub fn with_cancel(parent: &Context) -> (Context, Cancel) {
        let ctx = Context::child(parent, parent.inner.deadline);
        let cancel = Cancel {
            inner: Arc::downgrade(&ctx.inner),
        };
        (ctx, cancel)
    }

    /// A child whose deadline is `d` from now (or the parent's, if earlier)
    /// (Go's `context.WithTimeout`). The handle cancels it early; dropping
    /// the handle does not (see the [module docs](self)).
    ///
    /// ```
    /// use goro::context::{Context, ContextError};
    /// use std::time::Duration;
    /// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
    /// let (ctx, cancel) = Context::with_timeout(&Context::background(), Duration::from_secs(3600));
    /// cancel.cancel(); // done early: the timer is stopped at once
    /// assert_eq!(ctx.err(), Some(ContextError::Canceled));
    /// # });
    /// ```
    ///
    /// # Panics
    /// Outside a goro runtime (the deadline needs its timers).
    #[must_use = "a context nobody holds is done for nobody; keep the context (`let (ctx, _) = ...` is fine)"]
    pub fn with_timeout(parent: &Context, d: Duration) -> (Context, Cancel) {
        let when = clock::when_after(d);
        let deadline = (when != clock::NEVER).then(|| clock::instant_of(when));
        Context::with_deadline_opt(parent, deadline)
    }

    /// A child whose deadline is `t` (or the parent's, if earlier). A
    /// deadline already past yields a context that is done at once.
    ///
    /// ```
    /// use goro::context::Context;
    /// use std::time::{Duration, Instant};
    /// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
    /// let t = Instant::now() + Duration::from_secs(3600);
    /// let (ctx, _) = Context::with_deadline(&Context::background(), t);
    /// assert_eq!(ctx.deadline(), Some(t));
    /// # });
    /// ```
    ///
    /// # Panics
    /// Outside a goro runtime (the deadline needs its timers).
    #[must_use = "a context nobody holds is done for nobody; keep the context (`let (ctx, _) = ...` is fine)"]
    pub fn with_deadline(parent: &Context, t: Instant) -> (Context, Cancel) {
        Context::with_deadline_opt(parent, Some(t))
    }

    fn with_deadline_opt(parent: &Context, t: Option<Instant>) -> (Context, Cancel) {
        let own = match (t, parent.inner.deadline) {
            (Some(t), Some(p)) if p <= t => return Context::with_cancel(parent), // parent's deadline rules
            (None, _) => return Context::with_cancel(parent), // beyond representation
            (Some(t), _) => t,
        };
        let ctx = Context::child(parent, Some(own));
        let cancel = Cancel {
            inner: Arc::downgrade(&ctx.inner),
        };
        let when = clock::when_of(own);
        if when <= clock::now() {
            cancel_node(&ctx.inner, ContextError::DeadlineExceeded);
            return (ctx, cancel);
        }
        let weak: Weak<dyn Fire> = Arc::downgrade(&ctx.inner) as Weak<Inner>;
        crate::sched::timer::sleep::with_runtime("context::with_deadline", |s| {
            let mut st = ctx.inner.lock();
            if st.err.is_none() {
                let timer =
                    s.start_timer(Action::Func { spawn: false }, Callback::Weak(weak), when);
                st.timer = Some(timer);
            }
        });
        (ctx, cancel)
    }

    fn child(parent: &Context, deadline: Option<Instant>) -> Context {
        if parent.inner.root {
            return Context {
                inner: Inner::new(deadline, None, false),
            };
        }
        let inner = Inner::new(deadline, Some(parent.inner.clone()), false);
        let parent_err = {
            let mut ps = parent.inner.lock();
            if ps.err.is_none() {
                ps.children.insert(key(&inner), Arc::downgrade(&inner));
            }
            ps.err
        };
        if let Some(e) = parent_err {
            cancel_node(&inner, e);
        }
        Context { inner }
    }

    /// A channel that is closed when the context is done; receiving from it
    /// then yields `Err(RecvError)` at once. Select-able.
    pub fn done(&self) -> &Receiver<()> {
        if let Some(rx) = self.inner.done_rx.get() {
            return rx;
        }
        // Made under the state lock, so a concurrent cancel either sees the
        // sender (and closes it) or has already set `err` (and we close it).
        let mut st = self.inner.lock();
        self.inner.done_rx.get_or_init(|| {
            let (tx, rx) = chan::bounded(0);
            if st.err.is_some() {
                tx.close();
            } else {
                st.done_tx = Some(tx);
            }
            rx
        })
    }

    /// `None` while the context is live; why it is done afterwards.
    pub fn err(&self) -> Option<ContextError> {
        self.inner.lock().err
    }

    /// The deadline, if any (the earliest along the path from the root).
    pub fn deadline(&self) -> Option<Instant> {
        self.inner.deadline
    }

    /// Calls `f` in a task of its own once the context is done, or soon if
    /// it already is (Go's `context.AfterFunc`). [`AfterFunc::stop`] keeps
    /// it from running; dropping the handle does not.
    ///
    /// ```
    /// use goro::context::Context;
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// use std::sync::Arc;
    /// let called = Arc::new(AtomicBool::new(false));
    /// let seen = called.clone();
    /// goro::sim::Builder::new().seed(1).run(async move {
    ///     let (ctx, cancel) = Context::with_cancel(&Context::background());
    ///     let _f = ctx.after_func(move || seen.store(true, Ordering::Relaxed));
    ///     cancel.cancel();
    /// }).unwrap(); // the bubble ends when the function's task has run
    /// assert!(called.load(Ordering::Relaxed));
    /// ```
    ///
    /// # Panics
    /// Outside a goro runtime (it spawns a task).
    #[track_caller]
    pub fn after_func<F>(&self, f: F) -> AfterFunc
    where
        F: FnOnce() + Send + 'static,
    {
        let state = Arc::new(AtomicU8::new(AFTER_WAITING));
        let mine = state.clone();
        let ctx = self.clone();
        let task = crate::spawn(async move {
            let _ = ctx.done().recv().await;
            // AcqRel: pairs with `stop`'s exchange; one of the two wins.
            if mine
                .compare_exchange(AFTER_WAITING, AFTER_RAN, AcqRel, Acquire)
                .is_ok()
            {
                f();
            }
        });
        AfterFunc { state, task }
    }
}

// An `AfterFunc`'s state: its function waits for the context, has run
// (or is running), or was stopped first.
const AFTER_WAITING: u8 = 0;
const AFTER_RAN: u8 = 1;
const AFTER_STOPPED: u8 = 2;

/// The handle of [`Context::after_func`]: Go's `stop` function.
#[derive(Debug)]
pub struct AfterFunc {
    state: Arc<AtomicU8>,
    task: crate::JoinHandle<()>,
}

impl AfterFunc {
    /// Keeps the function from running; true if this call stopped it,
    /// false if it had started (or was stopped before), as Go's `stop`.
    pub fn stop(&self) -> bool {
        let stopped = self
            .state
            .compare_exchange(AFTER_WAITING, AFTER_STOPPED, AcqRel, Acquire)
            .is_ok();
        if stopped {
            self.task.abort();
        }
        stopped
    }
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("deadline", &self.deadline())
            .field("err", &self.err())
            .finish()
    }
}

impl Inner {
    fn new(deadline: Option<Instant>, parent: Option<Arc<Inner>>, root: bool) -> Arc<Inner> {
        Arc::new(Inner {
            deadline,
            done_rx: OnceLock::new(),
            state: Mutex::new(State {
                err: None,
                done_tx: None,
                children: HashMap::new(),
                timer: None,
            }),
            parent,
            root,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unpoison()
    }
}

/// The last clone of a context is gone: nobody can wait on it or read its
/// error any more, so it releases what it holds at once instead of at its
/// deadline or its parent's end: its armed timer, and its entry in its
/// parent's `children`. (Its children hold it through `parent`, so none is
/// left.) A `Cancel` handle holds the context weakly and does nothing now.
impl Drop for Inner {
    fn drop(&mut self) {
        let st = self.state.get_mut().unpoison();
        if st.err.is_some() {
            return; // done: `cancel_node` released everything
        }
        if let Some(t) = st.timer.take() {
            arm_timer(&t, 0, 0);
        }
        if let Some(parent) = &self.parent {
            // `key` of this node: the address of the `Inner` in its `Arc`.
            parent
                .lock()
                .children
                .remove(&(self as *const Inner as usize));
        }
    }
}

/// The deadline timer's callback (inline on the P that fires it).
impl Fire for Inner {
    fn fire(self: Arc<Self>) {
        cancel_node(&self, ContextError::DeadlineExceeded);
    }
}

/// Cancels a context and its descendants (Go's `CancelFunc`). Cheap to
/// clone; any clone cancels.
///
/// Dropping it does not cancel: the context lives on until its deadline or
/// its parent's end (see the [module docs](self)). For Go's `defer
/// cancel()`, keep the guard of [`Cancel::cancel_on_drop`].
#[derive(Clone)]
#[must_use = "dropping a Cancel does not cancel its context; call `cancel()`, or keep `cancel_on_drop()`'s guard"]
pub struct Cancel {
    inner: Weak<Inner>,
}

impl Cancel {
    /// Cancels the context (and its children) with `ContextError::Canceled`,
    /// unless it is already done. Idempotent.
    ///
    /// ```
    /// use goro::context::{Context, ContextError};
    /// let (ctx, cancel) = Context::with_cancel(&Context::background());
    /// cancel.cancel();
    /// cancel.cancel(); // no effect: already done
    /// assert_eq!(ctx.err(), Some(ContextError::Canceled));
    /// ```
    pub fn cancel(&self) {
        if let Some(inner) = self.inner.upgrade() {
            cancel_node(&inner, ContextError::Canceled);
        }
    }

    /// A guard that cancels the context when it is dropped: Go's `defer
    /// cancel()`, run on every way out of the scope (return, `?`, panic).
    ///
    /// ```
    /// use goro::context::{Context, ContextError};
    /// fn work(parent: &Context) -> Context {
    ///     let (ctx, cancel) = Context::with_cancel(parent);
    ///     let _guard = cancel.cancel_on_drop();
    ///     // ... hand `ctx` to tasks, wait for them ...
    ///     ctx
    /// }
    /// let ctx = work(&Context::background());
    /// assert_eq!(ctx.err(), Some(ContextError::Canceled));
    /// ```
    pub fn cancel_on_drop(self) -> CancelGuard {
        CancelGuard { cancel: Some(self) }
    }
}

impl fmt::Debug for Cancel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Cancel")
    }
}

/// Cancels its context when dropped ([`Cancel::cancel_on_drop`]).
#[must_use = "if unused the context is cancelled at once; bind it: `let _guard = ...`"]
pub struct CancelGuard {
    /// `None` once disarmed.
    cancel: Option<Cancel>,
}

impl CancelGuard {
    /// Gives the handle back without cancelling.
    ///
    /// ```
    /// use goro::context::Context;
    /// let (ctx, cancel) = Context::with_cancel(&Context::background());
    /// let cancel = cancel.cancel_on_drop().disarm();
    /// assert_eq!(ctx.err(), None);
    /// # cancel.cancel();
    /// ```
    pub fn disarm(mut self) -> Cancel {
        self.cancel.take().expect("a guard is disarmed once")
    }
}

impl Drop for CancelGuard {
    fn drop(&mut self) {
        if let Some(c) = &self.cancel {
            c.cancel();
        }
    }
}

impl fmt::Debug for CancelGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CancelGuard")
    }
}

/// Marks `node` and its whole subtree done with `err` (closing each `done`
/// and stopping each timer), then detaches `node` from its parent.
///
/// As in Go (`cancelCtx.cancel`), a node's lock is held while it cancels
/// its children: a cancel that reaches a node another thread is cancelling
/// waits on that lock until the node's subtree is done, so when any
/// `cancel` returns, nothing below it is live. Locks are taken top-down
/// only (a node, then its children); the detach from the parent, the one
/// bottom-up step, comes after the node's lock is released. Timers are
/// stopped after every lock is released: a timer that fires meanwhile
/// finds its node done and does nothing.
fn cancel_node(node: &Arc<Inner>, err: ContextError) {
    let mut timers = Vec::new();
    if !cancel_tree(node, err, &mut timers) {
        return;
    }
    if let Some(parent) = &node.parent {
        parent.lock().children.remove(&key(node));
    }
    for t in timers {
        arm_timer(&t, 0, 0);
    }
}

/// The part of [`cancel_node`] under the locks: `false` if `node` was
/// already done (its canceller, holding its lock until now, has finished
/// its subtree).
fn cancel_tree(node: &Arc<Inner>, err: ContextError, timers: &mut Vec<Arc<TimerInner>>) -> bool {
    let mut st = node.lock();
    if st.err.is_some() {
        return false;
    }
    st.err = Some(err);
    timers.extend(st.timer.take());
    if let Some(tx) = st.done_tx.take() {
        tx.close();
    }
    // A child cancelled here needs no detach: its parent's map is gone.
    for c in std::mem::take(&mut st.children).into_values() {
        if let Some(c) = c.upgrade() {
            cancel_tree(&c, err, timers);
        }
    }
    true
}
