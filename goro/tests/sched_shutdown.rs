//! Dropping a Runtime stops every thread and drops every unfinished future.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use support::{threads_named, wait_until, within};

struct CountDrop(Arc<AtomicUsize>);
impl Drop for CountDrop {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn dropping_a_runtime_stops_threads_and_drops_every_unfinished_future() {
    within(Duration::from_secs(60), "shutdown", || {
        let dropped = Arc::new(AtomicUsize::new(0));
        let rt = goro::Runtime::builder()
            .procs(4)
            .thread_name("shutdn")
            .build()
            .unwrap();
        let parked = 1000;
        let d = dropped.clone();
        rt.block_on(async move {
            // Tasks parked forever.
            for _ in 0..parked {
                let g = CountDrop(d.clone());
                goro::spawn(async move {
                    let _g = g;
                    std::future::pending::<()>().await
                });
            }
            // Tasks that keep re-queueing themselves (always in a run queue).
            for _ in 0..100 {
                let g = CountDrop(d.clone());
                goro::spawn(async move {
                    let _g = g;
                    loop {
                        goro::yield_now().await;
                    }
                });
            }
            goro::yield_now().await;
        });
        // A blocking-pool closure that has finished leaves its thread idle.
        rt.block_on(rt.spawn_blocking(|| ())).unwrap();
        // A new thread names itself once it first runs (std sets the name
        // from inside it), which on a loaded machine can be a moment later.
        wait_until(
            Duration::from_secs(10),
            "worker threads were started",
            || !threads_named("shutdn-m").is_empty(),
        );
        drop(rt);
        assert_eq!(
            dropped.load(Ordering::SeqCst),
            parked + 100,
            "every unfinished future was dropped"
        );
        // join() returns when a thread has exited, a moment before the kernel
        // stops listing it in /proc.
        wait_until(
            Duration::from_secs(10),
            "worker threads and monitor gone",
            || threads_named("shutdn-m").is_empty() && threads_named("shutdn-monitor").is_empty(),
        );
        wait_until(
            Duration::from_secs(10),
            "idle blocking threads exit",
            || threads_named("shutdn-blocking").is_empty(),
        );
    });
}

#[test]
fn join_handle_of_a_task_cancelled_by_shutdown_reports_cancelled() {
    within(Duration::from_secs(60), "shutdown cancel", || {
        let rt = goro::Runtime::builder().procs(2).build().unwrap();
        let h = rt.spawn(std::future::pending::<()>());
        drop(rt);
        let rt2 = goro::Runtime::builder().procs(1).build().unwrap();
        let e = rt2.block_on(h).unwrap_err();
        assert!(e.is_cancelled(), "{e:?}");
    });
}
