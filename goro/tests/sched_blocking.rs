//! Blocking: `block_in_place` hands the P off; a poll that never yields does
//! not stall the tasks queued behind it (the monitor marks its P stuck).

mod support;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use support::{wait_until, within};

const LIMIT: Duration = Duration::from_secs(60);

#[test]
fn block_in_place_lets_other_tasks_progress_on_one_proc() {
    within(LIMIT, "block_in_place on procs=1", || {
        let rt = goro::Runtime::builder().procs(1).build().unwrap();
        let progressed = Arc::new(AtomicUsize::new(0));
        let p = progressed.clone();
        rt.block_on(async move {
            let p2 = p.clone();
            let blocker = goro::spawn(async move {
                goro::block_in_place(|| {
                    // The only P was handed off: other tasks must be able to
                    // run while this thread is blocked here.
                    wait_until(
                        Duration::from_secs(30),
                        "other tasks ran while blocked in place",
                        || p2.load(Ordering::SeqCst) >= 100,
                    );
                });
            });
            let workers: Vec<_> = (0..100)
                .map(|_| {
                    let p = p.clone();
                    goro::spawn(async move {
                        goro::yield_now().await;
                        p.fetch_add(1, Ordering::SeqCst);
                    })
                })
                .collect();
            for w in workers {
                w.await.unwrap();
            }
            blocker.await.unwrap();
        });
        assert_eq!(progressed.load(Ordering::SeqCst), 100);
        assert!(rt.stats().handoffs >= 1);
    });
}

#[test]
fn block_in_place_that_panics_gives_the_p_back() {
    within(LIMIT, "panicking block_in_place", || {
        let rt = goro::Runtime::builder().procs(1).build().unwrap();
        for _ in 0..10 {
            let e = rt
                .block_on(async {
                    goro::spawn(async { goro::block_in_place(|| panic!("inside")) }).await
                })
                .unwrap_err();
            assert!(e.is_panic());
        }
        // The single P is usable after every panic.
        let v = rt.block_on(async { goro::spawn(async { 3 }).await.unwrap() });
        assert_eq!(v, 3);
        // ... and goes back to the idle list when there is nothing to run.
        wait_until(
            Duration::from_secs(10),
            "the P returns to the idle list",
            || rt.schedtrace().contains("idleprocs=1"),
        );
    });
}

#[test]
fn block_in_place_outside_a_task_just_runs() {
    assert_eq!(goro::block_in_place(|| 9), 9);
}

#[test]
fn a_task_that_never_yields_does_not_stall_tasks_queued_on_its_p() {
    within(LIMIT, "monitor retake", || {
        let rt = Arc::new(
            goro::Runtime::builder()
                .procs(2)
                .thread_name("retake")
                // Without the hand-off wake (sched_guarantees.rs tests it),
                // so that only the monitor's stuck-P rescue can help.
                .policy(
                    goro::Policy::default()
                        .with_overrides("runnext_wake=off")
                        .unwrap(),
                )
                .build()
                .unwrap(),
        );
        let rt2 = rt.clone();
        let ran = Arc::new(AtomicBool::new(false));
        let r = ran.clone();
        rt.block_on(async move {
            goro::spawn(async move {
                // Let the other P go idle first, so only the monitor can
                // notice the task queued behind this poll.
                wait_until(Duration::from_secs(30), "the other P is idle", || {
                    let t = rt2.schedtrace();
                    t.contains("idleprocs=1") && t.contains("spinningthreads=0")
                });
                let r2 = r.clone();
                // Goes to this P's runnext; this poll then refuses to return.
                let queued = goro::spawn(async move { r2.store(true, Ordering::SeqCst) });
                wait_until(
                    Duration::from_secs(30),
                    "the queued task ran on another P",
                    || r.load(Ordering::SeqCst),
                );
                drop(queued);
            })
            .await
            .unwrap();
        });
        assert!(ran.load(Ordering::SeqCst));
        let s = rt.stats();
        assert!(s.retakes >= 1, "the monitor marked the stuck P: {s:?}");
        assert!(s.steals >= 1, "a thief took the task: {s:?}");
    });
}
