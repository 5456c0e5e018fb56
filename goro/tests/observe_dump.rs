//! The task dump (`Runtime::dump`, `runtime/dump.rs`): complete and correct
//! while a task is stuck in a long CPU loop, which it must not wait for.

use goro::{TaskState, WaitReason};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Polls `dump` until `ok` holds, failing after `limit` with the last dump.
fn wait_for_dump(
    rt: &goro::Runtime,
    limit: Duration,
    what: &str,
    ok: impl Fn(&goro::Dump) -> bool,
) -> goro::Dump {
    let deadline = Instant::now() + limit;
    loop {
        let d = rt.dump();
        if ok(&d) {
            return d;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}; last dump:\n{d}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_task_stuck_in_a_ten_second_loop_shows_as_running_for_ten_seconds() {
    let rt = goro::Runtime::builder().procs(2).build().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    // The hog: one poll that computes for 10 s without a safe point.
    let s = stop.clone();
    let hog = rt.spawn_named("hog", async move {
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(10) && !s.load(Ordering::Relaxed) {
            std::hint::spin_loop();
        }
    });
    // The rest: 100 receivers on one channel, a sleeper, a joiner.
    let (tx, rx) = goro::chan::bounded::<u32>(0);
    let receivers: Vec<_> = (0..100)
        .map(|_| {
            let rx = rx.clone();
            rt.spawn_named("receiver", async move { rx.recv().await })
        })
        .collect();
    let sleeper = rt.spawn(async { goro::time::sleep(Duration::from_secs(30)).await });
    let sleeper_id = sleeper.id();
    let joiner = rt.spawn(sleeper);
    let (hog_id, joiner_id) = (hog.id(), joiner.id());

    let d = wait_for_dump(&rt, Duration::from_secs(20), "the hog at 9.5 s", |d| {
        d.tasks().iter().any(|t| {
            t.id == hog_id
                && matches!(t.state, TaskState::Running(Some(_)))
                && t.in_state_for >= Duration::from_millis(9500)
        })
    });
    // The dump completed while the hog is still inside its poll.
    assert!(!hog.is_finished(), "the dump must not wait for the hog");
    assert!(started.elapsed() < Duration::from_secs(11));
    let text = d.to_string();
    println!("{text}");
    assert!(
        text.contains("running on P") && text.contains(&format!("(task {hog_id}) for 9.")),
        "the hog is shown running for ~10 s:\n{text}"
    );
    let by_id = |id| d.tasks().iter().find(|t| t.id == id).expect("task listed");
    assert!(
        matches!(
            by_id(sleeper_id).state,
            TaskState::Parked(WaitReason::Sleep, _)
        ),
        "{text}"
    );
    let dl = by_id(sleeper_id)
        .deadline_in
        .expect("a sleep has a deadline");
    assert!(
        dl > Duration::from_secs(15) && dl <= Duration::from_secs(30),
        "{dl:?}"
    );
    assert_eq!(
        by_id(joiner_id).state,
        TaskState::Parked(WaitReason::Join, sleeper_id.as_u64())
    );
    let parked_receivers = d
        .tasks()
        .iter()
        .filter(|t| t.name.as_deref() == Some("receiver"))
        .filter(|t| t.state == TaskState::Parked(WaitReason::ChanRecv, 0))
        .count();
    assert_eq!(parked_receivers, 100);
    assert!(
        text.contains("100 tasks parked on chan receive"),
        "the receivers are grouped:\n{text}"
    );
    assert!(
        text.contains("observe_dump.rs"),
        "spawn sites are shown:\n{text}"
    );
    assert_eq!(d.tasks().len(), 103, "every task is listed:\n{text}");

    stop.store(true, Ordering::Relaxed);
    drop(tx);
    rt.block_on(async {
        for r in receivers {
            assert!(r.await.unwrap().is_err());
        }
        hog.await.unwrap();
    });
    joiner.abort();
}

#[test]
fn parents_names_and_finished_tasks() {
    let rt = goro::Runtime::builder().procs(1).build().unwrap();
    let (child_id, parent_id) = rt.block_on(async {
        let (tx, rx) = goro::chan::bounded::<goro::TaskId>(1);
        let parent = goro::spawn_named("parent", async move {
            let child = goro::spawn(async {
                let rx = goro::chan::never::<()>();
                rx.recv().await
            });
            tx.send(child.id()).await.unwrap();
            std::mem::forget(child); // detached, parked forever
        });
        let parent_id = parent.id();
        parent.await.unwrap();
        (rx.recv().await.unwrap(), parent_id)
    });
    // The child was put in the finished parent's `runnext`; under load the
    // dump can come before its first poll. Wait (10 s at most) for it to
    // park on its channel.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let d = loop {
        let d = rt.dump();
        let child = d
            .tasks()
            .iter()
            .find(|t| t.id == child_id)
            .expect("child listed");
        if matches!(child.state, TaskState::Parked(..)) || std::time::Instant::now() > deadline {
            break d;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    };
    let child = d
        .tasks()
        .iter()
        .find(|t| t.id == child_id)
        .expect("child listed");
    assert_eq!(child.parent, Some(parent_id));
    assert_eq!(
        child.state,
        TaskState::Parked(WaitReason::ChanRecv, 0),
        "the child never parked on its channel within 10 s:\n{d}"
    );
    assert!(
        d.tasks().iter().all(|t| t.id != parent_id),
        "a finished task leaves the dump:\n{d}"
    );
}
