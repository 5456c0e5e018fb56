//! Every live task of a runtime, for the task dump, the deadlock check and
//! shutdown (Go's `allgs`).
//!
//! A task enters at spawn and leaves when its future is dropped (it
//! finished, was aborted, or the runtime shut down). The table holds a
//! pointer to each task's [`TaskMeta`], which lives in the task's header;
//! the pointer stays valid while the entry holds it because a task leaves
//! before its header can be freed (the future, whose drop removes the
//! entry, is dropped before the allocation is).
//!
//! Sharded by the spawning P, so spawns on different Ps take different
//! locks, and a task that finishes on the P that spawned it (the common
//! case) finds its shard's line in that P's cache. The lock is a spin
//! lock (`spin_lock.rs`: one swap to take, one store to release): every
//! spawn takes it, nearly always uncontended, held only for a few stores
//! or a reader's copy. Each shard's entries live in chunks that never move (a task's
//! record holds its entry's address) and are reused through a free list:
//! insert and remove are O(1) with no allocation in the steady state.
//!
//! # An exit away from its shard's P takes no lock
//!
//! With one spawner and thieves running its tasks (Go's shape: a loop
//! that starts a goroutine per job), every task is inserted into the
//! spawner's shard and removed on another core. When removal took the
//! shard's lock, that lock, its free list and its slots were one global
//! lock whose lines crossed the cores on every spawn and every exit:
//! insert and remove were 42% of `spawn_many`'s CPU at procs 2
//! (`bench/results/2026-11-29-spawn-many-p2-perf.txt`). So an exit clears
//! its entry without the lock and hands it back on the shard's returned
//! stack (lock-free push, taken whole by the next insert that finds its
//! free list empty), and counts itself in the shard's `gone`. An exit on
//! the thread that holds the shard's P (the task ran where it was
//! spawned) still takes the lock: uncontended there, and cheaper than the
//! fence. What the lock protected is kept another way:
//!
//! * **No record is read after its free.** Readers (the dump, the
//!   deadlock check) count themselves in `reading` before they read any
//!   entry and read each record pointer afterwards; an exit clears its
//!   pointer and then reads `reading`, a SeqCst fence between on each
//!   side. Either the reader sees the cleared pointer, or the exit sees
//!   the reader, and waits for its walk to end by taking the `walk` mutex
//!   the reader holds throughout (publish-fence-check again). Readers
//!   take turns on it; an exit that meets one waits for that walk, as a
//!   goroutine's exit waits out Go's stop-the-world dump.
//! * **A held reference is taken once.** A task that has parked has
//!   handed the table a reference to itself (below), which shutdown may be
//!   taking during its walk: the exit and shutdown each take the entry's
//!   `HELD` bit with a read-modify-write of the entry's word, so exactly
//!   one of them gets it.
//! * **An entry is reused only after its exit.** The push is a Release, the
//!   insert's take of the whole stack an Acquire.
//!
//! A cleared entry holds a tagged word (low bit set): on the returned
//! stack the word is the next entry's address, so an entry is that one
//! word. Rejected: a free bitmap (one more
//! contended line per exit), and batching exits per thread (a batched
//! record must outlive its task, which ties the table to the allocator).
//! After a burst, an insert that finds its shard empty and holding more
//! than sixteen chunks (every insert matched by a removal, the lock-free
//! ones counted in `gone` as their last touch) gives them all back.
//!
//! # A parked task's reference
//!
//! A task that parks hands the table one reference to itself, once, at
//! its first park ([`TaskTable::hold`]: the `HELD` bit of its entry's
//! word; the task adds the reference, `raw::held`). Shutdown turns each
//! held reference into a waker and wakes it, so that every parked
//! future is dropped (`Sched::shutdown`); the task's exit takes the bit
//! back and drops the reference if shutdown has not taken it. The
//! reference also keeps a task that nobody else can wake (a future that
//! dropped its waker) listed in the dump until shutdown, as a goroutine
//! blocked forever stays in Go's. Tasks that never park (the common case
//! in spawn-heavy code) never give one.
//!
//! Before, the entry kept a clone of the task's waker (two more words per
//! task, 16 bytes of every parked task's bill) under the shard's lock,
//! and so a first park took that lock and a parked task's exit took it
//! too; a bit and a reference need neither. Earlier still, a separate map
//! of wakers cost each parked task a hash entry (about 50 bytes at a
//! million tasks).
//!
//! Rejected: registering lazily, at a task's first park. A dump must also
//! list tasks that have never parked (queued, or running a long poll: the
//! one a user most needs to see).

use super::spin_lock::SpinLock;
use crate::loom::{fence, AtomicPtr, AtomicUsize, Mutex, Ordering, Unpoison};
use crate::sched::task::meta::TaskMeta;
use crossbeam_utils::CachePadded;

/// Shards: enough that Ps rarely share one; a P's shard is its id modulo.
#[cfg(not(loom))]
const SHARDS: usize = 64;
/// Under loom: fewer shards, the same sharding (P 0 and P 1 apart).
#[cfg(loom)]
const SHARDS: usize = 3;

/// Entries per chunk.
#[cfg(not(loom))]
const CHUNK: usize = 64;
/// Under loom: two, so that a model reaches a second chunk.
#[cfg(loom)]
const CHUNK: usize = 2;

/// Chunks a shard keeps however empty it is (1,024 entries); with more,
/// an insert into the empty shard gives them all back first.
#[cfg(not(loom))]
const KEEP_CHUNKS: usize = 16;
/// Under loom: one, so that a model reaches the give-back.
#[cfg(loom)]
const KEEP_CHUNKS: usize = 1;

/// The low bit of a cleared entry's word (module docs).
const CLEARED: usize = 1;
/// The bit of a live entry's word that says the table holds a reference
/// to the task (module docs, "A parked task's reference"). A record is
/// aligned to 8, so its address leaves both bits free.
const HELD: usize = 2;

pub(crate) struct TaskTable {
    shards: Box<[Shard]>,
    /// Readers walking the records now, each holding `walk` (module docs).
    reading: CachePadded<AtomicUsize>,
    /// Held by a reader for its whole walk; an exit that sees a reader
    /// counted takes it to wait for the walk's end.
    walk: Mutex<()>,
}

struct Shard {
    locked: CachePadded<SpinLock<Slots>>,
    /// What exits without the lock touch, on a line of its own.
    returns: CachePadded<Returns>,
}

/// A shard's exits without the lock.
struct Returns {
    /// Entries cleared without the lock, a stack linked through their
    /// words, taken whole by an insert.
    stack: AtomicPtr<Entry>,
    /// How many such exits have finished: an exit's last touch of the
    /// shard. `live - gone` is what the shard holds.
    gone: AtomicUsize,
}

/// What a shard's lock guards.
#[derive(Default)]
struct Slots {
    /// Every entry of the shard; a chunk never moves, and goes only in a
    /// give-back of the empty shard.
    chunks: Vec<Box<[Entry]>>,
    /// Entries free to take.
    free: Vec<*const Entry>,
    /// Inserted, less those removed under the lock.
    live: usize,
}

/// One task's place in a shard, one word: its record's address, with
/// `HELD` once it has parked; a cleared word has the low bit set (module
/// docs).
struct Entry {
    word: AtomicPtr<Entry>,
}

// SAFETY: the record pointers are only dereferenced while the entry holds
// them and a reader is counted in `reading` (module docs), which keeps the
// pointee alive; the pointee (`TaskMeta`) is Sync.
unsafe impl Send for Slots {}

impl Entry {
    fn cleared() -> Entry {
        Entry {
            word: AtomicPtr::new(CLEARED as *mut Entry),
        }
    }

    /// The record a word holds, if it holds one.
    fn record(w: *mut Entry) -> Option<*const TaskMeta> {
        (w as usize & CLEARED == 0).then_some((w as usize & !HELD) as *const TaskMeta)
    }

    /// Clears the entry; whether it held its task's reference, which is
    /// then the caller's.
    fn clear(&self) -> bool {
        // Relaxed: readers are ordered by the lock or the fences (module
        // docs); the `HELD` bit is decided by this swap's place in the
        // word's modification order, against shutdown's `take_held`.
        self.word.swap(CLEARED as *mut Entry, Ordering::Relaxed) as usize & HELD != 0
    }
}

impl TaskTable {
    pub(crate) fn new() -> TaskTable {
        TaskTable {
            shards: (0..SHARDS)
                .map(|_| Shard {
                    locked: CachePadded::new(SpinLock::new(Slots::default())),
                    returns: CachePadded::new(Returns {
                        stack: AtomicPtr::new(std::ptr::null_mut()),
                        gone: AtomicUsize::new(0),
                    }),
                })
                .collect(),
            reading: CachePadded::new(AtomicUsize::new(0)),
            walk: Mutex::new(()),
        }
    }

    /// Adds `meta`, spawned on P `p` (or without one).
    ///
    /// # Safety
    /// `meta` must stay valid until [`TaskTable::remove`] is called for it,
    /// and `remove` must be called before it is freed.
    pub(crate) unsafe fn insert(&self, meta: &TaskMeta, p: Option<usize>) {
        let shard_ix = shard_of(p);
        let shard = &self.shards[shard_ix];
        let mut slots = shard.locked.lock();
        if slots.chunks.len() > KEEP_CHUNKS {
            give_back_if_empty(shard, &mut slots);
        }
        let entry = match slots.free.pop() {
            Some(e) => e,
            None => refill(shard, &mut slots),
        };
        // SAFETY: just taken from this shard's free list under its lock;
        // chunks go only in a give-back, under this lock, before the take.
        let e = unsafe { &*entry };
        // Relaxed: readers read it under this lock.
        e.word
            .store(meta as *const TaskMeta as *mut Entry, Ordering::Relaxed);
        slots.live += 1;
        drop(slots);
        // Relaxed: read back by the task's own polls and exit
        // (`position`), which the run queue's hand-off orders after this.
        meta.slot.store(
            ((shard_ix as u64) << 48) | entry as usize as u64,
            Ordering::Relaxed,
        );
    }

    /// Records that the table holds a reference to `meta`'s task, which
    /// the caller has added (the task's first park). `false` if the task
    /// is not in the table: the reference stays the caller's.
    pub(crate) fn hold(&self, meta: &TaskMeta) -> bool {
        let Some((_, e)) = position(meta) else {
            return false;
        };
        // Relaxed: the bit's owner is decided by the word's modification
        // order (`Entry::clear`, `take_held`); the reference it stands for
        // was added before, by this thread.
        let _ = e
            .word
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |w| {
                Some((w as usize | HELD) as *mut Entry)
            });
        true
    }

    /// Removes `meta` (a no-op if it was never inserted). Called by the
    /// task's own exit, on the thread that polls or drops it. Returns
    /// whether the entry still held the task's reference
    /// ([`TaskTable::hold`]), which the caller must then drop.
    pub(crate) fn remove(&self, meta: &TaskMeta) -> bool {
        let Some((shard_ix, e)) = position(meta) else {
            return false;
        };
        // Relaxed, and no read-modify-write: only the task's own exit
        // (one thread) removes it.
        meta.slot.store(u64::MAX, Ordering::Relaxed);
        let shard = &self.shards[shard_ix];
        // Under the lock when this thread holds the shard's P: uncontended
        // then, its lines in this core's cache, and cheaper than the fence
        // below.
        if on_shards_p(shard_ix) {
            let mut slots = shard.locked.lock();
            let held = e.clear();
            slots.free.push(e);
            slots.live -= 1;
            return held;
        }
        // Without the lock (module docs): clear, fence, look for readers
        // (the exit's side of the pairing with a reader's count).
        let held = e.clear();
        fence(Ordering::SeqCst);
        self.wait_for_readers();
        let mut head = shard.returns.stack.load(Ordering::Relaxed);
        loop {
            e.word
                .store((head as usize | CLEARED) as *mut Entry, Ordering::Relaxed);
            // Release: the insert that takes the stack (Acquire) reuses the
            // entry only after this exit is done with it.
            match shard.returns.stack.compare_exchange_weak(
                head,
                e as *const Entry as *mut Entry,
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                Ok(_) => break,
                Err(h) => head = h,
            }
        }
        // Release: our last touch of the shard; an insert that reads the
        // count (Acquire) and finds the shard empty may free its chunks.
        shard.returns.gone.fetch_add(1, Ordering::Release);
        held
    }

    /// Waits until no reader that may have seen the cleared entry still
    /// walks the records (module docs): a reader counts itself while it
    /// holds `walk`, so taking `walk` waits for it to finish.
    fn wait_for_readers(&self) {
        // Acquire: reading a walk's decrement (Release) orders that walk's
        // reads before our return, and so before the free; a walk still
        // counted is waited for on `walk`, whose hand-over orders the same.
        if self.reading.load(Ordering::Acquire) != 0 {
            drop(self.walk.lock().unpoison());
        }
    }

    /// Takes every held reference back (shutdown): calls `f` with each
    /// task whose reference it took, which is then `f`'s. A walk, as
    /// [`TaskTable::for_each`]'s: `f` must not end a task.
    pub(crate) fn take_held(&self, mut f: impl FnMut(&TaskMeta)) {
        self.walk_entries(|e| {
            // Relaxed: as in `Entry::clear`, the exit's swap, which this
            // races with; the bit goes to whichever comes first.
            let took = e
                .word
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |w| {
                    (w as usize & (CLEARED | HELD) == HELD)
                        .then_some((w as usize & !HELD) as *mut Entry)
                });
            if let Some(m) = took.ok().and_then(Entry::record) {
                // SAFETY: the entry held it, and the walk keeps the record
                // alive (module docs).
                f(unsafe { &*m });
            }
        });
    }

    /// How many tasks are live, one shard's lock at a time (so a count
    /// taken while tasks spawn and exit on other Ps is approximate, as Go's
    /// `NumGoroutine` is).
    pub(crate) fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| {
                let live = s.locked.lock().live;
                live.saturating_sub(s.returns.gone.load(Ordering::Relaxed))
            })
            .sum()
    }

    /// Calls `f` for every live task, one shard's lock at a time. Exits
    /// that take no lock wait until it returns (module docs): `f` must not
    /// end a task.
    pub(crate) fn for_each(&self, mut f: impl FnMut(&TaskMeta)) {
        self.walk_entries(|e| {
            // Relaxed: the walk's fence orders it after our count, and the
            // record's fields were written before its insert, under the
            // shard's lock, which the walk holds.
            if let Some(m) = Entry::record(e.word.load(Ordering::Relaxed)) {
                // SAFETY: the entry holds it and we are counted in
                // `reading`, so its exit has not freed it (module docs).
                f(unsafe { &*m });
            }
        });
    }

    /// Calls `f` with every entry, as a counted reader, one shard's lock
    /// at a time.
    fn walk_entries(&self, mut f: impl FnMut(&Entry)) {
        // Hold `walk`, count, fence, then read the entries: the reader's
        // side of the pairing (module docs).
        let _walk = self.walk.lock().unpoison();
        self.reading.fetch_add(1, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        let _done = Reading(&self.reading);
        for shard in self.shards.iter() {
            let slots = shard.locked.lock();
            slots.chunks.iter().flat_map(|c| c.iter()).for_each(&mut f);
        }
    }
}

/// A reader's count in `reading`, given back however the walk ends.
struct Reading<'a>(&'a AtomicUsize);

impl Drop for Reading<'_> {
    fn drop(&mut self) {
        // Release: an exit that reads the count after it (Acquire) frees
        // the records it cleared only after this walk's reads.
        self.0.fetch_sub(1, Ordering::Release);
    }
}

/// Gives a shard's chunks back after a burst, if it holds no task and no
/// exit still touches it: a table that held a million tasks and now holds
/// none keeps no megabytes of entries. Called by an insert, under the
/// lock, which keeps readers out.
#[cold]
fn give_back_if_empty(shard: &Shard, slots: &mut Slots) {
    // Acquire: pairs with each lock-free exit's Release count, its last
    // touch of an entry; an exit not yet counted keeps `live` above `gone`.
    let gone = shard.returns.gone.load(Ordering::Acquire);
    if slots.live != gone {
        return;
    }
    // Every entry is free: on the list or on the stack (which points into
    // the chunks, so it goes with them).
    shard
        .returns
        .stack
        .store(std::ptr::null_mut(), Ordering::Relaxed);
    shard.returns.gone.store(0, Ordering::Relaxed);
    *slots = Slots::default();
}

/// An entry for an insert whose free list is empty: the entries exits
/// returned without the lock, else a new chunk's.
#[cold]
fn refill(shard: &Shard, slots: &mut Slots) -> *const Entry {
    // Acquire: pairs with the exits' Release pushes.
    let mut p = shard
        .returns
        .stack
        .swap(std::ptr::null_mut(), Ordering::Acquire);
    while !p.is_null() {
        slots.free.push(p);
        // SAFETY: a returned entry is free, and its chunk is this shard's
        // (a give-back empties the stack with the chunks, under the lock we
        // hold); its word is the next one's address, tagged.
        let next = unsafe { &*p }.word.load(Ordering::Relaxed) as usize & !CLEARED;
        p = next as *mut Entry;
    }
    if let Some(e) = slots.free.pop() {
        return e;
    }
    let chunk: Box<[Entry]> = (0..CHUNK).map(|_| Entry::cleared()).collect();
    // The shard rides above an entry's address in `TaskMeta::slot`:
    // user-space addresses have 47 bits on x86-64 and 48 on AArch64 unless
    // a program maps memory above them on purpose (Linux's 5-level
    // paging). Checked once per chunk, not per spawn.
    let end = chunk.as_ptr_range().end as usize as u64;
    assert!(
        end >> 48 == 0,
        "goro: a task-table chunk above 2^48 (ends at {end:#x})"
    );
    slots
        .free
        .extend(chunk[1..].iter().rev().map(|e| e as *const Entry));
    let first: *const Entry = &chunk[0];
    slots.chunks.push(chunk);
    first
}

/// The shard of a task spawned on P `p` (or without one).
fn shard_of(p: Option<usize>) -> usize {
    p.map_or(SHARDS - 1, |p| p % (SHARDS - 1))
}

/// Whether this thread holds a P whose shard is `shard_ix` (of any
/// runtime: the locked path is right for every exit, only slower).
fn on_shards_p(shard_ix: usize) -> bool {
    crate::sched::context::CTX
        .try_with(crate::sched::context::held_id)
        .ok()
        .flatten()
        .is_some_and(|p| shard_of(Some(p)) == shard_ix)
}

/// Where the table holds `meta`: its shard and entry, if it does.
fn position(meta: &TaskMeta) -> Option<(usize, &Entry)> {
    // Relaxed: written only by `insert` and `remove`, which the task's own
    // spawn and exit order before and after every other use.
    match meta.slot.load(Ordering::Relaxed) {
        u64::MAX => None,
        // SAFETY: the entry's address, written by `insert`; it stays while
        // its task is in the table (a give-back frees only the chunks of a
        // shard that holds no task), and the table outlives its tasks.
        slot => Some(((slot >> 48) as usize, unsafe {
            &*((slot & ((1 << 48) - 1)) as usize as *const Entry)
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::panic::Location;

    /// `n` fresh task records.
    fn records(n: usize) -> Vec<TaskMeta> {
        (0..n)
            .map(|_| {
                TaskMeta::new(
                    Location::caller(),
                    None,
                    None,
                    crate::sched::task::meta::Parent::SPAWNER,
                    1,
                )
            })
            .collect()
    }

    #[test]
    fn insert_remove_and_reuse() {
        let t = TaskTable::new();
        let metas = records(10);
        for (i, m) in metas.iter().enumerate() {
            // SAFETY: every meta outlives the table's use below and is
            // removed or outlives `t`.
            unsafe { t.insert(m, Some(i % 3)) };
        }
        let mut n = 0;
        t.for_each(|_| n += 1);
        assert_eq!(n, 10);
        for m in &metas[..5] {
            assert!(!t.remove(m), "a reference nobody handed over");
            assert!(!t.remove(m)); // twice is harmless
        }
        let mut seen = Vec::new();
        t.for_each(|m| seen.push(m.id));
        seen.sort();
        let want: Vec<_> = metas[5..].iter().map(|m| m.id).collect();
        assert_eq!(seen, want);
        for m in &metas[5..] {
            assert!(t.hold(m));
        }
        let mut taken = Vec::new();
        t.take_held(|m| taken.push(m.id));
        taken.sort();
        assert_eq!(taken, want, "shutdown takes each held reference");
        t.take_held(|_| panic!("a held reference taken twice"));
        for m in &metas[5..] {
            assert!(!t.remove(m), "the exit got a reference shutdown took");
        }
        let mut n = 0;
        t.for_each(|_| n += 1);
        assert_eq!(n, 0);
        assert_eq!(t.len(), 0);
    }

    /// A burst's chunks go back once the shard is empty, after exits
    /// without the lock (this thread holds no P), of tasks that parked and
    /// of tasks that did not.
    #[test]
    fn a_burst_gives_its_chunks_back() {
        let t = TaskTable::new();
        let n = (KEEP_CHUNKS + 3) * CHUNK;
        let metas = records(n + 1);
        for m in &metas[..n] {
            // SAFETY: each meta outlives its entry (removed below).
            unsafe { t.insert(m, Some(0)) };
        }
        assert_eq!(t.shards[0].locked.lock().chunks.len(), KEEP_CHUNKS + 3);
        assert_eq!(t.len(), n);
        for (i, m) in metas[..n].iter().enumerate() {
            if i % 2 == 0 {
                assert!(t.hold(m));
            }
            assert_eq!(t.remove(m), i % 2 == 0, "the exit takes its reference back");
        }
        assert_eq!(t.len(), 0);
        // SAFETY: removed below.
        unsafe { t.insert(&metas[n], Some(0)) };
        assert_eq!(
            t.shards[0].locked.lock().chunks.len(),
            1,
            "the empty shard kept its burst's chunks"
        );
        assert_eq!(t.len(), 1);
        assert!(!t.remove(&metas[n]));
    }
}
