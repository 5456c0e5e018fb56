//! Go's `testing/synctest` examples (`src/testing/synctest/example_test.go`
//! in Go's tree), ported to `goro::sim` one for one: `TestTime`,
//! `TestWait`, `TestContextAfterFunc` and `TestContextWithTimeout`. (The
//! fifth, the HTTP 100-continue exchange, needs the simulated network and
//! lives with goro-http's tests.)
//!
//! Go's bubble starts its clock at midnight UTC 2000-01-01; a goro bubble
//! starts at the real clock's reading, and what the examples check is the
//! time elapsed, which is exact in both.

use goro::context::{Context, ContextError};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[goro::test(sim)]
async fn time() {
    let start = goro::time::now();
    let seen = Arc::new(AtomicU64::new(0));
    let theirs = seen.clone();
    goro::spawn(async move {
        goro::time::sleep(Duration::from_nanos(1)).await;
        theirs.store(
            (goro::time::now() - start).as_nanos() as u64,
            Ordering::Relaxed,
        );
    });
    // The task's sleep ends first: its nanosecond is logged before ours.
    goro::time::sleep(Duration::from_nanos(2)).await;
    assert_eq!(seen.load(Ordering::Relaxed), 1, "the task logs 1ns");
    assert_eq!(
        goro::time::now() - start,
        Duration::from_nanos(2),
        "the root logs 2ns"
    );
}

#[goro::test(sim)]
async fn wait() {
    let done = Arc::new(AtomicBool::new(false));
    let theirs = done.clone();
    goro::spawn(async move {
        theirs.store(true, Ordering::Relaxed);
    });
    // Wait blocks until the task above has finished.
    goro::sim::wait().await;
    assert!(done.load(Ordering::Relaxed));
}

#[goro::test(sim)]
async fn context_after_func() {
    // A context that can be cancelled.
    let (ctx, cancel) = Context::with_cancel(&Context::background());

    // `after_func` registers a function to be called when it is cancelled.
    let called = Arc::new(AtomicBool::new(false));
    let theirs = called.clone();
    let _stop = ctx.after_func(move || theirs.store(true, Ordering::Relaxed));

    // Not cancelled: the function has not been called.
    goro::sim::wait().await;
    assert!(
        !called.load(Ordering::Relaxed),
        "before cancel: after_func called"
    );

    // Cancel, wait for the function to run, and see that it did.
    cancel.cancel();
    goro::sim::wait().await;
    assert!(
        called.load(Ordering::Relaxed),
        "after cancel: after_func not called"
    );
}

#[goro::test(sim)]
async fn context_with_timeout() {
    // A context cancelled after a timeout.
    const TIMEOUT: Duration = Duration::from_secs(5);
    let (ctx, cancel) = Context::with_timeout(&Context::background(), TIMEOUT);
    let _guard = cancel.cancel_on_drop(); // `defer cancel()`

    // Wait just less than the timeout.
    goro::time::sleep(TIMEOUT - Duration::from_nanos(1)).await;
    goro::sim::wait().await;
    assert_eq!(ctx.err(), None, "before the timeout");

    // Wait the rest of the way.
    goro::time::sleep(Duration::from_nanos(1)).await;
    goro::sim::wait().await;
    assert_eq!(
        ctx.err(),
        Some(ContextError::DeadlineExceeded),
        "after the timeout"
    );
}

/// `AfterFunc`'s `stop`, as Go's: true when it kept the function from
/// running, false once it has run.
#[goro::test(sim, seed = 3)]
async fn after_func_stop_keeps_the_function_from_running() {
    let (ctx, cancel) = Context::with_cancel(&Context::background());
    let called = Arc::new(AtomicBool::new(false));
    let theirs = called.clone();
    let f = ctx.after_func(move || theirs.store(true, Ordering::Relaxed));
    assert!(f.stop(), "a waiting function is stopped");
    assert!(!f.stop(), "stopping twice says it was stopped already");
    cancel.cancel();
    goro::sim::wait().await;
    assert!(!called.load(Ordering::Relaxed));

    let (ctx, cancel) = Context::with_cancel(&Context::background());
    let f = ctx.after_func(|| {});
    cancel.cancel();
    goro::sim::wait().await;
    assert!(!f.stop(), "a function that ran cannot be stopped");
}
