//! Every P a runtime has ever had (Go's `allp`), as a table that grows
//! without moving what it holds.
//!
//! A runtime that can add Ps while it runs ([`crate::Runtime::set_procs`],
//! `resize.rs`) needs room for more, and every thread holds plain
//! references into the Ps (`&sched.ps[p]` lives across a whole search), so
//! the Ps may never move. Go reallocates `allp` with the world stopped;
//! goro cannot stop the world (a future cannot be interrupted), so:
//!
//! * the table is a fixed range of [`MAX_PROCS`] slots, a P built in its
//!   slot on first use and never moved or dropped until the runtime is
//!   dropped: a reference taken to a P stays valid for the runtime's
//!   whole life, whatever resizes happen meanwhile;
//! * a P is built before any thread can learn its id: the resize raises
//!   the built count (Release) before it raises the active count or puts
//!   the P on the idle list, and every id a thread holds came from one of
//!   those;
//! * a P removed by a shrink stays allocated (its counters keep counting
//!   in [`crate::Stats`], its pool slot keeps its values reachable by the
//!   other Ps' steals and the monitor's cycles), and a later grow reuses it.
//!
//! Indexing costs what indexing a boxed slice does: a base pointer, a
//! bounds check (against the constant size), an address computed. The
//! table is one mapping of [`MAX_PROCS`] Ps' worth of address space,
//! reserved up front and never moved; the kernel backs a page only when a
//! P in it is first written, so a runtime of 8 Ps touches a few pages, not
//! the whole range.
//!
//! Rejected: a directory of pointers, one per P, each filled on first use
//! (every `sched.ps[p]` pays one more dependent load: measured slower in
//! BENCH_RESULTS.md, "Resizing the set of Ps"); a bounds check against the
//! built count on every index (an atomic load each, counted with callgrind
//! on `yield_many`: BENCH_RESULTS.md, "Design readings quoted from module
//! docs"); Ps allocated up to a capacity fixed at start-up (a `set_procs`
//! above it would have to fail); an `Arc`-swapped slice (every access
//! would pay for the reference count or an epoch pin).
//!
//! [`MAX_PROCS`]: crate::sched::MAX_PROCS

use crate::sched::processor::Processor;
use crate::sched::MAX_PROCS;
use crossbeam_utils::CachePadded;
use std::ptr::NonNull;
// std atomics even under loom: `len` is written before the new Ps' ids
// are published through the (modelled) idle lock or active count.
use std::sync::atomic::{AtomicUsize, Ordering};

type Slot = CachePadded<Processor>;

/// The table of Ps.
pub(crate) struct AllP {
    /// [`MAX_PROCS`] slots of address space; slots `0..len` are built.
    base: NonNull<Slot>,
    /// Slots built: ids `0..len` are allocated.
    len: AtomicUsize,
}

// SAFETY: the table owns its Ps (`Processor` is Send + Sync: atomics, and
// locks); slots are written only before `len` publishes them and are
// then only read through `&Slot` until `drop`.
unsafe impl Send for AllP {}
// SAFETY: as above; shared access is read-only.
unsafe impl Sync for AllP {}

fn bytes() -> usize {
    std::mem::size_of::<Slot>() * MAX_PROCS
}

impl AllP {
    fn new() -> AllP {
        // SAFETY: an anonymous private mapping; the arguments are valid and
        // the result is checked. Page alignment covers `Slot`'s 128 bytes.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes(),
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        assert!(
            p != libc::MAP_FAILED,
            "goro: cannot reserve address space for {MAX_PROCS} Ps: {}",
            std::io::Error::last_os_error()
        );
        AllP {
            base: NonNull::new(p.cast::<Slot>()).expect("mmap returned null"),
            len: AtomicUsize::new(0),
        }
    }

    /// A table with Ps `0..n` allocated (`make(id)`).
    pub(crate) fn with(n: usize, make: impl Fn(usize) -> Processor) -> AllP {
        let t = AllP::new();
        t.grow_to(n, make);
        t
    }

    /// Builds Ps up to id `n - 1` (`make(id)`); one caller at a time
    /// (start-up, or a resize under the resize lock).
    pub(crate) fn grow_to(&self, n: usize, make: impl Fn(usize) -> Processor) {
        assert!(n <= MAX_PROCS, "goro: {n} Ps exceed MAX_PROCS");
        let have = self.len.load(Ordering::Relaxed);
        for i in have..n {
            // SAFETY: `i < MAX_PROCS`, inside the mapping; slot `i >= len`
            // has never been built, and nobody reads it before `len` says so.
            unsafe { self.base.as_ptr().add(i).write(CachePadded::new(make(i))) };
            // Release: a reader that sees the new length (Acquire in
            // `index`) sees the slot built. One slot at a time, so that a
            // panicking `make` leaves `len` counting only built slots.
            self.len.store(i + 1, Ordering::Release);
        }
    }

    /// How many Ps were ever allocated.
    pub(crate) fn allocated(&self) -> usize {
        // Acquire: pairs with the Release store in `grow_to`.
        self.len.load(Ordering::Acquire)
    }

    /// Every P ever allocated, active or not, by id.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Slot> + '_ {
        (0..self.allocated()).map(move |i| &self[i])
    }
}

impl std::ops::Index<usize> for AllP {
    type Output = Slot;

    /// The P with id `i`, which must have been built: every id a thread
    /// holds came from the idle list, a handoff, its own context or a read
    /// of the active count (Acquire), each published after `grow_to`'s
    /// Release store of `len` covered it. Checked against `len` in debug
    /// builds only: the release check is against the mapping's size, so
    /// that indexing costs what the boxed slice's did (no extra load on
    /// every `sched.ps[p]`; `allp.rs`'s header has the measurement).
    #[inline]
    fn index(&self, i: usize) -> &Slot {
        assert!(i < MAX_PROCS, "goro: P {i} out of range (scheduler bug)");
        debug_assert!(
            i < self.len.load(Ordering::Acquire),
            "goro: P {i} used before it was built (scheduler bug)"
        );
        // SAFETY: `i` is inside the mapping (checked above), and slot `i`
        // was built before its id was published (the contract above, the
        // scheduler's invariant); it is dropped only by `drop`, which needs
        // `&mut self`, so it outlives `&self`.
        unsafe { &*self.base.as_ptr().add(i) }
    }
}

impl Drop for AllP {
    fn drop(&mut self) {
        let n = *self.len.get_mut();
        for i in 0..n {
            // SAFETY: slots `0..len` were built and are dropped once here;
            // `&mut self` means no reference to them is alive.
            unsafe { std::ptr::drop_in_place(self.base.as_ptr().add(i)) };
        }
        // SAFETY: the mapping made in `new`, with its length; unmapped once.
        unsafe { libc::munmap(self.base.as_ptr().cast(), bytes()) };
    }
}
