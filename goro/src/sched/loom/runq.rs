//! loom models of the run queue (`runq.rs`): the owner and a thief take
//! each task once, an overflow into the global queue races a steal, and a
//! thief's take of `runnext` races the owner replacing and running it. The
//! ring has 4 slots under loom so that overflow is reachable.
//!
//! Run with:
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p goro --lib --release loom_runq`

use crate::loom::thread;
use crate::sched::runq::{Local, Put, RunQueue, RING_SIZE};
use crate::sched::task::test_support::{runnable, Log};
use crate::sched::task::Runnable;
use std::sync::Arc;

/// The owner's handle on a model's bare queue.
///
/// # Safety
///
/// The calling model thread is `q`'s only producer from now until the
/// handle's last use (another thread may hold a handle only after this
/// one is done with it, e.g. after a join).
unsafe fn owner(q: &RunQueue) -> Local<'_> {
    // SAFETY: the caller's contract is `Local::new`'s.
    unsafe { Local::new(q) }
}

fn run_all(tasks: impl IntoIterator<Item = Runnable>) -> usize {
    let mut n = 0;
    for t in tasks {
        t.run();
        n += 1;
    }
    n
}

/// A thief thread stealing from `victim` into `thief_q` (`last_pass`:
/// allowed to take `runnext`, its pause granted); returns the task it took
/// to run, the rest of its batch staying in `thief_q`.
fn spawn_thief(
    victim: &Arc<RunQueue>,
    thief_q: &Arc<RunQueue>,
    last_pass: bool,
) -> thread::JoinHandle<Option<Runnable>> {
    let (v, tq) = (victim.clone(), thief_q.clone());
    thread::spawn(move || {
        // SAFETY: this thread is the thief queue's only producer.
        let mut dst = unsafe { owner(&tq) };
        v.steal_into(&mut dst, last_pass, |_| true).map(|(t, _)| t)
    })
}

/// Ends a steal race: adds the thief's task and everything left in both
/// queues to `taken`, then checks each of the `n` tasks was taken once.
fn end_race(
    mut taken: Vec<Runnable>,
    thief: thread::JoinHandle<Option<Runnable>>,
    mut own: Local<'_>,
    thief_q: &RunQueue,
    (n, log, what): (usize, &Log, &str),
) {
    taken.extend(thief.join().unwrap());
    taken.extend(own.drain());
    // SAFETY: the thief's thread has ended; its handle with it.
    taken.extend(unsafe { owner(thief_q) }.drain());
    each_taken_once(taken, n, log, what);
}

/// Every task pushed is run exactly once: by the owner, by the thief, or
/// left in the queue (drained at the end). Covers runnext and its steal.
#[test]
fn loom_runq_owner_and_thief_take_each_task_once() {
    loom::model(|| {
        let log = Log::default();
        let victim = Arc::new(RunQueue::new());
        let thief_q = Arc::new(RunQueue::new());
        let (v, tq) = (victim.clone(), thief_q.clone());
        let thief = thread::spawn(move || {
            let mut n = 0;
            // SAFETY: this thread is the thief queue's only producer.
            let mut dst = unsafe { owner(&tq) };
            if let Some((t, k)) = v.steal_into(&mut dst, true, |_| true) {
                t.run();
                n += k;
            }
            n
        });
        // SAFETY: this thread is the victim's only producer.
        let mut own = unsafe { owner(&victim) };
        own.put(runnable(0, &log), false);
        own.put(runnable(1, &log), true);
        let mut by_owner = 0;
        if let Some((t, _)) = own.get(false) {
            t.run();
            by_owner += 1;
        }
        let stolen = thief.join().unwrap();
        // SAFETY: the thief's thread has ended; its handle with it.
        let rest = run_all(own.drain()) + run_all(unsafe { owner(&thief_q) }.drain());
        let mut ran = log.ran.lock().unwrap().clone();
        ran.sort();
        assert_eq!(
            ran,
            vec![0, 1],
            "each task exactly once (owner {by_owner}, thief {stolen}, rest {rest})"
        );
    });
}

/// Overflow moves the older half of a full ring out (to the global queue,
/// in the real `runqput`) while a thief steals half: the owner's CAS on
/// `head` and the thief's race for the same slots. The owner then puts one
/// more task, which reuses a slot the thief may have copied before its CAS
/// (the thief's CAS must then fail and its copy be discarded). No task is
/// lost or taken twice, whatever wins.
///
/// Planted bug, caught ("a task was taken twice"): `put_slow` handing out
/// the batch whether or not its CAS claimed it (the batch moving to the
/// global queue before the claim). A model that puts one task and runs
/// what it collects directly (7 interleavings; this one explores 75)
/// shows that bug only as a crash (a freed task run twice); comparing
/// pointers first (`each_taken_once`) makes it an assertion, and the
/// second put reuses a slot after an overflow that won the race too.
///
/// Not caught: `put_slow`'s CAS expecting a fresh read of `head` instead
/// of the `h` its copies came from. Failing needs the thief's whole steal
/// between the owner's copies and that read, and loom's search places a
/// thread switch only before the last access that conflicts (here the
/// owner's CAS), never before a plain load that precedes it.
#[test]
fn loom_runq_overflow_races_with_steal() {
    loom::model(|| {
        let log = Log::default();
        let victim = Arc::new(RunQueue::new());
        let thief_q = Arc::new(RunQueue::new());
        // SAFETY: this thread is the victim's only producer.
        let mut own = unsafe { owner(&victim) };
        for i in 0..RING_SIZE {
            assert!(matches!(own.put(runnable(i, &log), false), Put::Ring));
        }
        let thief = spawn_thief(&victim, &thief_q, false);
        let mut taken = Vec::new();
        for i in RING_SIZE..RING_SIZE + 2 {
            if let Put::Overflow(batch) = own.put(runnable(i, &log), false) {
                taken.extend(batch);
            }
        }
        end_race(
            taken,
            thief,
            own,
            &thief_q,
            (RING_SIZE + 2, &log, "overflow vs steal"),
        );
    });
}

/// Turns every task taken into its raw pointer, checks that no task was
/// taken twice and none was lost, then runs each once. Comparing pointers
/// before running keeps a double take a plain assertion failure instead of
/// a second `from_raw` of a freed task.
pub(super) fn each_taken_once(taken: Vec<Runnable>, n: usize, log: &Log, what: &str) {
    let mut ptrs: Vec<_> = taken.into_iter().map(|t| t.into_raw()).collect();
    ptrs.sort();
    let before = ptrs.len();
    ptrs.dedup();
    assert_eq!(before, ptrs.len(), "a task was taken twice ({what})");
    assert_eq!(ptrs.len(), n, "a task was lost ({what})");
    for p in ptrs {
        // SAFETY: each pointer came from `into_raw` just above, once (the
        // dedup found no copies), so this is its only owner.
        unsafe { Runnable::from_raw(p) }.run();
    }
    assert_eq!(log.ran.lock().unwrap().len(), n, "every task ran once");
}

/// `runnext` steal (seed 004): a thief on its last pass takes the victim's
/// `runnext` (pause granted) while the owner replaces it (bumping the old
/// occupant to the ring) and then runs what it finds. The ring is empty at
/// the start, so the thief's only way in is the `runnext` CAS, racing the
/// owner's swap in `put` and its CAS in `take_runnext`; once `A` is bumped
/// the thief may also take it from the ring. Each task is taken exactly
/// once: by the thief, by the owner, or left queued.
///
/// Planted bug, caught: `put` replacing `runnext` with a load and a store
/// instead of one swap lets the thief's CAS take `A` between them while the
/// owner also bumps `A` to the ring ("a task was taken twice").
#[test]
fn loom_runq_runnext_steal_races_owner_replace_and_run() {
    loom::model(|| {
        let log = Log::default();
        let victim = Arc::new(RunQueue::new());
        let thief_q = Arc::new(RunQueue::new());
        // SAFETY: this thread is the victim's only producer.
        let mut own = unsafe { owner(&victim) };
        assert!(matches!(own.put(runnable(0, &log), true), Put::Runnext));
        // The last pass, with the pause over (it only waits, and loom
        // explores the owner acting at every point of the steal anyway).
        let thief = spawn_thief(&victim, &thief_q, true);
        // The running task wakes B: it goes to runnext, A (unless the thief
        // has it already) to the ring.
        let _ = own.put(runnable(1, &log), true);
        // The poll returns: the owner takes its next task.
        let taken: Vec<Runnable> = own.get(false).map(|(t, _)| t).into_iter().collect();
        end_race(taken, thief, own, &thief_q, (2, &log, "runnext steal"));
    });
}
