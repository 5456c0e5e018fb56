//! Task memory kept for the next spawn (Go's `gfget` and `gfput`).
//!
//! Go never frees a dead goroutine's `g`: it goes on its P's free list
//! (spilling half to a global list when the P holds 64) and the next `go`
//! statement takes it back. goro does the same with a task's allocation.
//! A spawn and an exit are a few hundred nanoseconds apart and usually on
//! one thread, and a program that wakes ten thousand parked tasks at once
//! (an errgroup's cancel) frees ten thousand allocations in a row; through
//! glibc each of those frees merges with its neighbours and, once the
//! merged chunk passes 64 KiB, sweeps the fast bins (`malloc_consolidate`):
//! a quarter of that cancel's time went there.
//!
//! Allocations come in size classes ([`CLASSES`]): a task whose layout fits
//! one is allocated with exactly that class's layout, cached or not, so a
//! block freed on any thread, into any cache or to the allocator, is freed
//! with the layout it was allocated with. A bigger or more aligned task is
//! a plain allocation, freed at once.
//!
//! Each thread keeps up to [`KEPT`] blocks per class (an M's cache, where
//! Go's is a P's: the thread that runs a P is the only one that touches it,
//! and a thread-local needs no P to reach). A full cache moves half to the
//! process's spill (one lock per [`BATCH`] blocks), and an empty one takes
//! a batch back. The spill holds at most [`SPILL_BYTES`] per class; past
//! that, blocks go back to the allocator. So the memory a program keeps
//! for nothing is bounded: a thread exiting gives its blocks to the spill
//! (or the allocator), and the spill's bound caps the rest.
//!
//! Under loom the cache is off: model threads share one OS thread's
//! thread-locals.

use std::alloc::Layout;
use std::ptr::NonNull;

/// The classes' sizes, smallest first: a step of 16 bytes up to 248, 32
/// up to 504, 64 up to 1016, so a task (136 bytes at least: a 96-byte
/// header and its future) wastes at most an eighth of its block; the small
/// classes below 136 serve channel waiters (`chan/waiter.rs`). Each is 8
/// below a multiple of 16 because glibc adds an 8-byte header to a request
/// and rounds the chunk up to 16: such a request fills its chunk exactly,
/// so a block costs the heap no more than an allocation of its own size.
pub(crate) const CLASSES: [usize; 31] = {
    let mut c = [0; 31];
    let mut i = 0;
    while i < 7 {
        c[i] = 24 + 16 * i; // 24 ..= 120
        i += 1;
    }
    i = 0;
    while i < 8 {
        c[i + 7] = 136 + 16 * i; // 136 ..= 248
        c[i + 15] = 280 + 32 * i; // 280 ..= 504
        c[i + 23] = 568 + 64 * i; // 568 ..= 1016
        i += 1;
    }
    c
};

/// The alignment of every class: what glibc's `malloc` gives anyway.
const ALIGN: usize = 16;

/// Blocks a thread keeps per class.
#[cfg_attr(loom, allow(dead_code))]
const KEPT: usize = 64;

/// Blocks moved between a thread and the spill at once.
#[cfg_attr(loom, allow(dead_code))]
const BATCH: usize = KEPT / 2;

/// The spill's bound per class, in bytes.
#[cfg_attr(loom, allow(dead_code))]
const SPILL_BYTES: usize = 8 << 20;

/// The class that holds `layout`, if any.
#[inline]
pub(crate) const fn class_of(layout: Layout) -> Option<usize> {
    if layout.align() > ALIGN || layout.size() == 0 {
        return None;
    }
    let mut c = 0;
    while c < CLASSES.len() {
        if layout.size() <= CLASSES[c] {
            return Some(c);
        }
        c += 1;
    }
    None
}

/// The layout a block of class `c` is allocated with.
const fn class_layout(c: usize) -> Layout {
    match Layout::from_size_align(CLASSES[c], ALIGN) {
        Ok(l) => l,
        Err(_) => panic!("a valid class layout"),
    }
}

/// Memory for a `T`: a kept block of its class, else a new allocation.
#[inline]
pub(crate) fn alloc<T>() -> NonNull<T> {
    let p = match const { class_of(Layout::new::<T>()) } {
        Some(c) => cache::take(c).unwrap_or_else(|| fresh(class_layout(c))),
        None => fresh(Layout::new::<T>()),
    };
    p.cast()
}

/// Gives back memory from [`alloc`].
///
/// # Safety
///
/// `p` came from `alloc::<T>()`, holds nothing that needs dropping, and is
/// not used again.
#[inline]
pub(crate) unsafe fn free<T>(p: NonNull<T>) {
    match const { class_of(Layout::new::<T>()) } {
        // SAFETY: the caller's contract; `alloc` used this class's layout.
        Some(c) => unsafe { cache::put(c, p.cast()) },
        // SAFETY: `alloc` used `T`'s layout itself.
        None => unsafe { std::alloc::dealloc(p.as_ptr().cast(), Layout::new::<T>()) },
    }
}

#[cold]
fn fresh(layout: Layout) -> NonNull<u8> {
    // SAFETY: `class_of` and the task's own layout are never zero-sized.
    let p = unsafe { std::alloc::alloc(layout) };
    NonNull::new(p).unwrap_or_else(|| std::alloc::handle_alloc_error(layout))
}

#[cfg(loom)]
mod cache {
    use std::ptr::NonNull;

    pub(super) fn take(_c: usize) -> Option<NonNull<u8>> {
        None
    }

    /// # Safety
    ///
    /// As [`super::free`]'s.
    pub(super) unsafe fn put(c: usize, p: NonNull<u8>) {
        // SAFETY: allocated with this class's layout.
        unsafe { std::alloc::dealloc(p.as_ptr(), super::class_layout(c)) };
    }
}

#[cfg(not(loom))]
mod cache {
    use super::{class_layout, BATCH, CLASSES, KEPT, SPILL_BYTES};
    use crate::loom::Unpoison;
    use std::cell::UnsafeCell;
    use std::ptr::NonNull;
    use std::sync::Mutex;

    /// A free block, as the lists hold it.
    struct Block(NonNull<u8>);

    // SAFETY: a free block is plain memory owned by whichever list holds
    // it; moving it between threads moves that ownership.
    unsafe impl Send for Block {}

    /// One thread's blocks, per class.
    struct Local([Vec<Block>; CLASSES.len()]);

    impl Drop for Local {
        fn drop(&mut self) {
            for (c, blocks) in self.0.iter_mut().enumerate() {
                while !blocks.is_empty() {
                    let n = blocks.len().min(BATCH);
                    spill(c, blocks.split_off(blocks.len() - n));
                }
            }
        }
    }

    thread_local! {
        static LOCAL: UnsafeCell<Local> = const {
            UnsafeCell::new(Local([const { Vec::new() }; CLASSES.len()]))
        };
    }

    /// The process's spill: batches of blocks, per class.
    static SPILL: [Mutex<Vec<Vec<Block>>>; CLASSES.len()] =
        [const { Mutex::new(Vec::new()) }; CLASSES.len()];

    /// Batches the spill may hold per class.
    const fn spill_batches(c: usize) -> usize {
        SPILL_BYTES / (CLASSES[c] * BATCH)
    }

    #[inline]
    pub(super) fn take(c: usize) -> Option<NonNull<u8>> {
        LOCAL
            .try_with(|l| {
                // SAFETY: this thread's list, touched only here and in
                // `put`, neither of which calls out while it holds it
                // (`refill` takes only the spill's lock).
                let blocks = unsafe { &mut (*l.get()).0[c] };
                if blocks.is_empty() {
                    refill(c, blocks);
                }
                blocks.pop().map(|b| b.0)
            })
            .ok()
            .flatten()
    }

    /// # Safety
    ///
    /// `p` is an unused allocation of class `c`'s layout, given up.
    #[inline]
    pub(super) unsafe fn put(c: usize, p: NonNull<u8>) {
        let kept = LOCAL.try_with(|l| {
            // SAFETY: as in `take`.
            let blocks = unsafe { &mut (*l.get()).0[c] };
            if blocks.len() == KEPT {
                let half = blocks.split_off(KEPT - BATCH);
                spill(c, half);
            }
            if blocks.capacity() == 0 {
                blocks.reserve_exact(KEPT);
            }
            blocks.push(Block(p));
        });
        if kept.is_err() {
            // The thread is exiting: its list is gone.
            // SAFETY: the caller's contract.
            unsafe { std::alloc::dealloc(p.as_ptr(), class_layout(c)) };
        }
    }

    /// Moves a batch from the spill into an empty list.
    #[cold]
    fn refill(c: usize, blocks: &mut Vec<Block>) {
        let batch = SPILL[c].lock().unpoison().pop();
        if let Some(batch) = batch {
            if blocks.capacity() == 0 {
                blocks.reserve_exact(KEPT);
            }
            blocks.extend(batch);
        }
    }

    /// Hands a batch to the spill, or to the allocator if the spill is full.
    #[cold]
    fn spill(c: usize, batch: Vec<Block>) {
        let mut spill = SPILL[c].lock().unpoison();
        if spill.len() < spill_batches(c) {
            spill.push(batch);
            return;
        }
        drop(spill);
        for b in batch {
            // SAFETY: a free block of class `c`, owned by the batch.
            unsafe { std::alloc::dealloc(b.0.as_ptr(), class_layout(c)) };
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn every_layout_maps_to_the_smallest_class_that_holds_it() {
        let class = |size, align| class_of(Layout::from_size_align(size, align).unwrap());
        assert_eq!(class(1, 1), Some(0));
        assert_eq!(
            class(56, 8).map(|c| CLASSES[c]),
            Some(56),
            "a waiter of a u64"
        );
        assert_eq!(class(136, 8).map(|c| CLASSES[c]), Some(136));
        assert_eq!(class(137, 8).map(|c| CLASSES[c]), Some(152));
        assert_eq!(
            class(232, 8).map(|c| CLASSES[c]),
            Some(232),
            "the parked-task row's task"
        );
        assert_eq!(class(249, 8).map(|c| CLASSES[c]), Some(280));
        assert_eq!(class(1016, 16), Some(CLASSES.len() - 1));
        assert_eq!(class(1017, 8), None);
        assert_eq!(class(64, 64), None);
        for w in CLASSES.windows(2) {
            assert!(w[0] < w[1], "classes {w:?}");
            assert!(
                w[0] < 136 || w[1] - w[0] <= w[1] / 8,
                "a task class wastes more than an eighth: {w:?}"
            );
        }
        assert!(CLASSES.iter().all(|c| c % 16 == 8), "{CLASSES:?}");
    }

    #[test]
    fn a_freed_block_is_the_next_one_handed_out_on_its_thread() {
        let a = alloc::<[u64; 37]>();
        // SAFETY: from `alloc`, unused.
        unsafe { free(a) };
        let b = alloc::<[u64; 37]>();
        assert_eq!(a, b, "the kept block was not reused");
        // SAFETY: as above.
        unsafe { free(b) };
    }

    #[test]
    fn blocks_past_a_threads_share_go_to_the_spill_and_come_back() {
        type Big = [u64; 120];
        let blocks: Vec<_> = (0..4 * KEPT).map(|_| alloc::<Big>()).collect();
        let addrs: std::collections::HashSet<usize> =
            blocks.iter().map(|p| p.as_ptr() as usize).collect();
        for b in blocks {
            // SAFETY: from `alloc`, unused.
            unsafe { free(b) };
        }
        // Another thread takes from the spill what this one could not keep.
        let reused = std::thread::spawn(move || {
            let got: Vec<_> = (0..KEPT).map(|_| alloc::<Big>()).collect();
            let n = got
                .iter()
                .filter(|p| addrs.contains(&(p.as_ptr() as usize)))
                .count();
            for b in got {
                // SAFETY: as above.
                unsafe { free(b) };
            }
            n
        })
        .join()
        .unwrap();
        assert!(
            reused >= BATCH,
            "only {reused} blocks came back from the spill"
        );
    }
}
