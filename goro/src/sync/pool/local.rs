//! Per-P pool storage of one generation (Go's `poolLocal` array), and the
//! slot numbers that index it.
//!
//! # Slots, not P ids
//!
//! A pool is global but Ps belong to runtimes, and several runtimes may run at
//! once (every test binary does): P 0 of one runtime and P 0 of another are
//! two threads. So each P gets a process-wide *slot* the first time it uses a
//! pool ([`ProcSlot`]), from a free list that hands out the lowest free number
//! (dense slots keep the scans short). A slot goes back to the list when its
//! P is dropped, which is after every thread of its runtime has stopped;
//! whoever gets it next inherits whatever the old P left in the storage,
//! which is fine: pooled values are interchangeable.
//!
//! # Storage of one generation
//!
//! A [`Gen`] is a fixed directory of [`DIR`] chunk pointers, each chunk
//! [`CHUNK`] cache-padded [`Local`]s, allocated on the first put by a slot
//! of that chunk (one CAS; losing it frees the spare). Capacity is
//! [`MAX_SLOTS`] = 4096 Ps alive at once in the process, the same as
//! `MAX_PROCS` for one runtime; a P beyond that gets no slot and uses the
//! pool's mutex-protected fallback list (correct, slower). The directory is
//! never resized, so a reader that found a `Local` can keep using it for the
//! whole pinned section without any lock.
//!
//! Rejected: a per-pool `Arc<[Local]>` resized under a lock as Go's
//! `pinSlow` does. Go drops the old array's values on resize ("lose the old
//! one"); we would have to move values out of slots that other threads are
//! using at that moment, or keep two arrays alive and search both. A
//! never-resized directory (2 KiB per generation) avoids the question.
//!
//! A `Local` holds a *private* value (the owner's fast path: a plain load and
//! store, no atomics) and a [`Chain`] that the owner pushes and pops at the
//! head and other Ps steal from at the tail.

use super::chain::Chain;
use super::pin::PinRecord;
use crate::loom::{AtomicPtr, AtomicUsize, Ordering};
use crate::sync::cell::UnsafeCell;
use crossbeam_utils::CachePadded;
use std::ptr;

/// Locals per chunk.
#[cfg(not(loom))]
pub(crate) const CHUNK: usize = 16;
#[cfg(loom)]
pub(crate) const CHUNK: usize = 2;

/// Chunks per generation.
#[cfg(not(loom))]
pub(crate) const DIR: usize = 256;
#[cfg(loom)]
pub(crate) const DIR: usize = 2;

/// Most slots (Ps using pools at once, across all runtimes).
pub(crate) const MAX_SLOTS: usize = CHUNK * DIR;

/// One slot's storage in one generation (Go's `poolLocal`).
pub(crate) struct Local<T> {
    /// Touched only by the slot's owner while pinned, and by `drop`.
    private: UnsafeCell<Option<T>>,
    shared: Chain<T>,
}

impl<T> Local<T> {
    fn new() -> Local<T> {
        Local {
            private: UnsafeCell::new(None),
            shared: Chain::new(),
        }
    }

    /// Stores `v` in the private slot, or at the head of the chain.
    ///
    /// # Safety
    /// The caller owns this slot (holds its P, or is a loom model's owner
    /// thread) and no other thread owns it meanwhile.
    #[inline]
    pub(crate) unsafe fn put(&self, v: T) {
        // SAFETY: the private slot is the owner's (caller's contract).
        let spill = self.private.with_mut(|p| unsafe {
            if (*p).is_none() {
                *p = Some(v);
                None
            } else {
                Some(v)
            }
        });
        if let Some(v) = spill {
            // SAFETY: the owner is the chain's only producer.
            unsafe { self.shared.push_head(v) };
        }
    }

    /// Takes the private value.
    ///
    /// # Safety
    /// As for [`Local::put`].
    #[inline]
    pub(crate) unsafe fn take_private(&self) -> Option<T> {
        // SAFETY: the private slot is the owner's (caller's contract).
        self.private.with_mut(|p| unsafe { (*p).take() })
    }

    /// Takes the newest shared value.
    ///
    /// # Safety
    /// As for [`Local::put`].
    pub(crate) unsafe fn pop_head(&self) -> Option<T> {
        // SAFETY: the owner is the chain's only head consumer.
        unsafe { self.shared.pop_head() }
    }

    /// Any thread: takes the oldest shared value.
    pub(crate) fn steal(&self) -> Option<T> {
        self.shared.pop_tail()
    }
}

impl<T> Drop for Local<T> {
    fn drop(&mut self) {
        // Through the cell, so that under loom a drop racing the owner's
        // access (a broken grace period) is reported.
        // SAFETY: exclusive access.
        drop(self.private.with_mut(|p| unsafe { (*p).take() }));
    }
}

// SAFETY: values move between threads (T: Send) and are never shared; the
// private slot is accessed by one owner at a time (see `Local::put`).
unsafe impl<T: Send> Send for Local<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for Local<T> {}

/// One generation of per-slot storage for one pool.
pub(crate) struct Gen<T> {
    /// Chunk `i` holds slots `i*CHUNK .. (i+1)*CHUNK`; each entry is the
    /// first element of a leaked `Box<[CachePadded<Local<T>>]>` of `CHUNK`.
    dir: Box<[AtomicPtr<CachePadded<Local<T>>>]>,
    /// One past the highest chunk allocated: scans stop here.
    hi: AtomicUsize,
}

impl<T> Gen<T> {
    pub(crate) fn new() -> Gen<T> {
        Gen {
            dir: (0..DIR).map(|_| AtomicPtr::new(ptr::null_mut())).collect(),
            hi: AtomicUsize::new(0),
        }
    }

    /// Slot `slot`'s storage, if its chunk exists.
    #[inline]
    pub(crate) fn local(&self, slot: usize) -> Option<&Local<T>> {
        // Acquire: pairs with the AcqRel CAS that installed the chunk.
        let c = self.dir.get(slot / CHUNK)?.load(Ordering::Acquire);
        if c.is_null() {
            return None;
        }
        // SAFETY: a non-null entry points at CHUNK Locals that live as long
        // as the generation.
        Some(unsafe { &*c.add(slot % CHUNK) })
    }

    /// Slot `slot`'s storage, allocating its chunk if needed. `slot` must be
    /// below `MAX_SLOTS`.
    #[inline]
    pub(crate) fn local_or_alloc(&self, slot: usize) -> &Local<T> {
        match self.local(slot) {
            Some(l) => l,
            None => self.alloc_chunk(slot),
        }
    }

    #[cold]
    fn alloc_chunk(&self, slot: usize) -> &Local<T> {
        let i = slot / CHUNK;
        let chunk: Box<[CachePadded<Local<T>>]> =
            (0..CHUNK).map(|_| CachePadded::new(Local::new())).collect();
        let fresh = Box::into_raw(chunk) as *mut CachePadded<Local<T>>;
        // AcqRel: Release publishes the chunk; Acquire sees a winner's chunk.
        if let Err(_winner) = self.dir[i].compare_exchange(
            ptr::null_mut(),
            fresh,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            // SAFETY: `fresh` came from Box::into_raw of a CHUNK-long slice
            // above and was never published.
            drop(unsafe { Box::from_raw(ptr::slice_from_raw_parts_mut(fresh, CHUNK)) });
        }
        // Release: a scanner that sees the new bound sees the chunk (it also
        // loads the entry with Acquire; this only bounds the scan).
        self.hi.fetch_max(i + 1, Ordering::Release);
        self.local(slot).expect("chunk installed above")
    }

    /// Steals one value from the chains of the slots, visiting them from
    /// `start` and wrapping around, skipping `skip` (a slot whose owner has
    /// just popped its own head).
    pub(crate) fn steal(&self, start: usize, skip: Option<usize>) -> Option<T> {
        // Acquire: pairs with the Release fetch_max in `local_or_alloc`.
        let n = self.hi.load(Ordering::Acquire) * CHUNK;
        for k in 0..n {
            let s = (start + k) % n;
            if Some(s) == skip {
                continue;
            }
            if let Some(v) = self.local(s).and_then(Local::steal) {
                return Some(v);
            }
        }
        None
    }
}

impl<T> Drop for Gen<T> {
    fn drop(&mut self) {
        for e in self.dir.iter() {
            let c = e.load(Ordering::Relaxed);
            if !c.is_null() {
                // SAFETY: exclusive access; a non-null entry is a leaked
                // CHUNK-long boxed slice (see `local_or_alloc`).
                drop(unsafe { Box::from_raw(ptr::slice_from_raw_parts_mut(c, CHUNK)) });
            }
        }
    }
}

// SAFETY: a generation owns its Locals, which are Send + Sync for T: Send.
unsafe impl<T: Send> Send for Gen<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for Gen<T> {}

/// A P's pool identity: its storage slot and its pin record, allocated the
/// first time the P uses a pool and returned when the P is dropped.
///
/// This is the scheduler hook in `Processor` (one field). It allocates
/// nothing until used, so runtimes that never touch a pool (and the
/// scheduler's loom models) pay nothing.
#[derive(Default)]
pub(crate) struct ProcSlot {
    ids: std::sync::OnceLock<(Option<usize>, &'static PinRecord)>,
}

impl ProcSlot {
    pub(crate) fn new() -> ProcSlot {
        ProcSlot::default()
    }

    /// The slot (None beyond `MAX_SLOTS`) and the pin record.
    #[inline(always)]
    pub(crate) fn get(&self) -> (Option<usize>, &'static PinRecord) {
        *self
            .ids
            .get_or_init(|| (slot_ids::alloc(), super::pin::alloc_record()))
    }
}

impl Drop for ProcSlot {
    fn drop(&mut self) {
        if let Some((slot, rec)) = self.ids.take() {
            if let Some(s) = slot {
                slot_ids::free(s);
            }
            super::pin::free_record(rec);
        }
    }
}

/// The process-wide allocator of slot numbers.
mod slot_ids {
    use super::MAX_SLOTS;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    use std::sync::Mutex;

    struct Ids {
        next: usize,
        free: BinaryHeap<Reverse<usize>>,
    }

    static IDS: Mutex<Ids> = Mutex::new(Ids {
        next: 0,
        free: BinaryHeap::new(),
    });

    /// The lowest free slot, or None when all `MAX_SLOTS` are taken.
    pub(super) fn alloc() -> Option<usize> {
        let mut ids = IDS.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(Reverse(s)) = ids.free.pop() {
            return Some(s);
        }
        if ids.next < MAX_SLOTS {
            ids.next += 1;
            return Some(ids.next - 1);
        }
        None
    }

    pub(super) fn free(s: usize) {
        IDS.lock()
            .unwrap_or_else(|e| e.into_inner())
            .free
            .push(Reverse(s));
    }
}
