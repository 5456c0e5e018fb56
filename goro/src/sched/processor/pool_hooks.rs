//! The scheduler's side of `sync::Pool`: Go's three pool hooks.
//!
//! Go's `sync.Pool` reaches its runtime through `procPin` (the P's id, with
//! preemption off), `procUnpin` and `registerPoolCleanup` (a function the
//! garbage collector calls). goro's pool needs the same three things and
//! nothing else of the scheduler:
//!
//! * a per-P value the pool keeps with the P ([`PoolSlot`]: its storage
//!   slot and its pin record, made by the pool on the P's first pool use
//!   and handed back to it when the P is dropped; the scheduler only
//!   stores it), which the pool reads for the P the thread holds;
//! * "pinning" needs no hook: a pool operation never yields, so the thread
//!   keeps its P from the read of the slot to the end of the operation;
//! * the cycle: the monitor calls the registered [`PoolHooks::cycle`] when
//!   one is due, and asks [`PoolHooks::any_values`] whether to wake for it.
//!
//! The pool registers its hooks ([`register`]) before it first reads a
//! slot, so a runtime that never touches a pool calls none of them.

use std::ptr::NonNull;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// What the pool gave a P: its storage slot (`None` past the pool's
/// limit) and its pin record, a `'static` value only the pool reads.
#[derive(Clone, Copy)]
pub(crate) struct PoolIds {
    pub(crate) slot: Option<usize>,
    pub(crate) record: NonNull<()>,
}

// SAFETY: `record` points to a `'static`, `Sync` value of the pool's
// (`PoolHooks::new_ids` makes it); the scheduler never dereferences it.
unsafe impl Send for PoolIds {}
// SAFETY: as above.
unsafe impl Sync for PoolIds {}

/// The hooks the pool registers (Go's `registerPoolCleanup`, plus how to
/// make and free a P's [`PoolIds`]).
pub(crate) struct PoolHooks {
    /// A P's ids, on its first pool use.
    pub(crate) new_ids: fn() -> PoolIds,
    /// Gives back the ids of a P that is dropped.
    pub(crate) free_ids: fn(PoolIds),
    /// Whether any pool may hold values (else no cycle is due).
    pub(crate) any_values: fn() -> bool,
    /// Runs a cycle unless one ran within `interval`; when the next is due.
    pub(crate) cycle: fn(interval: Duration, keep_victim: bool) -> Instant,
}

static HOOKS: OnceLock<PoolHooks> = OnceLock::new();

/// Registers the pool's hooks (the first registration wins; there is one
/// pool implementation).
pub(crate) fn register(hooks: PoolHooks) {
    let _ = HOOKS.set(hooks);
}

/// The registered hooks, if a pool was ever made.
pub(crate) fn hooks() -> Option<&'static PoolHooks> {
    HOOKS.get()
}

/// A P's pool state: nothing until the P's first pool use.
#[derive(Default)]
pub(crate) struct PoolSlot {
    ids: OnceLock<PoolIds>,
}

impl PoolSlot {
    pub(crate) fn new() -> PoolSlot {
        PoolSlot::default()
    }

    /// The P's ids, made by the pool's hook on first use. Called only by
    /// the pool, which registered its hooks first.
    #[inline(always)]
    pub(crate) fn get(&self) -> PoolIds {
        *self.ids.get_or_init(|| {
            (hooks()
                .expect("goro: a pool slot read before the pool registered its hooks")
                .new_ids)()
        })
    }
}

impl Drop for PoolSlot {
    fn drop(&mut self) {
        if let (Some(ids), Some(h)) = (self.ids.take(), hooks()) {
            (h.free_ids)(ids);
        }
    }
}
