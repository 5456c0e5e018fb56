//! Prints the default number of Ps and where it came from (the CPU
//! affinity count, the cgroup CPU limit, or why the cgroup files could not
//! be read); with `--follow SECS`, keeps the runtime busy for that long and
//! prints every change the monitor makes as it follows the limit.
//!
//! Usage: `cargo run --release -p goro --example procs [-- --follow 5]`

use std::time::{Duration, Instant};

fn main() {
    let follow: Option<u64> = match std::env::args().nth(1).as_deref() {
        Some("--follow") => Some(
            std::env::args()
                .nth(2)
                .and_then(|s| s.parse().ok())
                .expect("--follow SECS"),
        ),
        Some(other) => panic!("unknown argument {other:?}: accepted --follow SECS"),
        None => None,
    };
    let rt = goro::Runtime::new().expect("runtime");
    println!("procs={} source={:?}", rt.procs(), rt.procs_source());
    println!("follows={}", rt.follows_procs());
    let Some(secs) = follow else { return };
    let start = Instant::now();
    let mut last = rt.procs();
    rt.block_on(async {
        // Work for the monitor to watch: tasks that yield in a loop.
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        for _ in 0..4 {
            let stop = stop.clone();
            goro::spawn(async move {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    goro::time::sleep(Duration::from_micros(200)).await;
                }
            });
        }
        while start.elapsed() < Duration::from_secs(secs) {
            goro::time::sleep(Duration::from_millis(100)).await;
            if rt.procs() != last {
                println!(
                    "{:>6} ms: procs {} -> {}",
                    start.elapsed().as_millis(),
                    last,
                    rt.procs()
                );
                last = rt.procs();
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    println!("procs_changes={}", rt.stats().procs_changes);
}
