//! Pins and grace periods: who may be touching pool storage right now.
//!
//! Go empties pools with the world stopped, so no `Get` or `Put` can be half
//! way through the storage it frees. goro never stops the world. Instead every
//! pool operation that touches per-P storage runs *pinned* on a
//! [`PinRecord`], and a generation that a cycle has unlinked is dropped only
//! after a *grace period* ([`synchronize`], run by the reclaimer thread, see
//! `reclaim.rs`): once every pinned section that could have seen the old
//! pointer has ended. This is read-copy-update with the pool operations as
//! the readers, the cycle as the writer and the reclaimer as `call_rcu`.
//!
//! # The record
//!
//! A record is a sequence number with one writer: odd while a section runs,
//! even between sections. Entering stores `s + 1`, leaving stores `s + 2`,
//! both plain `Release` stores (a `mov` on x86), never a read-modify-write.
//! Each P owns one record (allocated the first time the P uses a pool, see
//! `local::new_ids`); a thread without a P uses a thread-local guest record.
//!
//! # Why a store, a barrier and a load suffice
//!
//! The reader does `store(seq odd); barrier; load(storage pointer)`. The
//! writer's half is split over two threads: the cycle does
//! `swap(storage pointer)` and hands what it unlinked to the reclaimer,
//! which then does `barrier; load(seq)`. The hand-over (a mutex) makes the
//! swap happen before the reclaimer's barrier, and the single order of
//! sequentially consistent operations agrees with happens-before (C++20
//! [atomics.order]), so with `SeqCst` fences on both sides this is still
//! Dekker's pattern: either the reclaimer's load sees the odd sequence (and
//! waits for it to change), or the reader's load sees the new pointer (and
//! never reaches the old storage). A reclaimer that reads an odd `s` waits
//! until the record no longer holds `s`: whatever value it then reads was
//! stored with `Release` after the section ended, so the section's accesses
//! happen before the drop.
//!
//! The reader's fence would cost ~20 cycles on every `get`/`put`, the price
//! of the whole operation. So the barrier is *asymmetric*: where Linux's
//! `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)` is available the reader's
//! half is only a compiler fence and the reclaimer's half is the system
//! call, which runs a full memory barrier on every CPU currently running a
//! thread of this process (a thread that is not running passes one in its
//! context switch). The reclaimer pays a few microseconds once per batch of
//! cycles (not per pool); the hot path pays nothing. Without `membarrier`
//! both halves are real `SeqCst` fences. Under loom both halves are
//! `SeqCst` fences, which is the model the argument above is made in.
//!
//! Rejected:
//! * a reference count per generation, incremented by every operation: a
//!   contended read-modify-write on one cache line shared by all Ps;
//! * epoch-based reclamation (crossbeam-epoch): its pin is a `SeqCst` fence
//!   or swap per operation, and deferred garbage makes "dropped by the second
//!   cycle" depend on unrelated threads' progress;
//! * waiting for every P to pass a scheduler boundary: a P stuck in one long
//!   poll (or another runtime's P) would hold every cycle hostage, and it
//!   would need hooks in the scheduler loop.

use crate::loom::{AtomicU64, Ordering};
use crate::sched::backoff::Backoff;

/// One reader's pin state; see the module docs.
#[derive(Debug)]
pub(crate) struct PinRecord {
    /// Odd while pinned. Written only by the record's holder.
    seq: AtomicU64,
}

impl PinRecord {
    pub(crate) fn new() -> PinRecord {
        PinRecord {
            seq: AtomicU64::new(0),
        }
    }

    /// Enters a pinned section. Only the record's holder may call this (one
    /// thread at a time: the thread holding the P, or the guest thread).
    #[inline]
    pub(crate) fn pin(&self) -> PinGuard<'_> {
        // Relaxed: we are the only writer.
        let s = self.seq.load(Ordering::Relaxed);
        debug_assert!(s & 1 == 0, "goro: nested pool pin");
        // Release: a cycle that reads this value (instead of the end of the
        // previous section) still learns that the previous section ended.
        self.seq.store(s.wrapping_add(1), Ordering::Release);
        light_barrier();
        PinGuard {
            rec: self,
            next: s.wrapping_add(2),
        }
    }
}

/// A pinned section; leaving it (also by unwinding) unpins.
pub(crate) struct PinGuard<'a> {
    rec: &'a PinRecord,
    next: u64,
}

impl Drop for PinGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        // Release: everything the section did happens before a cycle's
        // Acquire load that sees this value (or any later one).
        self.rec.seq.store(self.next, Ordering::Release);
    }
}

/// Waits until every section pinned on `records` that was running when the
/// barrier was issued has ended. The caller has already unlinked what it is
/// about to drop; `records` must be read *after* the heavy barrier (a record
/// registered later belongs to a reader that cannot see the old pointers).
///
/// A pinned section is a few dozen instructions with no user code and no
/// locks, so it ends quickly unless its thread was descheduled: the wait
/// spins briefly, yields a few times, then sleeps in steps doubling from
/// 20 µs to 1 ms (seed 000; [`Backoff::pin_wait`] has the numbers).
pub(crate) fn wait_for_readers<'a>(records: impl IntoIterator<Item = &'a PinRecord>) {
    for r in records {
        // Acquire: pairs with the Release stores of `pin` and `PinGuard::drop`.
        let s = r.seq.load(Ordering::Acquire);
        if s & 1 == 0 {
            continue;
        }
        let mut backoff = Backoff::pin_wait();
        while r.seq.load(Ordering::Acquire) == s {
            backoff.snooze();
        }
    }
}

/// The reader's half of the barrier.
#[inline]
pub(crate) fn light_barrier() {
    #[cfg(loom)]
    crate::loom::fence(Ordering::SeqCst);
    #[cfg(not(loom))]
    {
        // Relaxed: set once, before the first pool exists; every pool user
        // reached its pool after that (see `init_barriers`).
        if ASYMMETRIC.load(std::sync::atomic::Ordering::Relaxed) {
            std::sync::atomic::compiler_fence(Ordering::SeqCst);
        } else {
            std::sync::atomic::fence(Ordering::SeqCst);
        }
    }
}

/// The reclaimer's half of the barrier (the writer's, in the module docs).
pub(crate) fn heavy_barrier() {
    #[cfg(loom)]
    crate::loom::fence(Ordering::SeqCst);
    #[cfg(not(loom))]
    {
        std::sync::atomic::fence(Ordering::SeqCst);
        if ASYMMETRIC.load(std::sync::atomic::Ordering::Relaxed) {
            membarrier::private_expedited();
        }
    }
}

/// True once `membarrier` is registered: readers use a compiler fence only.
static ASYMMETRIC: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Decides, once per process, which barrier pair to use. Called by
/// `Pool::new` before the pool can be used, so every reader of every pool
/// sees the final value (it reached the pool through whatever published
/// it, which happens after this). `GORO_POOL_MEMBARRIER=0` forces the
/// symmetric fences (to compare their cost). Under loom the barriers are
/// always fences.
pub(crate) fn init_barriers() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let off = std::env::var("GORO_POOL_MEMBARRIER").is_ok_and(|v| v.trim() == "0");
        if !off && !cfg!(loom) && membarrier::register() {
            ASYMMETRIC.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    });
}

/// Whether the asymmetric barrier is in use.
#[allow(dead_code)]
pub(crate) fn asymmetric() -> bool {
    ASYMMETRIC.load(std::sync::atomic::Ordering::Relaxed)
}

#[cfg(target_os = "linux")]
#[cfg_attr(loom, allow(dead_code))]
mod membarrier {
    const QUERY: libc::c_long = 0;
    const GLOBAL: libc::c_long = 1;
    const PRIVATE_EXPEDITED: libc::c_long = 1 << 3;
    const REGISTER_PRIVATE_EXPEDITED: libc::c_long = 1 << 4;

    fn call(cmd: libc::c_long) -> libc::c_long {
        // SAFETY: membarrier takes three integers (command, flags, cpu id)
        // and reads or writes none of our memory.
        unsafe {
            libc::syscall(
                libc::SYS_membarrier,
                cmd,
                0 as libc::c_long,
                0 as libc::c_long,
            )
        }
    }

    pub(super) fn register() -> bool {
        let mask = call(QUERY);
        mask >= 0 && mask & PRIVATE_EXPEDITED != 0 && call(REGISTER_PRIVATE_EXPEDITED) == 0
    }

    pub(super) fn private_expedited() {
        if call(PRIVATE_EXPEDITED) == 0 || call(GLOBAL) == 0 {
            return;
        }
        // Readers rely on this barrier; without it a cycle could drop storage
        // a reader is using. It cannot fail once registered, but never guess.
        let e = std::io::Error::last_os_error();
        panic!(
            "goro: membarrier failed after registration ({e}); pool cycles cannot proceed safely"
        );
    }
}

#[cfg(not(target_os = "linux"))]
#[cfg_attr(loom, allow(dead_code))]
mod membarrier {
    pub(super) fn register() -> bool {
        false
    }
    pub(super) fn private_expedited() {}
}

pub(crate) use registry::{alloc_record, free_record, synchronize, GuestRecord};

/// The process-wide list of records. (Compiled but unused under loom: the
/// models hold their records themselves, since loom objects cannot outlive
/// one execution.)
mod registry {
    use super::{heavy_barrier, wait_for_readers, PinRecord};
    use crate::loom::Unpoison;
    use crossbeam_utils::CachePadded;
    use std::sync::Mutex;

    struct Records {
        /// Every record ever allocated (records are never freed, only reused).
        all: Vec<&'static CachePadded<PinRecord>>,
        free: Vec<&'static CachePadded<PinRecord>>,
    }

    static RECORDS: Mutex<Records> = Mutex::new(Records {
        all: Vec::new(),
        free: Vec::new(),
    });

    fn records() -> std::sync::MutexGuard<'static, Records> {
        RECORDS.lock().unpoison()
    }

    /// A record for a new holder (a P, or a guest thread).
    pub(crate) fn alloc_record() -> &'static PinRecord {
        let mut r = records();
        if let Some(rec) = r.free.pop() {
            return rec;
        }
        let rec: &'static CachePadded<PinRecord> =
            Box::leak(Box::new(CachePadded::new(PinRecord::new())));
        r.all.push(rec);
        rec
    }

    /// Returns a record whose holder is gone (not pinned).
    pub(crate) fn free_record(rec: &'static PinRecord) {
        let mut r = records();
        let same = |c: &&&'static CachePadded<PinRecord>| {
            let c: &PinRecord = c;
            std::ptr::eq(c, rec)
        };
        if let Some(&c) = r.all.iter().find(same) {
            r.free.push(c);
        }
    }

    /// A grace period over every record in the process: returns once every
    /// pool operation that was running when it was called has ended.
    pub(crate) fn synchronize() {
        heavy_barrier();
        let all: Vec<&'static CachePadded<PinRecord>> = records().all.clone();
        wait_for_readers(all.iter().map(|c| -> &PinRecord { c }));
    }

    /// The record of a thread without a P, allocated on its first pool use
    /// and returned when the thread exits.
    pub(crate) struct GuestRecord(std::cell::Cell<Option<&'static PinRecord>>);

    impl GuestRecord {
        pub(crate) const fn new() -> GuestRecord {
            GuestRecord(std::cell::Cell::new(None))
        }

        pub(crate) fn get(&self) -> &'static PinRecord {
            match self.0.get() {
                Some(r) => r,
                None => {
                    let r = alloc_record();
                    self.0.set(Some(r));
                    r
                }
            }
        }
    }

    impl Drop for GuestRecord {
        fn drop(&mut self) {
            if let Some(r) = self.0.take() {
                free_record(r);
            }
        }
    }
}
