//! Every live task of a runtime, for the task dump, the deadlock check and
//! shutdown (Go's `allgs`).
//!
//! A task enters at spawn and leaves when its future is dropped (it
//! finished, was aborted, or the runtime shut down). The table holds a
//! pointer to each task's [`TaskMeta`], which lives in the task's header;
//! the pointer stays valid while the entry is in the table because a task
//! leaves before its header can be freed (the future, whose drop removes
//! the entry, is dropped before the allocation is), and both insert and
//! remove take the shard's lock that a reader holds while it reads.
//!
//! Sharded by the spawning P, so spawns on different Ps take different
//! locks, and a task that finishes on the P that spawned it (the common
//! case) finds its shard's line in that P's cache. The lock is a spin lock
//! (one swap to take, one store to release): every spawn and every exit
//! take it, nearly always uncontended, and held only for a few stores or
//! a dump's copy; a futex mutex's second atomic on release cost spawning
//! a measurable share. Each shard is a slot
//! vector with a free list: insert and remove are O(1) with no allocation
//! in the steady state. A reader holds one shard's lock at a time, only to
//! copy its entries' fields, so it delays a spawn on that P by at most that
//! copy and never waits for a task.
//!
//! A task that parks hands the table a waker, once, at its first park
//! ([`TaskTable::keep_waker`]): shutdown wakes every task that holds one so
//! that its future is dropped (`Sched::shutdown`). The waker rides in the
//! task's own entry; a separate map of wakers cost each parked task a hash
//! entry (about 50 bytes at a million tasks) and each first park a second
//! lock. Tasks that never park (the common case in spawn-heavy code) never
//! give one.
//!
//! Rejected: registering lazily, at a task's first park. A dump must also
//! list tasks that have never parked (queued, or running a long poll: the
//! one a user most needs to see).

use crate::loom::cell::{MutPtr, UnsafeCell};
#[cfg(not(loom))]
use crate::sched::backoff::Backoff;
use crate::sched::task::meta::TaskMeta;
use crossbeam_utils::CachePadded;
use std::sync::atomic::Ordering;
use std::task::Waker;

/// Shards: enough that Ps rarely share one; a P's shard is its id modulo.
#[cfg(not(loom))]
const SHARDS: usize = 64;
/// Under loom: fewer shards, the same sharding (P 0 and P 1 apart).
#[cfg(loom)]
const SHARDS: usize = 3;

pub(crate) struct TaskTable {
    shards: Box<[CachePadded<SpinLock<Shard>>]>,
}

/// A lock for a few instructions' hold (module docs); a waiter backs off
/// with `Backoff::task_table` (spins, then yields). Under loom it is
/// loom's mutex: the models check the table's protocol above the lock, and
/// a spinning acquire would only multiply loom's branches.
struct SpinLock<T> {
    #[cfg(not(loom))]
    locked: std::sync::atomic::AtomicBool,
    #[cfg(loom)]
    locked: loom::sync::Mutex<()>,
    value: UnsafeCell<T>,
}

// SAFETY: the value is only reached through the guard, which the lock
// hands to one thread at a time.
unsafe impl<T: Send> Sync for SpinLock<T> {}

impl<T> SpinLock<T> {
    fn new(value: T) -> SpinLock<T> {
        SpinLock {
            locked: Default::default(),
            value: UnsafeCell::new(value),
        }
    }

    fn lock(&self) -> SpinGuard<'_, T> {
        #[cfg(not(loom))]
        {
            let mut backoff = Backoff::task_table();
            // Acquire: pairs with the Release in `SpinGuard::drop`.
            while self.locked.swap(true, Ordering::Acquire) {
                while self.locked.load(Ordering::Relaxed) {
                    backoff.snooze();
                }
            }
        }
        SpinGuard {
            lock: self,
            #[cfg(loom)]
            _held: self.locked.lock().unwrap(),
            value: self.value.get_mut(),
        }
    }
}

/// The lock, held: the only way to the value (loom checks every access
/// through `value` against the others while the guard lives).
struct SpinGuard<'a, T> {
    #[cfg_attr(loom, allow(dead_code))]
    lock: &'a SpinLock<T>,
    #[cfg(loom)]
    _held: loom::sync::MutexGuard<'a, ()>,
    value: MutPtr<T>,
}

impl<T> std::ops::Deref for SpinGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: we hold the lock.
        unsafe { self.value.deref() }
    }
}

impl<T> std::ops::DerefMut for SpinGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: we hold the lock, and `&mut self` makes this the only
        // reference through the guard.
        unsafe { self.value.deref() }
    }
}

impl<T> Drop for SpinGuard<'_, T> {
    fn drop(&mut self) {
        // Release: what we wrote under the lock is seen by the next holder.
        #[cfg(not(loom))]
        self.lock.locked.store(false, Ordering::Release);
    }
}

#[derive(Default)]
struct Shard {
    slots: Vec<Entry>,
    free: Vec<u32>,
    live: usize,
}

/// One task's place in a shard: its record (null: a free slot) and, once
/// it has parked, a waker for shutdown.
struct Entry {
    meta: *const TaskMeta,
    waker: Option<Waker>,
}

// SAFETY: the pointers are only dereferenced under the shard's lock, while
// the entry is present, which keeps the pointee alive (module docs); the
// pointee (`TaskMeta`) is Sync, and `Waker` is Send.
unsafe impl Send for Shard {}

impl TaskTable {
    pub(crate) fn new() -> TaskTable {
        TaskTable {
            shards: (0..SHARDS)
                .map(|_| CachePadded::new(SpinLock::new(Shard::default())))
                .collect(),
        }
    }

    /// Adds `meta`, spawned on P `p` (or without one).
    ///
    /// # Safety
    /// `meta` must stay valid until [`TaskTable::remove`] is called for it,
    /// and `remove` must be called before it is freed.
    pub(crate) unsafe fn insert(&self, meta: &TaskMeta, p: Option<usize>) {
        let shard_ix = p.map_or(SHARDS - 1, |p| p % (SHARDS - 1));
        let mut shard = self.shards[shard_ix].lock();
        let entry = Entry { meta, waker: None };
        let ix = match shard.free.pop() {
            Some(ix) => {
                shard.slots[ix as usize] = entry;
                ix
            }
            None => {
                shard.slots.push(entry);
                (shard.slots.len() - 1) as u32
            }
        };
        shard.live += 1;
        // Relaxed: read back by the task's own polls and exit
        // (`position`), which the run queue's hand-off orders after this.
        meta.slot
            .store(((shard_ix as u64) << 32) | ix as u64, Ordering::Relaxed);
    }

    /// Keeps `waker`, the waker of `meta`'s task, for shutdown (the task's
    /// first park; a no-op if the task is not in the table).
    pub(crate) fn keep_waker(&self, meta: &TaskMeta, waker: &Waker) {
        // Relaxed: written by `insert` on the spawning thread, which
        // happens-before any poll of the task (the queue hand-off).
        let Some((shard_ix, ix)) = position(meta) else {
            return;
        };
        let waker = Some(waker.clone());
        let old = std::mem::replace(&mut self.shards[shard_ix].lock().slots[ix].waker, waker);
        drop(old); // after the lock: a waker's drop may run the task's code
    }

    /// Removes `meta` (a no-op if it was never inserted). Called by the
    /// task's own exit, on the thread that polls or drops it.
    pub(crate) fn remove(&self, meta: &TaskMeta) {
        let Some((shard_ix, ix)) = position(meta) else {
            return;
        };
        // Relaxed, and no read-modify-write: only the task's own exit
        // (one thread) removes it.
        meta.slot.store(u64::MAX, Ordering::Relaxed);
        let waker = {
            let mut shard = self.shards[shard_ix].lock();
            let entry = std::mem::replace(
                &mut shard.slots[ix],
                Entry {
                    meta: std::ptr::null(),
                    waker: None,
                },
            );
            shard.free.push(ix as u32);
            shard.live -= 1;
            // Give memory back after a burst: a table that held a million
            // tasks and now holds a hundred keeps no megabytes of free slots.
            if shard.live == 0 && shard.slots.capacity() > 1024 {
                *shard = Shard::default();
            }
            entry.waker
        };
        drop(waker); // after the lock, as in `keep_waker`
    }

    /// Takes every kept waker out (shutdown), one shard's lock at a time.
    pub(crate) fn take_wakers(&self) -> Vec<Waker> {
        let mut out = Vec::new();
        for shard in self.shards.iter() {
            let mut shard = shard.lock();
            out.extend(shard.slots.iter_mut().filter_map(|e| e.waker.take()));
        }
        out
    }

    /// How many tasks are live, one shard's lock at a time (so a count
    /// taken while tasks spawn and exit on other Ps is approximate, as Go's
    /// `NumGoroutine` is).
    pub(crate) fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().live).sum()
    }

    /// Calls `f` for every live task, one shard's lock at a time.
    pub(crate) fn for_each(&self, mut f: impl FnMut(&TaskMeta)) {
        for shard in self.shards.iter() {
            let shard = shard.lock();
            for e in shard.slots.iter().filter(|e| !e.meta.is_null()) {
                // SAFETY: present in the table under its lock, so alive
                // (module docs; `insert`'s contract).
                f(unsafe { &*e.meta });
            }
        }
    }
}

/// Where the table holds `meta`: shard and index, if it does.
fn position(meta: &TaskMeta) -> Option<(usize, usize)> {
    // Relaxed: written only by `insert` and `remove`, which the task's own
    // spawn and exit order before and after every other use.
    match meta.slot.load(Ordering::Relaxed) {
        u64::MAX => None,
        slot => Some(((slot >> 32) as usize, slot as u32 as usize)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::panic::Location;

    #[test]
    fn insert_remove_and_reuse() {
        let t = TaskTable::new();
        let metas: Vec<TaskMeta> = (0..10)
            .map(|_| {
                TaskMeta::new(
                    Location::caller(),
                    None,
                    None,
                    crate::sched::task::meta::Parent::SPAWNER,
                    1,
                )
            })
            .collect();
        for (i, m) in metas.iter().enumerate() {
            // SAFETY: every meta outlives the table's use below and is
            // removed or outlives `t`.
            unsafe { t.insert(m, Some(i % 3)) };
        }
        let mut n = 0;
        t.for_each(|_| n += 1);
        assert_eq!(n, 10);
        for m in &metas[..5] {
            t.remove(m);
            t.remove(m); // twice is harmless
        }
        let mut seen = Vec::new();
        t.for_each(|m| seen.push(m.id));
        seen.sort();
        let want: Vec<_> = metas[5..].iter().map(|m| m.id).collect();
        assert_eq!(seen, want);
        for m in &metas[5..] {
            t.remove(m);
        }
        let mut n = 0;
        t.for_each(|_| n += 1);
        assert_eq!(n, 0);
    }
}
