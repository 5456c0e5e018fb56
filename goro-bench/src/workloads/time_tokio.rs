//! tokio's side of the time group's timer rows that tokio has (`stop`,
//! `simultaneous_after_func_1000`, `start_stop_1000`, `reset`, `ticker`),
//! and tokio's garbage timers ([`TimeRt`] for [`Tokio`]: one task per
//! worker owns 32,768 polled `sleep(1h)` futures). `time.rs` registers
//! them, says which rows have no tokio column and why, and has the shapes
//! and the op counts; `time_goro.rs` is goro's side.
//!
//! These rows are written once per runtime because tokio has no timer
//! handle, `after_func` or channel timer: each row here stands a `Sleep`
//! future (armed by polling it once, stopped by dropping it), a spawned
//! task or an `interval` in for goro's idiom, as `time.rs`'s module comment
//! maps them.

use super::per_worker;
use super::time::{run_parallel, TimeRt, CHAIN_LEN, GARBAGE_PER_P, HOUR, NS};
use crate::registry::{Ctx, RunOut};
use crate::rt::{Gate, Latch, Tokio};
use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;
use tokio::time::Sleep;

/// tokio's garbage: the stop signal and the latch of the owning tasks.
pub struct TokioGarbage {
    stop: Gate,
    stopped: Latch,
}

/// Polls every sleep once (which puts it in tokio's timer wheel) with the
/// calling task's waker.
async fn arm_sleeps(sleeps: &mut [Pin<Box<tokio::time::Sleep>>]) {
    std::future::poll_fn(|cx| {
        for s in sleeps.iter_mut() {
            let _ = s.as_mut().poll(cx);
        }
        Poll::Ready(())
    })
    .await
}

impl TimeRt for Tokio {
    type Garbage = TokioGarbage;
    async fn arm_garbage(procs: usize) -> Self::Garbage {
        let stop = Gate::default();
        let armed = Latch::new(procs);
        let stopped = Latch::new(procs);
        for _ in 0..procs {
            let (stop, armed, stopped) = (stop.clone(), armed.clone(), stopped.clone());
            tokio::spawn(async move {
                let mut sleeps: Vec<Pin<Box<tokio::time::Sleep>>> = (0..GARBAGE_PER_P)
                    .map(|_| Box::pin(tokio::time::sleep(HOUR)))
                    .collect();
                arm_sleeps(&mut sleeps).await;
                armed.count_down();
                stop.wait().await;
                drop(sleeps); // deregisters every one
                stopped.count_down();
            });
        }
        armed.wait().await;
        TokioGarbage { stop, stopped }
    }
    async fn stop_garbage(g: Self::Garbage) {
        g.stop.open();
        g.stopped.wait().await;
    }
}

/// Polls one sleep once: puts it in the timer wheel (tokio's "arm").
async fn arm(s: Pin<&mut Sleep>) {
    let mut s = s;
    std::future::poll_fn(|cx| {
        let _ = s.as_mut().poll(cx);
        Poll::Ready(())
    })
    .await
}

/// stop: the goro shape (see there) with `Timer::new(1s).stop()` as a
/// `sleep(1s)` pinned on the stack, polled once (armed), then dropped
/// (deregistered).
pub async fn stop(ctx: Ctx) -> RunOut {
    let (k, ops) = per_worker(ctx.size(2_000_000, 200_000), ctx.procs as u64, 1);
    run_parallel::<Tokio, _, _>(&ctx, ops, move |_| async move {
        for _ in 0..k {
            let s = std::pin::pin!(tokio::time::sleep(Duration::from_secs(1)));
            arm(s).await;
        }
    })
    .await
}

/// simultaneous_after_func_1000: the goro shape (see there) with
/// `after_func(0, wg.done)` as `tokio::spawn(async { sleep(0).await;
/// wg.done() })`. The 1000 sleeps of a round all wait for the next 1 ms
/// tick (see `time.rs`'s module comment), so a round takes about 1 ms.
pub async fn simultaneous_after_func_1000(ctx: Ctx) -> RunOut {
    let (k, ops) = per_worker(ctx.size(1_000_000, 100_000), ctx.procs as u64, CHAIN_LEN);
    run_parallel::<Tokio, _, _>(&ctx, ops, move |_| async move {
        for _ in 0..k {
            let wg = Latch::new(CHAIN_LEN as usize);
            for _ in 0..CHAIN_LEN {
                let wg = wg.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::ZERO).await;
                    wg.count_down();
                });
            }
            wg.wait().await;
        }
    })
    .await
    .extra("n", CHAIN_LEN as f64)
}

/// start_stop_1000: the goro shape (see there) with
/// `after_func(1h, noop)` as a boxed `sleep(1h)` polled once (armed) and
/// `stop()` as dropping it. (A spawned sleeping task aborted later would
/// measure spawn and abort, and its sleep would not even be armed
/// before the abort.)
pub async fn start_stop_1000(ctx: Ctx) -> RunOut {
    let (k, ops) = per_worker(ctx.size(2_000_000, 200_000), ctx.procs as u64, CHAIN_LEN);
    run_parallel::<Tokio, _, _>(&ctx, ops, move |_| async move {
        let mut timers: Vec<Pin<Box<Sleep>>> = Vec::with_capacity(CHAIN_LEN as usize);
        for _ in 0..k {
            for _ in 0..CHAIN_LEN {
                let mut s = Box::pin(tokio::time::sleep(HOUR));
                arm(s.as_mut()).await;
                timers.push(s);
            }
            timers.clear();
        }
    })
    .await
    .extra("n", CHAIN_LEN as f64)
}

/// reset: the goro shape (see there) with `Timer::new(1h)` as a
/// `sleep(1h)` polled once and `reset(1h)` as `Sleep::reset(now + 1h)`.
pub async fn reset(ctx: Ctx) -> RunOut {
    let (k, ops) = per_worker(ctx.size(10_000_000, 1_000_000), ctx.procs as u64, 1);
    run_parallel::<Tokio, _, _>(&ctx, ops, move |_| async move {
        let mut s = std::pin::pin!(tokio::time::sleep(HOUR));
        arm(s.as_mut()).await;
        for _ in 0..k {
            s.as_mut().reset(tokio::time::Instant::now() + HOUR);
        }
    })
    .await
}

/// ticker: the goro shape (see there) with `Ticker::new(1ns)` as
/// `tokio::time::interval(1ns)` with `MissedTickBehavior::Skip` (≈ Go's
/// dropping of ticks for a slow reader), created inside the measured
/// region, and a receive as `tick()`. tokio's interval keeps deadlines
/// on a fixed 1 ns grid, so they fall behind the clock and tick at once;
/// once they are more than 5 ms behind, Skip re-aligns the next one to
/// now, which then waits for the next 1 ms tick of the wheel (about one
/// such wait per 5 ms of ticking). Dropping the interval stops it.
pub async fn ticker(ctx: Ctx) -> RunOut {
    let (k, ops) = per_worker(ctx.size(2_000_000, 200_000), ctx.procs as u64, 1);
    run_parallel::<Tokio, _, _>(&ctx, ops, move |_| async move {
        let mut tk = tokio::time::interval(NS);
        tk.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        for _ in 0..k {
            tk.tick().await;
        }
    })
    .await
}
