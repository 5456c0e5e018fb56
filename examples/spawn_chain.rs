//! A task spawns the next, N deep; prints ns per spawn+run at procs 1 and 2.
//! (Go's BenchmarkCreateGoroutines chain shape; `goro-bench` runs the full
//! side-by-side comparison.)
//!
//! In Go:
//!
//! ```go
//! func link(left int, done chan<- struct{}) {
//!     if left == 0 {
//!         done <- struct{}{}
//!         return
//!     }
//!     go link(left-1, done)
//! }
//! ```
//!
//! Usage: `cargo run --release -p goro --example spawn_chain [N]`

use goro::chan::{self, Sender};
use std::time::Instant;

/// One link of the chain: starts the next link as its own task and
/// returns at once (its `JoinHandle` is dropped, which detaches the task,
/// as `go f()` does), so only a couple of tasks are alive at any time. The
/// last link reports on `done`.
fn link(left: u32, done: Sender<()>) {
    if left == 0 {
        // `done` has room for the one value ever sent: this never waits.
        done.try_send(()).expect("the chain reports once");
    } else {
        goro::spawn(async move { link(left - 1, done) });
    }
}

/// Runs one chain of `n` tasks and waits for its end.
async fn chain(n: u32) {
    let (done_tx, done_rx) = chan::bounded::<()>(1);
    // The first link is awaited through its JoinHandle (a panic in it
    // would surface here); the rest report through the channel.
    goro::spawn(async move { link(n, done_tx) })
        .await
        .expect("the first link panicked");
    done_rx.recv().await.expect("the last link reports");
}

fn main() {
    let n: u32 = std::env::args()
        .nth(1)
        .map(|s| s.parse().expect("N must be a positive integer"))
        .unwrap_or(100_000);
    for procs in [1, 2] {
        let rt = goro::Runtime::builder()
            .procs(procs)
            .build()
            .expect("runtime");
        let mut runs = Vec::new();
        for _ in 0..7 {
            let t = Instant::now();
            rt.block_on(chain(n));
            runs.push(t.elapsed().as_nanos() as f64 / n as f64);
        }
        runs.sort_by(f64::total_cmp);
        println!(
            "spawn_chain procs={procs} n={n}: median {:.1} ns/op (min {:.1}, max {:.1})",
            runs[3], runs[0], runs[6]
        );
    }
}
