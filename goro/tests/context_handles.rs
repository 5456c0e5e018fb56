//! Context handles: the Go idiom `ctx, _ := context.WithTimeout(...)`
//! (`let (ctx, _) = Context::with_timeout(..)`) gives a context that is live
//! until its deadline; a discarded handle leaks nothing; the opt-in guard
//! cancels on drop.

mod support;

use goro::context::{Context, ContextError};
use std::time::{Duration, Instant};
use support::within;

const LIMIT: Duration = Duration::from_secs(60);

/// Waits for `ctx` to be done, failing with `what` if it is not within 30 s.
async fn done_within(ctx: &Context, what: &str) {
    let r = goro::time::timeout(Duration::from_secs(30), async {
        let _ = ctx.done().recv().await;
    })
    .await;
    assert!(r.is_ok(), "{what}: not done within 30 s: {ctx:?}");
}

#[test]
fn the_discarded_handle_idiom_gives_a_live_context_until_its_deadline() {
    within(LIMIT, "discarded handle", || {
        let rt = goro::Runtime::builder().procs(2).build().unwrap();
        rt.block_on(async {
            let bg = Context::background();
            let (ctx, _) = Context::with_timeout(&bg, Duration::from_millis(100));
            let deadline = ctx.deadline().expect("a timeout context has a deadline");
            assert_eq!(
                ctx.err(),
                None,
                "the handle was dropped on the line above and must not cancel"
            );
            assert!(
                !ctx.done().is_closed(),
                "done must be open before the deadline"
            );

            // Another task sees it live too, then done at the deadline.
            let c = ctx.clone();
            let waiter = goro::spawn(async move {
                done_within(&c, "waiter").await;
                (Instant::now(), c.err())
            });
            let (woke, err) = goro::time::timeout(Duration::from_secs(30), waiter)
                .await
                .expect("the waiter did not finish within 30 s")
                .unwrap();
            assert!(
                woke >= deadline,
                "done {:?} before the deadline: the discarded handle cancelled it",
                deadline - woke
            );
            assert_eq!(
                err,
                Some(ContextError::DeadlineExceeded),
                "done by its deadline"
            );
            assert_eq!(ctx.err(), Some(ContextError::DeadlineExceeded));

            // The same for with_deadline and for a with_cancel child of a
            // live parent: live until the deadline / until the parent ends.
            let (parent, cancel_parent) = Context::with_cancel(&bg);
            let (by_deadline, _) =
                Context::with_deadline(&parent, Instant::now() + Duration::from_millis(20));
            let (by_parent, _) = Context::with_cancel(&parent);
            assert_eq!(
                by_deadline.err(),
                None,
                "with_deadline with a dropped handle"
            );
            assert_eq!(by_parent.err(), None, "with_cancel with a dropped handle");
            done_within(&by_deadline, "with_deadline child").await;
            let d = by_deadline.deadline().unwrap();
            assert!(
                Instant::now() >= d,
                "with_deadline child done before its deadline"
            );
            assert_eq!(by_deadline.err(), Some(ContextError::DeadlineExceeded));
            assert_eq!(by_parent.err(), None, "still live: its parent is");
            cancel_parent.cancel();
            assert_eq!(
                by_parent.err(),
                Some(ContextError::Canceled),
                "done with its parent"
            );
            assert!(by_parent.done().is_closed());
        });
    });
}

#[test]
fn a_discarded_handle_leaks_no_timer() {
    within(LIMIT, "no leaked timers", || {
        let rt = goro::Runtime::builder().procs(2).build().unwrap();
        rt.block_on(async {
            let bg = Context::background();
            // Context and handle both dropped: the timer is stopped at once.
            for _ in 0..10_000 {
                let (_ctx, _) = Context::with_timeout(&bg, Duration::from_secs(3600));
            }
            // Handle dropped, context kept: its parent's cancel stops it.
            let (parent, cancel) = Context::with_cancel(&bg);
            let kept: Vec<Context> = (0..1000)
                .map(|_| Context::with_timeout(&parent, Duration::from_secs(3600)).0)
                .collect();
            cancel.cancel();
            assert!(kept.iter().all(|c| c.err() == Some(ContextError::Canceled)));
            // Handle dropped, context kept: its deadline releases it. (No
            // timeout of our own around this wait, which would arm a timer
            // or not depending on timing: `within` bounds the test.)
            let (short, _) = Context::with_timeout(&bg, Duration::from_millis(1));
            let _ = short.done().recv().await;
            assert_eq!(short.err(), Some(ContextError::DeadlineExceeded));
        });
        let s = rt.stats();
        assert_eq!(
            s.timers_armed,
            s.timers_stopped + s.timers_fired,
            "every armed deadline timer was stopped or fired: {s:?}"
        );
        assert_eq!(s.timers_armed, 10_000 + 1000 + 1, "{s:?}");
        assert_eq!(s.timers_fired, 1, "{s:?}");
    });
}

#[test]
fn the_guard_cancels_on_drop_and_on_panic_and_can_be_disarmed() {
    within(LIMIT, "cancel guard", || {
        let bg = Context::background();
        let (ctx, cancel) = Context::with_cancel(&bg);
        {
            let _guard = cancel.clone().cancel_on_drop();
            assert_eq!(ctx.err(), None);
        }
        assert_eq!(ctx.err(), Some(ContextError::Canceled), "guard dropped");

        let (ctx, cancel) = Context::with_cancel(&bg);
        let c = ctx.clone();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
            let _guard = cancel.cancel_on_drop();
            assert_eq!(c.err(), None);
            panic!("work failed");
        }));
        assert!(r.is_err());
        assert_eq!(
            ctx.err(),
            Some(ContextError::Canceled),
            "cancelled by unwinding"
        );

        let (ctx, cancel) = Context::with_cancel(&bg);
        let cancel = cancel.cancel_on_drop().disarm();
        assert_eq!(ctx.err(), None, "a disarmed guard does not cancel");
        cancel.cancel();
        assert_eq!(ctx.err(), Some(ContextError::Canceled));
    });
}

#[test]
fn a_cloned_handle_cancels_from_another_task() {
    within(LIMIT, "cloned cancel", || {
        let rt = goro::Runtime::builder().procs(2).build().unwrap();
        rt.block_on(async {
            let (ctx, cancel) =
                Context::with_timeout(&Context::background(), Duration::from_secs(3600));
            let c2 = cancel.clone();
            drop(cancel);
            assert_eq!(ctx.err(), None, "dropping one clone cancels nothing");
            let h = goro::spawn(async move { c2.cancel() });
            h.await.unwrap();
            done_within(&ctx, "cancelled from a task").await;
            assert_eq!(ctx.err(), Some(ContextError::Canceled));
        });
    });
}
