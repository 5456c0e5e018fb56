//! [`Pool`]: Go's `sync.Pool`, a cache of reusable values with per-P storage
//! and a victim cache (seed 003).
//!
//! # Shape
//!
//! | Go | goro | file |
//! |---|---|---|
//! | `poolLocal.private` | `Local::private`: one value per P, plain load/store | `local.rs` |
//! | `poolLocal.shared` (`poolChain` of `poolDequeue`s) | `Chain` of single-producer `Ring`s | `chain.rs` |
//! | `[P]poolLocal` array, `pinSlow` | `Gen`: slots 0..16 inline, the rest in a fixed directory of lazily allocated chunks, indexed by a process-wide P slot | `local.rs` |
//! | `local` / `victim` | `PoolCore::primary` / `victim`, one generation each | `core.rs` |
//! | `runtime_procPin` | a pinned section on the P's `PinRecord` | `pin.rs` |
//! | `poolCleanup` at GC (world stopped) | [`pool_cycle`] / the monitor: pointer swaps, world running | `victim.rs` |
//! | the GC freeing what `poolCleanup` dropped | the reclaimer thread: a grace period, then the drops | `reclaim.rs` |
//!
//! # Invariants
//!
//! * A value is in exactly one place: a private slot, one ring slot, or the
//!   fallback list; taking it is exclusive (the private slot has one owner,
//!   ring slots are claimed by CAS, the list by its mutex). So no value is
//!   handed to two callers, and dropping storage drops each value once.
//! * A slot's private value and chain head are touched only by the thread
//!   holding the P that owns the slot (the thread-local scheduler context
//!   says which), inside a pinned section.
//! * Every access to a generation loads its pointer inside a pinned section,
//!   after pinning; a generation is dropped only after it has been unlinked
//!   and a grace period that started after the unlinking has passed.
//!   Nothing is freed under a reader.
//! * A cycle never drops a value itself: what it unlinks goes to the
//!   reclaimer thread (`reclaim.rs`), so its cost is O(number of pools)
//!   whatever the number of values. Unlinked values cannot be taken by a
//!   `get` any more; the reclaimer drops each of them once, soon after.
//! * No user code (`new`, a value's `Drop`) runs inside a pinned section or
//!   under a pool lock, so `new` may panic or use the pool itself.
//! * A thread without a P (a `block_on` caller, a plain thread, the blocking
//!   pool) puts into a mutex-protected list and gets from the list or by
//!   stealing from the Ps' chains; slower, equally correct.
//!
//! # Cost of the fast path
//!
//! `put` into an empty private slot and `get` of the private value: one
//! thread-local read (the scheduler context), the P's slot and pin record,
//! two plain stores on the record, one dependent load from the pool (the
//! generation, whose first 16 slots are inline), the slot itself. No
//! read-modify-write and no fence: the pin's fence is asymmetric (the
//! reclaimer pays for it with `membarrier`, see `pin.rs`). The pair is
//! bound by the latency of its chain of dependent loads, which is why the
//! first chunk of slots is inline (`local.rs`). Spilling to the shared chain
//! costs one `fetch_add` (Go: the same). A miss scans only the slots whose
//! chains have held values (none at procs 1).
//!
//! `get` and `put` inline whole into the caller: the caller's identity
//! comes from a function returning it (`here`), not from a helper taking a
//! closure, which the compiler keeps out of line in some crates (it depends
//! on their codegen units) at a third of the pair's cost (BENCH_RESULTS.md,
//! "`pool` after 01950a3").
//!
//! A cycle touches no value: it executes the same instructions (callgrind)
//! at 1,000 and at 100,000 pooled values, and what its wall time still
//! grows with is caches gone cold during the puts. The readings, against
//! Go's, are in BENCH_RESULTS.md (`goro-bench run pool`, `pool_cycle`).
//!
//! # Seed 003
//!
//! A cycle moves each pool's primary storage to its victim and retires the
//! old victim (the reclaimer drops it), so values survive one idle cycle
//! and are dropped after the second; with [`crate::Policy::pool_victim`]
//! off (the seed's "before"), a cycle retires everything at once and every
//! cycle is followed by a burst of `new` calls. Counters: `pool_hits`,
//! `pool_misses`, `pool_victim_hits`, `pool_new_calls`, `pool_cycles` in
//! [`crate::Stats`].
//!
//! # Rejected
//!
//! * Stopping the world for a cycle, as Go does: goro cannot preempt a task,
//!   so "the world" could only stop after the slowest poll returns.
//! * An atomic swap on the private slot (so a cycle could take it): a
//!   read-modify-write on every `get` and `put`, the whole cost of Go's fast
//!   path. The pin protocol gives the cycle the same safety for free.
//! * `Box<T>` per value (Go stores interface pointers): an allocation per
//!   `put` defeats a pool of small values. Values are stored inline.
//! * Per-P storage indexed by the runtime's P number: two runtimes in one
//!   process would share slots between two threads. Slots are process-wide.

mod chain;
mod core;
mod local;
mod pin;
mod reclaim;
mod victim;

#[cfg(all(test, loom))]
mod loom_tests;

pub(crate) use victim::{cycle_all, cycles};

use self::core::{Found, PoolCore, Who};
use crate::stats::{bump, bump_shared, Counters};
use std::fmt;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Weak};

/// A cache of reusable values, shared by all tasks and threads: Go's
/// `sync.Pool`.
///
/// `get` returns a cached value if there is one (preferring the current P's
/// own, then stealing from other Ps, then the victim cache of the previous
/// generation), otherwise it calls the `new` function. `put` caches a value
/// for a later `get`. The pool may drop cached values at any cycle (see
/// [`pool_cycle`]): use it for values that are expensive to make and cheap
/// to keep, never for values that must survive.
///
/// Values are handed out whole: `get` moves a value out, and a value is
/// never given to two callers. A value put and never taken again is dropped
/// exactly once: when the pool is dropped, or after the second cycle after
/// its put (the first with the victim cache off), which takes it out of the
/// pool and hands it to a background thread that runs its `Drop` soon
/// after (so a cycle's cost does not grow with the number of values).
///
/// ```
/// use goro::sync::Pool;
///
/// let bufs = Pool::new(|| Vec::<u8>::with_capacity(4096));
/// let rt = goro::Runtime::builder().procs(2).build().unwrap();
/// rt.block_on(async {
///     let mut b = bufs.get();
///     b.extend_from_slice(b"hello");
///     b.clear(); // reset before reuse: the pool does not
///     bufs.put(b);
///     assert!(bufs.get().capacity() >= 4096);
/// });
/// ```
pub struct Pool<T: Send + 'static> {
    shared: Arc<Shared<T>>,
}

struct Shared<T> {
    core: PoolCore<T>,
    new: Box<dyn Fn() -> T + Send + Sync>,
}

impl<T: Send + 'static> victim::Rotate for Shared<T> {
    unsafe fn rotate(&self, keep_victim: bool) -> Option<Box<dyn Send>> {
        // SAFETY: forwarded contract (drop only after a grace period).
        let out = unsafe { self.core.rotate(keep_victim) };
        // An empty pool's rotation costs no allocation.
        (!out.is_empty()).then(|| Box::new(out) as Box<dyn Send>)
    }

    fn may_hold_values(&self) -> bool {
        self.core.may_hold_values()
    }

    fn release(self: Arc<Self>) -> Option<Box<dyn Send>> {
        // `into_inner` decides atomically which of the racing last two
        // holders drops the pool (a plain count check and drop would not).
        Arc::into_inner(self).map(|s| Box::new(s) as Box<dyn Send>)
    }
}

impl<T: Send + 'static> Pool<T> {
    /// A pool whose `get` calls `new` when it has no value to give.
    ///
    /// ```
    /// let p = goro::sync::Pool::new(|| String::from("fresh"));
    /// assert_eq!(p.get(), "fresh");
    /// ```
    pub fn new<F>(new: F) -> Pool<T>
    where
        F: Fn() -> T + Send + Sync + 'static,
    {
        pin::init_barriers();
        crate::sched::processor::pool_hooks::register(
            crate::sched::processor::pool_hooks::PoolHooks {
                new_ids: local::new_ids,
                free_ids: local::free_ids,
                any_values: victim::any_values,
                cycle: victim::monitor_cycle,
            },
        );
        let shared = Arc::new(Shared {
            core: PoolCore::new(),
            new: Box::new(new),
        });
        let weak: Weak<dyn victim::Rotate> = Arc::downgrade(&shared) as Weak<dyn victim::Rotate>;
        victim::register(weak);
        Pool { shared }
    }

    /// Takes a cached value, or makes one with `new`.
    ///
    /// If `new` panics, the panic propagates to the caller and the pool is
    /// unaffected.
    ///
    /// ```
    /// let p = goro::sync::Pool::new(|| 0u64);
    /// p.put(7);
    /// // On a thread without a P the value goes through the shared list,
    /// // where this thread finds it again.
    /// assert_eq!(p.get(), 7);
    /// assert_eq!(p.get(), 0);
    /// ```
    #[inline]
    pub fn get(&self) -> T {
        let found = {
            // SAFETY: dropped at the end of this block, before `new` (user
            // code) can run; nothing in between returns to the scheduler.
            let (who, counts) = unsafe { here() };
            let found = self.shared.core.get(&who);
            match &found {
                Found::Primary(_) => counts.bump(|c| &c.pool_hits),
                Found::Victim(_) => {
                    counts.bump(|c| &c.pool_misses);
                    counts.bump(|c| &c.pool_victim_hits);
                }
                Found::Nothing => {
                    counts.bump(|c| &c.pool_misses);
                    counts.bump(|c| &c.pool_new_calls);
                }
            }
            found
        };
        match found {
            Found::Primary(v) | Found::Victim(v) => v,
            // Outside every pinned section and lock: `new` may panic, block
            // or use this pool.
            Found::Nothing => (self.shared.new)(),
        }
    }

    /// Caches `v` for a later `get`.
    ///
    /// ```
    /// let p = goro::sync::Pool::new(Vec::<u32>::new);
    /// let mut v = p.get();
    /// v.push(1);
    /// v.clear();
    /// p.put(v);
    /// ```
    #[inline]
    pub fn put(&self, v: T) {
        // SAFETY: used for this call only, which runs no user code (the
        // value is moved, not dropped) and does not return to the scheduler.
        let (who, _) = unsafe { here() };
        self.shared.core.put(&who, v);
    }
}

impl<T: Send + 'static> fmt::Debug for Pool<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pool")
            .field("may_hold_values", &self.shared.core.may_hold_values())
            .finish_non_exhaustive()
    }
}

/// Forces a pool cycle now, for every pool in the process: each pool's
/// primary cache becomes its victim cache and the previous victim cache's
/// values are retired (with the victim cache off, everything is retired).
/// Retired values can no longer be returned by `get`; a background thread
/// (`goro-pool-drop`, shared by the whole process) drops them soon after
/// (within about a millisecond unless it is short of CPU), so this call
/// does not wait for their `Drop`. A panic in such a `Drop` is
/// reported on stderr and the other values are still dropped.
///
/// The victim setting is that of the caller's runtime
/// ([`crate::Policy::pool_victim`]), or on by default on a thread outside
/// every runtime. Runtimes also cycle on their own, every
/// [`crate::Builder::pool_cycle`], while some pool holds values.
///
/// A cycle does not stop the world and costs O(number of pools): it swaps
/// a few pointers per pool; gets and puts on other threads go on meanwhile.
/// (If cycles are forced faster than one thread can drop what they retire,
/// a cycle drops its own share, so memory stays bounded.)
///
/// ```
/// use goro::sync::{pool_cycle, Pool};
/// let p = Pool::new(|| "new");
/// p.put("cached");
/// pool_cycle(); // "cached" is now in the victim cache
/// assert_eq!(p.get(), "cached");
/// p.put("again");
/// pool_cycle();
/// pool_cycle(); // two cycles unused: dropped
/// assert_eq!(p.get(), "new");
/// ```
pub fn pool_cycle() {
    let keep_victim = crate::sched::context::current_sched()
        .map_or(crate::Policy::default().pool_victim, |s| {
            s.policy().pool_victim
        });
    cycle_all(keep_victim);
}

/// Waits until every value that the cycles so far have retired has been
/// dropped, or until `limit` has passed; returns whether they all were.
///
/// Not part of the API: for tests that count drops, since a cycle returns
/// before the values it retires are dropped (see [`pool_cycle`]). Calling
/// it from a pooled value's `Drop` waits for itself, until `limit`.
///
/// ```
/// use goro::sync::{pool::wait_reclaimed, pool_cycle, Pool};
/// use std::time::Duration;
/// let p = Pool::new(String::new);
/// p.put(String::from("old"));
/// pool_cycle();
/// pool_cycle(); // "old" is retired: `get` cannot return it any more
/// assert!(wait_reclaimed(Duration::from_secs(10))); // and now it is dropped
/// ```
#[doc(hidden)]
pub fn wait_reclaimed(limit: std::time::Duration) -> bool {
    reclaim::wait_idle(limit)
}

/// Where the current operation's counters go.
enum Counts<'a> {
    /// The P's own block (single writer).
    P(&'a Counters),
    /// The runtime's shared block (a thread of the runtime without a P).
    Shared(&'a Counters),
    /// Outside every runtime: not counted.
    None,
}

impl Counts<'_> {
    #[inline]
    fn bump(&self, f: impl FnOnce(&Counters) -> &AtomicU64) {
        match self {
            Counts::P(c) => bump(f(c), 1),
            Counts::Shared(c) => bump_shared(f(c), 1),
            Counts::None => {}
        }
    }
}

std::thread_local! {
    static GUEST: pin::GuestRecord = const { pin::GuestRecord::new() };
}

/// The caller's identity: the P it holds (slot, record, counters), or a
/// guest record.
///
/// A function returning the identity rather than one taking a closure: a
/// closure is not always inlined into `get` and `put` (it depends on how
/// the calling crate is split into codegen units), and the extra frame
/// costs about a third of a put+get pair.
///
/// # Safety
/// The result must be dropped before the calling thread runs user code or
/// returns to the scheduler: until then it keeps the P (and its runtime)
/// the context names, which is what the lifetime `'a` stands for.
#[inline(always)]
unsafe fn here<'a>() -> (Who<'a>, Counts<'a>) {
    // SAFETY: our caller drops the result before it returns to the
    // scheduler (the contract above), so the runtime stays entered.
    let (sched, p) = unsafe { crate::sched::context::current() };
    match (sched, p) {
        (Some(s), Some(p)) => {
            let proc = &s.all_ps()[p];
            let ids = proc.pool.get();
            let (slot, rec) = (ids.slot, local::record_of(ids));
            // SAFETY: this thread holds P `p` (its context says so) until the
            // caller next runs user code (the contract above); a P's slot and
            // record are used only by its holder; `local::new_ids` hands out slots
            // below MAX_SLOTS only.
            (unsafe { Who::owner(slot, rec) }, Counts::P(&proc.counters))
        }
        (Some(s), None) => (guest(), Counts::Shared(s.shared_counters())),
        (None, _) => (guest(), Counts::None),
    }
}

/// The identity of a thread without a P: its guest record.
#[cold]
fn guest() -> Who<'static> {
    // Fails only inside a thread-local destructor at thread exit: then the
    // thread uses the lists alone.
    match GUEST.try_with(|g| g.get()) {
        // SAFETY: the guest record belongs to this thread alone (it is
        // returned to the free list only when the thread exits, and the
        // `Who` does not outlive the pool call that made it).
        Ok(rec) => unsafe { Who::guest(rec) },
        Err(_) => Who::none(),
    }
}
