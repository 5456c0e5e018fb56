//! loom models of the pool's lock-free parts.
//!
//! Run with:
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 CARGO_TARGET_DIR=target/loom cargo test -p goro --release --lib loom_pool`
//!
//! Constants are loom-sized: rings of 2 then 4 slots, chunks of 2 slots.
//! Every value slot is a loom `UnsafeCell`, so loom itself fails a model in
//! which two threads could touch one value at once (an owner overwriting a
//! slot a thief is still reading; a cycle dropping a generation an owner is
//! still using). The models also check that every value comes out exactly
//! once: taken by one thread, or left in the structure and dropped with it.
//!
//! The cycle models run the cycle as `victim.rs` and `reclaim.rs` do: the
//! cycling thread rotates, and what went out is dropped after a grace
//! period, either by the same thread or (the usual case) by the reclaimer
//! thread, which receives it through a mutex-protected queue.
//!
//! Each model was checked against a planted bug (see the test docs).

use super::chain::{Chain, Ring};
use super::core::{Found, PoolCore, Retired, Who};
use super::pin::{heavy_barrier, wait_for_readers, PinRecord};
use crate::loom::thread;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};

/// Runs `f` under loom with a default preemption bound of 3
/// (`LOOM_MAX_PREEMPTIONS` overrides it).
fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound.get_or_insert(3);
    b.check(f);
}

/// A value that records its drops in a per-execution ledger.
struct V {
    id: usize,
    drops: Arc<Vec<AtomicUsize>>,
}

impl Drop for V {
    fn drop(&mut self) {
        self.drops[self.id].fetch_add(1, SeqCst);
    }
}

fn ledger(n: usize) -> Arc<Vec<AtomicUsize>> {
    Arc::new((0..n).map(|_| AtomicUsize::new(0)).collect())
}

fn v(id: usize, drops: &Arc<Vec<AtomicUsize>>) -> V {
    V {
        id,
        drops: drops.clone(),
    }
}

fn assert_each_dropped_once(drops: &[AtomicUsize], what: &str) {
    let counts: Vec<usize> = drops.iter().map(|d| d.load(SeqCst)).collect();
    assert!(
        counts.iter().all(|&c| c == 1),
        "{what}: drops per value {counts:?} (each must be exactly 1)"
    );
}

/// The ring's owner pops at the head and pushes again (wrapping around the
/// two slots) while a thief pops at the tail. Every value is taken once:
/// by the owner, by the thief, or drained at the end; a push that finds the
/// ring full keeps its value.
///
/// Planted bug, caught: without the `full` check in `push_head`, the owner
/// reuses a slot the thief has claimed but not yet read (loom reports the
/// concurrent access to the slot's cell).
#[test]
fn loom_pool_ring_owner_and_thief_with_wraparound() {
    model(|| {
        let taken = Arc::new(Mutex::new(Vec::new()));
        let ring = Arc::new(Ring::new(2));
        // SAFETY: this thread is the ring's only producer.
        unsafe {
            ring.push_head(0usize).unwrap();
            ring.push_head(1).unwrap();
        }
        let (r, t) = (ring.clone(), taken.clone());
        let thief = thread::spawn(move || {
            for _ in 0..2 {
                if let Some(x) = r.pop_tail() {
                    t.lock().unwrap().push(x);
                }
            }
        });
        let mut kept = Vec::new();
        // SAFETY: as above.
        unsafe {
            if let Some(x) = ring.pop_head() {
                taken.lock().unwrap().push(x);
            }
            for x in [2, 3] {
                if let Err(x) = ring.push_head(x) {
                    kept.push(x);
                }
            }
            if let Some(x) = ring.pop_head() {
                taken.lock().unwrap().push(x);
            }
        }
        thief.join().unwrap();
        while let Some(x) = ring.pop_tail() {
            taken.lock().unwrap().push(x);
        }
        let mut all = taken.lock().unwrap().clone();
        all.extend(kept);
        all.sort();
        assert_eq!(all, vec![0, 1, 2, 3], "each value exactly once");
    });
}

/// The chain grows (ring of 2 to ring of 4) while a thief steals from the
/// tail and advances it past an exhausted ring. Every value pushed is taken
/// once, and none is stranded: what the thief did not take, the owner's
/// `pop_head` and a final `pop_tail` still find.
///
/// Planted bug, caught: loading the ring's `next` *after* the failed
/// `pop_tail` (instead of before) lets the thief unlink a ring the owner
/// refilled in between, stranding its values (the final drain misses them).
#[test]
fn loom_pool_chain_grows_while_a_thief_steals() {
    model(|| {
        let taken = Arc::new(Mutex::new(Vec::new()));
        let chain = Arc::new(Chain::new());
        // SAFETY: this thread is the chain's only owner.
        unsafe { chain.push_head(0usize) };
        let (c, t) = (chain.clone(), taken.clone());
        let thief = thread::spawn(move || {
            for _ in 0..2 {
                if let Some(x) = c.pop_tail() {
                    t.lock().unwrap().push(x);
                }
            }
        });
        // SAFETY: as above.
        unsafe {
            if let Some(x) = chain.pop_head() {
                taken.lock().unwrap().push(x);
            }
            // Refill the first ring and overflow into a second one.
            for x in 1..=3 {
                chain.push_head(x);
            }
        }
        thief.join().unwrap();
        // SAFETY: as above (the thief is gone).
        while let Some(x) = unsafe { chain.pop_head() } {
            taken.lock().unwrap().push(x);
        }
        while let Some(x) = chain.pop_tail() {
            taken.lock().unwrap().push(x);
        }
        let mut all = taken.lock().unwrap().clone();
        all.sort();
        assert_eq!(
            all,
            vec![0, 1, 2, 3],
            "each value exactly once, none stranded"
        );
    });
}

/// Two cycles (victim cache on) race an owner's put, get, put on its slot.
/// The cycle drops what it rotated out only after a grace period. Every
/// value is dropped exactly once (by the owner after its get, by the
/// second cycle, or with the pool), and loom checks that no cycle drops a
/// generation while the owner touches it.
///
/// Planted bugs, caught: (1) `PinRecord::pin` without its barrier (the
/// owner's pin can be missed while it uses the old generation); (2)
/// `wait_for_readers` that does not wait; (3) a `Relaxed` instead of
/// `Release` store entering a section (a cycle that sees the *next* section
/// start learns nothing about the previous one's accesses). Each: loom
/// reports the drop of a slot racing the owner's access.
#[test]
fn loom_pool_cycles_race_an_owners_put_and_get() {
    model(|| {
        let drops = ledger(2);
        let core = Arc::new(PoolCore::<V>::new());
        let rec = Arc::new(PinRecord::new());
        let (c, r, d) = (core.clone(), rec.clone(), drops.clone());
        let owner = thread::spawn(move || {
            // SAFETY: this thread alone uses slot 0 and `r`.
            let who = unsafe { Who::owner(Some(0), &r) };
            c.put(&who, v(0, &d));
            let got = c.get(&who);
            c.put(&who, v(1, &d));
            match got {
                Found::Primary(x) | Found::Victim(x) => assert_eq!(x.id, 0),
                Found::Nothing => {}
            }
        });
        for _ in 0..2 {
            // SAFETY: dropped after the grace period below.
            let out = unsafe { core.rotate(true) };
            heavy_barrier();
            wait_for_readers([&*rec]);
            drop(out);
        }
        owner.join().unwrap();
        drop(core);
        assert_each_dropped_once(&drops, "cycles vs owner");
    });
}

/// A thief without a slot (a guest) steals from the owner's chain while a
/// cycle with the victim cache off drops everything. The owner's first
/// value sits in its private slot, the second in its chain. No value is
/// handed out twice and every value is dropped exactly once.
///
/// Planted bug, caught: `wait_for_readers` that does not wait (loom reports
/// the dropped ring slot racing the guest's read; without the pin barrier
/// the guest even reads freed memory).
#[test]
fn loom_pool_guest_steals_while_a_cycle_drops_everything() {
    model(|| {
        let drops = ledger(2);
        let core = Arc::new(PoolCore::<V>::new());
        let (owner_rec, guest_rec) = (PinRecord::new(), Arc::new(PinRecord::new()));
        {
            // SAFETY: this thread alone uses slot 0 and `owner_rec`.
            let who = unsafe { Who::owner(Some(0), &owner_rec) };
            core.put(&who, v(0, &drops));
            core.put(&who, v(1, &drops));
        }
        let (c, g) = (core.clone(), guest_rec.clone());
        let guest = thread::spawn(move || {
            // SAFETY: this thread alone uses `g`.
            let who = unsafe { Who::guest(&g) };
            match c.get(&who) {
                Found::Primary(x) | Found::Victim(x) => {
                    assert_eq!(x.id, 1, "a guest can only steal the chain's value")
                }
                Found::Nothing => {}
            }
        });
        // SAFETY: dropped after the grace period below.
        let out = unsafe { core.rotate(false) };
        heavy_barrier();
        wait_for_readers([&owner_rec, &*guest_rec]);
        drop(out);
        guest.join().unwrap();
        drop(core);
        assert_each_dropped_once(&drops, "guest vs cycle");
    });
}

/// The cycle split as in `reclaim.rs`: the cycling thread rotates twice
/// (victim cache on) and hands each batch over a mutex-protected queue; a
/// reclaimer thread takes whatever has arrived, waits a grace period and
/// drops it, racing the second rotation and an owner's put, get, put; the
/// cycling thread reclaims what the reclaimer did not take (as a cycle does
/// when the reclaimer is too far behind). Every value is dropped exactly
/// once, and loom checks that no generation is dropped while the owner
/// touches it although the grace period runs on a thread that did not
/// rotate.
///
/// Planted bugs, caught: (1) the reclaimer drops without `wait_for_readers`;
/// (2) the reclaimer runs its grace period first and takes the batches
/// after it, so the grace period may start before a rotation it must cover.
/// Each: loom reports the drop of a slot racing the owner's access.
#[test]
fn loom_pool_reclaimer_thread_drops_after_a_grace_period() {
    model(|| {
        let drops = ledger(2);
        let core = Arc::new(PoolCore::<V>::new());
        let rec = Arc::new(PinRecord::new());
        let queue = Arc::new(crate::loom::Mutex::new(Vec::<Retired<V>>::new()));
        let (c, r, d) = (core.clone(), rec.clone(), drops.clone());
        let owner = thread::spawn(move || {
            // SAFETY: this thread alone uses slot 0 and `r`.
            let who = unsafe { Who::owner(Some(0), &r) };
            c.put(&who, v(0, &d));
            let got = c.get(&who);
            c.put(&who, v(1, &d));
            match got {
                Found::Primary(x) | Found::Victim(x) => assert_eq!(x.id, 0),
                Found::Nothing => {}
            }
        });
        let (q, r) = (queue.clone(), rec.clone());
        let reclaimer = thread::spawn(move || {
            let batches = std::mem::take(&mut *q.lock().unwrap());
            heavy_barrier();
            wait_for_readers([&*r]);
            drop(batches);
        });
        for _ in 0..2 {
            // SAFETY: dropped after a grace period that starts after the
            // hand-over (by the reclaimer, or below).
            let out = unsafe { core.rotate(true) };
            queue.lock().unwrap().push(out);
        }
        reclaimer.join().unwrap();
        let rest = std::mem::take(&mut *queue.lock().unwrap());
        heavy_barrier();
        wait_for_readers([&*rec]);
        drop(rest);
        owner.join().unwrap();
        drop(core);
        assert_each_dropped_once(&drops, "cycles, reclaimer and owner");
    });
}
