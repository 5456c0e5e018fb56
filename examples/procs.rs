//! Prints the default number of Ps and where it came from (the CPU
//! affinity count, the cgroup CPU limit, or why the cgroup files could not
//! be read); with `--follow SECS`, keeps the runtime busy for that long and
//! prints every change the monitor makes as it follows the limit.
//!
//! With `--resize-cost [HIGH]`, measures what a resize costs the tasks
//! running through it: 16 tasks yield in a loop on HIGH Ps (default 8)
//! for 2 s, once without resizes and once while another thread switches
//! between HIGH and 1 Ps every 20 ms; prints the distribution of the gaps between a task's
//! consecutive polls in both runs, and how long `set_procs` took.
//!
//! Usage: `cargo run --release -p goro --example procs [-- --follow 5 | --resize-cost [HIGH]]`

use std::time::{Duration, Instant};

fn main() {
    let follow: Option<u64> = match std::env::args().nth(1).as_deref() {
        Some("--follow") => Some(
            std::env::args()
                .nth(2)
                .and_then(|s| s.parse().ok())
                .expect("--follow SECS"),
        ),
        Some("--resize-cost") => {
            let high = std::env::args()
                .nth(2)
                .map_or(8, |s| s.parse().expect("--resize-cost [HIGH]"));
            return resize_cost(high);
        }
        Some(other) => {
            panic!("unknown argument {other:?}: accepted --follow SECS or --resize-cost")
        }
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

/// Gaps between consecutive polls of one task, by power of two of ns.
type Hist = [u64; 64];

fn run_yielders(high: usize, resize: bool) -> (Hist, Vec<Duration>) {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let rt = Arc::new(
        goro::Runtime::builder()
            .procs(high)
            .build()
            .expect("runtime"),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let hs: Vec<_> = (0..16)
        .map(|_| {
            let stop = stop.clone();
            rt.spawn(async move {
                let mut h: Hist = [0; 64];
                let mut last = Instant::now();
                while !stop.load(Ordering::Relaxed) {
                    goro::yield_now().await;
                    let now = Instant::now();
                    let gap = (now - last).as_nanos() as u64;
                    h[63 - gap.max(1).leading_zeros() as usize] += 1;
                    last = now;
                }
                h
            })
        })
        .collect();
    let mut calls = Vec::new();
    let start = Instant::now();
    let mut n = 0;
    while start.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(20));
        if resize {
            let to = if n % 2 == 0 { 1 } else { high };
            let t = Instant::now();
            rt.set_procs(to).expect("set_procs");
            calls.push(t.elapsed());
            n += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let mut total: Hist = [0; 64];
    for h in hs {
        let h = rt.block_on(h).expect("yielder");
        for (t, v) in total.iter_mut().zip(h) {
            *t += v;
        }
    }
    let s = rt.stats();
    println!(
        "  resizes={} tasks_moved={} timers_moved={}",
        s.procs_changes, s.procs_tasks_moved, s.procs_timers_moved
    );
    (total, calls)
}

fn quantile(h: &Hist, q: f64) -> String {
    let n: u64 = h.iter().sum();
    let want = ((n as f64) * q).ceil() as u64;
    let mut seen = 0;
    for (b, &c) in h.iter().enumerate() {
        seen += c;
        if seen >= want {
            return format!("<{}", fmt_ns(1u64 << (b + 1)));
        }
    }
    "-".into()
}

fn fmt_ns(ns: u64) -> String {
    if ns >= 1_000_000 {
        format!("{:.1}ms", ns as f64 / 1e6)
    } else if ns >= 1_000 {
        format!("{:.1}us", ns as f64 / 1e3)
    } else {
        format!("{ns}ns")
    }
}

fn resize_cost(high: usize) {
    for resize in [false, true] {
        if resize {
            println!("procs {high}, resizing {high} <-> 1 every 20 ms:");
        } else {
            println!("procs {high}, no resizes:");
        }
        let (h, mut calls) = run_yielders(high, resize);
        let n: u64 = h.iter().sum();
        let max = h
            .iter()
            .rposition(|&c| c > 0)
            .map_or(0, |b| 1u64 << (b + 1));
        println!(
            "  polls={n} gap p50{} p99{} p99.9{} p99.99{} max<{}",
            quantile(&h, 0.5),
            quantile(&h, 0.99),
            quantile(&h, 0.999),
            quantile(&h, 0.9999),
            fmt_ns(max)
        );
        if !calls.is_empty() {
            calls.sort();
            println!(
                "  set_procs calls={} p50={:?} p99={:?} max={:?}",
                calls.len(),
                calls[calls.len() / 2],
                calls[(calls.len() * 99) / 100],
                calls[calls.len() - 1]
            );
        }
    }
}
