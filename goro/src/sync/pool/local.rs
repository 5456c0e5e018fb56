//! Per-P pool storage of one generation (Go's `poolLocal` array), and the
//! slot numbers that index it.
//!
//! # Slots, not P ids
//!
//! A pool is global but Ps belong to runtimes, and several runtimes may run at
//! once (every test binary does): P 0 of one runtime and P 0 of another are
//! two threads. So each P gets a process-wide *slot* the first time it uses a
//! pool ([`new_ids`]), from a free list that hands out the lowest free number
//! (dense slots keep the scans short). A slot goes back to the list when its
//! P is dropped, which is after every thread of its runtime has stopped;
//! whoever gets it next inherits whatever the old P left in the storage,
//! which is fine: pooled values are interchangeable.
//!
//! # Storage of one generation
//!
//! A [`Gen`] is a fixed directory of [`DIR`] chunks, each [`CHUNK`]
//! cache-padded [`Local`]s. Chunk 0 (slots 0..16, the ones nearly every
//! process uses, since slots are handed out lowest first) is inline in the
//! `Gen`, so the fast path goes pool → generation → slot: two dependent
//! loads fewer than through a boxed directory and a chunk pointer. A pair
//! of `put` and `get` is bound by that chain's latency, so the two loads
//! show in a tight put/get loop (BENCH_RESULTS.md, "Design readings quoted
//! from module docs").
//! The other chunks are allocated on the first put by a slot of that chunk
//! (one CAS; losing it frees the spare). Capacity is
//! [`MAX_SLOTS`] = 4096 Ps alive at once in the process, the same as
//! `MAX_PROCS` for one runtime; a P beyond that gets no slot and uses the
//! pool's mutex-protected fallback list (correct, slower). The directory is
//! never resized, so a reader that found a `Local` can keep using it for the
//! whole pinned section without any lock. A generation is about 4 KiB
//! (2 KiB of inline slots, 2 KiB of directory), allocated by the first put
//! after a cycle.
//!
//! Rejected: a per-pool `Arc<[Local]>` resized under a lock as Go's
//! `pinSlow` does. Go drops the old array's values on resize ("lose the old
//! one"); we would have to move values out of slots that other threads are
//! using at that moment, or keep two arrays alive and search both. A
//! never-resized directory avoids the question.
//!
//! A `Local` holds a *private* value (the owner's fast path: a plain load and
//! store, no atomics) and a [`Chain`] that the owner pushes and pops at the
//! head and other Ps steal from at the tail.

use super::chain::{drain_unwinding, Chain};
use super::pin::PinRecord;
use crate::loom::cell::UnsafeCell;
use crate::loom::{AtomicPtr, AtomicUsize, Ordering};
use crate::sched::processor::pool_hooks::PoolIds;
use crossbeam_utils::CachePadded;
use std::ptr;
use std::ptr::NonNull;

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

    /// Stores `v` in the private slot, or at the head of the chain; calls
    /// `started` first if the chain gets its first value in this
    /// generation (see [`Gen::put`]).
    ///
    /// # Safety
    /// The caller owns this slot (holds its P, or is a loom model's owner
    /// thread) and no other thread owns it meanwhile.
    #[inline]
    pub(crate) unsafe fn put(&self, v: T, started: impl FnOnce()) {
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
            unsafe { self.shared.push_head_then(v, started) };
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
    /// Slots `0..CHUNK`, inline: the slots every process uses (they are
    /// handed out lowest first), one dependent load closer to the fast path.
    first: [CachePadded<Local<T>>; CHUNK],
    /// Entry `i >= 1` holds slots `i*CHUNK .. (i+1)*CHUNK`: the first
    /// element of a leaked `Box<[CachePadded<Local<T>>]>` of `CHUNK`, or
    /// null until a slot of that chunk puts. Entry 0 is unused (`first`).
    dir: [AtomicPtr<CachePadded<Local<T>>>; DIR],
    /// One past the highest slot whose chain has held a value in this
    /// generation: steals (which look only at chains) stop here, so a miss
    /// at procs 1 scans no slot instead of a whole chunk.
    hi: AtomicUsize,
}

impl<T> Gen<T> {
    pub(crate) fn new() -> Gen<T> {
        Gen {
            first: std::array::from_fn(|_| CachePadded::new(Local::new())),
            dir: std::array::from_fn(|_| AtomicPtr::new(ptr::null_mut())),
            hi: AtomicUsize::new(0),
        }
    }

    /// Slot `slot`'s storage, if its chunk exists.
    #[inline]
    pub(crate) fn local(&self, slot: usize) -> Option<&Local<T>> {
        if slot < CHUNK {
            return Some(&self.first[slot]);
        }
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
        debug_assert!(i >= 1, "chunk 0 is inline");
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
        self.local(slot).expect("chunk installed above")
    }

    /// Puts `v` into slot `slot` (allocating its chunk if needed) and
    /// widens the steal bound when the slot's chain gets its first value.
    ///
    /// # Safety
    /// As for [`Local::put`]; `slot` is below `MAX_SLOTS`.
    #[inline]
    pub(crate) unsafe fn put(&self, slot: usize, v: T) {
        // SAFETY: forwarded contract.
        unsafe { self.local_or_alloc(slot).put(v, || self.widen(slot)) };
    }

    #[cold]
    fn widen(&self, slot: usize) {
        // Relaxed: a bound, not a publication. A thief with a stale bound
        // misses this chain's values (a pool miss, allowed); they stay in
        // the chain, where the owner and later thieves find them, or are
        // dropped with the generation.
        self.hi.fetch_max(slot + 1, Ordering::Relaxed);
    }

    /// Steals one value from the chains of the slots, visiting them from
    /// `start` and wrapping around, skipping `skip` (a slot whose owner has
    /// just popped its own head).
    pub(crate) fn steal(&self, start: usize, skip: Option<usize>) -> Option<T> {
        // Relaxed: see `widen`.
        let n = self.hi.load(Ordering::Relaxed);
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
        // `first` drops itself (after this, even if a value panicked here).
        let mut chunks = self.dir.iter().skip(1);
        drain_unwinding(|| {
            let Some(e) = chunks.next() else {
                return false;
            };
            let c = e.load(Ordering::Relaxed);
            if !c.is_null() {
                // SAFETY: exclusive access; a non-null entry is a leaked
                // CHUNK-long boxed slice (see `local_or_alloc`), visited once.
                drop(unsafe { Box::from_raw(ptr::slice_from_raw_parts_mut(c, CHUNK)) });
            }
            true
        });
    }
}

// SAFETY: a generation owns its Locals, which are Send + Sync for T: Send.
unsafe impl<T: Send> Send for Gen<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for Gen<T> {}

/// A P's pool identity, kept with the P by the scheduler
/// (`sched/processor/pool_hooks.rs`): a storage slot (`None` beyond `MAX_SLOTS`)
/// and a pin record, allocated on the P's first pool use.
pub(crate) fn new_ids() -> PoolIds {
    PoolIds {
        slot: slot_ids::alloc(),
        record: NonNull::from(super::pin::alloc_record()).cast(),
    }
}

/// Gives back the identity of a P that is dropped.
pub(crate) fn free_ids(ids: PoolIds) {
    if let Some(s) = ids.slot {
        slot_ids::free(s);
    }
    super::pin::free_record(record_of(ids));
}

/// The pin record in a P's ids.
#[inline(always)]
pub(crate) fn record_of(ids: PoolIds) -> &'static PinRecord {
    // SAFETY: every `PoolIds` comes from `new_ids`, whose record is a
    // `&'static PinRecord`; the scheduler only stores it.
    unsafe { ids.record.cast::<PinRecord>().as_ref() }
}

/// The process-wide allocator of slot numbers.
mod slot_ids {
    use super::MAX_SLOTS;
    use crate::loom::Unpoison;
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
        let mut ids = IDS.lock().unpoison();
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
        IDS.lock().unpoison().free.push(Reverse(s));
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    use std::sync::Arc;

    struct D(usize, Arc<AtomicUsize>);
    impl Drop for D {
        fn drop(&mut self) {
            self.1.fetch_add(1, SeqCst);
        }
    }

    /// Slots in the inline chunk and in allocated chunks: private values
    /// stay with their owner, chain values are stolen (only from slots
    /// below the steal bound, which covers every chain that holds values),
    /// and dropping the generation drops what is left, once each.
    #[test]
    fn slots_inline_and_in_chunks_steal_and_drop() {
        let drops = Arc::new(AtomicUsize::new(0));
        let g = Gen::new();
        assert_eq!(g.steal(0, None).map(|d: D| d.0), None, "empty");
        for (i, slot) in [0, CHUNK + 1, 3 * CHUNK + 2].into_iter().enumerate() {
            // SAFETY: single-threaded test; we own every slot.
            unsafe {
                g.put(slot, D(10 * i, drops.clone())); // private
                g.put(slot, D(10 * i + 1, drops.clone())); // chain
            }
        }
        assert_eq!(g.hi.load(SeqCst), 3 * CHUNK + 3, "steal bound");
        let mut stolen: Vec<usize> = std::iter::from_fn(|| g.steal(0, None))
            .map(|d| d.0)
            .collect();
        stolen.sort();
        assert_eq!(stolen, vec![1, 11, 21], "only chain values are stolen");
        assert_eq!(drops.load(SeqCst), 3);
        // SAFETY: as above.
        let own = unsafe { g.local(CHUNK + 1).unwrap().take_private() };
        assert_eq!(own.map(|d| d.0), Some(10));
        assert!(g.local(2 * CHUNK).is_none(), "chunk 2 was never allocated");
        drop(g);
        assert_eq!(drops.load(SeqCst), 6, "the two private values left");
    }
}
