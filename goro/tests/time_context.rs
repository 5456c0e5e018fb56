//! Contexts: trees cancel completely, deadlines take the earlier of parent
//! and child, cancelled contexts leave no armed timer.

mod support;

use goro::context::{Context, ContextError};
use std::time::{Duration, Instant};
use support::within;

const LIMIT: Duration = Duration::from_secs(60);

#[test]
fn cancelling_a_parent_cancels_the_whole_tree() {
    within(LIMIT, "context tree", || {
        let rt = goro::Runtime::builder().procs(2).build().unwrap();
        rt.block_on(async {
            let (root, cancel) = Context::with_cancel(&Context::background());
            let mut all = Vec::new();
            let mut keep = Vec::new();
            let mut level = vec![root.clone()];
            for depth in 0..4 {
                let mut next = Vec::new();
                for parent in &level {
                    for _ in 0..3 {
                        let (c, k) = if depth % 2 == 0 {
                            Context::with_cancel(parent)
                        } else {
                            Context::with_timeout(parent, Duration::from_secs(3600))
                        };
                        keep.push(k);
                        all.push(c.clone());
                        next.push(c);
                    }
                }
                level = next;
            }
            assert_eq!(all.len(), 3 + 9 + 27 + 81);
            assert!(all.iter().all(|c| c.err().is_none()));
            // Tasks waiting on leaves wake when the root is cancelled.
            let waiters: Vec<_> = level
                .iter()
                .take(10)
                .map(|c| {
                    let c = c.clone();
                    goro::spawn(async move {
                        let _ = c.done().recv().await;
                        c.err()
                    })
                })
                .collect();
            cancel.cancel();
            for c in &all {
                assert_eq!(
                    c.err(),
                    Some(ContextError::Canceled),
                    "every descendant cancelled"
                );
                assert!(c.done().is_closed());
            }
            for w in waiters {
                assert_eq!(w.await.unwrap(), Some(ContextError::Canceled));
            }
            assert!(Context::background().err().is_none());
        });
        let s = rt.stats();
        // Level 1 arms 9 timers; level 3's hour-long deadlines are later than
        // their ancestors', so they arm none (the parent's deadline rules).
        assert_eq!(s.timers_armed, 9, "{s:?}");
        assert_eq!(
            s.timers_stopped, 9,
            "cancelled deadline contexts stopped their timers: {s:?}"
        );
    });
}

#[test]
fn deadline_is_the_earlier_of_own_and_parent() {
    within(LIMIT, "deadlines", || {
        let rt = goro::Runtime::builder().procs(1).build().unwrap();
        rt.block_on(async {
            let bg = Context::background();
            assert_eq!(bg.deadline(), None);
            let (p, _kp) = Context::with_timeout(&bg, Duration::from_millis(20));
            let (c, _kc) = Context::with_timeout(&p, Duration::from_secs(3600));
            assert_eq!(
                c.deadline(),
                p.deadline(),
                "child keeps the parent's earlier deadline"
            );
            let (c2, _kc2) = Context::with_timeout(&p, Duration::from_millis(1));
            assert!(c2.deadline() < p.deadline());
            let _ = c.done().recv().await;
            // Exact: the deadline is an `Instant` and goro's timer clock
            // is `Instant`'s (`sched/timer/clock.rs`), so no slack is allowed.
            let now = Instant::now();
            let deadline = p.deadline().expect("a deadline");
            assert!(
                now >= deadline,
                "the child fired {:?} before the parent's deadline",
                deadline - now
            );
            assert_eq!(c.err(), Some(ContextError::DeadlineExceeded));
            assert_eq!(c2.err(), Some(ContextError::DeadlineExceeded));
            // Past deadline: done at once.
            let (late, _k) = Context::with_deadline(&bg, Instant::now() - Duration::from_secs(1));
            assert_eq!(late.err(), Some(ContextError::DeadlineExceeded));
            // Child of a cancelled parent is born cancelled.
            let (dead, k) = Context::with_cancel(&bg);
            k.cancel();
            let (child, _kc) = Context::with_cancel(&dead);
            assert_eq!(child.err(), Some(ContextError::Canceled));
        });
    });
}

#[test]
fn done_is_selectable_with_other_channels() {
    within(LIMIT, "select on done", || {
        let rt = goro::Runtime::builder().procs(2).build().unwrap();
        rt.block_on(async {
            let (ctx, _k) = Context::with_timeout(&Context::background(), Duration::from_millis(5));
            let (_tx, rx) = goro::chan::bounded::<u32>(0);
            let which = goro::select! {
                recv(rx) -> _ => "message",
                recv(ctx.done()) -> _ => "deadline",
            };
            assert_eq!(which, "deadline");
        });
    });
}

#[test]
fn four_hundred_thousand_cancelled_contexts_leave_no_armed_timer() {
    within(Duration::from_secs(120), "400k contexts", || {
        let rt = goro::Runtime::builder().procs(2).build().unwrap();
        rt.block_on(async {
            let bg = Context::background();
            for _ in 0..400_000 {
                let (_c, cancel) = Context::with_timeout(&bg, Duration::from_secs(3600));
                cancel.cancel(); // the timer is stopped at once
            }
        });
        let s = rt.stats();
        assert_eq!(
            s.timers_armed, s.timers_stopped,
            "every armed deadline timer was stopped: {s:?}"
        );
    });
}

/// Go's rule: when `cancel` returns, the context's whole subtree is done,
/// even while another thread is cancelling a node inside it. A cancel that
/// reaches a node already being cancelled must wait until that node has
/// cancelled its own children (Go holds the node's lock while it does);
/// returning at once left a grandchild live after the root's cancel
/// returned (found by the soak at procs 8: "context node 10 not done after
/// its root was cancelled").
#[test]
fn a_root_cancel_racing_a_subtree_cancel_leaves_nothing_live() {
    let deadline = Instant::now() + Duration::from_secs(20);
    for trial in 0..20_000 {
        assert!(
            Instant::now() < deadline,
            "the race trials did not finish within 20 s (trial {trial})"
        );
        let (root, cancel_root) = Context::with_cancel(&Context::background());
        let (mid, cancel_mid) = Context::with_cancel(&root);
        let leaves: Vec<_> = (0..8).map(|_| Context::with_cancel(&mid)).collect();
        let go = std::sync::Arc::new(std::sync::Barrier::new(2));
        let g = go.clone();
        let t = std::thread::spawn(move || {
            g.wait();
            cancel_mid.cancel();
        });
        go.wait();
        cancel_root.cancel();
        for (i, (leaf, _)) in leaves.iter().enumerate() {
            assert!(
                leaf.err().is_some(),
                "trial {trial}: leaf {i} live after the root's cancel returned \
                 (the middle node was being cancelled on another thread)"
            );
        }
        assert!(
            mid.err().is_some(),
            "trial {trial}: the middle node is live"
        );
        t.join().expect("the cancelling thread panicked");
    }
}
