//! The time group of goro-bench/README.md (seed 001, per-P timers), after Go's
//! benchmarks in `time/sleep_test.go`, `time/tick_test.go` and
//! `context/benchmark_test.go`; shapes and op counts are those of
//! `bench/go/time.go` (read side by side). P below is procs.
//!
//! Every workload runs with 32,768 one-hour timers per P already armed
//! (garbage timers, as Go's `benchmark()` helper does): before the clock, P
//! tasks each arm 32,768 of them, and after the clock every one is stopped
//! ([`TimeRt::arm_garbage`] / [`TimeRt::stop_garbage`]). They are never due
//! during a run. goro: `after_func(1h, noop)` from P tasks, as Go. tokio:
//! one task per worker owns 32,768 `tokio::time::sleep(1h)` futures, polls
//! each once (a tokio `Sleep` is only put in the timer wheel when first
//! polled) and parks until they are dropped (tokio's stop).
//!
//! Parallel workloads (Go's RunParallel) split their ops over P tasks in
//! whole batches ([`per_worker`]); `ops` reports what was actually done.
//!
//! tokio's side, where it has the operation: tokio has no `Timer` handle, no
//! `AfterFunc` and no channel timer. Its timers are `Sleep` futures on a
//! wheel of 1 ms ticks: a deadline is rounded *up* to the next millisecond
//! tick, so a 0 or 1 ns timer waits for the next tick (about 1 ms) instead
//! of firing at once. Where the Go shape waits on such timers one after the
//! other (`after_func_1000`, `after`) one run would take about 100 s on
//! tokio (measured: `after` at 1.1 ms/op at procs=1, 0.56 ms/op at procs=2;
//! past the run deadline, and measuring the tick, not the timer code):
//! those rows have no tokio column, with the reason. Approximations,
//! noted on each workload: "arm a timer" = create a `Sleep` and poll it once;
//! "stop" = drop it; `after_func(d, f)` = `tokio::spawn(async { sleep(d).await; f() })`
//! where the callback must run (simultaneous_after_func_1000); a ticker =
//! `interval` with `MissedTickBehavior::Skip`. No tokio column for
//! `with_timeout` (no context tree) nor `timer_latency` (see its note).

//!
//! The rows each runtime spells in its own timer idiom (tokio has no timer
//! handle, `after_func` or channel timer) are written once per runtime, in
//! `time_goro.rs` and `time_tokio.rs`, each with its runtime's garbage
//! timers ([`TimeRt`]); this file has the rows' registration, what they
//! share, and the rows written once for both (sleep and spawn only).

use super::per_worker;
use super::{time_goro, time_tokio};
use crate::registry::{body, Ctx, Meter, RunOut, Workload};
use crate::rt::{Gang, Goro, Latch, Rt, Tokio};
use std::future::Future;
use std::time::Duration;

/// One-hour timers armed per P before each workload (Go's `garbagePerP`).
pub(crate) const GARBAGE_PER_P: usize = 1 << 15;
/// N in after_func_1000, simultaneous_after_func_1000, start_stop_1000 and
/// sleep_1000 (Go's `chainLen`).
pub(crate) const CHAIN_LEN: u64 = 1000;
/// Contexts one with_timeout op creates and cancels (Go's `withTimeoutBatch`).
pub(crate) const WITH_TIMEOUT_BATCH: usize = 10;
/// The live-context counts of `with_timeout/c=`.
const WITH_TIMEOUT_CS: [usize; 3] = [40, 4000, 400_000];
/// timer_latency: the timers' delay, the busy gap between rounds, and the
/// bound on an armer's spin (Go's latencyDelay, latencyGap, latencySpinCap).
pub(crate) const LATENCY_DELAY: Duration = Duration::from_millis(1);
pub(crate) const LATENCY_GAP: Duration = Duration::from_millis(1);
pub(crate) const LATENCY_SPIN_CAP: Duration = Duration::from_secs(1);

pub(crate) const HOUR: Duration = Duration::from_secs(3600);
pub(crate) const NS: Duration = Duration::from_nanos(1);

/// Why tokio has no column where its 1 ms tick would make the run ~1 ms per op.
const TOKIO_TICK: &str = "tokio's timer wheel rounds every deadline up to the next 1 ms tick, so this chain of 0/1 ns timers would wait ~1 ms per op (about 100 s a run; after measured 1.1 ms/op at procs=1): not comparable";

/// Registers the time group.
pub fn register(v: &mut Vec<Workload>) {
    let w =
        |name: &str, op: &str, ops: (u64, u64)| Workload::new(name, "time", op, ops).seed("001");
    v.push(
        w(
            "after_func_1000",
            "one after_func(0) firing, in chains of 1000 that re-arm from the callback (P tasks)",
            (1_000_000, 100_000),
        )
        .goro(Ok(body(time_goro::after_func_1000)))
        .tokio(Err(TOKIO_TICK)),
    );
    v.push(
        w(
            "after",
            "one after(1ns) plus the receive of its tick (P tasks)",
            (1_000_000, 100_000),
        )
        .goro(Ok(body(time_goro::after)))
        .tokio(Err(TOKIO_TICK)),
    );
    v.push(
        w(
            "stop",
            "one Timer::new(1s) then stop() (P tasks)",
            (2_000_000, 200_000),
        )
        .goro(Ok(body(time_goro::stop)))
        .tokio(Ok(body(time_tokio::stop))),
    );
    v.push(
        w(
            "simultaneous_after_func_1000",
            "one after_func(0, wg.done), 1000 armed at once then wait for all (P tasks); compared on CPU ns/op (tokio's wall is its 1 ms tick)",
            (1_000_000, 100_000),
        )
        .goro(Ok(body(time_goro::simultaneous_after_func_1000)))
        .tokio(Ok(body(time_tokio::simultaneous_after_func_1000))),
    );
    v.push(
        w(
            "start_stop_1000",
            "one after_func(1h) plus its stop(), 1000 armed then 1000 stopped (P tasks)",
            (2_000_000, 200_000),
        )
        .goro(Ok(body(time_goro::start_stop_1000)))
        .tokio(Ok(body(time_tokio::start_stop_1000))),
    );
    v.push(
        w(
            "reset",
            "one reset(1h) of a task's own timer (P tasks)",
            (10_000_000, 1_000_000),
        )
        .goro(Ok(body(time_goro::reset)))
        .tokio(Ok(body(time_tokio::reset))),
    );
    v.push(
        w(
            "sleep_1000",
            "one sleep(1ns) by one of 1000 tasks spawned at once, then wait for all (P spawners); compared on CPU ns/op (tokio's wall is its 1 ms tick)",
            (1_000_000, 100_000),
        )
        .goro(Ok(body(sleep_1000::<Goro>)))
        .tokio(Ok(body(sleep_1000::<Tokio>))),
    );
    v.push(
        w(
            "ticker",
            "one tick received from a task's own Ticker::new(1ns) (P tasks)",
            (2_000_000, 200_000),
        )
        .goro(Ok(body(time_goro::ticker)))
        .tokio(Ok(body(time_tokio::ticker))),
    );
    for c in WITH_TIMEOUT_CS {
        v.push(
            w(
                &format!("with_timeout/c={c}"),
                &format!("10 Context::with_timeout(bg, 1h) created then cancelled, with {c} such contexts live (P tasks)"),
                (100_000, 10_000),
            )
            .goro(Ok(body(move |ctx| time_goro::with_timeout(ctx, c))))
            .tokio(Err("not applicable, no tokio equivalent: tokio has no context tree with deadlines (Go's context.WithTimeout)")),
        );
    }
    v.push(
        w(
            "timer_latency",
            "one after_func(1ms) armed by a busy task, procs-1 per round; extra avg_late_ns, max_late_ns",
            (200, 40),
        )
        .goro(Ok(body(time_goro::timer_latency)))
        .tokio(Err("tokio has no after_func: a callback task spawned by a busy (spinning) task sits in that worker's LIFO slot, which is not stealable, and its sleep is only armed when first polled, so every round would hit the 1 s spin cap (measured: max_late 999 ms at procs=2)"))
        .show(&["avg_late_ns", "max_late_ns"]),
    );
    v.push(
        w(
            "sleep_fan",
            "one sleep(1ms), 10,000 tasks x 100 in a row; extra ideal_ns, overhead_ratio",
            (1_000_000, 10_000),
        )
        .goro(Ok(body(sleep_fan::<Goro>)))
        .tokio(Ok(body(sleep_fan::<Tokio>)))
        .show(&["overhead_ratio"]),
    );
}

pub(crate) fn noop() {}

/// Go's `round2`: rounded to two decimals.
pub(crate) fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// What the time workloads need from a runtime beyond [`Rt`]: the garbage
/// timers.
pub trait TimeRt: Rt {
    /// The armed garbage timers, for [`TimeRt::stop_garbage`].
    type Garbage: Send + 'static;
    /// Arms [`GARBAGE_PER_P`] one-hour timers from each of `procs` tasks
    /// (Go's `armGarbage`). Runs before the clock starts.
    fn arm_garbage(procs: usize) -> impl Future<Output = Self::Garbage> + Send;
    /// Stops every garbage timer (Go's `stopGarbage`). Runs after the clock stops.
    fn stop_garbage(g: Self::Garbage) -> impl Future<Output = ()> + Send;
}

/// Go's `runParallel`: arm the garbage timers, park P tasks running
/// `body(i)`, time them from release to the last return, stop the garbage
/// timers, report `ops`.
pub(crate) async fn run_parallel<R, F, Fut>(ctx: &Ctx, ops: u64, body: F) -> RunOut
where
    R: TimeRt,
    F: Fn(usize) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let garbage = R::arm_garbage(ctx.procs).await;
    let g = Gang::new::<R, _, _>(ctx.procs, body).await;
    let m = Meter::start();
    g.release();
    g.wait().await;
    let meas = m.stop();
    R::stop_garbage(garbage).await;
    RunOut::new(ops, meas)
        .extra("goroutines", ctx.procs as f64)
        .extra("garbage_timers", (ctx.procs * GARBAGE_PER_P) as f64)
}

// ---------------------------------------------------------------------------
// Generic shapes (sleep and spawn only): the same code on goro and tokio.
// ---------------------------------------------------------------------------

/// sleep_1000 (Go: BenchmarkSleep1000).
///
/// P spawner tasks; each does K rounds of: a latch of 1000; spawn 1000 tasks
/// that each do `sleep(1ns)` then count down; wait. One op = one task
/// spawned that sleeps 1 ns and finishes. K = total/(P*1000). On tokio each
/// round's sleeps wait for the next 1 ms tick (see the module comment).
/// Ops: 1,000,000 normal, 100,000 quick (rounded down to a multiple of P*1000).
async fn sleep_1000<R: TimeRt>(ctx: Ctx) -> RunOut {
    let (k, ops) = per_worker(ctx.size(1_000_000, 100_000), ctx.procs as u64, CHAIN_LEN);
    run_parallel::<R, _, _>(&ctx, ops, move |_| async move {
        for _ in 0..k {
            let wg = Latch::new(CHAIN_LEN as usize);
            for _ in 0..CHAIN_LEN {
                let wg = wg.clone();
                R::spawn(async move {
                    R::sleep(NS).await;
                    wg.count_down();
                });
            }
            wg.wait().await;
        }
    })
    .await
    .extra("n", CHAIN_LEN as f64)
}

/// sleep_fan.
///
/// G tasks, spawned and parked before the clock starts; each does S times
/// `sleep(1ms)` in a row. Measured: from release until all G have returned.
/// One op = one sleep(1ms). The ideal wall time is S × 1 ms; extra
/// `ideal_ns` is that, `overhead_ratio` = wall_ns / ideal_ns.
/// Ops: 10,000 × 100 = 1,000,000 normal (ideal 100 ms), 1,000 × 10 = 10,000
/// quick (ideal 10 ms).
async fn sleep_fan<R: TimeRt>(ctx: Ctx) -> RunOut {
    let gs = ctx.size(10_000, 1_000);
    let sleeps = ctx.size(100, 10);
    let garbage = R::arm_garbage(ctx.procs).await;
    let g = Gang::new::<R, _, _>(gs as usize, move |_| async move {
        for _ in 0..sleeps {
            R::sleep(Duration::from_millis(1)).await;
        }
    })
    .await;
    let m = Meter::start();
    g.release();
    g.wait().await;
    let meas = m.stop();
    R::stop_garbage(garbage).await;
    let ideal = sleeps * 1_000_000;
    let wall = meas.wall_ns;
    RunOut::new(gs * sleeps, meas)
        .extra("garbage_timers", (ctx.procs * GARBAGE_PER_P) as f64)
        .extra("goroutines", gs as f64)
        .extra("sleeps_per_goroutine", sleeps as f64)
        .extra("ideal_ns", ideal as f64)
        .extra("overhead_ratio", round2(wall as f64 / ideal as f64))
}
