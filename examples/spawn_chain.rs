//! A task spawns the next, N deep; prints ns per spawn+run at procs 1 and 2.
//! (Go's BenchmarkCreateGoroutines chain shape; `goro-bench` runs the full
//! side-by-side comparison.)
//!
//! Usage: `cargo run --release --example spawn_chain [N]`

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Instant;

/// A one-shot "done" signal (the example predates goro's channels).
#[derive(Clone, Default)]
struct Done(Arc<(AtomicBool, Mutex<Option<Waker>>)>);

impl Done {
    fn finish(&self) {
        self.0 .0.store(true, Ordering::Release);
        if let Some(w) = self.0 .1.lock().unwrap().take() {
            w.wake();
        }
    }
}

impl Future for Done {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        *self.0 .1.lock().unwrap() = Some(cx.waker().clone());
        if self.0 .0.load(Ordering::Acquire) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

fn chain(left: u32, done: Done) {
    if left == 0 {
        done.finish();
    } else {
        goro::spawn(async move { chain(left - 1, done) });
    }
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
            rt.block_on(async move {
                let done = Done::default();
                let d = done.clone();
                goro::spawn(async move { chain(n, d) });
                done.await;
            });
            runs.push(t.elapsed().as_nanos() as f64 / n as f64);
        }
        runs.sort_by(f64::total_cmp);
        println!(
            "spawn_chain procs={procs} n={n}: median {:.1} ns/op (min {:.1}, max {:.1})",
            runs[3], runs[0], runs[6]
        );
    }
}
