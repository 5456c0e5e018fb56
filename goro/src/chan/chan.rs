//! The channel itself: Go's `hchan`, one lock over a ring buffer and two
//! queues of parked operations. This header is the protocol of the whole
//! channel; its parts live in `signal.rs` (the completion word),
//! `waiter.rs` (parked operations and their queues) and `lock.rs` (the
//! lock); `select.rs` and `try_select.rs` build `select!` on them.
//!
//! Everything a channel operation needs to decide lives behind one
//! [`Mutex`]: the buffer, the `closed` flag (a bit of the word that also
//! holds the capacity, `capacity.rs`, written only under the lock), the
//! queue of parked senders (`sendq`) and the queue of parked receivers
//! (`recvq`). An operation takes the lock, looks, acts, releases the lock,
//! and only then wakes the task it completed (Go's rule: never ready a
//! goroutine under the channel lock).
//! A contended lock backs off before it queues, as Go's runtime lock does
//! ([`lock`]), so two Ps on one channel do not fight over its cache line.
//!
//! # Waiters (Go's `sudog`)
//!
//! A parked operation is a [`Waiter`]: the slot that carries the value (the
//! sender's value while it waits, the value handed to a receiver), the index
//! of its `select` case, and a [`Signal`]. A plain `send`/`recv` owns its
//! signal; the waiters of one `select` share theirs, one waiter per case, each
//! in its own channel's queue. The signal is the one-shot "who completed me"
//! word that Go keeps in `g.selectDone`, plus the owner's waker:
//!
//! ```text
//! WAITING --claim(case)--> CLAIMED(case) --finish--> DONE(case)
//!    \--abort (owner: cancelled, or select retrying)--> ABORTED
//! ```
//!
//! (A plain waiter goes from `WAITING` to `DONE(0)` in one store: its state
//! changes only under its one channel's lock, so the claim is a load.)
//!
//! Whoever moves a signal out of `WAITING` owns the operation. A completer
//! (the counterpart send or recv, or `close`) dequeues the waiter and claims
//! it *under the lock of the channel the waiter is queued on*, moves the
//! value through the slot, takes the waker, stores `DONE` with `Release` and
//! wakes the owner after unlocking. The owner sees `DONE` with `Acquire` and
//! reads the slot. A waiter found in a queue with a signal that is no longer
//! `WAITING` is dead (its owner aborted, or its `select` completed on another
//! channel); whoever meets it takes it out of the queue, and the owner's
//! own clean-up tolerates finding it gone.
//!
//! A waiter is one heap block owned by its future (through [`Parked`]),
//! linked into its channel's queue while queued (`waiter.rs`). The owner
//! frees it only when no queue holds it and no completer will touch it
//! again: after taking it out under the lock (which also waits out a
//! completer that dequeued it a moment before), or after seeing its own
//! case `DONE` (a completer dequeues before claiming, and `DONE` is its
//! last access). A leaked future leaks its waiter, never frees it early.
//!
//! The slot and the waker are plain cells (`UnsafeCell`), not locks: the
//! protocol above already gives each access a single owner.
//!
//! | cell | written / taken by | when |
//! |---|---|---|
//! | slot | the owner | before the waiter is queued; under the queue's lock after an abort; after its `DONE` |
//! | slot | the completer | between its claim and its `DONE`, under the queue's lock |
//! | waker | the owner | before the signal is shared; for a plain operation also under the queue's lock while the state is `WAITING` |
//! | waker | the completer | between its claim and its `DONE` (it takes it and wakes after unlocking) |
//!
//! A plain waiter's state changes only under its one channel's lock (claims,
//! `close`, and the owner's abort all happen there), which is what lets the
//! owner swap its waker under that lock. A `select`'s signal is shared by
//! several channels, so a `select` whose waker changed aborts and registers
//! again instead (see `select.rs`).
//!
//! # Invariants (under the lock)
//!
//! - `recvq` holds a live waiter only while `buf` is empty: a send hands its
//!   value straight to a parked receiver and never through the buffer.
//! - `sendq` holds a live waiter only while `buf.len() >= cap`: a receive
//!   from a full buffer takes the head and moves the first parked sender's
//!   value into the tail (Go's `recv` on a full buffer), so FIFO order holds.
//! - Every queued entry points to a live waiter.
//! - Nothing is dropped under the lock: values and wakers given back travel
//!   out of the critical section first (a value's `Drop` may touch this very
//!   channel).
//!
//! # Memory, and values that panic
//!
//! The buffer is a `VecDeque` that grows with the backlog, so a huge
//! capacity costs nothing up front, and gives memory back when the backlog
//! falls to a quarter of what it holds ([`shrink_if_sparse`]). When the
//! channel goes, the values left in its buffer are dropped one by one under
//! `catch_unwind` ([`drop_values`]): a `Drop` that panics does not stop the
//! others, and a second panic cannot abort the process.
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
//! - A leaf mutex per slot and per waker, and an `Arc` per waiter shared by
//!   the queue and the owner: no `unsafe`, but five uncontended lock round
//!   trips and three reference-count updates per hand-off, about a third
//!   of a ring hop. The cells and the owned block
//!   need the `unsafe` reasoning above; loom checks every cell access
//!   (`goro/tests/loom_chan.rs`).
//! - The waiter inline in the future (tokio's intrusive lists): no
//!   allocation per park, but the futures are `Unpin` (public API), so they
//!   may move while parked.
//! - A `VecDeque` of entries sorted by id per queue: no links, but 64
//!   bytes more per parked task than the list through the waiters
//!   (`waiter.rs`).

use crate::sched::task::meta::{blocked_on, Reason};
use std::collections::VecDeque;
use std::task::{Context, Poll};

use super::buffer::{drop_values, shrink_if_sparse};
use super::capacity::CapClosed;
use super::lock::lock;
use super::signal::{Signal, WakerId};
use super::waiter::{wake, Claimed, Parked, WaitQueue, Waiter, Woken};
use super::{RecvError, SendError, TryRecvError, TrySendError};
use crate::loom::{AtomicU32, Mutex, MutexGuard};
use crate::sched::timer::TimerInner;

// --------------------------------------------------------------------------
// hchan
// --------------------------------------------------------------------------

/// What a channel's lock protects (with the closed flag in
/// [`Chan::cap_closed`]).
pub(crate) struct Inner<T> {
    buf: VecDeque<T>,
    sendq: WaitQueue<T>,
    recvq: WaitQueue<T>,
}

/// The shared channel (Go's `hchan`).
pub(crate) struct Chan<T> {
    inner: Mutex<Inner<T>>,
    /// The capacity and the closed flag (`capacity.rs`); the flag is
    /// written and read under `inner`'s lock.
    cap_closed: CapClosed,
    /// Live `Sender` handles; the last one to go closes the channel.
    pub(crate) senders: AtomicU32,
    /// Under loom, the channel's place in the lock order: the order of
    /// creation, the same in every execution of a model, where addresses
    /// are not (`Chan::lock_order`).
    #[cfg(loom)]
    seq: usize,
    /// The timer that feeds this channel (Go's `hchan.timer`): receivers
    /// run it when it is due and put it on a heap while they wait (see
    /// `sched/timer/mod.rs`). Called only with no channel lock held.
    timer: Option<std::sync::Arc<TimerInner>>,
}

impl<T> Chan<T> {
    pub(crate) fn new(cap: usize) -> Chan<T> {
        Chan::with_timer(cap, None)
    }

    /// # Panics
    ///
    /// If `cap` is above 2^31 - 2 and is not `usize::MAX` (`capacity.rs`).
    pub(crate) fn with_timer(cap: usize, timer: Option<std::sync::Arc<TimerInner>>) -> Chan<T> {
        Chan {
            inner: Mutex::new(Inner {
                buf: VecDeque::new(),
                sendq: WaitQueue::new(),
                recvq: WaitQueue::new(),
            }),
            cap_closed: CapClosed::new(cap),
            senders: AtomicU32::new(1),
            #[cfg(loom)]
            seq: {
                static NEXT: std::sync::atomic::AtomicUsize =
                    std::sync::atomic::AtomicUsize::new(1);
                NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            },
            timer,
        }
    }

    /// A receiver is about to look: a due timer sends first.
    #[inline]
    pub(crate) fn timer_run(&self) {
        if let Some(t) = &self.timer {
            t.maybe_run_chan();
        }
    }

    /// A receiver parked: its timer must be on a heap.
    #[inline]
    pub(crate) fn timer_block(&self) {
        if let Some(t) = &self.timer {
            if t.block_chan() {
                crate::sched::timer::check::push_timer(t);
            }
        }
    }

    /// A parked receiver stopped waiting.
    #[inline]
    pub(crate) fn timer_unblock(&self) {
        if let Some(t) = &self.timer {
            t.unblock_chan();
        }
    }

    /// The capacity; `usize::MAX` for an unbounded channel.
    #[inline]
    pub(crate) fn cap(&self) -> usize {
        self.cap_closed.cap()
    }

    /// Whether the channel is closed; `_inner` says the caller holds the
    /// lock.
    #[inline]
    fn closed(&self, _inner: &Inner<T>) -> bool {
        self.cap_closed.is_closed()
    }

    /// The order in which a `select` with `default` takes its channels'
    /// locks (`try_select.rs`; Go's `sellock`): by address, as Go does.
    /// Under loom, by creation instead: the allocator gives a model's
    /// channels other addresses in each execution, and a lock order that
    /// changes between executions makes loom replay a schedule that no
    /// longer fits (it then fails inside its own mutex: "expected to be
    /// able to acquire lock").
    #[inline]
    pub(crate) fn lock_order(&self) -> usize {
        #[cfg(loom)]
        let order = self.seq;
        #[cfg(not(loom))]
        let order = std::ptr::from_ref(self) as usize;
        order
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Inner<T>> {
        lock(&self.inner)
    }

    pub(crate) fn len(&self) -> usize {
        self.timer_run();
        self.lock().buf.len()
    }

    pub(crate) fn is_closed(&self) -> bool {
        let inner = self.lock();
        self.closed(&inner)
    }

    /// Go's `closechan`: marks the channel closed and completes every parked
    /// operation (receivers with nothing, senders keeping their value).
    /// `false` if it was already closed.
    pub(crate) fn close(&self) -> bool {
        let woken = {
            let mut inner = self.lock();
            if self.closed(&inner) {
                return false;
            }
            self.cap_closed.set_closed();
            let mut woken = Vec::new();
            // Claim and finish under the lock, so that an owner that locks
            // this channel afterwards always sees DONE. Dead waiters are
            // simply taken out: their owners free them.
            let inner = &mut *inner;
            for q in [&mut inner.recvq, &mut inner.sendq] {
                while let Some(w) = q.pop() {
                    // SAFETY: dequeued under the lock, so live until our
                    // DONE (or, dead, until its owner takes this lock).
                    if unsafe { w.as_ref() }.try_claim() {
                        woken.extend(Claimed { waiter: w }.finish());
                    }
                }
            }
            woken
        };
        for w in woken {
            w.wake();
        }
        true
    }

    /// Go's `chansend` without blocking: hand-off to a parked receiver, else
    /// the buffer. On success returns the receiver to wake after unlocking.
    pub(crate) fn send_locked(
        &self,
        inner: &mut Inner<T>,
        v: T,
        me: Option<&Signal>,
    ) -> Result<Woken, TrySendError<T>> {
        if self.closed(inner) {
            return Err(TrySendError::Closed(v));
        }
        if let Some(w) = inner.recvq.claim_first(me) {
            w.put(v);
            return Ok(w.finish());
        }
        if self.cap_closed.room_for(inner.buf.len()) {
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
    ) -> Result<(T, Woken), TryRecvError> {
        if let Some(v) = inner.buf.pop_front() {
            let mut woken = None;
            if self.cap_closed.room_for(inner.buf.len()) {
                if let Some(w) = inner.sendq.claim_first(me) {
                    inner.buf.push_back(w.take());
                    woken = w.finish();
                }
            }
            shrink_if_sparse(&mut inner.buf);
            return Ok((v, woken));
        }
        if let Some(w) = inner.sendq.claim_first(me) {
            let v = w.take();
            return Ok((v, w.finish()));
        }
        if self.closed(inner) {
            Err(TryRecvError::Closed)
        } else {
            Err(TryRecvError::Empty)
        }
    }

    /// Whether a send would complete now, not counting `me`'s own waiters.
    pub(crate) fn send_ready_locked(&self, inner: &mut Inner<T>, me: &Signal) -> bool {
        self.closed(inner) || inner.recvq.has_live(me) || self.cap_closed.room_for(inner.buf.len())
    }

    /// Whether a receive would complete now, not counting `me`'s own waiters.
    pub(crate) fn recv_ready_locked(&self, inner: &mut Inner<T>, me: &Signal) -> bool {
        !inner.buf.is_empty() || self.closed(inner) || inner.sendq.has_live(me)
    }

    /// Queues `w`, whose owner registered the waker `waker`.
    pub(crate) fn park_send_locked(
        &self,
        inner: &mut Inner<T>,
        w: Waiter<T>,
        waker: WakerId,
    ) -> Parked<T> {
        inner.sendq.push(w, waker)
    }

    /// Queues `w`, whose owner registered the waker `waker`.
    pub(crate) fn park_recv_locked(
        &self,
        inner: &mut Inner<T>,
        w: Waiter<T>,
        waker: WakerId,
    ) -> Parked<T> {
        inner.recvq.push(w, waker)
    }

    /// Takes a parked sender off the channel: aborts it if still waiting and
    /// removes its entry. Returns the value if it was not taken (not claimed,
    /// or completed by `close`); `None` if a receiver took it.
    pub(crate) fn unpark_send(&self, p: Parked<T>) -> Option<T> {
        let v = {
            let mut inner = self.lock();
            // Under the lock: a completer on this channel has either finished
            // or not started; one on another channel is resolved by the CAS.
            let _ = p.waiter().signal().abort();
            inner.sendq.remove(&p);
            // SAFETY: we hold the lock of the channel it was queued on.
            unsafe { p.waiter().take_slot() }
        };
        // SAFETY: its entry is gone (removed above, or dequeued by a completer
        // that finished under this lock before we took it), and a completer
        // on another channel could only claim a different waiter.
        unsafe { p.free() };
        v
    }

    /// Takes a parked receiver off the channel. If it had been completed by a
    /// sender but never got to see the value, the value is re-handed to the
    /// next parked receiver or put back at the front of the buffer.
    pub(crate) fn unpark_recv(&self, p: Parked<T>) {
        self.withdraw_recv(p, false);
    }

    /// [`Chan::unpark_recv`] for a receive that gives up but may keep what
    /// it was handed (a timed-out `recv_timeout`): a value that reached it
    /// is returned instead of going back to the channel.
    pub(crate) fn unpark_recv_keep(&self, p: Parked<T>) -> Option<T> {
        self.withdraw_recv(p, true)
    }

    fn withdraw_recv(&self, p: Parked<T>, keep: bool) -> Option<T> {
        let mut kept = None;
        let woken = {
            let mut inner = self.lock();
            // Claimed for this very waiter means DONE: its completer was on
            // this channel, and we hold the lock it finished under.
            let won = match p.waiter().signal().abort() {
                Ok(()) => false,
                Err(case) => case == Some(p.waiter().case),
            };
            inner.recvq.remove(&p);
            // SAFETY: we hold the lock of the channel it was queued on.
            match unsafe { p.waiter().take_slot() } {
                Some(v) if won && keep => {
                    kept = Some(v);
                    None
                }
                Some(v) if won => self.put_back_locked(&mut inner, v),
                Some(_) => unreachable!("only the winning case is handed a value"),
                None => None,
            }
        };
        wake(woken);
        // SAFETY: as in `unpark_send`.
        unsafe { p.free() };
        self.timer_unblock();
        kept
    }

    fn put_back_locked(&self, inner: &mut Inner<T>, v: T) -> Woken {
        if let Some(w) = inner.recvq.claim_first(None) {
            w.put(v);
            return w.finish();
        }
        inner.buf.push_front(v);
        None
    }

    /// A plain parked operation's poll: `true` once it is `DONE`. Otherwise
    /// makes sure the waker of `cx` is the one a completer will call.
    pub(crate) fn poll_parked(&self, p: &mut Parked<T>, cx: &Context<'_>) -> bool {
        let signal = p.waiter().signal();
        if signal.done_case().is_some() {
            return true;
        }
        let id = WakerId::of(cx.waker());
        if id == p.waker {
            return false;
        }
        // A different waker (the future moved to another task): swap it in
        // under the lock, where a plain operation's state cannot change.
        let old = {
            let _inner = self.lock();
            if signal.done_case().is_some() {
                return true;
            }
            // SAFETY: a plain waiter (only plain operations poll here), its
            // channel's lock held, and not DONE under it, so WAITING (only
            // `unpark_*`, which consumes the `Parked`, aborts).
            unsafe { signal.replace_waker(cx.waker().clone()) }
        };
        p.waker = id;
        drop(old);
        false
    }
}

impl<T> Drop for Chan<T> {
    fn drop(&mut self) {
        if let Some(t) = &self.timer {
            t.detach_chan();
        }
        let buf = std::mem::take(&mut self.lock().buf);
        drop_values(buf);
    }
}

impl Chan<std::time::Instant> {
    /// Empties the buffer (a timer's stop/reset: no stale value); whether
    /// there was anything. Takes the channel lock, nothing else.
    pub(crate) fn drain_buffer(&self) -> bool {
        let mut inner = self.lock();
        let any = !inner.buf.is_empty();
        inner.buf.clear();
        any
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
        if !chan.poll_parked(p, cx) {
            blocked_on(Reason::ChanSend, 0);
            return Poll::Pending;
        }
        let p = parked.take().expect("checked above");
        // DONE: a receiver took the value, or `close` left it for us.
        return Poll::Ready(match p.take_done() {
            None => Ok(()),
            Some(v) => Err(SendError(v)),
        });
    }
    // A safe point (`coop.rs`): past the task's budget, yield before sending.
    if crate::sched::task::coop::poll_proceed(cx).is_pending() {
        return Poll::Pending;
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
            *parked = Some(chan.park_send_locked(&mut inner, w, WakerId::of(cx.waker())));
            blocked_on(Reason::ChanSend, 0);
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
        if !chan.poll_parked(p, cx) {
            blocked_on(Reason::ChanRecv, 0);
            return Poll::Pending;
        }
        let p = parked.take().expect("checked above");
        chan.timer_unblock();
        // DONE: a sender handed us a value, or `close` completed us empty.
        return Poll::Ready(p.take_done().ok_or(RecvError));
    }
    // A safe point (`coop.rs`): past the task's budget, yield first.
    if crate::sched::task::coop::poll_proceed(cx).is_pending() {
        return Poll::Pending;
    }
    chan.timer_run();
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
            *parked = Some(chan.park_recv_locked(&mut inner, w, WakerId::of(cx.waker())));
            drop(inner);
            chan.timer_block();
            blocked_on(Reason::ChanRecv, 0);
            Poll::Pending
        }
    }
}
