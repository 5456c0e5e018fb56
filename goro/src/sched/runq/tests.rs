//! Unit tests of the run queue (`runq.rs`): the ring, `runnext`, overflow
//! into the global queue and stealing, on one thread.

use super::*;
use crate::sched::task::test_support::{runnable, Log};

/// The owner's handle on a queue the test thread alone pushes into.
fn owner(q: &RunQueue) -> Local<'_> {
    // SAFETY: each test is single-threaded and makes one handle per
    // queue; no operation runs foreign code that could push meanwhile.
    unsafe { Local::new(q) }
}

fn tasks(n: usize, log: &Log) -> Vec<Runnable> {
    (0..n).map(|i| runnable(i, log)).collect()
}

/// Runs the task and returns the id it logged.
fn id(t: Runnable, log: &Log) -> usize {
    t.run();
    *log.ran
        .lock()
        .unwrap()
        .last()
        .expect("the task logged its id")
}

#[test]
fn fifo_across_wrap_around() {
    let rq = RunQueue::new();
    let mut q = owner(&rq);
    let log = Log::default();
    // Move head and tail around the ring several times.
    for round in 0..5 {
        for t in tasks(200, &log) {
            assert!(
                matches!(q.put(t, false), Put::Ring),
                "no overflow below capacity"
            );
        }
        for i in 0..200 {
            let (t, inherit) = q.get(false).expect("queued task");
            assert_eq!(id(t, &log), i, "FIFO order broken in round {round}");
            assert!(!inherit);
        }
        assert!(rq.is_empty());
    }
}

#[test]
fn overflow_moves_older_half_plus_new_task() {
    let rq = RunQueue::new();
    let mut q = owner(&rq);
    let log = Log::default();
    let mut all = tasks(RING_SIZE + 1, &log);
    let extra = all.pop().unwrap();
    for t in all {
        assert!(matches!(q.put(t, false), Put::Ring));
    }
    let Put::Overflow(batch) = q.put(extra, false) else {
        panic!("a full ring overflows")
    };
    let ids: Vec<usize> = batch.into_iter().map(|t| id(t, &log)).collect();
    let mut want: Vec<usize> = (0..RING_SIZE / 2).collect();
    want.push(RING_SIZE);
    assert_eq!(
        ids, want,
        "overflow batch is the older half, then the new task"
    );
    assert_eq!(rq.len(), RING_SIZE / 2);
    assert_eq!(id(q.get(false).unwrap().0, &log), RING_SIZE / 2);
}

#[test]
fn runnext_runs_first_and_bumps_previous_to_tail() {
    let rq = RunQueue::new();
    let mut q = owner(&rq);
    let log = Log::default();
    let mut ts = tasks(3, &log).into_iter();
    assert!(matches!(q.put(ts.next().unwrap(), false), Put::Ring)); // 0 in ring
    assert!(matches!(q.put(ts.next().unwrap(), true), Put::Runnext)); // 1 in runnext
    assert!(matches!(q.put(ts.next().unwrap(), true), Put::Ring)); // 2 in runnext, 1 to tail
    let order: Vec<(usize, bool)> = std::iter::from_fn(|| q.get(false))
        .map(|(t, inh)| (id(t, &log), inh))
        .collect();
    assert_eq!(order, vec![(2, true), (0, false), (1, false)]);
}

#[test]
fn get_skipping_runnext_takes_ring_first() {
    let rq = RunQueue::new();
    let mut q = owner(&rq);
    let log = Log::default();
    let mut ts = tasks(2, &log).into_iter();
    q.put(ts.next().unwrap(), false);
    q.put(ts.next().unwrap(), true);
    assert_eq!(id(q.get(true).unwrap().0, &log), 0);
    let (t, inherit) = q.get(true).unwrap();
    assert_eq!((id(t, &log), inherit), (1, true));
}

#[test]
fn steal_takes_half_rounding_up_and_leaves_runnext() {
    let victim = RunQueue::new();
    let thief = RunQueue::new();
    let (mut v, mut th) = (owner(&victim), owner(&thief));
    let log = Log::default();
    let mut ts = tasks(8, &log).into_iter();
    for t in ts.by_ref().take(7) {
        v.put(t, false);
    }
    v.put(ts.next().unwrap(), true);
    let (first, n) = victim
        .steal_into(&mut th, false, |_| true)
        .expect("work to steal");
    assert_eq!(n, 4, "half of 7, rounded up");
    assert_eq!(id(first, &log), 3, "the thief runs the newest stolen task");
    assert_eq!(thief.len(), 3);
    assert_eq!(victim.len(), 3);
    assert!(victim.has_runnext(), "runnext is not taken unless asked");
}

#[test]
fn runnext_is_stolen_only_when_asked_and_after_the_pause() {
    let victim = RunQueue::new();
    let thief = RunQueue::new();
    let mut th = owner(&thief);
    let log = Log::default();
    owner(&victim).put(tasks(1, &log).pop().unwrap(), true);
    assert!(victim.steal_into(&mut th, false, |_| true).is_none());
    assert!(
        victim.steal_into(&mut th, true, |_| false).is_none(),
        "a declined pause steals nothing"
    );
    let mut paused = false;
    let (t, n) = victim
        .steal_into(&mut th, true, |_| {
            paused = true;
            true
        })
        .expect("runnext stolen on the last pass");
    assert!(paused);
    assert_eq!((id(t, &log), n), (0, 1));
    assert!(victim.is_empty());
}

/// The consumer-side drain takes what the owner's would, in its order.
#[test]
fn steal_all_takes_runnext_then_the_ring() {
    let q = RunQueue::new();
    let log = Log::default();
    let mut ts = tasks(3, &log).into_iter();
    let mut o = owner(&q);
    o.put(ts.next().unwrap(), false);
    o.put(ts.next().unwrap(), false);
    o.put(ts.next().unwrap(), true);
    let ids: Vec<usize> = q.steal_all().into_iter().map(|t| id(t, &log)).collect();
    assert_eq!(ids, vec![2, 0, 1]);
    assert!(q.is_empty());
}

/// Seed 004 in a pipeline: the owner ran the task the thief paused for
/// and put the pipeline's next one into `runnext`; the thief leaves it.
#[test]
fn a_runnext_task_replaced_during_the_pause_is_left_to_the_owner() {
    let victim = RunQueue::new();
    let thief = RunQueue::new();
    let (mut v, mut th) = (owner(&victim), owner(&thief));
    let log = Log::default();
    let mut ts = tasks(2, &log).into_iter();
    v.put(ts.next().unwrap(), true);
    let next = ts.next().unwrap();
    let mut ran = None;
    let stolen = victim.steal_into(&mut th, true, |_| {
        // The owner, meanwhile (on its own thread in production): runs
        // task 0, which readies task 1.
        ran = v.take_runnext().map(|t| id(t, &log));
        assert!(matches!(v.put(next, true), Put::Runnext));
        true
    });
    assert!(stolen.is_none(), "the pipeline's next task is not stolen");
    assert_eq!(ran, Some(0));
    assert_eq!(v.take_runnext().map(|t| id(t, &log)), Some(1));
}

#[test]
fn dropping_a_queue_drops_its_tasks_unrun() {
    let log = Log::default();
    {
        let q = RunQueue::new();
        for t in tasks(10, &log) {
            owner(&q).put(t, true);
        }
    }
    assert_eq!(log.dropped(), 10);
    assert!(log.ran.lock().unwrap().is_empty());
}
