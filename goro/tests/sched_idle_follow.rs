//! With the monitor following the machine's CPU limit (the
//! default `procs`, `update_procs` on), an idle runtime still makes no
//! wakeups: the limit is re-read only in rounds where the monitor is awake
//! for other work. The window (2 s) is longer than the re-read interval
//! (1 s), so a monitor that woke to re-read would be seen.
//! (Its own test binary, so no other test's threads add CPU time.)

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use support::{assert_idle_window, threads_named, wait_until};

#[test]
fn idle_runtime_following_the_cpu_limit_makes_no_wakeups() {
    if std::env::var_os("GORO_PROCS").is_some() || std::env::var_os("GORO_UPDATE_PROCS").is_some() {
        eprintln!("skipped: GORO_PROCS or GORO_UPDATE_PROCS is set");
        return;
    }
    let rt = goro::Runtime::builder()
        .thread_name("idlefol")
        .build()
        .unwrap();
    assert!(rt.follows_procs(), "the machine's default is followed");
    let procs = rt.procs();
    // Work first (the monitor's busy rounds, where it re-reads), with
    // every P running at once so every worker thread exists.
    rt.block_on(async {
        let running = Arc::new(AtomicUsize::new(0));
        let hs: Vec<_> = (0..procs)
            .map(|_| {
                let r = running.clone();
                goro::spawn(async move {
                    r.fetch_add(1, Ordering::SeqCst);
                    wait_until(Duration::from_secs(30), "every P running at once", || {
                        r.load(Ordering::SeqCst) == procs
                    });
                    goro::time::sleep(Duration::from_millis(1100)).await;
                })
            })
            .collect();
        for h in hs {
            h.await.unwrap();
        }
    });
    wait_until(Duration::from_secs(10), "workers + monitor named", || {
        threads_named("idlefol").len() > procs
    });
    let tids = threads_named("idlefol");
    assert_idle_window(&rt, &tids, procs, "idle and following");
    assert!(rt.follows_procs(), "still following");
}
