//! n tasks in a ring over rendezvous channels pass one token around; prints
//! ns per hop at procs 1 and 2 (Go's GoroutineRing shape; seed 004).
//!
//! Usage: `cargo run --release -p goro --example ring [N_TASKS] [HOPS]`

use std::time::Instant;

async fn ring(n: usize, hops: u64) {
    let (first_tx, mut prev_rx) = goro::chan::bounded::<u64>(0);
    for _ in 1..n {
        let (tx, rx) = goro::chan::bounded::<u64>(0);
        let inbox = std::mem::replace(&mut prev_rx, rx);
        goro::spawn(async move {
            while let Ok(v) = inbox.recv().await {
                if tx.send(v + 1).await.is_err() {
                    return;
                }
            }
        });
    }
    let back = prev_rx;
    let mut v = 0;
    while v < hops {
        first_tx.send(v + 1).await.expect("ring link");
        v = back.recv().await.expect("ring link");
    }
    // Dropping the first sender closes the ring link by link.
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args
        .next()
        .map(|s| s.parse().expect("N_TASKS: a positive integer"))
        .unwrap_or(100);
    let hops: u64 = args
        .next()
        .map(|s| s.parse().expect("HOPS: a positive integer"))
        .unwrap_or(1_000_000);
    assert!(n >= 1, "N_TASKS must be at least 1");
    for procs in [1, 2] {
        let rt = goro::Runtime::builder()
            .procs(procs)
            .build()
            .expect("runtime");
        let mut runs = Vec::new();
        for _ in 0..5 {
            let t = Instant::now();
            rt.block_on(rt.spawn(ring(n, hops))).unwrap();
            runs.push(t.elapsed().as_nanos() as f64 / hops as f64);
        }
        runs.sort_by(f64::total_cmp);
        println!(
            "ring n={n} procs={procs}: median {:.1} ns/hop (min {:.1}, max {:.1})",
            runs[2], runs[0], runs[4]
        );
    }
}
