//! The runtime API and the scheduler's behaviour under many tasks.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use support::{wait_until, within};

const LIMIT: Duration = Duration::from_secs(60);

fn rt(procs: usize) -> goro::Runtime {
    goro::Runtime::builder()
        .procs(procs)
        .build()
        .expect("runtime starts")
}

#[test]
fn thousands_of_tasks_complete_at_procs_1_2_4_8() {
    for procs in [1, 2, 4, 8] {
        within(
            LIMIT,
            &format!("10,000 tasks at procs={procs}"),
            move || {
                let rt = rt(procs);
                let sum = rt.block_on(async {
                    let hs: Vec<_> = (0..10_000u64)
                        .map(|i| {
                            goro::spawn(async move {
                                // A mix of spawn-in-task, yields and nested joins.
                                if i % 3 == 0 {
                                    goro::yield_now().await;
                                }
                                if i % 7 == 0 {
                                    return goro::spawn(async move { i }).await.unwrap();
                                }
                                i
                            })
                        })
                        .collect();
                    let mut sum = 0;
                    for h in hs {
                        sum += h.await.expect("task result");
                    }
                    sum
                });
                assert_eq!(
                    sum,
                    (0..10_000u64).sum::<u64>(),
                    "every task ran once at procs={procs}"
                );
                let s = rt.stats();
                assert!(s.tasks_spawned >= 10_000, "stats count spawns: {s:?}");
            },
        );
    }
}

#[test]
fn search_counters_count_the_slow_path_and_cpu_only_when_asked() {
    // One task at a time, each awaited: the workers keep running dry, so
    // every spawn sends one into find-runnable's slow path.
    for measure in [false, true] {
        within(
            LIMIT,
            &format!("search counters, measure_find_cpu({measure})"),
            move || {
                let rt = goro::Runtime::builder()
                    .procs(4)
                    .measure_find_cpu(measure)
                    .build()
                    .expect("runtime starts");
                rt.block_on(async {
                    for i in 0..1_000u64 {
                        assert_eq!(goro::spawn(async move { i }).await.unwrap(), i);
                    }
                });
                let s = rt.stats();
                assert!(s.find_runnable_calls > 0, "slow path entries: {s:?}");
                assert!(
                    s.steal_fails <= s.steal_attempts && s.steal_attempts <= s.queues_inspected,
                    "a failed steal is an attempt, an attempt an inspected queue: {s:?}"
                );
                if measure {
                    assert!(s.find_cpu_ns > 0, "find CPU measured: {s:?}");
                } else {
                    assert_eq!(s.find_cpu_ns, 0, "no clock read unless asked: {s:?}");
                }
            },
        );
    }
}

#[test]
fn tasks_spread_over_procs_when_they_block() {
    // Four tasks that each wait for all four to be running at once can only
    // finish if four Ps run them in parallel (stealing + wakep).
    within(LIMIT, "4 tasks running at once on procs=4", || {
        let rt = rt(4);
        let running = Arc::new(AtomicUsize::new(0));
        rt.block_on(async {
            let hs: Vec<_> = (0..4)
                .map(|_| {
                    let running = running.clone();
                    goro::spawn(async move {
                        running.fetch_add(1, Ordering::SeqCst);
                        wait_until(
                            Duration::from_secs(30),
                            "all four tasks running in parallel",
                            || running.load(Ordering::SeqCst) == 4,
                        );
                    })
                })
                .collect();
            for h in hs {
                h.await.unwrap();
            }
        });
    });
}

#[test]
fn panic_in_task_surfaces_as_join_error_and_runtime_keeps_running() {
    within(LIMIT, "panicking task", || {
        let rt = rt(2);
        let err = rt.block_on(async {
            goro::spawn(async { panic!("boom {}", 7) })
                .await
                .unwrap_err()
        });
        assert!(err.is_panic(), "expected a panic, got {err:?}");
        assert_eq!(err.to_string(), "task panicked: boom 7");
        let payload = err.into_panic();
        let msg = payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()));
        assert_eq!(
            msg.as_deref(),
            Some("boom 7"),
            "into_panic returns the payload"
        );
        // Still usable, on every P.
        let n = rt.block_on(async {
            let hs: Vec<_> = (0..100).map(|i| goro::spawn(async move { i })).collect();
            let mut n = 0;
            for h in hs {
                n += h.await.unwrap();
            }
            n
        });
        assert_eq!(n, 4950);
    });
}

#[test]
fn abort_cancels_a_parked_task_and_drops_its_future() {
    within(LIMIT, "abort", || {
        let rt = rt(2);
        let dropped = Arc::new(AtomicUsize::new(0));
        struct OnDrop(Arc<AtomicUsize>);
        impl Drop for OnDrop {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let d = dropped.clone();
        rt.block_on(async move {
            let guard = OnDrop(d);
            let h = goro::spawn(async move {
                let _g = guard;
                std::future::pending::<()>().await
            });
            goro::yield_now().await;
            h.abort();
            let e = h.await.unwrap_err();
            assert!(
                e.is_cancelled(),
                "aborted task reports cancelled, got {e:?}"
            );
        });
        wait_until(
            Duration::from_secs(10),
            "aborted task's future dropped",
            || dropped.load(Ordering::SeqCst) == 1,
        );
    });
}

#[test]
fn dropped_join_handle_detaches() {
    within(LIMIT, "detached task", || {
        let rt = rt(2);
        let ran = Arc::new(AtomicUsize::new(0));
        let r = ran.clone();
        rt.block_on(async move {
            drop(goro::spawn(async move {
                goro::yield_now().await;
                r.fetch_add(1, Ordering::SeqCst);
            }));
        });
        wait_until(Duration::from_secs(10), "detached task still runs", || {
            ran.load(Ordering::SeqCst) == 1
        });
    });
}

#[test]
fn spawn_from_outside_and_spawn_blocking() {
    within(LIMIT, "Runtime::spawn and spawn_blocking", || {
        let rt = rt(2);
        let h = rt.spawn(async { goro::spawn_blocking(|| 21 * 2).await.unwrap() });
        assert_eq!(rt.block_on(h).unwrap(), 42);
        let e = rt
            .block_on(rt.spawn_blocking(|| panic!("blocking boom")))
            .unwrap_err();
        assert!(e.is_panic());
    });
}

#[test]
#[should_panic(expected = "goro::spawn called outside a goro runtime")]
fn spawn_outside_a_runtime_panics_with_a_clear_message() {
    drop(goro::spawn(async {}));
}

#[test]
fn procs_zero_is_rejected_with_the_accepted_range() {
    let e = goro::Runtime::builder().procs(0).build().unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    assert!(
        e.to_string().contains("procs(0)") && e.to_string().contains("1..="),
        "{e}"
    );
    let e = goro::Runtime::builder()
        .procs(1_000_000)
        .build()
        .unwrap_err();
    assert!(e.to_string().contains("1..="), "{e}");
}

#[test]
fn bad_policy_field_is_rejected() {
    let mut p = goro::Policy::default();
    p.steal_passes = 0;
    let e = goro::Runtime::builder()
        .procs(1)
        .policy(p)
        .build()
        .unwrap_err();
    assert!(e.to_string().contains("steal_passes"), "{e}");
}

#[test]
fn block_on_inside_a_task_panics_with_advice() {
    within(LIMIT, "nested block_on", || {
        let rt = Arc::new(rt(1));
        let rt2 = rt.clone();
        let e = rt
            .block_on(async move {
                goro::spawn(async move {
                    rt2.block_on(async {});
                })
                .await
            })
            .unwrap_err();
        assert!(e.to_string().contains("block_in_place"), "{e}");
    });
}

#[test]
fn schedtrace_line_has_gos_shape() {
    let rt = rt(3);
    let line = rt.schedtrace();
    let re_ok = line.starts_with("SCHED ")
        && line.contains("ms: procs=3 idleprocs=")
        && line.contains(" threads=")
        && line.contains(" spinningthreads=")
        && line.contains(" idlethreads=")
        && line.contains(" preemptions=")
        && line.contains(" runqueue=")
        && line.ends_with(']')
        && line
            .split('[')
            .nth(1)
            .unwrap()
            .trim_end_matches(']')
            .split(' ')
            .count()
            == 3;
    assert!(re_ok, "unexpected schedtrace line: {line}");
}

#[goro::test(procs = 3)]
async fn goro_test_macro_runs_on_a_runtime() {
    assert_eq!(goro::spawn(async { 5 }).await.unwrap(), 5);
}

#[goro::test(procs = 1)]
async fn yield_now_lets_others_run_on_one_p() {
    let flag = Arc::new(AtomicUsize::new(0));
    let f = flag.clone();
    let h = goro::spawn(async move {
        f.store(1, Ordering::SeqCst);
    });
    while flag.load(Ordering::SeqCst) == 0 {
        goro::yield_now().await;
    }
    h.await.unwrap();
}
