//! A three-stage pipeline over buffered channels (generate → square → sum),
//! with a WaitGroup for the workers of the middle stage: the shape of most
//! Go programs that use channels.
//!
//! Usage: `cargo run --release -p goro --example pipeline [N] [WORKERS]`

use goro::chan;
use goro::sync::WaitGroup;

#[goro::main]
async fn main() {
    // `Args` is not `Send`: read it in a block that ends before the first
    // `.await` (main's body is a task, and may move between threads).
    let (n, workers) = {
        let mut args = std::env::args().skip(1);
        let n: u64 = args
            .next()
            .map(|s| s.parse().expect("N: a positive integer"))
            .unwrap_or(1_000_000);
        let workers: usize = args
            .next()
            .map(|s| s.parse().expect("WORKERS: a positive integer"))
            .unwrap_or(4);
        (n, workers)
    };

    let (num_tx, num_rx) = chan::bounded::<u64>(64);
    let (sq_tx, sq_rx) = chan::bounded::<u64>(64);

    let start = std::time::Instant::now();
    goro::spawn(async move {
        for i in 0..n {
            num_tx.send(i).await.expect("stage 1");
        }
        // num_tx dropped: stage 2 sees the channel closed once drained.
    });

    let wg = WaitGroup::new();
    for _ in 0..workers {
        wg.add(1);
        let (rx, tx, wg) = (num_rx.clone(), sq_tx.clone(), wg.clone());
        goro::spawn(async move {
            while let Ok(v) = rx.recv().await {
                tx.send(v * v).await.expect("stage 2");
            }
            wg.done();
        });
    }
    // Go's `go func() { wg.Wait(); close(squares) }()`: the last sender
    // closes the channel once every worker is done.
    goro::spawn(async move {
        wg.wait().await;
        sq_tx.close();
    });

    let mut sum: u128 = 0;
    while let Ok(v) = sq_rx.recv().await {
        sum += v as u128;
    }
    let want: u128 = (0..n as u128).map(|i| i * i).sum();
    assert_eq!(sum, want, "every value went through the pipeline once");
    println!(
        "pipeline n={n} workers={workers}: sum of squares {sum} in {:?} ({:.1} ns/item)",
        start.elapsed(),
        start.elapsed().as_nanos() as f64 / n as f64
    );
}
