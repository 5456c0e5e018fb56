//! The monitor cycles pools on its own, and a pool holding values does not
//! keep an idle runtime awake: after its tasks leave values in a pool and
//! go idle, the monitor cycles at most twice (which drops them) and then
//! sleeps with no wakeups, even while a thread outside the runtime keeps a
//! value in another pool. (Its own test binary: pools and cycles are
//! process-wide, and no other test's threads may add wakeups.)
#![cfg(not(loom))]

mod support;

use goro::sync::Pool;
use std::sync::Arc;
use std::time::Duration;
use support::pool::Ledger;
use support::{thread_state, threads_named, wait_until};

#[test]
fn idle_runtime_cycles_pooled_values_out_then_sleeps() {
    let interval = Duration::from_millis(20);
    let ledger = Ledger::new();
    let l = ledger.clone();
    let pool = Arc::new(Pool::new(move || l.make()));
    let rt = goro::Runtime::builder()
        .procs(2)
        .thread_name("poolidle")
        .pool_cycle(interval)
        .build()
        .unwrap();
    let cycles0 = rt.stats().pool_cycles;
    let p = pool.clone();
    rt.block_on(async move {
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let p = p.clone();
                goro::spawn(async move {
                    let vals: Vec<_> = (0..50).map(|_| p.get().take()).collect();
                    for v in vals {
                        p.put(v.release());
                    }
                })
            })
            .collect();
        for h in hs {
            h.await.unwrap();
        }
    });
    // A thread outside the runtime keeps a value in another pool all along.
    let other = Arc::new(Pool::new(|| 0u64));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (o, st) = (other.clone(), stop.clone());
    let toucher = std::thread::spawn(move || {
        while !st.load(std::sync::atomic::Ordering::SeqCst) {
            let v = o.get();
            o.put(v + 1);
            std::thread::sleep(Duration::from_millis(2));
        }
    });
    // Nobody touches the pool any more: the monitor's cycles drop everything.
    wait_until(
        Duration::from_secs(20),
        "the monitor's cycles drop the values left in the pool",
        || ledger.all_dropped(),
    );
    assert_eq!(ledger.double_drops(), 0);
    let cycles = rt.stats().pool_cycles - cycles0;
    assert!(cycles >= 2, "values dropped after only {cycles} cycles");
    // Exact, per value: a value given back lives through two cycles, and
    // a cycle starts at least one interval after the previous one ended
    // (`sync/pool/victim.rs`), so no value is dropped sooner than one
    // interval after its `release` (which precedes its `put`).
    let life = ledger
        .min_pooled_life()
        .expect("values were pooled and dropped");
    assert!(
        life >= interval,
        "a value was dropped {life:?} after it was put back, under one interval ({interval:?})"
    );

    // Then the monitor sleeps, although the toucher keeps "some pool holds
    // values" true: its switch count and the cycle count stay put.
    // A thread's name in /proc is cut at 15 bytes.
    let mon = threads_named("poolidle-mon");
    assert_eq!(mon.len(), 1, "one monitor thread");
    let mon = mon[0];
    let mut prev = (thread_state(mon).unwrap().1, rt.stats().pool_cycles);
    wait_until(
        Duration::from_secs(10),
        "the monitor stops waking (a stable window of 10 intervals)",
        || {
            std::thread::sleep(interval * 10);
            let now = (thread_state(mon).unwrap().1, rt.stats().pool_cycles);
            let stable = now == prev;
            prev = now;
            stable
        },
    );
    std::thread::sleep(interval * 50);
    let after = (thread_state(mon).unwrap().1, rt.stats().pool_cycles);
    assert_eq!(
        after, prev,
        "the idle monitor woke (switches, cycles) over 50 cycle intervals"
    );
    assert_eq!(thread_state(mon).map(|s| s.0), Some('S'), "monitor asleep");
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    toucher.join().unwrap();
    drop(pool);
    wait_until(
        Duration::from_secs(20),
        "the pool's values dropped with it",
        || ledger.all_dropped(),
    );
}
