//! The sync group of goro-bench/README.md, after Go's `sync` benchmarks
//! (`sync/mutex_test.go`); the shapes and op counts are those of
//! `bench/go/sync.go` (read side by side). `sync.Pool` has its own group
//! (`pool.rs`). P below is procs.
//!
//! The body is written once, generic over the runtime ([`Rt`]) and over the
//! mutex ([`AsyncMutex`]): goro's column locks `goro::sync::Mutex` (Go's
//! `sync.Mutex` for tasks: spin, then queue, with Go's normal and
//! starvation modes), tokio's `tokio::sync::Mutex` (the async mutex a
//! tokio user holds across nothing here, but the one that does not block
//! a worker thread, as goro's and Go's do not). Each method hands back the
//! mutex's own future, so a measured lock is exactly that crate's.

use super::{per_worker, COUNTERS, TASKS_PER_P};
use crate::registry::{body, Ctx, Meter, RunOut, Workload};
use crate::rt::{Gang, Goro, Rt, Tokio};
use std::future::Future;
use std::ops::DerefMut;
use std::sync::Arc;

/// Registers the sync group.
pub fn register(v: &mut Vec<Workload>) {
    v.push(
        Workload::new(
            "mutex_contended",
            "sync",
            "one lock, increment, unlock of one mutex shared by 4*P tasks (Go's BenchmarkMutex)",
            (2_000_000, 200_000),
        )
        .goro(Ok(body(mutex_contended::<Goro, goro::sync::Mutex<u64>>)))
        .tokio(Ok(body(mutex_contended::<Tokio, tokio::sync::Mutex<u64>>)))
        .show(COUNTERS),
    );
}

/// An async mutex around a `u64`: goro's and tokio's.
pub trait AsyncMutex: Send + Sync + 'static {
    /// What a lock hands back.
    type Guard<'a>: DerefMut<Target = u64>
    where
        Self: 'a;
    /// A mutex holding `v`.
    fn new(v: u64) -> Self;
    /// Locks it.
    fn lock(&self) -> impl Future<Output = Self::Guard<'_>> + Send + '_;
}

impl AsyncMutex for goro::sync::Mutex<u64> {
    type Guard<'a> = goro::sync::MutexGuard<'a, u64>;
    fn new(v: u64) -> Self {
        goro::sync::Mutex::new(v)
    }
    fn lock(&self) -> impl Future<Output = Self::Guard<'_>> + Send + '_ {
        goro::sync::Mutex::lock(self)
    }
}

impl AsyncMutex for tokio::sync::Mutex<u64> {
    type Guard<'a> = tokio::sync::MutexGuard<'a, u64>;
    fn new(v: u64) -> Self {
        tokio::sync::Mutex::new(v)
    }
    fn lock(&self) -> impl Future<Output = Self::Guard<'_>> + Send + '_ {
        tokio::sync::Mutex::lock(self)
    }
}

/// mutex_contended (Go: BenchmarkMutex of `sync/mutex_test.go`).
///
/// One mutex guarding a `u64`, shared by W = 4*P tasks (`TASKS_PER_P`;
/// Go's BenchmarkMutex runs P goroutines under `RunParallel`, its
/// `MutexSlack` 10*P: here 4*P, as in fan_in), parked on a gang before the
/// clock. Each does K times: lock, increment the guarded value, unlock.
/// Nothing is done outside the lock (BenchmarkMutex's shape, not
/// BenchmarkMutexWork's 100 multiply-divides between locks), so this is
/// the lock at its most contended. K = total/W. Checked: the value is W*K
/// at the end. One op = one lock + increment + unlock. Ops: 2,000,000
/// normal, 200,000 quick (rounded down to a multiple of W).
async fn mutex_contended<R: Rt, M: AsyncMutex>(ctx: Ctx) -> RunOut {
    let w = (TASKS_PER_P * ctx.procs) as u64;
    let (k, ops) = per_worker(ctx.size(2_000_000, 200_000), w, 1);
    let mu = Arc::new(M::new(0));
    let shared = mu.clone();
    let g = Gang::new::<R, _, _>(w as usize, move |_| {
        let mu = shared.clone();
        async move {
            for _ in 0..k {
                *mu.lock().await += 1;
            }
        }
    })
    .await;
    let m = Meter::start();
    g.release();
    g.wait().await;
    let meas = m.stop();
    let n = *mu.lock().await;
    assert_eq!(n, ops, "mutex_contended: lost increments");
    RunOut::new(ops, meas).extra("goroutines", w as f64)
}
