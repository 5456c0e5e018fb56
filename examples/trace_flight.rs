//! A flight recorder under load: a ring of tasks passing a token, a
//! spawner of short tasks and a few sleepers run for a while; the
//! recorder keeps the last WINDOW_MS, and a snapshot is taken while the
//! load still runs. `scripts/check-trace.sh OUT --snapshot WINDOW_S`
//! then checks that no task lost history inside the window.
//!
//! Usage: `cargo run --release -p goro --example trace_flight -- OUT.pftrace [WINDOW_MS]`

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn main() {
    let mut args = std::env::args().skip(1);
    let out = args
        .next()
        .expect("usage: trace_flight OUT.pftrace [WINDOW_MS]");
    let window_ms: u64 = args
        .next()
        .map(|s| {
            s.parse()
                .expect("WINDOW_MS: a whole number of milliseconds")
        })
        .unwrap_or(50);
    let rt = goro::Runtime::builder().procs(2).build().expect("runtime");
    let fr = rt
        .flight_recorder(Duration::from_millis(window_ms))
        .expect("flight recorder");
    let stop = Arc::new(AtomicBool::new(false));
    let hops = Arc::new(AtomicU64::new(0));
    let spawned = Arc::new(AtomicU64::new(0));

    // A ring of 10 tasks over rendezvous channels.
    let (first_tx, mut prev_rx) = goro::chan::bounded::<u64>(0);
    for _ in 1..10 {
        let (tx, rx) = goro::chan::bounded::<u64>(0);
        let inbox = std::mem::replace(&mut prev_rx, rx);
        rt.spawn_named("ring link", async move {
            while let Ok(v) = inbox.recv().await {
                if tx.send(v + 1).await.is_err() {
                    return;
                }
            }
        });
    }
    let (s, h) = (stop.clone(), hops.clone());
    let ring = rt.spawn_named("ring head", async move {
        while !s.load(Ordering::Relaxed) {
            first_tx.send(1).await.unwrap();
            prev_rx.recv().await.unwrap();
            h.fetch_add(1, Ordering::Relaxed);
        }
    });
    // A spawner of short-lived tasks, and sleepers.
    let (s, n) = (stop.clone(), spawned.clone());
    let spawner = rt.spawn_named("spawner", async move {
        while !s.load(Ordering::Relaxed) {
            let hs: Vec<_> = (0..100).map(|i| goro::spawn(async move { i })).collect();
            for h in hs {
                h.await.unwrap();
            }
            n.fetch_add(100, Ordering::Relaxed);
            goro::time::sleep(Duration::from_micros(200)).await;
        }
    });
    let sleepers: Vec<_> = (0..4)
        .map(|i| {
            let s = stop.clone();
            rt.spawn(async move {
                while !s.load(Ordering::Relaxed) {
                    goro::time::sleep(Duration::from_micros(500 + 100 * i)).await;
                }
            })
        })
        .collect();

    // Let the load run for ten windows, then snapshot while it runs.
    let t = Instant::now();
    while t.elapsed() < Duration::from_millis(10 * window_ms).max(Duration::from_millis(500)) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let before = hops.load(Ordering::Relaxed);
    let file = std::fs::File::create(&out).expect("create the snapshot file");
    let t = Instant::now();
    fr.snapshot(std::io::BufWriter::new(file))
        .expect("snapshot");
    let took = t.elapsed();
    let after = hops.load(Ordering::Relaxed);
    stop.store(true, Ordering::Relaxed);
    rt.block_on(async {
        ring.await.unwrap();
        spawner.await.unwrap();
        for s in sleepers {
            s.await.unwrap();
        }
    });
    println!(
        "window {window_ms} ms; snapshot in {took:?} while the ring made {} hops; \
         {} hops and {} spawns in all; recorder held {} bytes (bound {})",
        after - before,
        hops.load(Ordering::Relaxed),
        spawned.load(Ordering::Relaxed),
        fr.buffered_bytes(),
        fr.bound_bytes()
    );
    assert!(after > before, "the load did not run during the snapshot");
}
