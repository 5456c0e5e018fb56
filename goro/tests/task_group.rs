//! `goro::TaskGroup` (`sched/task/group.rs`): completion order, abort and
//! drop, detach, cancel-safe `join_next`, and how the dump lists members.
//! Every wait is bounded by `support::DEADLINE`; nothing sleeps to let things
//! settle (a dropped group's members are awaited in the dump with a
//! deadline, since their aborts run at their next scheduling point).
#![cfg(not(loom))]

mod support;

use goro::{TaskGroup, TaskId};
use std::future::Future;
use std::pin::pin;
use std::task::Poll;
use std::time::Instant;
use support::{deadline as within, DEADLINE};

/// Yields until none of `ids` is in `rt`'s dump, failing after [`DEADLINE`].
async fn gone(rt: &goro::Runtime, ids: &[TaskId], what: &str) {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let d = rt.dump();
        if !d.tasks().iter().any(|t| ids.contains(&t.id)) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: members still listed:\n{d}"
        );
        goro::yield_now().await;
    }
}

#[test]
fn results_come_in_completion_order() {
    let rt = goro::Runtime::builder().procs(2).build().unwrap();
    rt.block_on(async {
        let mut g = TaskGroup::new();
        let (tx, rx) = goro::chan::bounded::<()>(0);
        g.spawn(async move {
            let _ = rx.recv().await; // finishes second
            "slow"
        });
        g.spawn(async { "fast" });
        assert_eq!(
            within("fast", g.join_next()).await.unwrap().unwrap(),
            "fast"
        );
        drop(tx);
        assert_eq!(
            within("slow", g.join_next()).await.unwrap().unwrap(),
            "slow"
        );
        assert!(g.join_next().await.is_none());
    });
}

#[test]
fn a_panicking_member_comes_back_as_a_join_error() {
    let rt = goro::Runtime::builder().procs(1).build().unwrap();
    rt.block_on(async {
        let mut g = TaskGroup::<()>::new();
        g.spawn(async { panic!("member failed") });
        let e = within("the panic", g.join_next())
            .await
            .unwrap()
            .unwrap_err();
        assert!(e.to_string().contains("member failed"), "{e}");
    });
}

#[test]
fn a_dropped_join_next_loses_no_result() {
    let rt = goro::Runtime::builder().procs(2).build().unwrap();
    rt.block_on(async {
        let mut g = TaskGroup::new();
        let (tx, rx) = goro::chan::bounded::<()>(0);
        g.spawn(async move {
            let _ = rx.recv().await;
            7
        });
        {
            // Polled once (nothing finished: pending), then dropped.
            let mut j = pin!(g.join_next());
            let pending = std::future::poll_fn(|cx| Poll::Ready(j.as_mut().poll(cx).is_pending()));
            assert!(pending.await, "nothing has finished yet");
        }
        drop(tx); // the member finishes while nobody is joining
        assert_eq!(
            within("the result", g.join_next()).await.unwrap().unwrap(),
            7
        );
    });
}

#[test]
fn dropping_the_group_aborts_its_members_and_detach_all_lets_them_run() {
    let rt = goro::Runtime::builder().procs(2).build().unwrap();
    rt.block_on(async {
        let mut g = TaskGroup::<()>::new();
        let ids: Vec<TaskId> = (0..100).map(|_| g.spawn(std::future::pending())).collect();
        assert_eq!(g.len(), 100);
        drop(g);
        gone(&rt, &ids, "dropped group").await;

        let mut g = TaskGroup::<()>::new();
        let (tx, rx) = goro::chan::bounded::<()>(0);
        let id = g.spawn(async move {
            let _ = rx.recv().await;
        });
        g.detach_all();
        assert!(g.is_empty());
        drop(g);
        // Still alive: the send is received.
        within("the detached member's receive", tx.send(()))
            .await
            .unwrap();
        gone(&rt, &[id], "detached member after it returned").await;
    });
}

#[test]
fn shutdown_returns_when_every_member_is_gone() {
    let rt = goro::Runtime::builder().procs(2).build().unwrap();
    rt.block_on(async {
        let mut g = TaskGroup::<()>::new();
        let ids: Vec<TaskId> = (0..1000)
            .map(|i| {
                g.spawn(async move {
                    if i % 2 == 0 {
                        std::future::pending::<()>().await;
                    }
                })
            })
            .collect();
        within("shutdown", g.shutdown()).await;
        let d = rt.dump();
        assert!(!d.tasks().iter().any(|t| ids.contains(&t.id)), "{d}");
    });
}

#[test]
fn members_are_listed_under_the_owner_even_when_another_task_spawns_them() {
    let rt = goro::Runtime::builder().procs(2).build().unwrap();
    rt.block_on(async {
        let owner = goro::spawn(async {
            let me = TaskId::current().unwrap();
            let g = TaskGroup::<()>::new();
            // The group is handed to a helper task, which spawns into it.
            let helper = goro::spawn(async move {
                let mut g = g;
                let id = g.spawn(std::future::pending());
                (g, id, TaskId::current().unwrap())
            });
            let (g, id, helper_id) = within("the helper", helper).await.unwrap();
            (me, g, id, helper_id)
        });
        let (owner_id, g, member, helper) = within("the owner", owner).await.unwrap();
        let d = rt.dump();
        let t = d
            .tasks()
            .iter()
            .find(|t| t.id == member)
            .expect("member listed");
        assert_eq!(
            t.parent,
            Some(owner_id),
            "the owner, not the helper {helper}"
        );
        assert!(t.in_group);
        let text = d.to_string();
        assert!(
            text.contains(&format!("in a task group of task {owner_id}")),
            "{text}"
        );
        drop(g);
        gone(&rt, &[member], "the member of the dropped group").await;
    });
}
