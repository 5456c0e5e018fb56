//! `goro::sim`: virtual time, seeded schedules, and the bubble's verdicts.
//!
//! Every run here is a bubble on the test's own thread: a hang would be a
//! driver bug, and the step limit turns a livelock into an error.

use goro::sim::{Builder, Error, Strategy};
use std::collections::HashSet;
use std::time::{Duration, Instant};

#[test]
fn a_sleep_takes_virtual_time_not_wall_time() {
    let wall = Instant::now();
    let (r, report) = Builder::new().seed(1).run_report(async {
        let t0 = goro::time::now();
        goro::time::sleep(Duration::from_secs(3600)).await;
        goro::time::now() - t0
    });
    assert_eq!(r.unwrap(), Duration::from_secs(3600));
    assert_eq!(report.virtual_elapsed(), Duration::from_secs(3600));
    assert!(
        wall.elapsed() < Duration::from_secs(5),
        "an hour of virtual sleep took {:?} of wall time",
        wall.elapsed()
    );
}

#[test]
fn time_stands_still_while_tasks_run() {
    let r = Builder::new().seed(2).procs(4).run(async {
        let t0 = goro::time::now();
        let hs: Vec<_> = (0..8)
            .map(|i| goro::spawn(async move { (0..1000u64).map(|x| x * i).sum::<u64>() }))
            .collect();
        for h in hs {
            h.await.unwrap();
        }
        goro::time::now() - t0
    });
    assert_eq!(r.unwrap(), Duration::ZERO);
}

#[test]
fn timers_fire_in_deadline_order_at_their_exact_instants() {
    let r = Builder::new().seed(3).procs(4).run(async {
        let t0 = goro::time::now();
        let (tx, rx) = goro::chan::bounded::<(u64, Duration)>(10);
        for ms in [30u64, 10, 20] {
            let tx = tx.clone();
            goro::spawn(async move {
                goro::time::sleep(Duration::from_millis(ms)).await;
                tx.send((ms, goro::time::now() - t0)).await.unwrap();
            });
        }
        drop(tx);
        let mut got = Vec::new();
        while let Ok(v) = rx.recv().await {
            got.push(v);
        }
        got
    });
    let ms = Duration::from_millis;
    assert_eq!(r.unwrap(), vec![(10, ms(10)), (20, ms(20)), (30, ms(30))]);
}

#[test]
fn a_timeout_fires_at_exactly_its_deadline() {
    let r = Builder::new().seed(4).run(async {
        let t0 = goro::time::now();
        let (_tx, rx) = goro::chan::bounded::<()>(0);
        let out = goro::time::timeout(Duration::from_secs(10), rx.recv()).await;
        (out.is_err(), goro::time::now() - t0)
    });
    assert_eq!(r.unwrap(), (true, Duration::from_secs(10)));
}

#[test]
fn a_context_deadline_and_after_func_use_the_virtual_clock() {
    let r = Builder::new().seed(5).run(async {
        let t0 = goro::time::now();
        let (ctx, _cancel) = goro::context::Context::with_timeout(
            &goro::context::Context::background(),
            Duration::from_secs(5),
        );
        let (tx, rx) = goro::chan::bounded::<Duration>(1);
        let _t = goro::time::after_func(Duration::from_secs(2), move || {
            let _ = tx.try_send(goro::time::now() - t0);
        });
        let fired = rx.recv().await.unwrap();
        ctx.done().recv().await.ok();
        (fired, goro::time::now() - t0)
    });
    assert_eq!(r.unwrap(), (Duration::from_secs(2), Duration::from_secs(5)));
}

#[test]
fn a_deadlock_names_every_blocked_task() {
    let err = Builder::new()
        .seed(6)
        .run(async {
            let (_tx, rx) = goro::chan::bounded::<u32>(0);
            let (tx2, _rx2) = goro::chan::bounded::<u32>(0);
            goro::spawn_named("sender", async move { tx2.send(1).await });
            rx.recv().await
        })
        .unwrap_err();
    let Error::Deadlock(d) = &err else {
        panic!("expected a deadlock, got {err}")
    };
    assert!(!d.root_returned());
    assert_eq!(d.tasks().len(), 1, "{err}");
    let msg = err.to_string();
    for want in [
        "deadlock",
        "root: blocked on chan receive",
        "\"sender\"",
        "blocked on chan send",
        "sim_basic.rs",
        "GORO_SIM_SEED=6",
    ] {
        assert!(msg.contains(want), "{want:?} missing from:\n{msg}");
    }
}

#[test]
fn tasks_blocked_after_the_root_returns_are_a_leak() {
    let err = Builder::new()
        .seed(7)
        .run(async {
            let (tx, rx) = goro::chan::bounded::<u32>(0);
            goro::spawn(async move { tx.send(1).await });
            drop(rx.clone()); // the receiver stays alive, nobody receives
            std::mem::forget(rx);
        })
        .unwrap_err();
    match &err {
        Error::Deadlock(d) => assert!(d.root_returned(), "{err}"),
        other => panic!("expected a leak, got {other}"),
    }
    assert!(err.to_string().contains("leak"), "{err}");
}

#[test]
fn run_waits_for_every_task_not_only_the_root() {
    let (r, report) = Builder::new().seed(8).run_report(async {
        goro::spawn(async {
            goro::time::sleep(Duration::from_secs(7)).await;
        });
    });
    r.unwrap();
    assert_eq!(report.virtual_elapsed(), Duration::from_secs(7));
}

#[test]
fn wait_returns_once_every_other_task_is_blocked() {
    let r = Builder::new().seed(9).procs(4).run(async {
        let (tx, rx) = goro::chan::bounded::<u32>(100);
        for i in 0..10 {
            let tx = tx.clone();
            goro::spawn(async move {
                tx.send(i).await.unwrap();
                goro::time::sleep(Duration::from_secs(1)).await;
            });
        }
        goro::sim::wait().await;
        let t = goro::time::now();
        (rx.len(), t)
    });
    let (n, _) = r.unwrap();
    assert_eq!(n, 10, "every sender ran to its sleep before wait returned");
}

#[test]
fn a_livelock_hits_the_step_limit() {
    let err = Builder::new()
        .seed(10)
        .max_steps(1000)
        .run(async {
            loop {
                goro::yield_now().await;
            }
        })
        .unwrap_err();
    assert!(matches!(err, Error::StepLimit { steps: 1000, .. }), "{err}");
}

/// A program whose output depends on the order of its tasks.
async fn racy() -> Vec<u32> {
    let (tx, rx) = goro::chan::bounded::<u32>(16);
    for i in 0..4 {
        let tx = tx.clone();
        goro::spawn(async move {
            for j in 0..2 {
                tx.send(i * 10 + j).await.unwrap();
                goro::yield_now().await;
            }
        });
    }
    drop(tx);
    let mut out = Vec::new();
    while let Ok(v) = rx.recv().await {
        out.push(v);
    }
    out
}

#[test]
fn one_seed_gives_one_schedule_every_time() {
    for procs in [1, 4, 8] {
        let first = Builder::new().seed(11).procs(procs).run_report(racy());
        let want = (first.0.unwrap(), first.1.schedule_hash());
        for run in 0..100 {
            let (r, report) = Builder::new().seed(11).procs(procs).run_report(racy());
            assert_eq!(
                (r.unwrap(), report.schedule_hash()),
                want,
                "procs {procs}, run {run}: the same seed took another schedule"
            );
        }
    }
}

#[test]
fn seeds_explore_different_orders() {
    for strategy in [Strategy::Uniform, Strategy::Pct { depth: 3 }] {
        let outcomes: HashSet<Vec<u32>> = (0..50)
            .map(|seed| {
                Builder::new()
                    .seed(seed)
                    .procs(4)
                    .strategy(strategy)
                    .run(racy())
                    .unwrap()
            })
            .collect();
        assert!(
            outcomes.len() >= 2,
            "{strategy:?}: 50 seeds gave {} outcome(s)",
            outcomes.len()
        );
    }
}

#[test]
fn select_choices_come_from_the_seed() {
    let pick = |seed| {
        Builder::new()
            .seed(seed)
            .run(async {
                let (ta, ra) = goro::chan::bounded::<u8>(1);
                let (tb, rb) = goro::chan::bounded::<u8>(1);
                let mut got = Vec::new();
                for _ in 0..16 {
                    ta.send(b'a').await.unwrap();
                    tb.send(b'b').await.unwrap();
                    got.push(goro::select! {
                        recv(ra) -> v => v.unwrap(),
                        recv(rb) -> v => v.unwrap(),
                    });
                    let _ = ra.try_recv();
                    let _ = rb.try_recv();
                }
                got
            })
            .unwrap()
    };
    assert_eq!(pick(12), pick(12));
    assert!(
        (13..20).any(|s| pick(s) != pick(12)),
        "seeds never changed a select's choice"
    );
}

#[test]
fn run_twice_accepts_a_deterministic_program() {
    Builder::new().seed(13).procs(4).run_twice(racy).unwrap();
}

#[test]
fn a_blocking_job_is_waited_for_in_real_time() {
    let r = Builder::new().seed(14).run(async {
        let t0 = goro::time::now();
        let v = goro::spawn_blocking(|| {
            std::thread::sleep(Duration::from_millis(20));
            9
        })
        .await
        .unwrap();
        (v, goro::time::now() - t0)
    });
    assert_eq!(r.unwrap(), (9, Duration::ZERO));
}

#[test]
fn bad_builder_input_is_refused_with_the_accepted_form() {
    let e = std::panic::catch_unwind(|| Builder::new().procs(0)).unwrap_err();
    let msg = e.downcast_ref::<String>().unwrap();
    assert!(
        msg.contains("procs(0)") && msg.contains("accepted"),
        "{msg}"
    );
}

#[test]
fn a_bubble_inside_a_runtime_is_refused() {
    let rt = goro::Runtime::builder().procs(1).build().unwrap();
    let e = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        rt.block_on(async { Builder::new().seed(1).run(async {}) })
    }))
    .unwrap_err();
    let msg = panic_message(&*e);
    assert!(msg.contains("plain thread"), "{msg}");
}

#[goro::test(sim)]
async fn the_test_attribute_runs_a_bubble() {
    let t0 = goro::time::now();
    goro::time::sleep(Duration::from_secs(30)).await;
    assert_eq!(goro::time::now() - t0, Duration::from_secs(30));
}

#[goro::test(sim, seed = 42, procs = 4)]
async fn the_test_attribute_takes_a_seed_and_procs() {
    let hs: Vec<_> = (0..4).map(|i| goro::spawn(async move { i * 2 })).collect();
    let mut sum = 0;
    for h in hs {
        sum += h.await.unwrap();
    }
    assert_eq!(sum, 12);
}

#[goro::test(sim, seed = 1)]
#[should_panic(expected = "deadlock")]
async fn the_test_attribute_fails_a_deadlocked_test() {
    let (_tx, rx) = goro::chan::bounded::<()>(0);
    let _ = rx.recv().await;
}

#[test]
fn a_blocking_call_inside_a_bubble_is_refused() {
    let e = std::panic::catch_unwind(|| {
        Builder::new().seed(15).run(async {
            let (_tx, rx) = goro::chan::bounded::<u8>(1);
            rx.recv_blocking()
        })
    })
    .unwrap_err();
    let msg = panic_message(&*e);
    assert!(msg.contains("inside a goro::sim bubble"), "{msg}");
}

#[test]
fn groups_and_locks_work_in_a_bubble_and_name_their_waits() {
    let r = Builder::new().seed(16).procs(4).run(async {
        let g = goro::sync::ErrGroup::<String>::new();
        g.set_limit(Some(2));
        for i in 0..6u64 {
            g.go(async move {
                goro::time::sleep(Duration::from_secs(i)).await;
                Ok(())
            })
            .await;
        }
        g.wait().await.unwrap();
        let mut tg = goro::TaskGroup::new();
        for i in 0..3u64 {
            tg.spawn(async move { i });
        }
        let mut sum = 0;
        while let Some(r) = tg.join_next().await {
            sum += r.unwrap();
        }
        sum
    });
    assert_eq!(r.unwrap(), 3);

    let err = Builder::new()
        .seed(17)
        .run(async {
            let wg = std::sync::Arc::new(goro::sync::WaitGroup::new());
            wg.add(2);
            let w = wg.clone();
            goro::spawn(async move { w.done() });
            wg.wait().await; // one done() short: waits forever
        })
        .unwrap_err();
    assert!(
        err.to_string().contains("root: blocked on waitgroup"),
        "{err}"
    );
}

/// A panic's message, whether it was formatted (`String`) or literal.
fn panic_message(e: &(dyn std::any::Any + Send)) -> &str {
    e.downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| e.downcast_ref::<&str>().copied())
        .unwrap_or("")
}
