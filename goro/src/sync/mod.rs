//! Synchronisation primitives for tasks: Go's `sync` package, async.
//!
//! | Go | goro | notes |
//! |---|---|---|
//! | `sync.Mutex` | [`Mutex`] | Go's state word: barging in normal mode, direct handoff in starvation mode |
//! | `sync.RWMutex` | [`RwLock`] | writer-preferring: a queued writer blocks new readers |
//! | `sync.WaitGroup` | [`WaitGroup`] | a cloneable handle; a negative counter panics as in Go |
//! | `golang.org/x/sync/semaphore.Weighted` | [`Semaphore`] | FIFO: a large waiter at the head is not overtaken |
//! | `sync.OnceValue` | [`OnceCell`] | async initializer; another waiter takes over if it is cancelled |
//! | `sync.Pool` | [`Pool`] | per-P caches with a victim cache (seed 003); never blocks, so no async form |
//! | `golang.org/x/sync/errgroup.Group` | [`ErrGroup`] | first error cancels the group's context; a member's panic is resumed by `wait` |
//! | `golang.org/x/sync/singleflight.Group` | [`SingleFlight`] | the shared call runs in a task of its own: a dropped caller does not fail the others |
//!
//! Every primitive is a future-returning method for tasks plus a `*_blocking`
//! twin for plain threads (the twin parks the calling thread, so inside a
//! worker thread use the async form).
//!
//! # How waiting works
//!
//! Each primitive keeps its waiters in a `WaitList`: a FIFO of slots under
//! one internal lock (`crate::loom::Mutex`), with stable keys so that a
//! cancelled future removes its own slot in O(1). A waiter's slot belongs to
//! its future: whoever wakes a waiter only unlinks the slot and records why
//! it was woken (a handoff, permits assigned, ...); the future frees the slot
//! when it completes or is dropped, and a dropped future that had already been
//! given something (a lock, permits) passes it on. Wakers are plain
//! [`std::task::Waker`]s, always called after the internal lock is released.
//!
//! All atomics and locks come from `crate::loom`, and the protected values sit
//! in the `cell` facade, so under `cfg(loom)` the model checker sees every
//! access to the data a guard hands out (`goro/tests/loom_mutex.rs`).
//!
//! Rejected: one `Arc`-allocated node per waiter linked into an intrusive list
//! (tokio's shape). It saves the slab but needs `unsafe` pointer juggling on
//! every path; a slab of slots reuses its memory, needs no `unsafe`, and a
//! wait that never blocks allocates nothing either way.

mod errgroup;
mod mutex;
mod once_cell;
pub mod pool;
mod rwlock;
mod semaphore;
mod singleflight;
mod waitgroup;

pub use errgroup::ErrGroup;
pub use mutex::{LockFuture, Mutex, MutexGuard};
pub use once_cell::OnceCell;
pub use pool::{pool_cycle, Pool};
pub use rwlock::{ReadFuture, RwLock, RwLockReadGuard, RwLockWriteGuard, WriteFuture};
pub use semaphore::{AcquireFuture, Semaphore, SemaphorePermit};
pub use singleflight::{SingleFlight, SingleFlightError};
pub use waitgroup::{WaitFuture, WaitGroup};

use std::task::Waker;

/// "No slot" in the links of a [`WaitList`].
const NIL: usize = usize::MAX;

/// A FIFO of waiters with stable keys: O(1) push at either end, pop, and
/// removal of any entry by key.
///
/// An entry stays allocated after it is unlinked (popped by a waker) until
/// its owner calls [`WaitList::remove`], so a woken future can still read
/// what it was given. Keys are reused only after removal.
#[derive(Debug)]
pub(crate) struct WaitList<T> {
    slots: Vec<Slot<T>>,
    /// First and last linked entries, or `NIL`.
    head: usize,
    tail: usize,
    /// Chain of vacant slots through `Slot::Vacant::next_free`.
    free: usize,
    /// Linked entries.
    linked: usize,
    /// Occupied entries, linked or not.
    occupied: usize,
}

#[derive(Debug)]
enum Slot<T> {
    Vacant {
        next_free: usize,
    },
    Occupied {
        value: T,
        prev: usize,
        next: usize,
        linked: bool,
    },
}

/// Slabs bigger than this are released once every waiter has left, so a
/// burst of waiters does not pin its memory for the primitive's lifetime.
const SHRINK_ABOVE: usize = 64;

impl<T> WaitList<T> {
    pub(crate) const fn new() -> WaitList<T> {
        WaitList {
            slots: Vec::new(),
            head: NIL,
            tail: NIL,
            free: NIL,
            linked: 0,
            occupied: 0,
        }
    }

    /// Whether no entry is linked.
    pub(crate) fn is_empty(&self) -> bool {
        self.linked == 0
    }

    /// The key of the first linked entry.
    pub(crate) fn front(&self) -> Option<usize> {
        (self.head != NIL).then_some(self.head)
    }

    fn alloc(&mut self, value: T) -> usize {
        let slot = Slot::Occupied {
            value,
            prev: NIL,
            next: NIL,
            linked: true,
        };
        self.occupied += 1;
        self.linked += 1;
        if self.free == NIL {
            self.slots.push(slot);
            self.slots.len() - 1
        } else {
            let key = self.free;
            self.free = match self.slots[key] {
                Slot::Vacant { next_free } => next_free,
                Slot::Occupied { .. } => unreachable!("free chain points at an occupied slot"),
            };
            self.slots[key] = slot;
            key
        }
    }

    fn links_mut(&mut self, key: usize) -> (&mut usize, &mut usize, &mut bool) {
        match &mut self.slots[key] {
            Slot::Occupied {
                prev, next, linked, ..
            } => (prev, next, linked),
            Slot::Vacant { .. } => panic!("WaitList: key {key} is vacant"),
        }
    }

    /// Links `value` at the tail; returns its key.
    pub(crate) fn push_back(&mut self, value: T) -> usize {
        let key = self.alloc(value);
        let old_tail = self.tail;
        *self.links_mut(key).0 = old_tail;
        if old_tail == NIL {
            self.head = key;
        } else {
            *self.links_mut(old_tail).1 = key;
        }
        self.tail = key;
        key
    }

    /// Links `value` at the head; returns its key.
    pub(crate) fn push_front(&mut self, value: T) -> usize {
        let key = self.alloc(value);
        let old_head = self.head;
        *self.links_mut(key).1 = old_head;
        if old_head == NIL {
            self.tail = key;
        } else {
            *self.links_mut(old_head).0 = key;
        }
        self.head = key;
        key
    }

    /// Unlinks the entry (it stays allocated). Returns whether it was linked.
    pub(crate) fn unlink(&mut self, key: usize) -> bool {
        let (prev, next, linked) = self.links_mut(key);
        if !*linked {
            return false;
        }
        let (p, n) = (*prev, *next);
        *prev = NIL;
        *next = NIL;
        *linked = false;
        if p == NIL {
            self.head = n;
        } else {
            *self.links_mut(p).1 = n;
        }
        if n == NIL {
            self.tail = p;
        } else {
            *self.links_mut(n).0 = p;
        }
        self.linked -= 1;
        true
    }

    /// Unlinks the head entry and returns its key (it stays allocated).
    pub(crate) fn pop_front(&mut self) -> Option<usize> {
        let key = self.front()?;
        self.unlink(key);
        Some(key)
    }

    /// Whether the entry is still linked (not yet popped).
    pub(crate) fn is_linked(&self, key: usize) -> bool {
        matches!(self.slots[key], Slot::Occupied { linked: true, .. })
    }

    pub(crate) fn get_mut(&mut self, key: usize) -> &mut T {
        match &mut self.slots[key] {
            Slot::Occupied { value, .. } => value,
            Slot::Vacant { .. } => panic!("WaitList: key {key} is vacant"),
        }
    }

    /// Unlinks the entry if needed, frees its slot and returns its value.
    pub(crate) fn remove(&mut self, key: usize) -> T {
        self.unlink(key);
        let slot = std::mem::replace(
            &mut self.slots[key],
            Slot::Vacant {
                next_free: self.free,
            },
        );
        self.free = key;
        self.occupied -= 1;
        if self.occupied == 0 && self.slots.len() > SHRINK_ABOVE {
            self.slots = Vec::new();
            self.free = NIL;
        }
        match slot {
            Slot::Occupied { value, .. } => value,
            Slot::Vacant { .. } => panic!("WaitList: key {key} is vacant"),
        }
    }

    /// Unlinks every entry, front to back, calling `f` on each.
    pub(crate) fn drain(&mut self, mut f: impl FnMut(&mut T)) {
        while let Some(key) = self.pop_front() {
            f(self.get_mut(key));
        }
    }
}

/// Stores `cx`'s waker in `slot` unless it already holds one that wakes the
/// same task.
pub(crate) fn update_waker(slot: &mut Option<Waker>, waker: &Waker) {
    match slot {
        Some(w) if w.will_wake(waker) => {}
        _ => *slot = Some(waker.clone()),
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::WaitList;

    fn order(list: &mut WaitList<u32>) -> Vec<u32> {
        let mut out = Vec::new();
        let mut keys = Vec::new();
        while let Some(k) = list.pop_front() {
            out.push(*list.get_mut(k));
            keys.push(k);
        }
        for k in keys {
            list.remove(k);
        }
        out
    }

    #[test]
    fn wait_list_keeps_fifo_order_with_front_pushes_and_removals() {
        let mut l = WaitList::new();
        let a = l.push_back(1);
        let _b = l.push_back(2);
        let c = l.push_back(3);
        let _d = l.push_front(0);
        assert_eq!(l.remove(a), 1);
        assert_eq!(l.remove(c), 3);
        let _e = l.push_back(4);
        assert_eq!(order(&mut l), vec![0, 2, 4]);
        assert!(l.is_empty());
    }

    #[test]
    fn popped_entry_stays_readable_until_removed() {
        let mut l = WaitList::new();
        let a = l.push_back(7);
        assert_eq!(l.pop_front(), Some(a));
        assert!(!l.is_linked(a));
        assert!(!l.unlink(a), "a popped entry must not unlink twice");
        *l.get_mut(a) += 1;
        assert_eq!(l.remove(a), 8);
    }

    #[test]
    fn slab_reuses_keys_and_shrinks_after_a_burst() {
        let mut l = WaitList::new();
        let keys: Vec<_> = (0..200).map(|i| l.push_back(i)).collect();
        for k in keys {
            l.remove(k);
        }
        assert_eq!(
            l.slots.len(),
            0,
            "a slab above the shrink limit is released when empty"
        );
        let a = l.push_back(1);
        l.remove(a);
        let b = l.push_back(2);
        assert_eq!(a, b, "a freed key is reused");
    }
}
