//! An idle runtime sleeps: no CPU, no wakeups, monitor included, with
//! tasks parked on channels and on timers an hour away.
//! (Its own test binary, so no other test's threads add CPU time.)

mod support;

use std::time::Duration;
use support::{assert_idle_window, thread_state, threads_named, wait_until};

#[test]
fn idle_runtime_uses_no_cpu_and_its_threads_sleep() {
    let rt = goro::Runtime::builder()
        .procs(4)
        .thread_name("idlechk")
        .build()
        .unwrap();
    // Start all the threads: four tasks that must run at once.
    rt.block_on(async {
        let running = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let r = running.clone();
                goro::spawn(async move {
                    r.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    wait_until(Duration::from_secs(30), "4 tasks in parallel", || {
                        r.load(std::sync::atomic::Ordering::SeqCst) == 4
                    });
                })
            })
            .collect();
        for h in hs {
            h.await.unwrap();
        }
    });
    // Parked work an hour away: tasks on timers and on a channel. The
    // runtime must still sleep (one thread waits for the earliest timer).
    let (_tx, rx) = goro::chan::bounded::<()>(0);
    for i in 0..1000 {
        let rx = rx.clone();
        rt.spawn(async move {
            if i % 2 == 0 {
                goro::time::sleep(Duration::from_secs(3600)).await;
            } else {
                let _ = rx.recv().await;
            }
        });
    }
    // A new thread names itself once it runs (std sets the name from inside
    // the thread), so the monitor may still be nameless for a moment.
    wait_until(Duration::from_secs(10), "4 workers + monitor named", || {
        threads_named("idlechk").len() >= 5
    });
    let tids = threads_named("idlechk");
    assert_idle_window(&rt, &tids, 4, "idle");
    for &t in &tids {
        assert_eq!(
            thread_state(t).map(|s| s.0),
            Some('S'),
            "thread {t} is not asleep"
        );
    }
}
