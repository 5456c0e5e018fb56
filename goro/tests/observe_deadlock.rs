//! The likely-deadlock report (`runtime/deadlock.rs`): it fires on a
//! deadlock inside `#[goro::test]` and with the opt-in, and stays silent
//! while a timer, a socket or a blocking call could still wake a task.
//!
//! A deadlocked test here must *fail* (panic with the report): each is a
//! `should_panic` test. Every other wait has a deadline.

mod support;

use goro::chan;
use goro::sync::WaitGroup;
use std::time::Duration;
use support::within;

fn fail_fast() -> goro::Runtime {
    goro::Runtime::builder()
        .procs(2)
        .deadlock(goro::Deadlock::Fail)
        .deadlock_grace(Duration::from_millis(100))
        .build()
        .unwrap()
}

#[goro::test]
#[should_panic(expected = "likely deadlock")]
async fn two_tasks_waiting_on_each_others_channels() {
    let (a_tx, a_rx) = chan::bounded::<u32>(0);
    let (b_tx, b_rx) = chan::bounded::<u32>(0);
    let t1 = goro::spawn_named("first", async move {
        let v = a_rx.recv().await.unwrap();
        b_tx.send(v).await.unwrap();
    });
    let t2 = goro::spawn_named("second", async move {
        let v = b_rx.recv().await.unwrap();
        a_tx.send(v).await.unwrap();
    });
    let _ = t1.await;
    let _ = t2.await;
}

#[goro::test]
#[should_panic(expected = "the main task (waitgroup) and all 0 other tasks")]
async fn a_lost_waitgroup_done() {
    let wg = WaitGroup::new();
    wg.add(2);
    for i in 0..2 {
        let wg = wg.clone();
        goro::spawn(async move {
            if i == 0 {
                wg.done(); // the other task forgets to
            }
        });
    }
    wg.wait().await;
}

#[goro::test]
#[should_panic(expected = "the main task (select) and all 0 other tasks")]
async fn a_select_with_no_ready_case_and_no_timer() {
    let (_tx, rx) = chan::bounded::<u32>(1);
    let (_tx2, rx2) = chan::bounded::<u32>(1);
    goro::select! {
        recv(rx) -> v => { let _ = v; },
        recv(rx2) -> v => { let _ = v; },
    }
}

#[test]
fn the_report_carries_the_dump() {
    let rt = fail_fast();
    let err = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        rt.block_on(async {
            let (tx, rx) = chan::bounded::<u32>(0);
            let h = goro::spawn_named("stuck-sender", async move { tx.send(1).await });
            let _ = h.await;
            drop(rx);
        })
    }))
    .expect_err("a deadlocked block_on must fail when the check is set to Fail");
    let msg = err
        .downcast_ref::<String>()
        .cloned()
        .expect("the failure carries the report as a String");
    assert!(
        msg.starts_with("goro: likely deadlock: the block_on caller (join)"),
        "{msg}"
    );
    assert!(msg.contains("parked on chan send"), "{msg}");
    assert!(msg.contains("named \"stuck-sender\""), "{msg}");
    assert!(
        msg.contains("observe_deadlock.rs"),
        "the spawn site is shown:\n{msg}"
    );
}

/// The main task a failed `Runtime::run` reported is forgotten with it: a
/// later deadlock of the same runtime names its `block_on` caller.
#[test]
fn a_failed_run_forgets_its_main_task() {
    within(
        Duration::from_secs(20),
        "the second deadlock of one runtime was never reported",
        a_failed_run_forgets_its_main_task_body,
    );
}

fn a_failed_run_forgets_its_main_task_body() {
    let rt = fail_fast();
    let report = |r: std::thread::Result<()>| -> String {
        r.expect_err("a deadlock must fail when the check is set to Fail")
            .downcast_ref::<String>()
            .cloned()
            .expect("the failure carries the report as a String")
    };
    let (tx, rx) = chan::bounded::<u32>(0);
    let first = report(std::panic::catch_unwind(std::panic::AssertUnwindSafe(
        || {
            rt.run(async move {
                let _ = rx.recv().await;
            })
        },
    )));
    assert!(first.contains("the main task (chan receive)"), "{first}");
    // The old main task ends (its channel closes), so the runtime leaves
    // the idle period the first report was made in.
    drop(tx);
    let second = report(std::panic::catch_unwind(std::panic::AssertUnwindSafe(
        || {
            rt.block_on(async {
                let (_tx, rx) = chan::bounded::<u32>(0);
                let _ = rx.recv().await;
            })
        },
    )));
    assert!(
        second.starts_with("goro: likely deadlock: the block_on caller (chan receive)"),
        "the second report still named the first run's main task:\n{second}"
    );
}

/// Every deadlocked `block_on` of one runtime fails, the later ones too:
/// a caller that parks starts a new idle period, although no P ran since
/// the monitor checked the last one (it sleeps for good after a check).
#[test]
fn each_deadlocked_block_on_of_one_runtime_fails() {
    within(
        Duration::from_secs(20),
        "a later deadlocked block_on was never reported",
        || {
            let rt = fail_fast();
            for round in 0..3 {
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    rt.block_on(async {
                        let (_tx, rx) = chan::bounded::<u32>(0);
                        let _ = rx.recv().await;
                    })
                }));
                assert!(r.is_err(), "round {round}: the deadlock must fail");
            }
        },
    );
}

#[test]
fn silent_while_a_timer_is_armed() {
    let rt = fail_fast();
    rt.block_on(async {
        let h = goro::spawn(async { goro::time::sleep(Duration::from_millis(400)).await });
        h.await.unwrap();
    });
}

#[test]
fn silent_while_a_blocking_call_runs() {
    let rt = fail_fast();
    let v = rt.block_on(async {
        goro::spawn_blocking(|| {
            std::thread::sleep(Duration::from_millis(400));
            7
        })
        .await
        .unwrap()
    });
    assert_eq!(v, 7);
}

#[test]
fn silent_while_a_socket_is_registered() {
    let rt = fail_fast();
    rt.block_on(async {
        let l = goro::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let client = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(400));
            std::net::TcpStream::connect(addr).unwrap()
        });
        let (_s, _) = l.accept().await.unwrap();
        drop(client.join().unwrap());
    });
}

#[test]
fn off_by_default_outside_tests() {
    // A thread outside goro holds the only sender: goro cannot know it will
    // send, which is why the check is opt-in outside tests.
    let rt = goro::Runtime::builder()
        .procs(2)
        .deadlock_grace(Duration::from_millis(20))
        .build()
        .unwrap();
    let (tx, rx) = chan::bounded::<u32>(0);
    let outside = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        tx.send_blocking(5).unwrap();
    });
    let v = rt.block_on(async { rx.recv().await.unwrap() });
    assert_eq!(v, 5);
    outside.join().unwrap();
}

#[test]
fn a_bad_grace_names_the_accepted_range() {
    let Err(err) = goro::Runtime::builder()
        .deadlock_grace(Duration::from_millis(1))
        .build()
    else {
        panic!("a 1 ms grace must be refused");
    };
    assert!(err.to_string().contains("accepted 10ms or more"), "{err}");
}

/// A finished timeout leaves its timer armed, as the spare the next sleep
/// reuses (`sched/timer/check.rs`): it wakes nobody, so it must not hide a
/// deadlock for the hour it has left.
#[goro::test]
#[should_panic(expected = "likely deadlock")]
async fn a_finished_timeouts_spare_timer_does_not_hide_a_deadlock() {
    let r = goro::time::timeout(Duration::from_secs(3600), goro::yield_now()).await;
    assert!(r.is_ok(), "yield_now finishes well within the hour");
    let (_tx, rx) = chan::bounded::<u32>(0);
    let _ = rx.recv().await;
}
