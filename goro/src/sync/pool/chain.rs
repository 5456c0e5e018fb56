//! The shared half of a P's pool storage: a chain of single-producer rings
//! (Go's `poolDequeue` and `poolChain`, in `sync/poolqueue.go`).
//!
//! # Ring
//!
//! A fixed power-of-two ring of slots with one producer (the P's owner) and
//! many consumers. `head` (next slot to fill) and `tail` (oldest value) are
//! packed into one `u64` so that the owner's `pop_head` and a thief's
//! `pop_tail` racing for the last value are decided by one CAS. The owner
//! pushes at the head (`fetch_add` on the head half: thieves' CASes may change
//! the tail half at any time) and pops at the head (LIFO: the value it put
//! last is the warmest); thieves pop at the tail.
//!
//! Each slot carries a `full` flag. A thief claims a slot by advancing the
//! tail, *then* reads the value, then clears `full` with `Release`. The
//! owner, before writing a slot, checks `full` with `Acquire`: a set flag
//! means a thief is still reading it, and the ring counts as full. That is
//! what lets the owner reuse slots without waiting for slow thieves.
//!
//! # Chain
//!
//! When the head ring is full the owner links a ring twice its size (up to
//! [`MAX_RING`]) and pushes there; older rings are drained by the owner
//! (walking `prev` from the head) and by thieves (walking `next` from the
//! tail). A thief that finds the tail ring empty *after* reading its `next`
//! pointer knows the ring is empty for good (the owner never pushes to a ring
//! once it has a successor) and advances the chain's tail past it.
//!
//! Memory: Go lets the garbage collector free rings that fall off the tail.
//! Here a ring that falls off stays allocated until the whole chain is
//! dropped, which happens only after a grace period (see `pin.rs`), so no
//! reader can ever hold a dangling ring pointer and no per-ring reclamation
//! scheme is needed. A chain lives at most two pool cycles and its rings
//! double, so the retained rings are at most twice its largest ring.
//!
//! Values are stored inline (`T`, not `Box<T>`): a put allocates only when a
//! ring fills up.

use crate::loom::cell::UnsafeCell;
use crate::loom::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::mem::MaybeUninit;
use std::ptr;

/// Size of the first ring of a chain (Go: 8; loom: 2 so growth is reachable).
#[cfg(not(loom))]
pub(crate) const FIRST_RING: usize = 8;
#[cfg(loom)]
pub(crate) const FIRST_RING: usize = 2;

/// Largest ring; further rings keep this size. (Go: 2^30. Values are inline
/// here, so a smaller cap keeps one allocation reasonable.)
#[cfg(not(loom))]
pub(crate) const MAX_RING: usize = 1 << 16;
#[cfg(loom)]
pub(crate) const MAX_RING: usize = 4;

struct Slot<T> {
    /// Holds a value, or a thief has claimed it and is still reading it.
    full: AtomicBool,
    val: UnsafeCell<MaybeUninit<T>>,
}

fn unpack(ht: u64) -> (u32, u32) {
    ((ht >> 32) as u32, ht as u32)
}

fn pack(head: u32, tail: u32) -> u64 {
    (u64::from(head) << 32) | u64::from(tail)
}

/// A single-producer, multi-consumer ring (Go's `poolDequeue`).
pub(crate) struct Ring<T> {
    /// `head << 32 | tail`; free-running `u32` indices.
    head_tail: AtomicU64,
    slots: Box<[Slot<T>]>,
    /// Next (newer) ring of the chain, set once by the owner.
    next: AtomicPtr<Ring<T>>,
    /// Previous (older) ring, cleared by the thief that drops it off the tail.
    prev: AtomicPtr<Ring<T>>,
}

impl<T> Ring<T> {
    pub(crate) fn new(cap: usize) -> Ring<T> {
        assert!(
            cap.is_power_of_two() && cap <= 1 << 30,
            "ring size {cap} is not a power of two in 1..=2^30"
        );
        Ring {
            head_tail: AtomicU64::new(0),
            slots: (0..cap)
                .map(|_| Slot {
                    full: AtomicBool::new(false),
                    val: UnsafeCell::new(MaybeUninit::uninit()),
                })
                .collect(),
            next: AtomicPtr::new(ptr::null_mut()),
            prev: AtomicPtr::new(ptr::null_mut()),
        }
    }

    fn cap(&self) -> usize {
        self.slots.len()
    }

    fn slot(&self, i: u32) -> &Slot<T> {
        &self.slots[i as usize & (self.slots.len() - 1)]
    }

    /// Owner only. Adds `v` at the head; gives it back if the ring is full
    /// (or its next slot is still being read by a thief).
    ///
    /// # Safety
    /// Only one thread at a time may push or `pop_head` (the ring's owner).
    pub(crate) unsafe fn push_head(&self, v: T) -> Result<(), T> {
        // Acquire: pairs with the thieves' AcqRel CAS (not needed for the
        // slot, whose hand-back is the `full` flag, but keeps the count honest).
        let (head, tail) = unpack(self.head_tail.load(Ordering::Acquire));
        if head.wrapping_sub(tail) as usize >= self.cap() {
            return Err(v);
        }
        let slot = self.slot(head);
        // Acquire: pairs with the Release store of the thief that last read
        // this slot, so its read happens before our write.
        if slot.full.load(Ordering::Acquire) {
            return Err(v);
        }
        // SAFETY: the slot is outside [tail, head), so no consumer can claim
        // it, and `full` is clear, so the last thief to claim it is done
        // reading; we are the only producer.
        slot.val.with_mut(|p| unsafe { (*p).write(v) });
        // Relaxed: published by the Release fetch_add below.
        slot.full.store(true, Ordering::Relaxed);
        // Release: publishes the value to consumers that Acquire head_tail.
        self.head_tail.fetch_add(1 << 32, Ordering::Release);
        Ok(())
    }

    /// Owner only. Takes the newest value.
    ///
    /// # Safety
    /// As for [`Ring::push_head`].
    pub(crate) unsafe fn pop_head(&self) -> Option<T> {
        let mut ht = self.head_tail.load(Ordering::Acquire);
        loop {
            let (head, tail) = unpack(ht);
            if head == tail {
                return None;
            }
            let head = head.wrapping_sub(1);
            // AcqRel: decides the race for the last value against thieves.
            match self.head_tail.compare_exchange(
                ht,
                pack(head, tail),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    let slot = self.slot(head);
                    // SAFETY: the CAS removed index `head` from [tail, head),
                    // so no thief can claim it; we wrote it ourselves.
                    let v = slot.val.with_mut(|p| unsafe { (*p).assume_init_read() });
                    // Relaxed: only we (the producer) read this flag next.
                    slot.full.store(false, Ordering::Relaxed);
                    return Some(v);
                }
                Err(cur) => ht = cur,
            }
        }
    }

    /// Any thread. Takes the oldest value.
    pub(crate) fn pop_tail(&self) -> Option<T> {
        // Acquire: pairs with the owner's Release fetch_add, so the values
        // of [tail, head) are visible.
        let mut ht = self.head_tail.load(Ordering::Acquire);
        loop {
            let (head, tail) = unpack(ht);
            if head == tail {
                return None;
            }
            match self.head_tail.compare_exchange(
                ht,
                pack(head, tail.wrapping_add(1)),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    let slot = self.slot(tail);
                    // SAFETY: our CAS claimed index `tail`: nobody else can
                    // take it, and the owner will not overwrite it until we
                    // clear `full` below.
                    let v = slot.val.with_mut(|p| unsafe { (*p).assume_init_read() });
                    // Release: hands the slot back to the owner after our read.
                    slot.full.store(false, Ordering::Release);
                    return Some(v);
                }
                Err(cur) => ht = cur,
            }
        }
    }
}

// SAFETY: the ring owns values of type T (Send) and moves them between
// threads, never sharing `&T`; its slots are handed between producer and
// consumers by the head/tail CAS and the `full` flag (see the module docs).
unsafe impl<T: Send> Send for Ring<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for Ring<T> {}

impl<T> Drop for Ring<T> {
    fn drop(&mut self) {
        if !std::mem::needs_drop::<T>() {
            // Nothing to run per value: a ring of 65,536 plain values is
            // freed without visiting its slots.
            return;
        }
        let (head, mut i) = unpack(self.head_tail.load(Ordering::Relaxed));
        drain_unwinding(|| {
            if i == head {
                return false;
            }
            let slot = self.slot(i);
            i = i.wrapping_add(1);
            // SAFETY: we have exclusive access; [tail, head) holds initialized
            // values that nobody took, and `i` has moved past this one, so
            // it is dropped once even if its Drop panics.
            slot.val.with_mut(|p| unsafe { (*p).assume_init_drop() });
            true
        });
    }
}

/// Calls `next` until it returns false. If a call panics, the remaining
/// calls are still made while the panic unwinds, so one value whose `Drop`
/// panics does not leak the values stored after it: what the standard
/// library promises for the elements of a slice or a `Vec` (and, as there,
/// a second panic during that unwinding aborts). `next` must keep returning
/// false once it has.
pub(super) fn drain_unwinding(next: impl FnMut() -> bool) {
    struct Rest<F: FnMut() -> bool>(F);
    impl<F: FnMut() -> bool> Drop for Rest<F> {
        fn drop(&mut self) {
            while (self.0)() {}
        }
    }
    let mut rest = Rest(next);
    while (rest.0)() {}
}

/// The owner's private view of the chain.
struct Own<T> {
    /// The ring the owner pushes to (newest), or null before the first push.
    head: *mut Ring<T>,
    /// The first ring ever linked: every ring is reachable from it by `next`,
    /// which is how the chain frees them all.
    first: *mut Ring<T>,
}

/// A P's shared pool storage (Go's `poolChain`).
pub(crate) struct Chain<T> {
    own: UnsafeCell<Own<T>>,
    /// The oldest ring that may still hold values; thieves start here.
    tail: AtomicPtr<Ring<T>>,
}

// SAFETY: the chain owns its values (T: Send moves them between threads);
// `own` is touched only by the owner (contract of the unsafe methods) and by
// `drop` (exclusive); rings are shared through atomics with the protocol above.
unsafe impl<T: Send> Send for Chain<T> {}
// SAFETY: as above; shared access never hands out `&T`, only moved values.
unsafe impl<T: Send> Sync for Chain<T> {}

impl<T> Chain<T> {
    pub(crate) fn new() -> Chain<T> {
        Chain {
            own: UnsafeCell::new(Own {
                head: ptr::null_mut(),
                first: ptr::null_mut(),
            }),
            tail: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// Owner only. Adds `v` at the head, growing the chain if needed.
    ///
    /// # Safety
    /// Only one thread at a time may call `push_head` or `pop_head` (the
    /// chain's owner), and the chain must not be dropped meanwhile.
    #[cfg(test)]
    pub(crate) unsafe fn push_head(&self, v: T) {
        // SAFETY: forwarded contract.
        unsafe { self.push_head_then(v, || {}) }
    }

    /// [`Chain::push_head`], calling `started` first if this push links
    /// the chain's first ring (the chain may hold values from then on).
    ///
    /// # Safety
    /// As for [`Chain::push_head`].
    #[inline]
    pub(crate) unsafe fn push_head_then(&self, v: T, started: impl FnOnce()) {
        // SAFETY: `own` is the owner's (caller's contract).
        self.own.with_mut(|own| unsafe {
            let own = &mut *own;
            if own.head.is_null() {
                started();
                let r = Box::into_raw(Box::new(Ring::new(FIRST_RING)));
                own.head = r;
                own.first = r;
                // Release: publishes the new ring to thieves.
                self.tail.store(r, Ordering::Release);
            }
            // SAFETY (deref): rings live until the chain drops.
            let d = &*own.head;
            let v = match d.push_head(v) {
                Ok(()) => return,
                Err(v) => v,
            };
            let cap = (d.cap() * 2).min(MAX_RING);
            let d2 = Box::into_raw(Box::new(Ring::new(cap)));
            // Relaxed: published with the Release store of `next` below.
            (*d2).prev.store(own.head, Ordering::Relaxed);
            own.head = d2;
            // Release: thieves that see `next` see an initialized ring. From
            // here on we never push to `d` again, which is what makes an empty
            // `d` with a successor permanently empty (see `pop_tail`).
            d.next.store(d2, Ordering::Release);
            if (*d2).push_head(v).is_err() {
                unreachable!("a new ring has room");
            }
        })
    }

    /// Owner only. Takes the newest value of the newest non-empty ring.
    ///
    /// # Safety
    /// As for [`Chain::push_head`].
    pub(crate) unsafe fn pop_head(&self) -> Option<T> {
        // SAFETY: `own` is the owner's (caller's contract).
        let mut d = self.own.with(|own| unsafe { (*own).head });
        while !d.is_null() {
            // SAFETY: rings live until the chain drops; we are the producer.
            unsafe {
                if let Some(v) = (*d).pop_head() {
                    return Some(v);
                }
                // Acquire: the pointer came from us or was cleared by a thief;
                // either way the ring it names is still allocated.
                d = (*d).prev.load(Ordering::Acquire);
            }
        }
        None
    }

    /// Any thread. Takes the oldest value.
    pub(crate) fn pop_tail(&self) -> Option<T> {
        // Acquire: pairs with the owner's Release store of a new ring.
        let mut d = self.tail.load(Ordering::Acquire);
        if d.is_null() {
            return None;
        }
        loop {
            // SAFETY: every ring stays allocated until the chain drops, and
            // the chain outlives `&self`.
            let ring = unsafe { &*d };
            // Read `next` *before* popping: if the ring is empty and already
            // had a successor, the owner will never push to it again.
            let d2 = ring.next.load(Ordering::Acquire);
            if let Some(v) = ring.pop_tail() {
                return Some(v);
            }
            if d2.is_null() {
                return None;
            }
            // AcqRel: one thief unlinks the exhausted ring.
            if self
                .tail
                .compare_exchange(d, d2, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                // Stop the owner's `pop_head` walk at the new tail.
                // SAFETY: `d2` is a live ring of this chain.
                unsafe { (*d2).prev.store(ptr::null_mut(), Ordering::Release) };
            }
            d = d2;
        }
    }
}

impl<T> Drop for Chain<T> {
    fn drop(&mut self) {
        // SAFETY: exclusive access to `own`.
        let mut d = self.own.with(|own| unsafe { (*own).first });
        drain_unwinding(|| {
            if d.is_null() {
                return false;
            }
            // SAFETY: exclusive access; each ring was made by Box::into_raw
            // and is reachable exactly once from `first` through `next`.
            let ring = unsafe { Box::from_raw(d) };
            d = ring.next.load(Ordering::Relaxed);
            drop(ring);
            true
        });
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn ring_is_lifo_for_the_owner_and_fifo_for_thieves() {
        let r = Ring::new(4);
        // SAFETY: single-threaded test; we are the owner.
        unsafe {
            for i in 0..4 {
                assert!(r.push_head(i).is_ok());
            }
            assert_eq!(r.push_head(9), Err(9), "a full ring refuses");
            assert_eq!(r.pop_tail(), Some(0));
            assert_eq!(r.pop_head(), Some(3));
            assert!(r.push_head(4).is_ok(), "room after a pop wraps around");
            assert!(r.push_head(5).is_ok());
            assert_eq!(r.pop_tail(), Some(1));
            assert_eq!(r.pop_tail(), Some(2));
            assert_eq!(r.pop_head(), Some(5));
            assert_eq!(r.pop_head(), Some(4));
            assert_eq!(r.pop_head(), None);
            assert_eq!(r.pop_tail(), None);
        }
    }

    #[test]
    fn chain_grows_and_every_value_comes_out_once() {
        let c = Chain::new();
        // SAFETY: single-threaded test; we are the owner.
        unsafe {
            for i in 0..1000 {
                c.push_head(i);
            }
        }
        let mut got = Vec::new();
        for _ in 0..300 {
            got.push(c.pop_tail().unwrap());
        }
        assert_eq!(
            got,
            (0..300).collect::<Vec<_>>(),
            "thieves take oldest first"
        );
        // SAFETY: as above.
        while let Some(v) = unsafe { c.pop_head() } {
            got.push(v);
        }
        got.sort();
        assert_eq!(got, (0..1000).collect::<Vec<_>>());
    }

    #[test]
    fn dropping_a_chain_drops_its_values_once() {
        use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
        use std::sync::Arc;
        struct D(Arc<AtomicUsize>);
        impl Drop for D {
            fn drop(&mut self) {
                self.0.fetch_add(1, SeqCst);
            }
        }
        let n = Arc::new(AtomicUsize::new(0));
        let c = Chain::new();
        // SAFETY: single-threaded test; we are the owner.
        unsafe {
            for _ in 0..100 {
                c.push_head(D(n.clone()));
            }
        }
        for _ in 0..30 {
            drop(c.pop_tail());
        }
        // SAFETY: as above.
        drop(unsafe { c.pop_head() });
        assert_eq!(n.load(SeqCst), 31);
        drop(c);
        assert_eq!(n.load(SeqCst), 100);
    }
}
