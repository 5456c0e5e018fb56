//! Behaviour of `goro::sync::SingleFlight` (Go's
//! `golang.org/x/sync/singleflight`).
//!
//! Ported from x/sync's `singleflight_test.go`:
//!
//! - `TestDo` → `run_returns_the_value_unshared_for_a_lone_caller`.
//! - `TestDoErr` → `a_fallible_execution_returns_its_error_as_the_value`
//!   (the error is part of `V`; see the module docs of `singleflight.rs`).
//! - `TestDoDupSuppress` → `concurrent_callers_share_one_execution`, made
//!   exact: Go sleeps 10ms so that "more goroutines enter Do" and accepts
//!   any count of calls below n; here the execution waits until all n
//!   callers have joined (`SingleFlight::callers`), and exactly one runs.
//! - `TestForget` → `forget_starts_a_new_execution_and_the_old_one_keeps_its_callers`
//!   (the third caller must join the second execution, not be sent the
//!   first's result or start a third).
//! - `TestDoChan` → `run_from_a_spawned_task_is_do_chan` (`run` in a task of
//!   its own is `DoChan`: the handle is the channel).
//! - `TestPanicDo`, `TestPanicDoChan`, `TestPanicDoSharedByDoChan` →
//!   `a_panic_reaches_every_caller_as_an_error`: Go re-panics in each `Do`
//!   caller and crashes the process for `DoChan` (checked in a subprocess);
//!   here every caller gets `SingleFlightError::Panicked` with the message,
//!   and the key is free again.
//! - `TestGoexitDo` → `a_runtime_shutdown_reaches_a_waiter_as_cancelled`:
//!   Rust has no `runtime.Goexit`; the nearest thing, an execution whose task
//!   is dropped unfinished, must end every waiter with `Cancelled`.
//!
//! Not ported: `ExampleGroup` (the doc examples on `SingleFlight` play its
//! part) and the benchmarks.
//!
//! Added for what Go does not have: a dropped leader must not fail the
//! other callers, and the last caller dropped must stop the execution.
//!
//! Every wait is bounded by `support::DEADLINE`; nothing sleeps to let things
//! settle: "all callers have joined" is read from `SingleFlight::callers`.
#![cfg(not(loom))]

mod support;

use goro::sync::{SingleFlight, SingleFlightError};
use goro::Runtime;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc};
use std::time::Instant;
use support::{deadline as within, DEADLINE};

/// Waits (yielding) until `n` callers have joined the execution for `key`.
async fn joined<K, V>(sf: &SingleFlight<K, V>, key: &K, n: usize)
where
    K: std::hash::Hash + Eq + Clone + Send + 'static,
    V: Clone + Send + 'static,
{
    within(&format!("{n} callers to join"), async {
        while sf.callers(key) < n {
            goro::yield_now().await;
        }
    })
    .await;
    assert_eq!(
        sf.callers(key),
        n,
        "more callers joined than the test started"
    );
}

#[goro::test]
async fn run_returns_the_value_unshared_for_a_lone_caller() {
    let sf = SingleFlight::<&str, String>::new();
    let got = within("run", sf.run("key", async { "bar".to_string() })).await;
    assert_eq!(got, Ok(("bar".to_string(), false)));
    assert_eq!(
        sf.callers(&"key"),
        0,
        "the key is free once the execution ended"
    );
}

#[goro::test]
async fn a_fallible_execution_returns_its_error_as_the_value() {
    let sf = SingleFlight::<&str, Result<u32, Arc<std::io::Error>>>::new();
    let (v, shared) = within(
        "run",
        sf.run("key", async {
            Err(Arc::new(std::io::Error::other("some error")))
        }),
    )
    .await
    .expect("the flight itself succeeded");
    assert_eq!(v.unwrap_err().to_string(), "some error");
    assert!(!shared);
}

#[goro::test]
async fn concurrent_callers_share_one_execution() {
    const N: usize = 10;
    let sf = SingleFlight::<&str, String>::new();
    let calls = Arc::new(AtomicUsize::new(0));
    let (release, gate) = goro::chan::bounded::<()>(0);
    let mut callers = Vec::new();
    for _ in 0..N {
        let (sf, calls, gate) = (sf.clone(), calls.clone(), gate.clone());
        callers.push(goro::spawn(async move {
            sf.run("key", async move {
                calls.fetch_add(1, SeqCst);
                let _ = gate.recv().await;
                "bar".to_string()
            })
            .await
        }));
    }
    joined(&sf, &"key", N).await;
    release.close();
    for (i, c) in callers.into_iter().enumerate() {
        let got = within("a caller", c).await.expect("the caller task ran");
        assert_eq!(got, Ok(("bar".to_string(), true)), "caller {i}");
    }
    assert_eq!(
        calls.load(SeqCst),
        1,
        "one execution for {N} concurrent callers"
    );
}

#[goro::test]
async fn forget_starts_a_new_execution_and_the_old_one_keeps_its_callers() {
    let sf = SingleFlight::<&str, u32>::new();
    let (unblock_first, first_gate) = goro::chan::bounded::<()>(0);
    let s = sf.clone();
    let first = goro::spawn(async move {
        s.run("key", async move {
            let _ = first_gate.recv().await;
            1
        })
        .await
    });
    joined(&sf, &"key", 1).await;
    sf.forget(&"key");
    assert_eq!(sf.callers(&"key"), 0, "forgotten");

    let (unblock_second, second_gate) = goro::chan::bounded::<()>(0);
    let s = sf.clone();
    let second = goro::spawn(async move {
        s.run("key", async move {
            let _ = second_gate.recv().await;
            2
        })
        .await
    });
    joined(&sf, &"key", 1).await;
    unblock_first.close();
    assert_eq!(
        within("the first caller", first).await.unwrap(),
        Ok((1, false)),
        "the forgotten execution still ends for its caller"
    );
    // The first execution's end must not have removed the second's entry.
    let s = sf.clone();
    let third = goro::spawn(async move {
        s.run("key", async { unreachable!("the third joins the second") })
            .await
    });
    joined(&sf, &"key", 2).await;
    unblock_second.close();
    assert_eq!(
        within("the second caller", second).await.unwrap(),
        Ok((2, true))
    );
    assert_eq!(
        within("the third caller", third).await.unwrap(),
        Ok((2, true)),
        "the third caller must get the second execution's value"
    );
}

#[goro::test]
async fn run_from_a_spawned_task_is_do_chan() {
    let sf = SingleFlight::<&str, &str>::new();
    let s = sf.clone();
    let ch = goro::spawn(async move { s.run("key", async { "bar" }).await });
    assert_eq!(within("the result", ch).await.unwrap(), Ok(("bar", false)));
}

#[goro::test]
async fn a_panic_reaches_every_caller_as_an_error() {
    const N: usize = 5;
    let sf = SingleFlight::<&str, u32>::new();
    let (release, gate) = goro::chan::bounded::<()>(0);
    let mut callers = Vec::new();
    for _ in 0..N {
        let (sf, gate) = (sf.clone(), gate.clone());
        callers.push(goro::spawn(async move {
            sf.run("key", async move {
                let _ = gate.recv().await;
                panic!("expected by the test: invalid memory address")
            })
            .await
        }));
    }
    joined(&sf, &"key", N).await;
    release.close();
    for (i, c) in callers.into_iter().enumerate() {
        let got = within("a caller", c)
            .await
            .expect("the caller itself did not panic");
        assert_eq!(
            got,
            Err(SingleFlightError::Panicked(
                "expected by the test: invalid memory address".to_string()
            )),
            "caller {i}"
        );
    }
    assert_eq!(
        within("run after the panic", sf.run("key", async { 7 })).await,
        Ok((7, false)),
        "the key is free again after a panic"
    );
    let msg = SingleFlightError::Panicked("x".into()).to_string();
    assert_eq!(msg, "singleflight: the execution panicked: x");
}

#[goro::test]
async fn a_dropped_leader_does_not_fail_the_other_callers() {
    let sf = SingleFlight::<&str, u32>::new();
    let calls = Arc::new(AtomicUsize::new(0));
    let (release, gate) = goro::chan::bounded::<()>(0);
    let (s, c) = (sf.clone(), calls.clone());
    let leader = goro::spawn(async move {
        s.run("key", async move {
            c.fetch_add(1, SeqCst);
            let _ = gate.recv().await;
            42
        })
        .await
    });
    joined(&sf, &"key", 1).await;
    let s = sf.clone();
    let follower = goro::spawn(async move {
        s.run("key", async {
            unreachable!("joins the leader's execution")
        })
        .await
    });
    joined(&sf, &"key", 2).await;
    leader.abort();
    assert!(within("the aborted leader", leader)
        .await
        .unwrap_err()
        .is_cancelled());
    release.close();
    assert_eq!(
        within("the follower", follower).await.unwrap(),
        Ok((42, true)),
        "the execution must outlive its leader while others wait for it"
    );
    assert_eq!(calls.load(SeqCst), 1);
}

#[goro::test]
async fn the_last_caller_dropped_stops_the_execution() {
    let sf = SingleFlight::<&str, u32>::new();
    // The execution holds `alive`; the channel closes when it is dropped.
    let (alive, dropped) = goro::chan::bounded::<()>(0);
    let s = sf.clone();
    let leader = goro::spawn(async move {
        s.run("key", async move {
            let _alive = alive;
            std::future::pending::<u32>().await
        })
        .await
    });
    joined(&sf, &"key", 1).await;
    leader.abort();
    assert!(within("the aborted leader", leader)
        .await
        .unwrap_err()
        .is_cancelled());
    assert!(
        within("the execution to be dropped", dropped.recv())
            .await
            .is_err(),
        "nothing was sent: the channel closed because the execution was dropped"
    );
    assert_eq!(sf.callers(&"key"), 0, "the abandoned call is gone");
    assert_eq!(
        within("a new run", sf.run("key", async { 3 })).await,
        Ok((3, false)),
        "the next caller starts afresh"
    );
}

#[test]
fn a_runtime_shutdown_reaches_a_waiter_as_cancelled() {
    let rt = Runtime::builder().procs(1).build().unwrap();
    let sf = SingleFlight::<u32, u32>::new();
    let s = sf.clone();
    rt.block_on(async move {
        let s2 = s.clone();
        drop(goro::spawn(async move {
            s2.run(1, std::future::pending::<u32>()).await
        }));
        joined(&s, &1, 1).await;
    });
    // A waiter on a plain thread: joining does not need a runtime.
    let (tx, rx) = mpsc::channel();
    let waiter = sf.clone();
    let t = std::thread::spawn(move || {
        let _ = tx.send(futures::executor::block_on(
            waiter.run(1, async { unreachable!("joins") }),
        ));
    });
    let start = Instant::now();
    while sf.callers(&1) < 2 {
        assert!(
            start.elapsed() < DEADLINE,
            "the plain-thread waiter did not join within {DEADLINE:?}"
        );
        std::thread::yield_now();
    }
    drop(rt); // drops every task: the execution's among them
    let got = rx.recv_timeout(DEADLINE).unwrap_or_else(|e| {
        panic!("the waiter did not get an answer within {DEADLINE:?} after the shutdown ({e})")
    });
    assert_eq!(got, Err(SingleFlightError::Cancelled));
    t.join().unwrap();
    assert_eq!(sf.callers(&1), 0, "the cancelled call is gone");
}

#[test]
#[should_panic(expected = "outside")]
fn run_outside_a_runtime_panics_and_leaves_no_call_behind() {
    let sf = SingleFlight::<u32, u32>::new();
    let s = sf.clone();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        futures::executor::block_on(s.run(1, async { 1 }))
    }));
    assert_eq!(
        sf.callers(&1),
        0,
        "a failed start must not leave a call to join"
    );
    std::panic::resume_unwind(r.unwrap_err());
}
