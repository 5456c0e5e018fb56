//! One pool's storage across generations, and the search order of `get`.
//!
//! [`PoolCore`] is everything of a pool except its `new` function and its
//! place in the registry: the primary and victim generations (each a
//! [`Gen`] of per-slot storage, null while empty), and a mutex-protected
//! list pair for threads that hold no P. Callers say who they are with a
//! [`Who`]: the slot they own and the pin record they hold. The public
//! `Pool` builds a `Who` from the thread's scheduler context; the loom
//! models build them by hand.
//!
//! # Search order (Go's `Get` and `getSlow`, plus the lists)
//!
//! 1. own private value, own chain's head (primary generation);
//! 2. every other slot's chain tail (primary);
//! 3. the lists' primary half;
//! 4. own private value in the victim generation, then every chain tail;
//! 5. the lists' victim half;
//! 6. nothing: the caller calls `new`.
//!
//! The victim is searched last so that its values age out when demand drops
//! (seed 003). A victim generation found empty is remembered
//! (`victim_empty`) so misses stop scanning it, as Go zeroes `victimSize`.
//!
//! # Rotation and races
//!
//! [`PoolCore::rotate`] swaps pointers only: primary → victim, victim → out
//! (or both out without a victim cache), and the lists' halves likewise. It
//! is O(1), takes no lock that a pinned operation takes, and never touches a
//! value. Every access to a generation happens inside a pinned section that
//! loads the generation pointer *after* pinning, so after the swap only
//! sections already running can reach the generation that went out; it is
//! dropped only after they have ended (a grace period, `pin.rs`, waited for
//! by the reclaimer thread, `reclaim.rs`). A race with a running operation
//! therefore ends in one of these ways:
//!
//! * a `put` that loaded the old primary finishes into it: the value is now
//!   in the victim (found by later gets, or dropped with it a cycle later),
//!   or, if that generation went out at once (victim cache off), it is
//!   dropped with it by the reclaimer. Never lost, dropped once.
//! * a `get` that loaded a generation takes values with the generation's
//!   own exclusion (owner-only private slot; CAS on ring indices), so no
//!   value is handed out twice, and the generation cannot be freed under it.
//! * a value is in exactly one place at any time: private slot, one ring
//!   slot, or one list; dropping a generation drops what is in it.

use super::local::{Gen, MAX_SLOTS};
use super::pin::PinRecord;
use crate::loom::Unpoison;
use crate::loom::{AtomicPtr, AtomicUsize, Mutex, Ordering};
use std::ptr;

/// Who is calling: the storage slot the thread owns (if any) and the pin
/// record it holds (if any).
pub(crate) struct Who<'a> {
    slot: Option<usize>,
    pin: Option<&'a PinRecord>,
}

impl<'a> Who<'a> {
    /// The owner of `slot` (None: no slot) holding `pin`.
    ///
    /// # Safety
    /// For as long as this `Who` is used, the calling thread is the only one
    /// using `slot` and `pin` (it holds the P they belong to), and `slot` is
    /// below `MAX_SLOTS` (as every slot `local::new_ids` hands out is).
    #[inline]
    pub(crate) unsafe fn owner(slot: Option<usize>, pin: &'a PinRecord) -> Who<'a> {
        debug_assert!(slot.is_none_or(|s| s < MAX_SLOTS), "slot {slot:?}");
        Who {
            slot,
            pin: Some(pin),
        }
    }

    /// A thread without a slot, holding `pin`.
    ///
    /// # Safety
    /// For as long as this `Who` is used, no other thread pins `pin`.
    pub(crate) unsafe fn guest(pin: &'a PinRecord) -> Who<'a> {
        Who {
            slot: None,
            pin: Some(pin),
        }
    }

    /// A thread with neither (inside a thread-local destructor): only the
    /// lists are used.
    pub(crate) fn none() -> Who<'static> {
        Who {
            slot: None,
            pin: None,
        }
    }
}

/// Where `get` found a value.
pub(crate) enum Found<T> {
    Primary(T),
    Victim(T),
    Nothing,
}

struct Lists<T> {
    primary: Vec<T>,
    victim: Vec<T>,
}

/// A pool's storage; see the module docs.
pub(crate) struct PoolCore<T> {
    /// Current generation, or null until the first put after a rotation.
    primary: AtomicPtr<Gen<T>>,
    /// Previous generation, or null.
    victim: AtomicPtr<Gen<T>>,
    /// The victim generation last found empty (a hint; see module docs).
    victim_empty: AtomicPtr<Gen<T>>,
    /// Values put by threads without a slot.
    lists: Mutex<Lists<T>>,
    /// Total length of both lists: lets `get` skip the lock (a hint).
    lists_len: AtomicUsize,
}

impl<T> PoolCore<T> {
    pub(crate) fn new() -> PoolCore<T> {
        PoolCore {
            primary: AtomicPtr::new(ptr::null_mut()),
            victim: AtomicPtr::new(ptr::null_mut()),
            victim_empty: AtomicPtr::new(ptr::null_mut()),
            lists: Mutex::new(Lists {
                primary: Vec::new(),
                victim: Vec::new(),
            }),
            lists_len: AtomicUsize::new(0),
        }
    }

    /// Puts `v` into the current generation (own slot) or the list.
    #[inline]
    pub(crate) fn put(&self, who: &Who<'_>, v: T) {
        if let (Some(slot), Some(rec)) = (who.slot, who.pin) {
            let _pin = rec.pin();
            let g = self.primary_or_install();
            // SAFETY: (deref) `g` was loaded while pinned, so once a
            // rotation unlinks it, it is dropped only after this section
            // ends (a grace period); (put) the thread owns `slot` (contract
            // of `Who::owner`), which is below MAX_SLOTS (`Who::owner`).
            unsafe { (*g).put(slot, v) };
            return;
        }
        self.push_list(v);
    }

    /// The primary generation, installing an empty one if there is none.
    /// Must be called pinned.
    #[inline]
    fn primary_or_install(&self) -> *mut Gen<T> {
        // Acquire: pairs with the CAS that installed it (initialized Gen).
        let g = self.primary.load(Ordering::Acquire);
        if !g.is_null() {
            return g;
        }
        self.install_primary()
    }

    #[cold]
    fn install_primary(&self) -> *mut Gen<T> {
        let fresh = Box::into_raw(Box::new(Gen::new()));
        // SeqCst: ordered with the registry's "any values" flag protocol
        // (see `victim::note_values`).
        match self.primary.compare_exchange(
            ptr::null_mut(),
            fresh,
            Ordering::SeqCst,
            Ordering::Acquire,
        ) {
            Ok(_) => {
                super::victim::note_values();
                fresh
            }
            Err(cur) => {
                // SAFETY: `fresh` came from Box::into_raw above and was never
                // published.
                drop(unsafe { Box::from_raw(fresh) });
                cur
            }
        }
    }

    /// Takes a value, searching in the order of the module docs.
    #[inline]
    pub(crate) fn get(&self, who: &Who<'_>) -> Found<T> {
        if let Some(rec) = who.pin {
            let _pin = rec.pin();
            // Acquire: pairs with the CAS that installed the generation.
            let g = self.primary.load(Ordering::Acquire);
            if !g.is_null() {
                // SAFETY: loaded while pinned (see `put`).
                let g = unsafe { &*g };
                if let Some(slot) = who.slot {
                    if let Some(l) = g.local(slot) {
                        // SAFETY: the thread owns `slot` (`Who::owner`).
                        if let Some(v) = unsafe { l.take_private() } {
                            return Found::Primary(v);
                        }
                        // SAFETY: as above.
                        if let Some(v) = unsafe { l.pop_head() } {
                            return Found::Primary(v);
                        }
                    }
                }
                let start = who.slot.map_or(0, |s| s + 1);
                if let Some(v) = g.steal(start, who.slot) {
                    return Found::Primary(v);
                }
            }
        }
        if let Some(v) = self.pop_list(false) {
            return Found::Primary(v);
        }
        if let Some(rec) = who.pin {
            let _pin = rec.pin();
            // Acquire: as for the primary.
            let g = self.victim.load(Ordering::Acquire);
            // Relaxed: a hint; a stale value costs one scan or one miss.
            if !g.is_null() && g != self.victim_empty.load(Ordering::Relaxed) {
                // SAFETY: loaded while pinned (see `put`).
                let gen = unsafe { &*g };
                if let Some(l) = who.slot.and_then(|s| gen.local(s)) {
                    // SAFETY: the thread owns the slot (`Who::owner`).
                    if let Some(v) = unsafe { l.take_private() } {
                        return Found::Victim(v);
                    }
                }
                if let Some(v) = gen.steal(who.slot.unwrap_or(0), None) {
                    return Found::Victim(v);
                }
                // Relaxed: a hint. Stored while pinned, so `g` cannot have
                // been freed and reused as the address of a newer victim
                // before this store (that victim's rotation resets the hint
                // after this store).
                self.victim_empty.store(g, Ordering::Relaxed);
            }
        }
        if let Some(v) = self.pop_list(true) {
            return Found::Victim(v);
        }
        Found::Nothing
    }

    fn lock(&self) -> crate::loom::MutexGuard<'_, Lists<T>> {
        self.lists.lock().unpoison()
    }

    fn push_list(&self, v: T) {
        let mut l = self.lock();
        l.primary.push(v);
        // SeqCst: see `victim::note_values`.
        self.lists_len
            .store(l.primary.len() + l.victim.len(), Ordering::SeqCst);
        drop(l);
        super::victim::note_values();
    }

    fn pop_list(&self, victim: bool) -> Option<T> {
        // Relaxed: a hint; a stale zero is a miss, never a loss.
        if self.lists_len.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let mut l = self.lock();
        let v = if victim {
            l.victim.pop()
        } else {
            l.primary.pop()
        };
        if v.is_some() {
            self.lists_len
                .store(l.primary.len() + l.victim.len(), Ordering::SeqCst);
        }
        v
    }

    /// Starts a new generation: primary becomes victim and the old victim
    /// goes out (with `keep_victim` false, both go out). O(1): pointer swaps
    /// and one short lock; no value is touched.
    ///
    /// # Safety
    /// Pinned sections that started before this call may still be using what
    /// the returned [`Retired`] holds. Drop it only after a grace period
    /// that starts after this call returns (`pin::synchronize`, or under
    /// loom a heavy barrier plus `pin::wait_for_readers` on every record).
    pub(crate) unsafe fn rotate(&self, keep_victim: bool) -> Retired<T> {
        // SeqCst: the writer's half of the pin protocol (the heavy barrier
        // follows) and of the "any values" flag protocol.
        let p = self.primary.swap(ptr::null_mut(), Ordering::SeqCst);
        let gens = if keep_victim {
            [self.victim.swap(p, Ordering::SeqCst), ptr::null_mut()]
        } else {
            [self.victim.swap(ptr::null_mut(), Ordering::SeqCst), p]
        };
        self.victim_empty.store(ptr::null_mut(), Ordering::Relaxed);
        let mut l = self.lock();
        let primary = std::mem::take(&mut l.primary);
        let mut lists = std::mem::take(&mut l.victim);
        if keep_victim {
            l.victim = primary;
        } else {
            lists.extend(primary);
        }
        self.lists_len
            .store(l.primary.len() + l.victim.len(), Ordering::SeqCst);
        drop(l);
        Retired { gens, lists }
    }

    /// Whether the pool may hold values (conservative: a generation that
    /// exists may have been emptied since).
    pub(crate) fn may_hold_values(&self) -> bool {
        // SeqCst: see `victim::note_values`.
        !self.primary.load(Ordering::SeqCst).is_null()
            || !self.victim.load(Ordering::SeqCst).is_null()
            || self.lists_len.load(Ordering::SeqCst) > 0
    }
}

impl<T> Drop for PoolCore<T> {
    fn drop(&mut self) {
        let gens = [
            self.primary.swap(ptr::null_mut(), Ordering::Relaxed),
            self.victim.swap(ptr::null_mut(), Ordering::Relaxed),
        ]
        .map(|g| {
            // SAFETY: exclusive access: every pinned section runs inside a
            // method borrowing the pool, so none is running; a non-null `g`
            // came from Box::into_raw in `install_primary`.
            (!g.is_null()).then(|| unsafe { Box::from_raw(g) })
        });
        // An array (like the lists' Vecs) drops its other elements even if
        // one panics: a panicking value does not leak the rest.
        drop(gens);
    }
}

// SAFETY: the core owns values of type T (Send) and moves them between
// threads; it never shares `&T`. Its generations are Send + Sync for T: Send.
unsafe impl<T: Send> Send for PoolCore<T> {}
// SAFETY: as above; all shared access goes through atomics, the pin
// protocol, owner-only slots or the lists' mutex.
unsafe impl<T: Send> Sync for PoolCore<T> {}

/// What a rotation took out: dropping it drops the values (see
/// [`PoolCore::rotate`] for when that is allowed).
pub(crate) struct Retired<T> {
    gens: [*mut Gen<T>; 2],
    lists: Vec<T>,
}

impl<T> Retired<T> {
    /// Whether the rotation took nothing out.
    pub(crate) fn is_empty(&self) -> bool {
        self.gens.iter().all(|g| g.is_null()) && self.lists.is_empty()
    }
}

impl<T> Drop for Retired<T> {
    fn drop(&mut self) {
        let gens = self.gens.map(|g| {
            // SAFETY: unlinked by `rotate`, and (its contract) dropped only
            // after a grace period, so nobody else can reach it; a non-null
            // `g` came from Box::into_raw in `install_primary`.
            (!g.is_null()).then(|| unsafe { Box::from_raw(g) })
        });
        // As in `PoolCore::drop`: a panicking value does not leak the rest.
        // The lists' values (behind the lists' mutex, so no grace needed)
        // go with the fields.
        drop(gens);
    }
}

// SAFETY: a Retired owns the generations it names (nobody else reaches them
// once the grace period is over) and values of type T: Send.
unsafe impl<T: Send> Send for Retired<T> {}
