//! 200 tasks × 1000 yields (tokio's `yield_many` shape); prints ns per yield
//! at procs 1 and 2. `goro-bench` runs the side-by-side comparison.
//!
//! Usage: `cargo run --release -p goro --example yield_many [YIELDS]`

use std::time::Instant;

const TASKS: usize = 200;

fn main() {
    let yields: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse().expect("YIELDS must be a positive integer"))
        .unwrap_or(1000);
    for procs in [1, 2] {
        let rt = goro::Runtime::builder()
            .procs(procs)
            .build()
            .expect("runtime");
        let mut runs = Vec::new();
        for _ in 0..7 {
            let t = Instant::now();
            rt.block_on(async move {
                let hs: Vec<_> = (0..TASKS)
                    .map(|_| {
                        goro::spawn(async move {
                            for _ in 0..yields {
                                goro::yield_now().await;
                            }
                        })
                    })
                    .collect();
                for h in hs {
                    h.await.unwrap();
                }
            });
            runs.push(t.elapsed().as_nanos() as f64 / (TASKS * yields) as f64);
        }
        runs.sort_by(f64::total_cmp);
        println!(
            "yield_many procs={procs} tasks={TASKS} yields={yields}: median {:.1} ns/op (min {:.1}, max {:.1})",
            runs[3], runs[0], runs[6]
        );
    }
}
