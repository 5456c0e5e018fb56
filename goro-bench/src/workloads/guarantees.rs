//! Scheduling guarantees, in the sched group of goro-bench/README.md: rows that
//! check what Go's scheduler promises rather than how fast it is.
//!
//! - A ready task must not wait behind a busy poll while a P idles
//!   (`spawn_busy`, `wake_busy`: a task made ready by a task that then
//!   computes for 20 ms without an await; at procs >= 2 another P is idle
//!   and should run it at once, as Go's idle P steals it).
//! - A task that never blocks must not starve its P (`hog`, `ping_pong_hog`:
//!   a task whose channel operations all complete at once, beside tasks
//!   that need the P now and then).
//!
//! Each workload's header comment says what one op is; the shapes and op
//! counts are those of `bench/go/guarantees.go` (read side by side). Each is
//! written once, generic over [`Rt`] (its channel: goro's `goro::chan`,
//! tokio's `tokio::sync::mpsc`), except `ping_pong_hog`, whose hog polls a
//! select with default: an idiom each runtime spells its own way.

use crate::registry::{body, Ctx, Measured, Meter, RunOut, Workload};
use crate::rt::{Goro, Histogram, Latch, Rt, Tokio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The CPU-bound stretch of spawn_busy and wake_busy (Go's busySpin).
const BUSY: Duration = Duration::from_millis(20);
/// wake_busy: the parent's pause after the child's readiness signal, so the
/// child is surely parked in its receive (Go's wakeSettle).
const WAKE_SETTLE: Duration = Duration::from_millis(1);
/// hog: iterations between two looks at the clock (Go's hogBatch).
const HOG_BATCH: u64 = 128;
/// hog: the sleeper's period (Go's hogTick).
const HOG_TICK: Duration = Duration::from_millis(1);

/// Registers the guarantee rows (group "sched", after sched.rs's).
pub fn register(v: &mut Vec<Workload>) {
    v.push(
        Workload::new(
            "spawn_busy",
            "sched",
            "one spawn by a task that then spins 20 ms in one poll; extra p50_ns, max_ns of spawn-to-first-poll",
            (40, 10),
        )
        .goro(Ok(body(spawn_busy::<Goro>)))
        .tokio(Ok(body(spawn_busy::<Tokio>)))
        .show(&["p50_ns", "max_ns"]),
    );
    v.push(
        Workload::new(
            "wake_busy",
            "sched",
            "one send to a parked task by a task that then spins 20 ms in one poll; extra p50_ns, max_ns of send-to-recv-return",
            (40, 10),
        )
        .goro(Ok(body(wake_busy::<Goro>)))
        .tokio(Ok(body(wake_busy::<Tokio>)))
        .show(&["p50_ns", "max_ns"]),
    );
    v.push(
        Workload::new(
            "hog",
            "sched",
            "one send+recv on a task's own cap-1 channel, looped for 300 ms (quick 100; the listed counts are these ms, ops are the iterations done) beside a 1 ms sleeper; extra max_gap_ns, hog_ops_per_s",
            (300, 100),
        )
        .goro(Ok(body(hog::<Goro>)))
        .tokio(Ok(body(hog::<Tokio>)))
        .show(&["max_gap_ns", "hog_ops_per_s"]),
    );
    v.push(
        Workload::new(
            "ping_pong_hog",
            "sched",
            "one ping-pong round trip (two rendezvous hand-offs) beside a task polling a select with default (Go's BenchmarkPingPongHog)",
            (100_000, 20_000),
        )
        .goro(Ok(body(goro_side::ping_pong_hog)))
        .tokio(Ok(body(tokio_side::ping_pong_hog))),
    );
}

/// Computes until `deadline`: one CPU-bound stretch, no await, so the
/// calling task holds its P (thread) for all of it.
fn spin_until(deadline: Instant) {
    while Instant::now() < deadline {
        std::hint::spin_loop();
    }
}

/// spawn_busy / wake_busy's result: the latencies' p50 (a histogram
/// bucket's midpoint, as every `p50_ns` here and in Go's `hist.go`: within
/// ~3%, so it can read a little above the exact max when every rep waited
/// the whole 20 ms) and exact max.
fn busy_out(reps: u64, meas: Measured, h: &Histogram, max_ns: u64) -> RunOut {
    RunOut::new(reps, meas)
        .extra("p50_ns", h.quantile(0.5))
        .extra("max_ns", max_ns as f64)
        .extra("busy_ms", BUSY.as_millis() as f64)
}

/// hog's result.
fn hog_out(n: u64, meas: Measured, hog_ns: u64, max_gap_ns: u64) -> RunOut {
    RunOut::new(n, meas)
        .extra("max_gap_ns", max_gap_ns as f64)
        .extra("hog_ops_per_s", n as f64 / (hog_ns as f64 / 1e9))
}

/// spawn_busy (Go: a `go` statement followed by 20 ms of computation).
///
/// One op = one rep. Per rep the benchmark task records t0, spawns a child
/// whose first poll stores `t0.elapsed()` and counts down a latch, then
/// spins until t0 + 20 ms in one CPU-bound stretch of its poll (no await),
/// then waits for the child. Latency = child's first poll − t0, into a
/// histogram; extras p50_ns and max_ns (exact). The guarantee: a ready
/// task must not wait behind a busy poll while a P idles. At procs >= 2 a
/// second P is idle, so the child should run within a steal's time (Go:
/// ~0.1 ms); at procs 1 it waits the 20 ms everywhere. The measured region
/// is all reps (≈ 20 ms each).
/// Ops: 40 normal, 10 quick.
async fn spawn_busy<R: Rt>(ctx: Ctx) -> RunOut {
    let reps = ctx.size(40, 10);
    let hist = Histogram::default();
    let mut max_ns = 0;
    let m = Meter::start();
    for _ in 0..reps {
        let lat = Arc::new(AtomicU64::new(0));
        let done = Latch::new(1);
        let t0 = Instant::now();
        let (l, d) = (lat.clone(), done.clone());
        R::spawn(async move {
            l.store(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
            d.count_down();
        });
        spin_until(t0 + BUSY);
        done.wait().await;
        let ns = lat.load(Ordering::Relaxed);
        hist.record(ns);
        max_ns = max_ns.max(ns);
    }
    let meas = m.stop();
    busy_out(reps, meas, &hist, max_ns)
}

/// wake_busy (Go: a send that wakes a parked goroutine, followed by 20 ms
/// of computation).
///
/// One op = one rep. A child task is spawned before the clock; it loops
/// `ready.send(()); t0 = ch.recv(); lat.send(t0.elapsed())` until `ch` is
/// closed. Per rep the benchmark task receives the readiness signal,
/// sleeps 1 ms (so the child is surely parked in its receive), records
/// t0, sends t0 on `ch` (capacity 1, empty: does not block), spins until
/// t0 + 20 ms in one CPU-bound stretch of its poll (no await), then
/// receives the latency. Latency = child's return from recv − t0;
/// extras p50_ns and max_ns (exact). The guarantee: a task woken by a
/// busy task must not wait behind its poll while a P idles (at procs of
/// 2 or more). Channels `ch`, `ready`, `lat` all have capacity 1. The
/// measured region is all reps (≈ 21 ms each).
/// Ops: 40 normal, 10 quick.
async fn wake_busy<R: Rt>(ctx: Ctx) -> RunOut {
    let reps = ctx.size(40, 10);
    let (tx, mut rx) = R::bounded::<Instant>(1);
    let (ready_tx, mut ready_rx) = R::bounded::<()>(1);
    let (lat_tx, mut lat_rx) = R::bounded::<u64>(1);
    let exited = Latch::new(1);
    let e = exited.clone();
    R::spawn(async move {
        loop {
            R::send(&ready_tx, ()).await.unwrap();
            let Some(t0) = R::recv(&mut rx).await else {
                break;
            };
            R::send(&lat_tx, t0.elapsed().as_nanos() as u64)
                .await
                .unwrap();
        }
        e.count_down();
    });
    let hist = Histogram::default();
    let mut max_ns = 0;
    let m = Meter::start();
    for _ in 0..reps {
        R::recv(&mut ready_rx).await.unwrap();
        R::sleep(WAKE_SETTLE).await;
        let t0 = Instant::now();
        R::send(&tx, t0).await.unwrap();
        spin_until(t0 + BUSY);
        let ns = R::recv(&mut lat_rx).await.unwrap();
        hist.record(ns);
        max_ns = max_ns.max(ns);
    }
    let meas = m.stop();
    drop(tx); // the last sender: closes `ch`, which ends the child
    exited.wait().await;
    busy_out(reps, meas, &hist, max_ns)
}

/// hog (Go: a goroutine whose channel operations never block, beside a
/// 1 ms sleeper).
///
/// One op = one hog iteration: `tx.send(i); rx.recv()` on the hog's own
/// capacity-1 channel (neither ever blocks). The hog loops for D (300 ms
/// normal, 100 ms quick, from the start of the measured region), looking
/// at the clock every 128 iterations; beside it a sleeper loops
/// `sleep(1 ms)` and records the longest gap between consecutive
/// wake-ups (the first gap counted from the start), until it wakes to
/// find the hog done. Extras: max_gap_ns (the sleeper's longest gap: ~1
/// ms when the hog is preempted, up to D when it starves its P) and
/// hog_ops_per_s (iterations / the hog's own elapsed time). The
/// guarantee: a task that never blocks must not starve its P. Both
/// tasks are spawned at the start of the measured region, which ends
/// when both have returned. On tokio the sleeper's `tokio::time::sleep`
/// rounds up to its 1 ms tick, so its gaps are ~2 ms at best.
/// Ops: the iterations done in D = 300 ms normal, 100 ms quick.
async fn hog<R: Rt>(ctx: Ctx) -> RunOut {
    let dur = Duration::from_millis(ctx.size(300, 100));
    let (tx, mut rx) = R::bounded::<u64>(1);
    let ops = Arc::new(AtomicU64::new(0));
    let hog_ns = Arc::new(AtomicU64::new(0));
    let max_gap = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let done = Latch::new(2);
    let m = Meter::start();
    let start = Instant::now();
    {
        let (ops, hog_ns, stop, done) = (ops.clone(), hog_ns.clone(), stop.clone(), done.clone());
        R::spawn(async move {
            let mut n = 0;
            while start.elapsed() < dur {
                for _ in 0..HOG_BATCH {
                    R::send(&tx, n).await.unwrap();
                    R::recv(&mut rx).await.unwrap();
                    n += 1;
                }
            }
            hog_ns.store(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
            ops.store(n, Ordering::Relaxed);
            stop.store(true, Ordering::Release);
            done.count_down();
        });
    }
    {
        let (max_gap, stop, done) = (max_gap.clone(), stop.clone(), done.clone());
        R::spawn(async move {
            let (mut last, mut max) = (start, Duration::ZERO);
            loop {
                R::sleep(HOG_TICK).await;
                let now = Instant::now();
                max = max.max(now - last);
                last = now;
                if stop.load(Ordering::Acquire) {
                    break;
                }
            }
            max_gap.store(max.as_nanos() as u64, Ordering::Relaxed);
            done.count_down();
        });
    }
    done.wait().await;
    let meas = m.stop();
    hog_out(
        ops.load(Ordering::Relaxed),
        meas,
        hog_ns.load(Ordering::Relaxed),
        max_gap.load(Ordering::Relaxed),
    )
}

// ---------------------------------------------------------------------------
// ping_pong_hog, once per runtime: the hog's select with default and the
// closed `stop` it watches are spelt differently on each.
// ---------------------------------------------------------------------------

mod goro_side {
    use super::*;
    use goro::chan::bounded;

    /// ping_pong_hog (Go: BenchmarkPingPongHog in runtime/proc_test.go,
    /// that shape exactly).
    ///
    /// A hog task loops `select! { recv(stop) -> _ => { done.send(()); return },
    /// default => {} }` (a select with default never waits) and awaits
    /// nothing else, as Go's hog, beside a ping-pong over two rendezvous
    /// channels: task A does N times `pong.send(ping.recv())`, then closes
    /// `stop` and sends on `done`; task B does N times
    /// `ping.send(pong.recv())`, then sends on `done`. The benchmark task
    /// starts the ball with `ping.send(true)` and waits for `stop` to close
    /// (the measured region), then receives B's last ping and the three
    /// `done`s. One op = one ping-pong round trip. The hog yields because
    /// goro's `select!` with `default` is a safe point, as every goro
    /// operation: it spends the poll's budget (a thread-local decrement)
    /// and, once it is spent, yields before looking at its channels (Go
    /// preempts the hog by time instead: sysmon's 10 ms slice). Go's
    /// benchmark pins GOMAXPROCS 1 (the `--procs 1` row); this runs at any
    /// procs. The guarantee: a task that never blocks must not starve the
    /// tasks that share its P.
    /// Ops: N = 100,000 normal, 20,000 quick.
    pub async fn ping_pong_hog(ctx: Ctx) -> RunOut {
        let n = ctx.size(100_000, 20_000);
        let (stop_tx, stop_rx) = bounded::<()>(0);
        let (done_tx, done_rx) = bounded::<()>(0);
        {
            let (stop, done) = (stop_rx.clone(), done_tx.clone());
            Goro::spawn(async move {
                loop {
                    goro::select! {
                        recv(stop) -> _ => {
                            done.send(()).await.unwrap();
                            return;
                        }
                        default => {}
                    }
                }
            });
        }
        let (ping_tx, ping_rx) = bounded::<bool>(0);
        let (pong_tx, pong_rx) = bounded::<bool>(0);
        {
            let (ping, pong, done) = (ping_rx.clone(), pong_tx, done_tx.clone());
            Goro::spawn(async move {
                for _ in 0..n {
                    pong.send(ping.recv().await.unwrap()).await.unwrap();
                }
                stop_tx.close();
                done.send(()).await.unwrap();
            });
        }
        {
            let (ping, pong, done) = (ping_tx.clone(), pong_rx, done_tx);
            Goro::spawn(async move {
                for _ in 0..n {
                    ping.send(pong.recv().await.unwrap()).await.unwrap();
                }
                done.send(()).await.unwrap();
            });
        }
        let m = Meter::start();
        ping_tx.send(true).await.unwrap(); // start ping-pong
        let _ = stop_rx.recv().await; // Err: closed
        let meas = m.stop();
        ping_rx.recv().await.unwrap(); // let the last ponger exit
        for _ in 0..3 {
            done_rx.recv().await.unwrap();
        }
        RunOut::new(n, meas)
    }
}

mod tokio_side {
    use super::*;
    use tokio::sync::{broadcast, mpsc};

    /// ping_pong_hog: the goro shape (see there). `stop` is a
    /// `broadcast::channel` whose only sender A drops (Go's `close(stop)`,
    /// seen by the hog's `try_recv` and the benchmark task's `recv`); the
    /// hog awaits `tokio::task::coop::consume_budget()` after each look,
    /// which neither Go's nor goro's hog has: tokio has no select with
    /// default, and its `try_recv` is no safe point (it spends no budget
    /// and cannot yield), so without it the hog would never yield and, on
    /// one worker, starve the ping-pong; ping, pong
    /// and done are `mpsc::channel(1)`. With capacity 1, B's last ping lands
    /// in ping's empty buffer and B returns without waiting, so the
    /// benchmark task (which holds no receiver of ping: A owns the only one)
    /// has no `<-ping`; that last send may also find A gone, its receiver
    /// dropped, which B tolerates for the last round trip only.
    pub async fn ping_pong_hog(ctx: Ctx) -> RunOut {
        let n = ctx.size(100_000, 20_000);
        let (stop_tx, _) = broadcast::channel::<()>(1);
        let mut stop_rx = stop_tx.subscribe();
        let (done_tx, mut done_rx) = mpsc::channel::<()>(1);
        {
            let (mut stop, done) = (stop_tx.subscribe(), done_tx.clone());
            Tokio::spawn(async move {
                loop {
                    match stop.try_recv() {
                        Err(broadcast::error::TryRecvError::Empty) => {}
                        _ => {
                            done.send(()).await.unwrap();
                            return;
                        }
                    }
                    tokio::task::coop::consume_budget().await;
                }
            });
        }
        let (ping_tx, ping_rx) = mpsc::channel::<bool>(1);
        let (pong_tx, pong_rx) = mpsc::channel::<bool>(1);
        {
            let (mut ping, pong, done) = (ping_rx, pong_tx, done_tx.clone());
            Tokio::spawn(async move {
                for _ in 0..n {
                    pong.send(ping.recv().await.unwrap()).await.unwrap();
                }
                drop(stop_tx);
                done.send(()).await.unwrap();
            });
        }
        {
            let (ping, mut pong, done) = (ping_tx.clone(), pong_rx, done_tx);
            Tokio::spawn(async move {
                for i in 0..n {
                    if ping.send(pong.recv().await.unwrap()).await.is_err() {
                        assert_eq!(i + 1, n, "ping closed before the last round trip");
                    }
                }
                done.send(()).await.unwrap();
            });
        }
        let m = Meter::start();
        ping_tx.send(true).await.unwrap(); // start ping-pong
        let _ = stop_rx.recv().await; // Err(Closed)
        let meas = m.stop();
        for _ in 0..3 {
            done_rx.recv().await.unwrap();
        }
        RunOut::new(n, meas)
    }
}
