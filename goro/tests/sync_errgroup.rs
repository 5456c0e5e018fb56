//! Behaviour of `goro::sync::ErrGroup` (Go's `golang.org/x/sync/errgroup`).
//!
//! Ported from x/sync's `errgroup_test.go`:
//!
//! - `TestZeroGroup` → `zero_group_returns_the_first_error`, adapted: Go's
//!   `Wait` returns the first error to every call; here the error is moved to
//!   the first `wait` that returns it (errors are not `Clone`), so the test
//!   waits once per case after starting all members, and
//!   `a_second_wait_finds_the_error_taken` pins the difference.
//! - `TestWithContext` → `with_context_returns_the_first_error_and_cancels`.
//! - `TestTryGo` → `try_go_respects_the_limit_and_set_limit` (the whole
//!   sequence: limit 42, full, drained, limit 1, limit 0).
//! - `TestGoLimit` → `go_never_runs_more_than_the_limit` (an atomic max of
//!   the members running at once; `yield_now` where Go sleeps 1µs).
//! - `TestPanic` (in x/sync for a while in 2025, removed since; see the header
//!   of `errgroup.rs`) → `wait_resumes_a_member_panic_after_all_members_end`.
//!
//! Not ported: `TestCancelCause` (goro's `Context` has no cause; the error
//! itself is what `wait` returns), the `Example*` functions (the doc examples
//! on `ErrGroup` play their part, a worker pool included) and `BenchmarkGo`.
//!
//! Every wait is bounded by `support::DEADLINE`; nothing sleeps to let things
//! settle: "has not started" is checked by polling once, or with `try_go`.
#![cfg(not(loom))]

mod support;

use goro::context::{Context, ContextError};
use goro::sync::ErrGroup;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::task::Poll;
use support::deadline as within;

/// Whether `fut` is still pending after one poll.
async fn pending_once<F: Future + Unpin>(fut: &mut F) -> bool {
    std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut *fut).poll(cx).is_pending())).await
}

#[goro::test]
async fn zero_group_returns_the_first_error() {
    let cases: Vec<Vec<Option<&'static str>>> = vec![
        vec![],
        vec![None],
        vec![Some("err1")],
        vec![Some("err1"), None],
        vec![Some("err1"), None, Some("err2")],
    ];
    for errs in cases {
        let g = ErrGroup::<&'static str>::new();
        for (i, e) in errs.iter().copied().enumerate() {
            g.go(async move { e.map_or(Ok(()), Err) }).await;
            // Go expects the first error of the case from every Wait; here
            // the previous wait took it, so each wait returns this member's.
            assert_eq!(
                within("wait", g.wait()).await,
                e.map_or(Ok(()), Err),
                "case {errs:?}, after member {i}"
            );
        }
    }
}

#[goro::test]
async fn first_error_wins_over_later_ones() {
    let (g, ctx) = ErrGroup::<String>::with_context(&Context::background());
    let (release_second, gate) = goro::chan::bounded::<()>(0);
    g.go(async move {
        let _ = gate.recv().await; // fails only once the other has failed
        Err("second".to_string())
    })
    .await;
    g.go(async { Err("first".to_string()) }).await;
    // The context is cancelled when the first error is recorded.
    within("the first error", async {
        let _ = ctx.done().recv().await;
    })
    .await;
    release_second.close();
    assert_eq!(
        within("wait", g.wait()).await,
        Err("first".to_string()),
        "wait must return the first error, not a later one"
    );
}

#[goro::test]
async fn a_second_wait_finds_the_error_taken() {
    let g = ErrGroup::<&str>::new();
    g.go(async { Err("boom") }).await;
    assert_eq!(within("wait", g.wait()).await, Err("boom"));
    assert_eq!(
        within("second wait", g.wait()).await,
        Ok(()),
        "the error is moved to the first wait that returns it"
    );
}

#[goro::test]
async fn with_context_returns_the_first_error_and_cancels() {
    // As Go's cases: at most one error each, so "first" needs no ordering.
    let cases: Vec<Vec<Option<&'static str>>> = vec![
        vec![],
        vec![None],
        vec![Some("doomed")],
        vec![Some("doomed"), None],
    ];
    for errs in cases {
        let (g, ctx) = ErrGroup::<&'static str>::with_context(&Context::background());
        for e in errs.iter().copied() {
            g.go(async move { e.map_or(Ok(()), Err) }).await;
        }
        let want = errs.iter().flatten().next().copied();
        assert_eq!(within("wait", g.wait()).await.err(), want, "case {errs:?}");
        assert_eq!(
            ctx.err(),
            Some(ContextError::Canceled),
            "case {errs:?}: the context must be cancelled once wait returned"
        );
        assert!(
            ctx.done().is_closed(),
            "case {errs:?}: done() must be closed"
        );
    }
}

#[goro::test]
async fn the_context_is_cancelled_by_the_first_error_before_wait() {
    let (g, ctx) = ErrGroup::<&str>::with_context(&Context::background());
    let c = ctx.clone();
    let saw = Arc::new(AtomicUsize::new(0));
    let s = saw.clone();
    g.go(async move {
        // A sibling that runs until the group's context says stop.
        let _ = c.done().recv().await;
        s.store(1, SeqCst);
        Ok(())
    })
    .await;
    g.go(async { Err("failed") }).await;
    within("the sibling to see the cancellation", async {
        let _ = ctx.done().recv().await;
    })
    .await;
    assert_eq!(ctx.err(), Some(ContextError::Canceled));
    assert_eq!(within("wait", g.wait()).await, Err("failed"));
    assert_eq!(
        saw.load(SeqCst),
        1,
        "the sibling ended because of the cancellation"
    );
}

#[goro::test]
async fn a_panic_cancels_the_context_too() {
    let (g, ctx) = ErrGroup::<()>::with_context(&Context::background());
    g.go(async { panic!("expected by the test: member panics") })
        .await;
    within("the cancellation", async {
        let _ = ctx.done().recv().await;
    })
    .await;
    let waiter = goro::spawn(async move { g.wait().await });
    let err = within("wait", waiter).await.unwrap_err();
    assert!(err.is_panic());
}

#[goro::test]
async fn the_context_is_cancelled_after_a_successful_wait() {
    let (g, ctx) = ErrGroup::<()>::with_context(&Context::background());
    g.go(async { Ok(()) }).await;
    assert_eq!(within("wait", g.wait()).await, Ok(()));
    assert_eq!(
        ctx.err(),
        Some(ContextError::Canceled),
        "Go cancels the derived context when Wait returns, error or not"
    );
}

#[goro::test]
async fn try_go_respects_the_limit_and_set_limit() {
    let g = ErrGroup::<()>::new();
    let n = 42;
    g.set_limit(Some(n));
    // Each member blocks until the test receives from it (Go's `ch <- struct{}{}`).
    let (tx, rx) = goro::chan::bounded::<()>(0);
    let member = |tx: goro::chan::Sender<()>| async move {
        tx.send(()).await.expect("the test keeps the receiver");
        Ok(())
    };
    for i in 0..n {
        assert!(
            g.try_go(member(tx.clone())),
            "try_go {i} of {n} must succeed below the limit"
        );
    }
    assert!(
        !g.try_go(member(tx.clone())),
        "try_go must fail at the limit ({n})"
    );
    for _ in 0..n {
        within("a member's send", rx.recv()).await.unwrap();
    }
    within("wait", g.wait()).await.unwrap();
    assert!(
        g.try_go(member(tx.clone())),
        "try_go must succeed once the group drained"
    );
    within("the member's send", rx.recv()).await.unwrap();
    within("wait", g.wait()).await.unwrap();

    // Switch the limit.
    g.set_limit(Some(1));
    assert!(
        g.try_go(member(tx.clone())),
        "the first try_go under limit 1"
    );
    assert!(
        !g.try_go(member(tx.clone())),
        "the second try_go under limit 1"
    );
    within("the member's send", rx.recv()).await.unwrap();
    within("wait", g.wait()).await.unwrap();

    // Block all calls.
    g.set_limit(Some(0));
    for i in 0..1 << 10 {
        assert!(
            !g.try_go(member(tx.clone())),
            "try_go {i} under limit 0 must fail"
        );
    }
    within("wait", g.wait()).await.unwrap();
}

#[goro::test]
async fn go_never_runs_more_than_the_limit() {
    const LIMIT: usize = 10;
    let g = ErrGroup::<String>::new();
    g.set_limit(Some(LIMIT));
    let (active, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    for _ in 0..=1 << 10 {
        let (active, most) = (active.clone(), most.clone());
        within(
            "go (waiting for a slot)",
            g.go(async move {
                let n = active.fetch_add(1, SeqCst) + 1;
                most.fetch_max(n, SeqCst);
                if n > LIMIT {
                    return Err(format!("saw {n} active members; want <= {LIMIT}"));
                }
                goro::yield_now().await; // let the others increment `active`
                active.fetch_sub(1, SeqCst);
                Ok(())
            }),
        )
        .await;
    }
    within("wait", g.wait()).await.unwrap();
    let most = most.load(SeqCst);
    assert!(
        (1..=LIMIT).contains(&most),
        "at most {most} ran at once; want 1..={LIMIT}"
    );
}

#[goro::test]
async fn go_waits_for_a_free_slot_and_try_go_fails_meanwhile() {
    let g = ErrGroup::<()>::new();
    g.set_limit(Some(1));
    let (release, gate) = goro::chan::bounded::<()>(0);
    g.go(async move {
        let _ = gate.recv().await;
        Ok(())
    })
    .await;
    let ran = Arc::new(AtomicUsize::new(0));
    let r = ran.clone();
    let mut second = pin!(g.go(async move {
        r.store(1, SeqCst);
        Ok(())
    }));
    assert!(
        pending_once(&mut second).await,
        "go must wait while the one slot is taken"
    );
    assert!(
        !g.try_go(async { Ok(()) }),
        "try_go must not overtake a waiting go"
    );
    release.close();
    within("go after the slot was freed", second).await;
    within("wait", g.wait()).await.unwrap();
    assert_eq!(ran.load(SeqCst), 1, "the second member ran");
}

#[goro::test]
async fn a_dropped_go_leaves_no_trace() {
    let g = ErrGroup::<()>::new();
    g.set_limit(Some(0));
    {
        let mut waiting = pin!(g.go(async { unreachable!("dropped unrun") }));
        assert!(pending_once(&mut waiting).await, "limit 0 admits nobody");
    }
    within("wait", g.wait()).await.unwrap();
    g.set_limit(None); // allowed: the dropped go no longer waits
    assert!(g.try_go(async { Ok(()) }));
    within("wait", g.wait()).await.unwrap();
}

#[goro::test]
async fn set_limit_while_members_are_active_panics() {
    let g = ErrGroup::<()>::new();
    let (release, gate) = goro::chan::bounded::<()>(0);
    g.go(async move {
        let _ = gate.recv().await;
        Ok(())
    })
    .await;
    let err = catch_unwind(AssertUnwindSafe(|| g.set_limit(Some(2)))).unwrap_err();
    let msg = err.downcast_ref::<String>().expect("a formatted message");
    assert!(
        msg.contains("set_limit(Some(2))")
            && msg.contains("1 members")
            && msg.contains("after wait() returns"),
        "the message must name the call, the count and what to do: {msg}"
    );
    release.close();
    within("wait", g.wait()).await.unwrap();
    g.set_limit(Some(2)); // fine now
}

#[test]
fn set_limit_above_the_semaphore_maximum_names_the_input() {
    let g = ErrGroup::<()>::new();
    let err = catch_unwind(AssertUnwindSafe(|| g.set_limit(Some(usize::MAX)))).unwrap_err();
    let msg = err.downcast_ref::<String>().expect("a formatted message");
    assert!(
        msg.contains(&format!("set_limit(Some({}))", usize::MAX))
            && msg.contains("None for no limit"),
        "{msg}"
    );
}

#[goro::test]
async fn wait_resumes_a_member_panic_after_all_members_end() {
    let g = ErrGroup::<&str>::new();
    let (release, gate) = goro::chan::bounded::<()>(0);
    let ended = Arc::new(AtomicUsize::new(0));
    let e = ended.clone();
    g.go(async move {
        let _ = gate.recv().await;
        e.store(1, SeqCst);
        Err("an error loses to the panic")
    })
    .await;
    g.go(async { panic!("expected by the test: member panics") })
        .await;
    let g2 = g.clone();
    let waiter = goro::spawn(async move { g2.wait().await });
    release.close();
    let err = within("wait", waiter).await.unwrap_err();
    assert!(
        err.is_panic(),
        "wait must resume the member's panic, got {err}"
    );
    assert!(err.to_string().contains("member panics"), "{err}");
    assert_eq!(
        ended.load(SeqCst),
        1,
        "wait resumed the panic before every member ended"
    );
}

type Member = Pin<Box<dyn Future<Output = Result<(), String>> + Send>>;

/// A member that starts two children until `depth` is 0.
fn walk(g: ErrGroup<String>, depth: u32, count: Arc<AtomicUsize>) -> Member {
    Box::pin(async move {
        count.fetch_add(1, SeqCst);
        if depth > 0 {
            for _ in 0..2 {
                g.go(walk(g.clone(), depth - 1, count.clone())).await;
            }
        }
        Ok(())
    })
}

#[goro::test]
async fn members_can_start_members_through_a_clone() {
    let g = ErrGroup::<String>::new();
    let count = Arc::new(AtomicUsize::new(0));
    g.go(walk(g.clone(), 4, count.clone())).await;
    within("wait", g.wait()).await.unwrap();
    assert_eq!(count.load(SeqCst), 31, "a full binary tree of depth 4");
}

#[goro::test]
async fn a_wait_lost_to_a_timeout_can_be_retried() {
    let g = ErrGroup::<&str>::new();
    let (release, gate) = goro::chan::bounded::<()>(0);
    g.go(async move {
        let _ = gate.recv().await;
        Err("late")
    })
    .await;
    {
        let mut w = pin!(g.wait());
        assert!(pending_once(&mut w).await, "a member is still running");
    } // dropped unfinished
    release.close();
    assert_eq!(within("wait", g.wait()).await, Err("late"));
}
