//! errgroup_cancel, in the sync group of goro-bench/README.md: how long an
//! `ErrGroup` of 10,000 members takes to stop after one of them fails (Go's
//! `errgroup.WithContext` used as it is meant to be: every member selects
//! on the context, the first error cancels it, `Wait` returns once all have
//! returned). The Go twin is `errgroupCancel` in `bench/go/errgroup.go`.
//!
//! goro only: tokio has no errgroup with a context (a `JoinSet` plus a
//! `CancellationToken` from tokio-util would be a different program, with
//! a different crate in it).

use crate::registry::{body, Ctx, Meter, RunOut, Workload};
use crate::rt::Histogram;
use goro::context::Context;
use goro::sync::{ErrGroup, WaitGroup};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Members per group.
const MEMBERS: usize = 10_000;

/// Registers errgroup_cancel.
pub fn register(v: &mut Vec<Workload>) {
    v.push(
        Workload::new(
            "errgroup_cancel",
            "sync",
            "one ErrGroup::with_context of 10,000 members parked on ctx.done(), stopped by one failing member; extras p50_ns/p99_ns/max_ns from the failing member's return to wait() returning",
            (200, 20),
        )
        .goro(Ok(body(errgroup_cancel)))
        .tokio(Err("not applicable, no tokio equivalent: tokio has no errgroup with a context (Go's errgroup.WithContext)"))
        .show(&["p50_ns", "p99_ns", "max_ns"]),
    );
}

/// errgroup_cancel (Go: errgroup.WithContext with every member selecting
/// on ctx.Done()).
///
/// One op = one rep. Per rep: a group from `ErrGroup::with_context`, N =
/// 10,000 members started with `go`, each counting down a `WaitGroup`
/// and then waiting on `ctx.done()`; once all have counted down (all are
/// parked or about to be), one more member records t0 and returns an
/// error. Latency = `wait()` returning − t0: the context's cancellation
/// reaching 10,000 parked tasks, each running to its end, and the last
/// one's `done` waking the waiter. Checked: `wait` returns that error.
/// Into a histogram: extras p50_ns, p99_ns, p999_ns (bucket midpoints,
/// within ~3%) and max_ns (exact). The measured region is all reps,
/// setup included (the wall per op is not the latency).
/// Ops: 200 normal, 20 quick.
async fn errgroup_cancel(ctx: Ctx) -> RunOut {
    let reps = ctx.size(200, 20);
    let hist = Histogram::default();
    let mut max_ns = 0;
    let m = Meter::start();
    for _ in 0..reps {
        let (g, gctx) = ErrGroup::<&'static str>::with_context(&Context::background());
        let parked = WaitGroup::new();
        parked.add(MEMBERS as isize);
        for _ in 0..MEMBERS {
            let (c, parked) = (gctx.clone(), parked.clone());
            g.go(async move {
                parked.done();
                let _ = c.done().recv().await;
                Ok(())
            })
            .await;
        }
        parked.wait().await;
        let t0 = Arc::new(Mutex::new(None));
        let t = t0.clone();
        g.go(async move {
            *t.lock().unwrap() = Some(Instant::now());
            Err("failed")
        })
        .await;
        let r = g.wait().await;
        let end = Instant::now();
        assert_eq!(r, Err("failed"), "errgroup_cancel: wait lost the error");
        let t0 = t0.lock().unwrap().expect("the failing member ran");
        let ns = end.duration_since(t0).as_nanos() as u64;
        hist.record(ns);
        max_ns = max_ns.max(ns);
    }
    let meas = m.stop();
    RunOut::new(reps, meas)
        .extra("p50_ns", hist.quantile(0.5))
        .extra("p99_ns", hist.quantile(0.99))
        .extra("p999_ns", hist.quantile(0.999))
        .extra("max_ns", max_ns as f64)
        .extra("n", MEMBERS as f64)
}
