//! The channel hot path in isolation: ping-pong over two rendezvous
//! channels (ns per round trip) and rings of tasks over channels of
//! capacity 0 and 1 (ns per hop), at procs 1 and 2.
//!
//! Usage: `cargo run --release -p goro --example chan_hop [ROUNDS] [RUNS]`
//! (ROUNDS: round trips / hops per run, default 1,000,000; RUNS: runs per
//! row, default 5). Each row prints the median and the min-max spread.
//!
//! To compare two builds, run their binaries alternately in one session
//! (absolute numbers on a shared machine drift; the alternation does not).

use std::time::Instant;

use goro::chan::{bounded, Receiver, Sender};

/// One round trip = `ping.send; pong.recv` on one side, the mirror on the
/// other. Both tasks exist before the clock starts.
async fn ping_pong(rounds: u64) -> f64 {
    let (ping_tx, ping_rx) = bounded::<u64>(0);
    let (pong_tx, pong_rx) = bounded::<u64>(0);
    let echo = goro::spawn(async move {
        while let Ok(v) = ping_rx.recv().await {
            if pong_tx.send(v).await.is_err() {
                break;
            }
        }
    });
    // One warm-up round trip: the echo task is parked in recv from here on.
    ping_tx.send(0).await.unwrap();
    pong_rx.recv().await.unwrap();
    let t = Instant::now();
    for i in 0..rounds {
        ping_tx.send(i).await.unwrap();
        pong_rx.recv().await.unwrap();
    }
    let ns = t.elapsed().as_nanos() as f64 / rounds as f64;
    drop(ping_tx);
    echo.await.unwrap();
    ns
}

/// n tasks in a ring; task i receives from channel i and sends on channel
/// i+1. The token carries the hops left; the task that receives 0 reports
/// on `done`. One op = one hop (one transfer and the wake of the next task).
async fn ring(n: usize, cap: usize, hops: u64) -> f64 {
    let (txs, rxs): (Vec<Sender<u64>>, Vec<Receiver<u64>>) =
        (0..n).map(|_| bounded::<u64>(cap)).unzip();
    let (done_tx, done_rx) = bounded::<()>(1);
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let (rx, out, done) = (rxs[i].clone(), txs[(i + 1) % n].clone(), done_tx.clone());
            goro::spawn(async move {
                while let Ok(v) = rx.recv().await {
                    if v == 0 {
                        done.send(()).await.unwrap();
                    } else if out.send(v - 1).await.is_err() {
                        break;
                    }
                }
            })
        })
        .collect();
    // Warm-up lap: afterwards every task has run and parks in recv.
    txs[0].send(n as u64 - 1).await.unwrap();
    done_rx.recv().await.unwrap();
    let t = Instant::now();
    txs[0].send(hops - 1).await.unwrap();
    done_rx.recv().await.unwrap();
    let ns = t.elapsed().as_nanos() as f64 / hops as f64;
    for tx in &txs {
        tx.close();
    }
    for t in tasks {
        t.await.unwrap();
    }
    ns
}

fn row(name: &str, procs: usize, runs: usize, mut f: impl FnMut(&goro::Runtime) -> f64) {
    let rt = goro::Runtime::builder()
        .procs(procs)
        .build()
        .expect("runtime");
    f(&rt); // warm-up run
    let mut xs: Vec<f64> = (0..runs).map(|_| f(&rt)).collect();
    xs.sort_by(f64::total_cmp);
    println!(
        "{name:<16} procs={procs}: median {:6.1} ns/op (min {:6.1}, max {:6.1})",
        xs[xs.len() / 2],
        xs[0],
        xs[xs.len() - 1]
    );
}

fn main() {
    let mut args = std::env::args().skip(1);
    let rounds: u64 = args
        .next()
        .map(|s| s.parse().expect("ROUNDS: a positive integer"))
        .unwrap_or(1_000_000);
    let runs: usize = args
        .next()
        .map(|s| s.parse().expect("RUNS: a positive integer"))
        .unwrap_or(5);
    assert!(
        rounds >= 1 && runs >= 1,
        "ROUNDS and RUNS must be at least 1"
    );
    for procs in [1, 2] {
        row("ping_pong", procs, runs, |rt| {
            rt.block_on(rt.spawn(ping_pong(rounds))).unwrap()
        });
        for (n, cap) in [(10, 0), (100, 0), (100, 1)] {
            row(&format!("ring/n={n},cap={cap}"), procs, runs, |rt| {
                rt.block_on(rt.spawn(ring(n, cap, rounds))).unwrap()
            });
        }
    }
}
