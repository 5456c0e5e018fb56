//! Every P a runtime has ever had (Go's `allp`), as a table that grows
//! without moving what it holds.
//!
//! Before issue 21 the Ps were one boxed slice sized `procs` at start-up.
//! A runtime that can add Ps while it runs ([`crate::Runtime::set_procs`],
//! `resize.rs`) needs room for more, and every thread holds plain
//! references into the Ps (`&sched.ps[p]` lives across a whole search), so
//! the Ps may never move. Go reallocates `allp` with the world stopped;
//! goro cannot stop the world (a future cannot be interrupted), so:
//!
//! * the table is a fixed directory of [`MAX_PROCS`] pointers, one per P
//!   id, filled on first use and never cleared or moved until the runtime
//!   is dropped: a reference taken to a P stays valid for the runtime's
//!   whole life, whatever resizes happen meanwhile;
//! * a P is allocated before any thread can learn its id: the resize fills
//!   the entry (Release) before it raises the active count or puts the P
//!   on the idle list, and every id a thread holds came from one of those;
//! * a P removed by a shrink stays allocated (its counters keep counting
//!   in [`crate::Stats`], its pool slot keeps its values reachable by the
//!   other Ps' steals and the monitor's cycles), and a later grow reuses it.
//!
//! Indexing costs one more dependent load than the slice did (the entry,
//! then the P), on a directory line that is only ever read after the P's
//! first use. Rejected: Ps allocated up to a capacity fixed at start-up
//! (no load more, but a `set_procs` above the capacity would have to fail,
//! and a capacity of [`MAX_PROCS`] costs ~12 MiB per runtime); an
//! `Arc`-swapped slice (every access would pay for the reference count or
//! an epoch pin).
//!
//! [`MAX_PROCS`]: crate::runtime::MAX_PROCS

use crate::runtime::MAX_PROCS;
use crate::sched::processor::Processor;
use crossbeam_utils::CachePadded;
// std atomics even under loom: an entry is written once, before its id is
// published through the (modelled) idle lock or active count.
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

/// The directory of Ps.
pub(crate) struct AllP {
    dir: Box<[AtomicPtr<CachePadded<Processor>>]>,
    /// Entries filled: ids `0..len` are allocated.
    len: AtomicUsize,
}

impl AllP {
    pub(crate) fn new() -> AllP {
        AllP {
            dir: (0..MAX_PROCS)
                .map(|_| AtomicPtr::new(std::ptr::null_mut()))
                .collect(),
            len: AtomicUsize::new(0),
        }
    }

    /// A table with Ps `0..n` allocated (`make(id)`).
    pub(crate) fn with(n: usize, make: impl Fn(usize) -> Processor) -> AllP {
        let t = AllP::new();
        t.grow_to(n, make);
        t
    }

    /// Allocates Ps up to id `n - 1` (`make(p)`); one caller at a time
    /// (start-up, or a resize under the resize lock).
    pub(crate) fn grow_to(&self, n: usize, make: impl Fn(usize) -> Processor) {
        assert!(n <= MAX_PROCS, "goro: {n} Ps exceed MAX_PROCS");
        let have = self.len.load(Ordering::Relaxed);
        for i in have..n {
            let p = Box::into_raw(Box::new(CachePadded::new(make(i))));
            // Release: a thread that loads the pointer sees the P built.
            self.dir[i].store(p, Ordering::Release);
        }
        if n > have {
            // Release: `iter` reads entries below `len` after loading it.
            self.len.store(n, Ordering::Release);
        }
    }

    /// How many Ps were ever allocated.
    pub(crate) fn allocated(&self) -> usize {
        // Acquire: pairs with the Release store in `grow_to`.
        self.len.load(Ordering::Acquire)
    }

    /// Every P ever allocated, active or not, by id.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &CachePadded<Processor>> + '_ {
        (0..self.allocated()).map(move |i| &self[i])
    }
}

impl std::ops::Index<usize> for AllP {
    type Output = CachePadded<Processor>;

    #[inline]
    fn index(&self, i: usize) -> &CachePadded<Processor> {
        // Acquire: pairs with the Release store in `grow_to`.
        let p = self.dir[i].load(Ordering::Acquire);
        assert!(
            !p.is_null(),
            "goro: P {i} used before it was allocated (scheduler bug)"
        );
        // SAFETY: a non-null entry points to a P boxed by `grow_to`, freed
        // only by `drop`, which needs `&mut self`: it outlives `&self`.
        unsafe { &*p }
    }
}

impl Drop for AllP {
    fn drop(&mut self) {
        for e in self.dir.iter() {
            let p = e.load(Ordering::Relaxed);
            if !p.is_null() {
                // SAFETY: made by `Box::into_raw` in `grow_to`, freed once
                // here (we have `&mut self`, no reference can be alive).
                drop(unsafe { Box::from_raw(p) });
            }
        }
    }
}
