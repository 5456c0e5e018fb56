//! `Context`: cancellation and deadlines that flow down a tree (Go's
//! `context` package).
//!
//! A context is cancelled when its [`Cancel`] handle is used or dropped, when
//! its parent is cancelled, or when its deadline passes. Cancelling closes
//! the context's [`Context::done`] channel (so it can be waited on in
//! `select!` with any other channel), records the reason for
//! [`Context::err`], stops its deadline timer at once (a cancelled context
//! leaves no armed timer behind), and cancels its children.
//!
//! One difference from Go, for Rust's ownership: the [`Cancel`] handle
//! cancels when dropped, the way `defer cancel()` is always written in Go.
//! Keep it alive for as long as the context should live (move it into the
//! task that owns the work), or call [`Cancel::cancel`].
//!
//! Deadline timers run their callback inline on the P that fires them
//! (cancellation only takes locks and closes a channel; it never blocks).

use crate::chan::{self, Receiver, Sender};
use crate::sched::timers::arm_timer;
use crate::time::clock;
use crate::time::timer::{Action, Callback, Fire, TimerInner};
use std::collections::HashMap;
use std::fmt;
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
///     let (ctx, _cancel) = Context::with_timeout(&Context::background(), Duration::from_millis(1));
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

    /// A child that is cancelled with its parent or by the returned handle.
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
    pub fn with_cancel(parent: &Context) -> (Context, Cancel) {
        let ctx = Context::child(parent, parent.inner.deadline);
        let cancel = Cancel {
            inner: Arc::downgrade(&ctx.inner),
        };
        (ctx, cancel)
    }

    /// A child whose deadline is `d` from now (or the parent's, if earlier).
    ///
    /// # Panics
    /// Outside a goro runtime (the deadline needs its timers).
    pub fn with_timeout(parent: &Context, d: Duration) -> (Context, Cancel) {
        let when = clock::when_after(d);
        let deadline = (when != clock::NEVER).then(|| clock::instant_of(when));
        Context::with_deadline_opt(parent, deadline)
    }

    /// A child whose deadline is `t` (or the parent's, if earlier). A
    /// deadline already past yields a context that is done at once.
    ///
    /// # Panics
    /// Outside a goro runtime (the deadline needs its timers).
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
        crate::time::with_runtime("context::with_deadline", |s| {
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
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The deadline timer's callback (inline on the P that fires it).
impl Fire for Inner {
    fn fire(self: Arc<Self>) {
        cancel_node(&self, ContextError::DeadlineExceeded);
    }
}

/// Cancels a context and its descendants; dropping it does the same
/// (Go's `defer cancel()`, made automatic).
pub struct Cancel {
    inner: Weak<Inner>,
}

impl Cancel {
    /// Cancels the context (and its children) with `ContextError::Canceled`,
    /// unless it is already done. Idempotent.
    pub fn cancel(&self) {
        if let Some(inner) = self.inner.upgrade() {
            cancel_node(&inner, ContextError::Canceled);
        }
    }
}

impl Drop for Cancel {
    fn drop(&mut self) {
        self.cancel();
    }
}

impl fmt::Debug for Cancel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Cancel")
    }
}

/// Marks `node` done with `err`, stops its timer, closes `done`, detaches
/// it from its parent, and cancels its children (outside any lock).
fn cancel_node(node: &Arc<Inner>, err: ContextError) {
    let (children, timer, tx) = {
        let mut st = node.lock();
        if st.err.is_some() {
            return;
        }
        st.err = Some(err);
        (
            std::mem::take(&mut st.children),
            st.timer.take(),
            st.done_tx.take(),
        )
    };
    if let Some(t) = timer {
        arm_timer(&t, 0, 0);
    }
    if let Some(tx) = tx {
        tx.close();
    }
    if let Some(parent) = &node.parent {
        parent.lock().children.remove(&key(node));
    }
    for c in children.into_values() {
        if let Some(c) = c.upgrade() {
            cancel_node(&c, err);
        }
    }
}
