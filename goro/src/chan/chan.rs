//! The channel itself: Go's `hchan`, one lock over a ring buffer and two
//! queues of parked operations.
//!
//! Everything a channel operation needs to decide lives behind one
//! [`Mutex`]: the buffer, the `closed` flag, the queue of parked senders
//! (`sendq`) and the queue of parked receivers (`recvq`). An operation takes
//! the lock, looks, acts, releases the lock, and only then wakes the task it
//! completed (Go's rule: never ready a goroutine under the channel lock).
//!
//! # Waiters (Go's `sudog`)
//!
//! A parked operation is a [`Waiter`]: the slot that carries the value (the
//! sender's value while it waits, the value handed to a receiver), the index
//! of its `select` case, and a [`Signal`]. A plain `send`/`recv` owns its
//! signal; the waiters of one `select` share theirs, one waiter per case, each
//! in its own channel's queue. The signal is the one-shot "who completed me"
//! word that Go keeps in `g.selectDone`:
//!
//! ```text
//! WAITING --claim(case)--> CLAIMED(case) --finish--> DONE(case)
//!    \--abort (owner: cancelled, or select retrying)--> ABORTED
//! ```
//!
//! Whoever moves a signal out of `WAITING` owns the operation. A completer
//! (the counterpart send or recv, or `close`) claims *under the lock of the
//! channel the waiter is queued on*, moves the value through the slot, stores
//! `DONE` with `Release` and wakes the owner after unlocking. The owner sees
//! `DONE` with `Acquire` and reads the slot. A waiter found in a queue with a
//! signal that is no longer `WAITING` is dead (its owner aborted, or its
//! `select` completed on another channel); whoever meets it drops the entry,
//! and the owner's own clean-up tolerates finding its entry gone.
//!
//! # Invariants (under the lock)
//!
//! - `recvq` holds a live waiter only while `buf` is empty: a send hands its
//!   value straight to a parked receiver and never through the buffer.
//! - `sendq` holds a live waiter only while `buf.len() >= cap`: a receive
//!   from a full buffer takes the head and moves the first parked sender's
//!   value into the tail (Go's `recv` on a full buffer), so FIFO order holds.
//! - A waiter's slot is touched by a completer only between its claim and its
//!   `DONE`, both under the queue's channel lock; by the owner only after it
//!   saw `DONE`, or under that same lock.
//! - Nothing is dropped under the lock: values given back travel out of the
//!   critical section first (a value's `Drop` may touch this very channel).
//!
//! # Cancellation
//!
//! A future dropped while parked aborts its signal and removes its entry
//! under the lock, which also waits out any completer that claimed it a
//! moment before. If a receiver had already been handed a value, that value
//! goes to the next parked receiver or back to the *front* of the buffer,
//! even past `cap` (it was sent before anything still buffered). This is the
//! only way `len()` can exceed `capacity()`, and it is transient: receives
//! take from the buffer first.
//!
//! # Rejected
//!
//! - Lock-free queues (crossbeam's array/list flavours): faster under heavy
//!   contention, but `close`, `select` and hand-off each need their own
//!   protocol, and Go shows one short critical section is cheap because a
//!   contended channel parks its users anyway.
//! - Slots as `UnsafeCell`s guarded by the channel lock (Go's layout): saves
//!   one uncontended lock per hand-off but needs `unsafe` reasoning across two
//!   owners. The slot has its own leaf mutex; measure before trading it away.
//! - An intrusive linked list for the queues (Go's `waitq`, O(1) removal):
//!   needs `unsafe`. A queue is a `VecDeque` sorted by entry id (ids only
//!   grow and entries are only appended), so removing a cancelled entry is a
//!   binary search plus a short shift.

use std::collections::VecDeque;
use std::sync::PoisonError;
use std::task::{Context, Poll, Waker};

use crate::loom::{Arc, AtomicUsize, Mutex, MutexGuard, Ordering};

use super::{RecvError, SendError, TryRecvError, TrySendError};

// --------------------------------------------------------------------------
// Signal: the one-shot completion word of a parked operation
// --------------------------------------------------------------------------

/// Nobody has completed the operation yet; completers may claim it.
const WAITING: usize = 0;
/// The owner gave up (dropped, or a `select` retrying); never claimable again.
const ABORTED: usize = 1;

const fn claimed(case: usize) -> usize {
    2 + 2 * case
}

const fn done(case: usize) -> usize {
    3 + 2 * case
}

/// Case index of a claimed or done state.
const fn case_of(state: usize) -> usize {
    (state - 2) / 2
}

const fn is_done(state: usize) -> bool {
    state >= 2 && state % 2 == 1
}

/// The completion word shared by all waiters of one parked operation (a
/// plain send/recv, or every case of one `select`), plus the waker to call.
///
/// Public only because the `select!` macro's case trait mentions it; it is
/// not nameable outside the crate and has no public methods.
#[doc(hidden)]
pub struct Signal {
    /// `WAITING`, `ABORTED`, `claimed(case)` or `done(case)`.
    state: AtomicUsize,
    /// The waker of the owning task, taken by the completer after `DONE`.
    waker: Mutex<Option<Waker>>,
}

impl Signal {
    pub(crate) fn new(waker: Waker) -> Signal {
        Signal {
            state: AtomicUsize::new(WAITING),
            waker: Mutex::new(Some(waker)),
        }
    }

    /// Claims a waiting operation for `case`. Only one claim (or abort) ever
    /// succeeds. The caller holds the lock of the channel the waiter is queued
    /// on and must call [`Signal::finish`] before releasing it.
    fn try_claim(&self, case: usize) -> bool {
        // AcqRel: the claim orders the completer's slot access after the
        // owner's set-up; data itself is guarded by the locks, this only
        // decides the single winner among completers and the owner's abort.
        self.state
            .compare_exchange(WAITING, claimed(case), Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Publishes the completion of a claimed operation.
    fn finish(&self, case: usize) {
        // Release: pairs with the Acquire load in `done_case`; the owner reads
        // the slot only after seeing DONE, so the slot write must precede it.
        self.state.store(done(case), Ordering::Release);
    }

    /// Stops further claims. `Ok` if the operation was still waiting,
    /// otherwise the state that won (`ABORTED`, `claimed(c)` or `done(c)`).
    pub(crate) fn abort(&self) -> Result<(), usize> {
        // AcqRel: symmetric with `try_claim`; exactly one of them wins.
        self.state
            .compare_exchange(WAITING, ABORTED, Ordering::AcqRel, Ordering::Acquire)
            .map(|_| ())
    }

    /// The case that completed the operation, once it is `DONE`.
    fn done_case(&self) -> Option<usize> {
        // Acquire: pairs with the Release store in `finish`.
        let s = self.state.load(Ordering::Acquire);
        is_done(s).then(|| case_of(s))
    }

    /// The owner's poll: `Some(case)` when done, else registers `cx`'s waker.
    ///
    /// No lost wakeup: the waker is stored under `waker`'s lock before the
    /// second state check, and a completer stores `DONE` before taking the
    /// waker under the same lock, so either this check sees `DONE` or the
    /// completer sees the new waker.
    pub(crate) fn poll_done(&self, cx: &mut Context<'_>) -> Option<usize> {
        if let Some(case) = self.done_case() {
            return Some(case);
        }
        {
            let mut slot = lock(&self.waker);
            match &*slot {
                Some(w) if w.will_wake(cx.waker()) => {}
                _ => *slot = Some(cx.waker().clone()),
            }
        }
        self.done_case()
    }

    /// Wakes the owner. Called by the completer after releasing the channel.
    fn wake(&self) {
        let waker = lock(&self.waker).take();
        if let Some(w) = waker {
            w.wake();
        }
    }
}

/// Locks, ignoring poisoning: no code that can panic runs under these locks
/// with a half-updated state (user values are never dropped under them).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

// --------------------------------------------------------------------------
// Waiter (Go's sudog) and the wait queues
// --------------------------------------------------------------------------

enum SignalRef {
    /// A plain send/recv: one allocation holds waiter and signal.
    Own(Signal),
    /// One case of a `select`: the signal is shared by all its cases.
    Shared(Arc<Signal>),
}

/// One parked operation on one channel.
pub(crate) struct Waiter<T> {
    signal: SignalRef,
    /// The `select` case this waiter stands for (0 for plain operations).
    case: usize,
    /// A parked sender's value, or the value handed to a parked receiver.
    slot: Mutex<Option<T>>,
}

impl<T> Waiter<T> {
    pub(crate) fn plain(waker: Waker, value: Option<T>) -> Waiter<T> {
        Waiter {
            signal: SignalRef::Own(Signal::new(waker)),
            case: 0,
            slot: Mutex::new(value),
        }
    }

    pub(crate) fn for_select(signal: Arc<Signal>, case: usize, value: Option<T>) -> Waiter<T> {
        Waiter {
            signal: SignalRef::Shared(signal),
            case,
            slot: Mutex::new(value),
        }
    }

    pub(crate) fn signal(&self) -> &Signal {
        match &self.signal {
            SignalRef::Own(s) => s,
            SignalRef::Shared(s) => s,
        }
    }

    pub(crate) fn take_slot(&self) -> Option<T> {
        lock(&self.slot).take()
    }

    fn put_slot(&self, v: T) {
        let old = lock(&self.slot).replace(v);
        debug_assert!(old.is_none(), "a receiver slot was filled twice");
    }

    /// Claims this waiter for its case; see [`Signal::try_claim`].
    fn try_claim(&self) -> bool {
        self.signal().try_claim(self.case)
    }

    fn finish(&self) {
        self.signal().finish(self.case);
    }
}

/// A parked operation as its owner sees it: the waiter and its entry id.
pub(crate) struct Parked<T> {
    pub(crate) waiter: Arc<Waiter<T>>,
    id: u64,
}

struct Entry<T> {
    id: u64,
    waiter: Arc<Waiter<T>>,
}

/// A FIFO of parked operations (Go's `waitq`), sorted by `id`.
struct WaitQueue<T> {
    entries: VecDeque<Entry<T>>,
    next_id: u64,
}

impl<T> WaitQueue<T> {
    fn new() -> WaitQueue<T> {
        WaitQueue {
            entries: VecDeque::new(),
            next_id: 0,
        }
    }

    fn push(&mut self, waiter: Arc<Waiter<T>>) -> Parked<T> {
        let id = self.next_id;
        self.next_id += 1;
        self.entries.push_back(Entry {
            id,
            waiter: waiter.clone(),
        });
        Parked { waiter, id }
    }

    /// Removes the entry `id` if it is still queued.
    fn remove(&mut self, id: u64) {
        if let Ok(i) = self.entries.binary_search_by_key(&id, |e| e.id) {
            self.entries.remove(i);
        }
    }

    /// Dequeues and claims the first live waiter that is not part of `me`
    /// (a `select` never completes against its own other cases). Dead
    /// entries met on the way are dropped; their owners still hold a
    /// reference, so no value is dropped here.
    fn claim_first(&mut self, me: Option<&Signal>) -> Option<Arc<Waiter<T>>> {
        let mut i = 0;
        while i < self.entries.len() {
            if is_mine(&self.entries[i].waiter, me) {
                i += 1;
                continue;
            }
            let e = self.entries.remove(i).expect("index checked against len");
            if e.waiter.try_claim() {
                return Some(e.waiter);
            }
        }
        None
    }

    /// Whether a live waiter other than `me`'s is queued, dropping dead
    /// entries met on the way.
    fn has_live(&mut self, me: &Signal) -> bool {
        let mut i = 0;
        while i < self.entries.len() {
            let w = &self.entries[i].waiter;
            if is_mine(w, Some(me)) {
                i += 1;
            } else if w.signal().state.load(Ordering::Acquire) == WAITING {
                // Acquire: only a hint; the real decision is a later claim.
                return true;
            } else {
                self.entries.remove(i);
            }
        }
        false
    }
}

fn is_mine<T>(w: &Waiter<T>, me: Option<&Signal>) -> bool {
    me.is_some_and(|me| std::ptr::eq(w.signal(), me))
}

/// A waiter completed under the lock, to be woken once it is released.
pub(crate) type Woken<T> = Option<Arc<Waiter<T>>>;

/// Wakes the owner of a completed waiter; call with no lock held.
pub(crate) fn wake<T>(w: Woken<T>) {
    if let Some(w) = w {
        w.signal().wake();
    }
}

// --------------------------------------------------------------------------
// hchan
// --------------------------------------------------------------------------

/// What a channel's lock protects.
pub(crate) struct Inner<T> {
    buf: VecDeque<T>,
    closed: bool,
    sendq: WaitQueue<T>,
    recvq: WaitQueue<T>,
}

/// The shared channel (Go's `hchan`).
pub(crate) struct Chan<T> {
    inner: Mutex<Inner<T>>,
    cap: usize,
    /// Live `Sender` handles; the last one to go closes the channel.
    pub(crate) senders: AtomicUsize,
}

impl<T> Chan<T> {
    pub(crate) fn new(cap: usize) -> Chan<T> {
        Chan {
            inner: Mutex::new(Inner {
                buf: VecDeque::new(),
                closed: false,
                sendq: WaitQueue::new(),
                recvq: WaitQueue::new(),
            }),
            cap,
            senders: AtomicUsize::new(1),
        }
    }

    pub(crate) fn cap(&self) -> usize {
        self.cap
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Inner<T>> {
        lock(&self.inner)
    }

    pub(crate) fn len(&self) -> usize {
        self.lock().buf.len()
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// Go's `closechan`: marks the channel closed and completes every parked
    /// operation (receivers with nothing, senders keeping their value).
    /// `false` if it was already closed.
    pub(crate) fn close(&self) -> bool {
        let mut woken = Vec::new();
        let mut dead = Vec::new();
        {
            let mut inner = self.lock();
            if inner.closed {
                return false;
            }
            inner.closed = true;
            let recvq = std::mem::take(&mut inner.recvq.entries);
            let sendq = std::mem::take(&mut inner.sendq.entries);
            // Claim and finish under the lock, so that an owner that locks
            // this channel afterwards always sees DONE.
            for e in recvq.into_iter().chain(sendq) {
                if e.waiter.try_claim() {
                    e.waiter.finish();
                    woken.push(e.waiter);
                } else {
                    dead.push(e);
                }
            }
        }
        for w in woken {
            w.signal().wake();
        }
        drop(dead);
        true
    }

    /// Go's `chansend` without blocking: hand-off to a parked receiver, else
    /// the buffer. On success returns the receiver to wake after unlocking.
    pub(crate) fn send_locked(
        &self,
        inner: &mut Inner<T>,
        v: T,
        me: Option<&Signal>,
    ) -> Result<Woken<T>, TrySendError<T>> {
        if inner.closed {
            return Err(TrySendError::Closed(v));
        }
        if let Some(w) = inner.recvq.claim_first(me) {
            w.put_slot(v);
            w.finish();
            return Ok(Some(w));
        }
        if inner.buf.len() < self.cap {
            inner.buf.push_back(v);
            return Ok(None);
        }
        Err(TrySendError::Full(v))
    }

    /// Go's `chanrecv` without blocking: the buffer's head (refilling its
    /// tail from a parked sender), else a parked sender's value directly.
    /// On success also returns the sender to wake after unlocking.
    pub(crate) fn recv_locked(
        &self,
        inner: &mut Inner<T>,
        me: Option<&Signal>,
    ) -> Result<(T, Woken<T>), TryRecvError> {
        if let Some(v) = inner.buf.pop_front() {
            let mut woken = None;
            if inner.buf.len() < self.cap {
                if let Some(w) = inner.sendq.claim_first(me) {
                    let sv = w.take_slot().expect("a parked sender holds its value");
                    inner.buf.push_back(sv);
                    w.finish();
                    woken = Some(w);
                }
            }
            return Ok((v, woken));
        }
        if let Some(w) = inner.sendq.claim_first(me) {
            let v = w.take_slot().expect("a parked sender holds its value");
            w.finish();
            return Ok((v, Some(w)));
        }
        if inner.closed {
            Err(TryRecvError::Closed)
        } else {
            Err(TryRecvError::Empty)
        }
    }

    /// Whether a send would complete now, not counting `me`'s own waiters.
    pub(crate) fn send_ready_locked(&self, inner: &mut Inner<T>, me: &Signal) -> bool {
        inner.closed || inner.recvq.has_live(me) || inner.buf.len() < self.cap
    }

    /// Whether a receive would complete now, not counting `me`'s own waiters.
    pub(crate) fn recv_ready_locked(&self, inner: &mut Inner<T>, me: &Signal) -> bool {
        !inner.buf.is_empty() || inner.closed || inner.sendq.has_live(me)
    }

    pub(crate) fn park_send_locked(&self, inner: &mut Inner<T>, w: Waiter<T>) -> Parked<T> {
        inner.sendq.push(Arc::new(w))
    }

    pub(crate) fn park_recv_locked(&self, inner: &mut Inner<T>, w: Waiter<T>) -> Parked<T> {
        inner.recvq.push(Arc::new(w))
    }

    /// Takes a parked sender off the channel: aborts it if still waiting and
    /// removes its entry. Returns the value if it was not taken (not claimed,
    /// or completed by `close`); `None` if a receiver took it.
    pub(crate) fn unpark_send(&self, p: Parked<T>) -> Option<T> {
        let v = {
            let mut inner = self.lock();
            // Under the lock: a completer on this channel has either finished
            // or not started; one on another channel is resolved by the CAS.
            let _ = p.waiter.signal().abort();
            inner.sendq.remove(p.id);
            p.waiter.take_slot()
        };
        drop(p);
        v
    }

    /// Takes a parked receiver off the channel. If it had been completed by a
    /// sender but never got to see the value, the value is re-handed to the
    /// next parked receiver or put back at the front of the buffer.
    pub(crate) fn unpark_recv(&self, p: Parked<T>) {
        let woken = {
            let mut inner = self.lock();
            let won = match p.waiter.signal().abort() {
                Ok(()) => false,
                Err(state) => is_done(state) && case_of(state) == p.waiter.case,
            };
            inner.recvq.remove(p.id);
            match p.waiter.take_slot() {
                Some(v) if won => self.put_back_locked(&mut inner, v),
                Some(_) => unreachable!("only the winning case is handed a value"),
                None => None,
            }
        };
        wake(woken);
        drop(p);
    }

    fn put_back_locked(&self, inner: &mut Inner<T>, v: T) -> Woken<T> {
        if let Some(w) = inner.recvq.claim_first(None) {
            w.put_slot(v);
            w.finish();
            return Some(w);
        }
        inner.buf.push_front(v);
        None
    }
}

// --------------------------------------------------------------------------
// Plain send and receive futures' engines
// --------------------------------------------------------------------------

/// One step of a send: completes now, or parks `value` and returns Pending.
pub(crate) fn poll_send<T>(
    chan: &Chan<T>,
    value: &mut Option<T>,
    parked: &mut Option<Parked<T>>,
    cx: &mut Context<'_>,
) -> Poll<Result<(), SendError<T>>> {
    if let Some(p) = parked {
        if p.waiter.signal().poll_done(cx).is_none() {
            return Poll::Pending;
        }
        let p = parked.take().expect("checked above");
        // DONE: a receiver took the value, or `close` left it for us.
        return Poll::Ready(match p.waiter.take_slot() {
            None => Ok(()),
            Some(v) => Err(SendError(v)),
        });
    }
    let v = value.take().expect("send future polled after completion");
    let mut inner = chan.lock();
    match chan.send_locked(&mut inner, v, None) {
        Ok(woken) => {
            drop(inner);
            wake(woken);
            Poll::Ready(Ok(()))
        }
        Err(TrySendError::Closed(v)) => {
            drop(inner);
            Poll::Ready(Err(SendError(v)))
        }
        Err(TrySendError::Full(v)) => {
            let w = Waiter::plain(cx.waker().clone(), Some(v));
            *parked = Some(chan.park_send_locked(&mut inner, w));
            Poll::Pending
        }
    }
}

/// One step of a receive: completes now, or parks and returns Pending.
pub(crate) fn poll_recv<T>(
    chan: &Chan<T>,
    parked: &mut Option<Parked<T>>,
    cx: &mut Context<'_>,
) -> Poll<Result<T, RecvError>> {
    if let Some(p) = parked {
        if p.waiter.signal().poll_done(cx).is_none() {
            return Poll::Pending;
        }
        let p = parked.take().expect("checked above");
        // DONE: a sender handed us a value, or `close` completed us empty.
        return Poll::Ready(p.waiter.take_slot().ok_or(RecvError));
    }
    let mut inner = chan.lock();
    match chan.recv_locked(&mut inner, None) {
        Ok((v, woken)) => {
            drop(inner);
            wake(woken);
            Poll::Ready(Ok(v))
        }
        Err(TryRecvError::Closed) => Poll::Ready(Err(RecvError)),
        Err(TryRecvError::Empty) => {
            let w = Waiter::plain(cx.waker().clone(), None);
            *parked = Some(chan.park_recv_locked(&mut inner, w));
            Poll::Pending
        }
    }
}
