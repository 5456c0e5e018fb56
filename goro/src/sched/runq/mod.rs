//! The per-P local run queue: a fixed ring of task pointers plus `runnext`.
//!
//! This is Go's `p.runq` / `p.runnext` (`runqput`, `runqget`, `runqgrab`,
//! `runqsteal` in `proc.go`).
//!
//! Shape and invariants:
//!
//! * One producer, many consumers. Only the thread that holds the P pushes
//!   (`put`, `put_batch`, and `steal_into`, which fills the thief's *own*
//!   ring); the owner and any thief consume by advancing `head` with a CAS.
//!   `tail` is written by the owner only and published with `Release`.
//! * Slots are `AtomicPtr`s. A thief copies the pointers of `[head, head+n)`
//!   *before* its CAS claims them; if the owner had meanwhile reused one of
//!   those slots, `head` must have moved past it, so the CAS fails and the copy
//!   is discarded. Atomic slots make that speculative read a plain (relaxed)
//!   load instead of a data race; on x86 it costs nothing.
//! * `head` and `tail` are free-running `u32`s; `tail - head` is the length
//!   (wrapping arithmetic) and never exceeds the capacity.
//! * `runnext` holds at most one task that should run next (seed 004). The
//!   owner swaps it in; a thief may take it only on its last steal pass and,
//!   if the owner is running, only after a short pause, so that a pair of tasks
//!   that wake each other keeps running on one P instead of thrashing between
//!   Ps. A task taken from `runnext` inherits the current time slice.
//! * A full ring moves its older half plus the new task to the global queue in
//!   one batch (`put_slow`), so a burst of spawns costs one lock, not 128.
//!
//! # Who may call what: two types
//!
//! The one-producer rule is held by the types, as tokio's `queue::Local`
//! and `Steal` hold it:
//!
//! * [`RunQueue`] is the shared view, reachable by anyone through
//!   `sched.ps[i].runq`: its reads (`len`, `is_empty`, `has_runnext`,
//!   `runnext_id`) and the consumer-side takes ([`RunQueue::steal_into`],
//!   whose `grab` claims by CAS, and [`RunQueue::steal_all`] for a queue
//!   whose owner is gone or stuck). It has no way to push: a thief that
//!   tried would not compile.
//! * [`Local`] is the owner handle: `put`, `put_batch`, `get`,
//!   `take_runnext` and `drain` take `&mut self`. It is made from a held P
//!   (`HeldP::local`, `idle.rs`), which exists once per P, or, for the P
//!   in the thread's context, by `Local::new`, which is `unsafe` with the
//!   contract below; `context.rs` ("Holding a P") says how the scheduler
//!   keeps it.
//!
//! A `Local` is a capability, not a borrow of the ring's memory (every field
//! is atomic, and thieves read it meanwhile), so what the types must rule
//! out is two *pushes* that overlap. On other threads the held P rules it
//! out (only its holder makes a `Local`). On the holder's own thread every
//! owner operation is leaf code: atomics, and for an overflow one `Vec`
//! allocation; none polls, wakes or drops a task, so none can start another
//! owner operation before it ends. The one exception is `steal_into`'s
//! `pause_runnext` callback, which runs in the middle of a steal into `dst`:
//! `dst` is borrowed `&mut` for the whole steal, and the scheduler moves
//! its held P out of the thread's context for the steal's duration
//! (`steal.rs`), so the callback has no way to reach `dst`'s queue.
//!
//! The split is in the types only: both handles work on one memory layout
//! with the same atomic accesses. `steal_all`, the owner's `drain` done by
//! a non-owner, reads `tail` with `Acquire` as `grab` does (the owner's
//! `get` may read its own `tail` `Relaxed`; a non-owner may not).
//!
//! Ownership of tasks: a pointer in the ring or in `runnext` is an owned
//! `Runnable` turned into a raw pointer. Exactly one party turns it
//! back: the one whose CAS removed it from the queue.
//!
//! Rejected: a Chase-Lev deque (LIFO for the owner hurts fairness and Go's
//! FIFO + `runnext` gets the locality win without it) and a lock per queue
//! (a steal would block the owner's fast path).

pub(crate) mod global;
pub(crate) mod steal;

use crate::loom::{AtomicPtr, AtomicU32, Ordering};
use crate::sched::task::Runnable;
use std::marker::PhantomData;
use std::ptr;

/// Ring capacity. Go uses 256; loom models use 4 so that overflow is reachable.
#[cfg(not(loom))]
pub(crate) const RING_SIZE: usize = 256;
#[cfg(loom)]
pub(crate) const RING_SIZE: usize = 4;

const MASK: u32 = RING_SIZE as u32 - 1;

/// A P's local run queue, as everyone sees it: reads and consumer-side
/// takes only (module docs). The owner's side is [`Local`].
pub(crate) struct RunQueue {
    /// Next slot to consume. Advanced by CAS by the owner and thieves.
    head: AtomicU32,
    /// Next slot to fill. Written only by the owner.
    tail: AtomicU32,
    buf: Box<[AtomicPtr<()>]>,
    /// The task to run next, or null.
    runnext: AtomicPtr<()>,
}

/// The owner's handle on a [`RunQueue`]: the only way to push. Not `Clone`,
/// not `Send`; made by `HeldP::local` or, with the contract below,
/// [`Local::new`].
pub(crate) struct Local<'a> {
    q: &'a RunQueue,
    /// Stays on the thread that made it (the holder's).
    _not_send: PhantomData<*const ()>,
}

/// Where `Local::put` left a task.
pub(crate) enum Put {
    /// Into an empty `runnext`: it runs when the current poll returns, so no
    /// other thread needs waking.
    Runnext,
    /// Into the ring (or `runnext`, displacing its occupant to the ring).
    Ring,
    /// The ring was full: the older half plus the new task, oldest first,
    /// must move to the global queue in one batch.
    Overflow(Vec<Runnable>),
}

impl RunQueue {
    pub(crate) fn new() -> RunQueue {
        RunQueue {
            head: AtomicU32::new(0),
            tail: AtomicU32::new(0),
            buf: (0..RING_SIZE)
                .map(|_| AtomicPtr::new(ptr::null_mut()))
                .collect(),
            runnext: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// Number of tasks in the ring, not counting `runnext`. Racy when called
    /// by a non-owner; used only for heuristics and stats.
    pub(crate) fn len(&self) -> usize {
        let h = self.head.load(Ordering::Acquire);
        let t = self.tail.load(Ordering::Acquire);
        t.wrapping_sub(h).min(RING_SIZE as u32) as usize
    }

    /// True if neither the ring nor `runnext` holds a task. Racy by nature:
    /// "empty" can be stale by the time the caller acts on it, which the
    /// callers' publish-fence-check protocol accounts for.
    pub(crate) fn is_empty(&self) -> bool {
        // Go's runqempty: read head, tail, runnext, then re-read tail so that a
        // task moving from runnext to the ring between our reads is not missed.
        loop {
            let h = self.head.load(Ordering::Acquire);
            let t = self.tail.load(Ordering::Acquire);
            let next = self.runnext.load(Ordering::Acquire);
            if t == self.tail.load(Ordering::Acquire) {
                return h == t && next.is_null();
            }
        }
    }

    pub(crate) fn has_runnext(&self) -> bool {
        !self.runnext.load(Ordering::Acquire).is_null()
    }

    /// Which task `runnext` holds, as an address to compare (0: none);
    /// never turned back into a task.
    pub(crate) fn runnext_id(&self) -> usize {
        self.runnext.load(Ordering::Acquire) as usize
    }

    /// Owner side (through [`Local::put`]). Puts `task` on the queue: into
    /// `runnext` if `next`, bumping the previous occupant to the tail; else
    /// at the tail. On overflow returns the batch that must go to the
    /// global queue.
    #[inline]
    fn put(&self, task: Runnable, next: bool) -> Put {
        let mut task = task.into_raw().as_ptr();
        if next {
            // Release publishes the task's state to a thief that takes it
            // from runnext; Acquire pairs with the thief's/owner's swap-out.
            // SeqCst: the publish half of the hand-off's publish-check
            // (idle.rs, "Hand-off"); on x86 the same `xchg` as AcqRel.
            let old = self.runnext.swap(task, Ordering::SeqCst);
            if old.is_null() {
                return Put::Runnext;
            }
            task = old;
        }
        match self.put_tail(task) {
            None => Put::Ring,
            Some(batch) => Put::Overflow(batch),
        }
    }

    /// Owner side. Puts at the tail; returns the overflow batch if full.
    fn put_tail(&self, task: *mut ()) -> Option<Vec<Runnable>> {
        loop {
            // Acquire: pairs with the Release CAS of consumers, so the slot we
            // are about to overwrite has been read by whoever consumed it.
            let h = self.head.load(Ordering::Acquire);
            // Relaxed: only this thread writes tail.
            let t = self.tail.load(Ordering::Relaxed);
            if t.wrapping_sub(h) < RING_SIZE as u32 {
                self.buf[(t & MASK) as usize].store(task, Ordering::Relaxed);
                // Release: publishes the slot write to consumers that Acquire tail.
                self.tail.store(t.wrapping_add(1), Ordering::Release);
                return None;
            }
            if let Some(batch) = self.put_slow(task, h, t) {
                return Some(batch);
            }
            // A consumer raced us; there is room now.
        }
    }

    /// Owner side, ring full: claim the older half with one CAS and return
    /// it with `task` appended. `None` if a consumer moved `head` first.
    fn put_slow(&self, task: *mut (), h: u32, t: u32) -> Option<Vec<Runnable>> {
        let n = t.wrapping_sub(h) / 2;
        debug_assert_eq!(
            n as usize,
            RING_SIZE / 2,
            "put_slow on a ring that is not full"
        );
        let mut batch: Vec<*mut ()> = Vec::with_capacity(n as usize + 1);
        for i in 0..n {
            batch.push(self.buf[(h.wrapping_add(i) & MASK) as usize].load(Ordering::Relaxed));
        }
        // Release: pairs with the owner's Acquire of head before reusing slots.
        if self
            .head
            .compare_exchange(h, h.wrapping_add(n), Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            return None;
        }
        batch.push(task);
        // SAFETY: our CAS removed exactly these pointers from the ring, and each
        // came from `Runnable::into_raw` in `put`; nobody else can reclaim them.
        Some(
            batch
                .into_iter()
                .map(|p| unsafe { Runnable::from_raw(nn(p)) })
                .collect(),
        )
    }

    /// Owner side. Pushes a batch (oldest first) taken from the global
    /// queue, which must fit: the caller takes at most the free space.
    fn put_batch(&self, tasks: Vec<Runnable>) {
        // Relaxed: only this thread writes tail.
        let mut t = self.tail.load(Ordering::Relaxed);
        for task in tasks {
            debug_assert!(t.wrapping_sub(self.head.load(Ordering::Acquire)) < RING_SIZE as u32);
            self.buf[(t & MASK) as usize].store(task.into_raw().as_ptr(), Ordering::Relaxed);
            t = t.wrapping_add(1);
        }
        // Release: publishes all the slot writes at once.
        self.tail.store(t, Ordering::Release);
    }

    /// Owner side. Takes the next task: `runnext` first (the bool is
    /// `true`: it inherits the time slice), else the head of the ring.
    /// With `skip_runnext`, the ring comes first (used to bound slice
    /// inheritance).
    #[inline]
    fn get(&self, skip_runnext: bool) -> Option<(Runnable, bool)> {
        if !skip_runnext {
            if let Some(task) = self.take_runnext() {
                return Some((task, true));
            }
        }
        loop {
            // Acquire: pairs with other consumers' Release CAS.
            let h = self.head.load(Ordering::Acquire);
            // Relaxed: only this thread writes tail.
            let t = self.tail.load(Ordering::Relaxed);
            if t == h {
                break;
            }
            let task = self.buf[(h & MASK) as usize].load(Ordering::Relaxed);
            // Release: tells the owner's put that the slot has been read.
            if self
                .head
                .compare_exchange(h, h.wrapping_add(1), Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                // SAFETY: the CAS made us the unique consumer of this slot.
                return Some((unsafe { Runnable::from_raw(nn(task)) }, false));
            }
        }
        if skip_runnext {
            return self.take_runnext().map(|t| (t, true));
        }
        None
    }

    /// Takes `runnext` if set: the owner's take, and `steal_all`'s. (A
    /// thief's steal takes it by its own CAS in `grab`.)
    fn take_runnext(&self) -> Option<Runnable> {
        let mut next = self.runnext.load(Ordering::Acquire);
        while !next.is_null() {
            // Acquire: pairs with the Release half of the swap in `put`.
            match self.runnext.compare_exchange_weak(
                next,
                ptr::null_mut(),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                // SAFETY: our CAS removed the pointer; `put` made it from into_raw.
                Ok(_) => return Some(unsafe { Runnable::from_raw(nn(next)) }),
                Err(cur) => next = cur,
            }
        }
        None
    }

    /// Owner side. Removes every task (the holder retiring its P).
    fn drain(&self) -> Vec<Runnable> {
        let mut out = Vec::new();
        if let Some(t) = self.take_runnext() {
            out.push(t);
        }
        while let Some((t, _)) = self.get(true) {
            out.push(t);
        }
        out
    }

    /// Thief side, Go's `runqsteal`: moves half of `self`'s tasks (the
    /// victim's) into `dst`, the thief's own ring, which must have room, and
    /// returns one of them to run. `runnext` is taken only when
    /// `steal_runnext`, after `pause_runnext` returns `true` (it decides
    /// whether and how long to wait for the victim's owner to run it
    /// itself). `pause_runnext` runs in the middle of the steal: it must
    /// not reach `dst`'s queue (module docs; `dst` is borrowed meanwhile).
    pub(crate) fn steal_into(
        &self,
        dst: &mut Local<'_>,
        steal_runnext: bool,
        pause_runnext: impl FnOnce(&RunQueue) -> bool,
    ) -> Option<(Runnable, usize)> {
        let dst = dst.q;
        // Relaxed: we are the owner of dst.tail.
        let t = dst.tail.load(Ordering::Relaxed);
        let n = self.grab(dst, t, steal_runnext, pause_runnext);
        if n == 0 {
            return None;
        }
        let n = n - 1;
        let last = dst.buf[(t.wrapping_add(n) & MASK) as usize].load(Ordering::Relaxed);
        if n > 0 {
            debug_assert!(
                t.wrapping_sub(dst.head.load(Ordering::Acquire))
                    .wrapping_add(n)
                    < RING_SIZE as u32,
                "steal_into overflowed the thief's ring"
            );
            // Release: publishes the copied slots.
            dst.tail.store(t.wrapping_add(n), Ordering::Release);
        }
        // SAFETY: `grab` claimed the pointers it copied into our slots by CAS on
        // the victim's head (or runnext); we own them and we are handing out the
        // last one, which we do not publish through our tail.
        Some((unsafe { Runnable::from_raw(nn(last)) }, n as usize + 1))
    }

    /// Go's `runqgrab`: claims half of `self`'s ring, copying the pointers
    /// into `dst`'s slots starting at `dst_tail` (`dst` is the caller's own
    /// queue, reached through its `Local`). Returns how many.
    fn grab(
        &self,
        dst: &RunQueue,
        dst_tail: u32,
        steal_runnext: bool,
        pause_runnext: impl FnOnce(&RunQueue) -> bool,
    ) -> u32 {
        let mut pause = Some(pause_runnext);
        loop {
            // Acquire on both: pairs with the consumers' CAS and the owner's
            // Release of tail, so the slots in [h, t) are visible.
            let h = self.head.load(Ordering::Acquire);
            let t = self.tail.load(Ordering::Acquire);
            let len = t.wrapping_sub(h);
            let n = len - len / 2;
            if n == 0 {
                if !steal_runnext {
                    return 0;
                }
                let next = self.runnext.load(Ordering::Acquire);
                if next.is_null() {
                    return 0;
                }
                // Reached once: every way out of here returns.
                if let Some(p) = pause.take() {
                    if !p(self) {
                        return 0;
                    }
                }
                // Only the task we paused for (Go's `runnext.cas(next, 0)`
                // after its usleep): if the owner ran it meanwhile, the
                // slot is empty or holds the next task of a pipeline that
                // the owner keeps running itself, and taking that one
                // would be the thrash the pause exists to prevent.
                if self
                    .runnext
                    .compare_exchange(next, ptr::null_mut(), Ordering::AcqRel, Ordering::Relaxed)
                    .is_err()
                {
                    return 0;
                }
                dst.buf[(dst_tail & MASK) as usize].store(next, Ordering::Relaxed);
                return 1;
            }
            if n > RING_SIZE as u32 / 2 {
                // Read an inconsistent head/tail pair (head moved between the
                // loads); retry.
                continue;
            }
            for i in 0..n {
                let task = self.buf[(h.wrapping_add(i) & MASK) as usize].load(Ordering::Relaxed);
                dst.buf[(dst_tail.wrapping_add(i) & MASK) as usize].store(task, Ordering::Relaxed);
            }
            // AcqRel: Release tells the owner the slots were read; a failure
            // means someone else consumed first and our copies are void.
            if self
                .head
                .compare_exchange(h, h.wrapping_add(n), Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                return n;
            }
        }
    }

    /// Consumer side: removes every task from a queue whose owner is gone
    /// (shutdown, a P retired with nobody holding it) or may be stuck in a
    /// poll (the monitor's sweep of a removed P still held). Each task is
    /// claimed by CAS, as a thief claims it; `tail` is read with `Acquire`
    /// (the owner may push meanwhile), which is all that sets it apart from
    /// the owner's `drain`.
    pub(crate) fn steal_all(&self) -> Vec<Runnable> {
        // The owner's `drain` in order: `runnext`, the ring, then `runnext`
        // again whenever the ring is found empty.
        let mut out = Vec::new();
        if let Some(t) = self.take_runnext() {
            out.push(t);
        }
        loop {
            // Acquire on both: pairs with the consumers' CAS and the owner's
            // Release of tail, so the slot at `h` is visible.
            let h = self.head.load(Ordering::Acquire);
            let t = self.tail.load(Ordering::Acquire);
            if t == h {
                match self.take_runnext() {
                    Some(t) => {
                        out.push(t);
                        continue;
                    }
                    None => return out,
                }
            }
            let task = self.buf[(h & MASK) as usize].load(Ordering::Relaxed);
            if self
                .head
                .compare_exchange(h, h.wrapping_add(1), Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                // SAFETY: the CAS made us the unique consumer of this slot.
                out.push(unsafe { Runnable::from_raw(nn(task)) });
            }
        }
    }
}

impl<'a> Local<'a> {
    /// The owner's handle on `q`.
    ///
    /// # Safety
    ///
    /// The caller is `q`'s only producer (it holds the P whose queue this is:
    /// the `HeldP` in its thread's context, read just before) from now until
    /// the handle's last use, and no other owner operation on `q` begins while
    /// one of this handle's is running (module docs: owner operations are
    /// leaf code, except for `steal_into`'s callback). In practice: create
    /// it right before the operations, and run nothing in between that
    /// polls, wakes or drops a task, runs a timer, or gives the P away.
    #[inline(always)]
    pub(crate) unsafe fn new(q: &'a RunQueue) -> Local<'a> {
        Local {
            q,
            _not_send: PhantomData,
        }
    }

    /// Puts `task` on the queue: into `runnext` if `next`, bumping the
    /// previous occupant to the tail; else at the tail. On overflow returns
    /// the batch that must go to the global queue.
    #[inline]
    pub(crate) fn put(&mut self, task: Runnable, next: bool) -> Put {
        self.q.put(task, next)
    }

    /// Pushes a batch (oldest first) taken from the global queue, which
    /// must fit: the caller takes at most [`Local::free`].
    pub(crate) fn put_batch(&mut self, tasks: Vec<Runnable>) {
        self.q.put_batch(tasks)
    }

    /// Free slots in the ring (exact lower bound: only we push).
    pub(crate) fn free(&self) -> usize {
        RING_SIZE - self.q.len()
    }

    /// Takes the next task: `runnext` first (the bool is `true`: it
    /// inherits the time slice), else the head of the ring. With
    /// `skip_runnext`, the ring comes first (used to bound slice
    /// inheritance).
    #[inline]
    pub(crate) fn get(&mut self, skip_runnext: bool) -> Option<(Runnable, bool)> {
        self.q.get(skip_runnext)
    }

    /// Takes `runnext` if set (the scheduler's owner takes it through
    /// `get`; the tests play the owner with it).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn take_runnext(&mut self) -> Option<Runnable> {
        self.q.take_runnext()
    }

    /// Removes every task (the holder of a P that is being retired).
    pub(crate) fn drain(&mut self) -> Vec<Runnable> {
        self.q.drain()
    }
}

impl Drop for RunQueue {
    fn drop(&mut self) {
        // Dropping a Runnable cancels its task and drops the future.
        // `&mut self`: nobody else can reach the queue.
        drop(self.drain());
    }
}

fn nn(p: *mut ()) -> std::ptr::NonNull<()> {
    std::ptr::NonNull::new(p).expect("run queue slot held a null task pointer")
}

#[cfg(all(test, not(loom)))]
mod tests;
