//! Property: no group's task outlives the group.
//!
//! Each case builds a random tree of up to 10,000 tasks: groups
//! ([`TaskGroup`] and [`ErrGroup`]) whose members are leaves (return `Ok`,
//! return an error, panic, or hang until cancelled) or own a group of their
//! own, nested up to six deep. A `TaskGroup` ends by draining its members,
//! by [`TaskGroup::shutdown`], or by being dropped, after joining some of
//! its results first; a member that owns a group may be aborted with it. An
//! `ErrGroup` (always `with_context`) ends with `wait`; its hanging members
//! wait on the context, and a group with hangers always has a member that
//! fails (or `wait` would wait forever, as in Go).
//!
//! The checks, against [`goro::Runtime::dump`]:
//!
//! - when `join_next` returned `None` (drain, `shutdown`), none of the
//!   group's member ids is in the dump;
//! - when an `ErrGroup`'s `wait` returned (or resumed a member's panic),
//!   none of its members' ids is in the dump;
//! - a dropped `TaskGroup`'s members are gone soon after (their aborts run
//!   at their next scheduling point: checked with a deadline);
//! - when the root has ended, no task of the case is left.
//!
//! Every case runs under [`CASE_DEADLINE`]; a case that takes longer fails
//! with the dump. The default is a handful of cases so that the test takes
//! seconds in debug; `PROPTEST_CASES=200` runs more (a long soak:
//! `PROPTEST_CASES=1000 cargo test --release -p goro --test task_group_proptest`).
#![cfg(not(loom))]

use goro::context::Context;
use goro::sync::ErrGroup;
use goro::{TaskGroup, TaskId};
use proptest::prelude::*;
use std::collections::HashSet;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use futures::FutureExt;

/// How long one case may take before it fails.
const CASE_DEADLINE: Duration = Duration::from_secs(60);
/// The first pause between two dumps while waiting for tasks to be gone;
/// each pause doubles, up to [`POLL_MAX`]. A sleep, not `yield_now`, and a
/// growing one: a dump of thousands of tasks takes milliseconds in a debug
/// build, and several waiters dumping every millisecond kept a lone P
/// busy with dumps. A timer that is always due when the P looks keeps its
/// local queue from running dry, and the tasks being waited for, which
/// had overflowed to the global queue, got one turn per 61 slices (Go's
/// rule): 2,700 of them were still queued after ten seconds (seed
/// 0x6fe1d679e38f4ec, size 8911, procs 1).
const POLL: Duration = Duration::from_millis(1);
/// The longest pause between two dumps.
const POLL_MAX: Duration = Duration::from_millis(64);
/// How long a dropped group's members may take to be gone.
const GONE_DEADLINE: Duration = Duration::from_secs(10);
/// The payload of the planted panics, which the panic hook keeps quiet.
const PLANTED: &str = "task_group_proptest: planted panic";

#[derive(Debug, Clone, Copy, PartialEq)]
enum Outcome {
    Ok,
    Err,
    Panic,
    /// Leaves only: waits until aborted (`TaskGroup`) or until the group's
    /// context is cancelled (`ErrGroup`).
    Hang,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum End {
    /// `abort_all`, then `join_next` until `None`.
    Drain,
    /// `shutdown().await`.
    Shutdown,
    /// Drop the group.
    Drop,
}

#[derive(Debug)]
enum Group {
    Task {
        members: Vec<Node>,
        end: End,
        /// Results joined before the end (at most the members that finish
        /// by themselves).
        join_first: usize,
    },
    Err {
        members: Vec<Node>,
    },
}

#[derive(Debug)]
struct Node {
    /// For an owner: what it does once its group has ended.
    outcome: Outcome,
    group: Option<Group>,
}

/// xorshift64*: the tree comes from the case's seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn outcome(rng: &mut Rng, leaf: bool) -> Outcome {
    match rng.below(if leaf { 10 } else { 8 }) {
        0..=4 => Outcome::Ok,
        5 | 6 => Outcome::Err,
        7 => Outcome::Panic,
        _ => Outcome::Hang,
    }
}

/// A group of at most `*budget` tasks in all (members and their subtrees);
/// one member in about `owner_one_in` owns a group of its own.
fn group(rng: &mut Rng, budget: &mut usize, depth: usize, owner_one_in: usize) -> Group {
    let fanout = 1 + rng.below(2000);
    let k = 1 + rng.below((*budget).min(fanout));
    *budget -= k.min(*budget);
    let mut members: Vec<Node> = (0..k)
        .map(|_| {
            if depth < 6 && *budget > 0 && rng.below(owner_one_in) == 0 {
                Node {
                    outcome: outcome(rng, false),
                    group: Some(group(rng, budget, depth + 1, owner_one_in)),
                }
            } else {
                Node {
                    outcome: outcome(rng, true),
                    group: None,
                }
            }
        })
        .collect();
    if rng.below(2) == 0 {
        let fail = |m: &Node| matches!(m.outcome, Outcome::Err | Outcome::Panic);
        if members.iter().any(|m| m.outcome == Outcome::Hang) {
            // A member that fails, started first, cancels the hangers.
            match members.iter().position(fail) {
                Some(i) => members.swap(0, i),
                None => {
                    members[0].outcome = Outcome::Err;
                    if members[0].group.is_none() && rng.below(2) == 0 {
                        members[0].outcome = Outcome::Panic;
                    }
                }
            }
        }
        Group::Err { members }
    } else {
        let finishing = members
            .iter()
            .filter(|m| m.outcome != Outcome::Hang)
            .count();
        Group::Task {
            members,
            end: [End::Drain, End::Shutdown, End::Drop][rng.below(3)],
            join_first: rng.below(finishing + 1),
        }
    }
}

fn count(g: &Group) -> usize {
    let ms = match g {
        Group::Task { members, .. } | Group::Err { members } => members,
    };
    ms.len()
        + ms.iter()
            .filter_map(|m| m.group.as_ref())
            .map(count)
            .sum::<usize>()
}

/// What every task of a case shares.
struct Case {
    rt: Weak<goro::Runtime>,
    /// Every task id of the case.
    all: Mutex<Vec<TaskId>>,
    /// Checks that failed.
    failures: Mutex<Vec<String>>,
}

impl Case {
    fn dump(&self) -> goro::Dump {
        self.rt
            .upgrade()
            .expect("the runtime outlives its tasks")
            .dump()
    }

    /// Records a failed check. A panic would not do: it would come back
    /// as a member's `JoinError` or a resumed `ErrGroup` panic, as the
    /// planted ones do.
    fn fail(&self, msg: String) {
        self.failures.lock().unwrap().push(msg);
    }

    /// How many of `ids` a dump taken now shows; records a failure unless 0.
    fn check_gone(&self, ids: &[TaskId], what: &str) -> usize {
        let d = self.dump();
        let ids: HashSet<TaskId> = ids.iter().copied().collect();
        let left: Vec<_> = d.tasks().iter().filter(|t| ids.contains(&t.id)).collect();
        if !left.is_empty() {
            self.fail(format!(
                "{what}: {} of {} members still in the dump: {:?}\n{d}",
                left.len(),
                ids.len(),
                left.iter().take(5).collect::<Vec<_>>()
            ));
        }
        left.len()
    }

    /// Waits (a dump after pauses from [`POLL`] doubling to [`POLL_MAX`],
    /// up to [`GONE_DEADLINE`]) until none of `ids` is in the dump; records
    /// a failure if some still are then.
    async fn wait_gone(&self, ids: &[TaskId], what: &str) {
        let ids: HashSet<TaskId> = ids.iter().copied().collect();
        let deadline = Instant::now() + GONE_DEADLINE;
        let mut pause = POLL;
        loop {
            let d = self.dump();
            let left = d.tasks().iter().filter(|t| ids.contains(&t.id)).count();
            if left == 0 {
                return;
            }
            if Instant::now() >= deadline {
                self.fail(format!(
                    "{what}: {left} of {} members still in the dump after {GONE_DEADLINE:?}\n{d}",
                    ids.len()
                ));
                return;
            }
            goro::time::sleep(pause).await;
            pause = (pause * 2).min(POLL_MAX);
        }
    }
}

fn finish(o: Outcome) -> Result<(), String> {
    match o {
        Outcome::Ok | Outcome::Hang => Ok(()),
        Outcome::Err => Err("planted error".into()),
        Outcome::Panic => std::panic::panic_any(PLANTED),
    }
}

/// One task of the tree. `ctx`: the context of the `ErrGroup` it is a
/// member of, if it is.
fn run(
    node: Node,
    ctx: Option<Context>,
    case: Arc<Case>,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), String>> + Send>> {
    Box::pin(async move {
        case.all
            .lock()
            .unwrap()
            .push(TaskId::current().expect("a member is a task"));
        let Some(g) = node.group else {
            if node.outcome == Outcome::Hang {
                match ctx {
                    Some(ctx) => {
                        let _ = ctx.done().recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            }
            return finish(node.outcome);
        };
        match g {
            Group::Task {
                members,
                end,
                join_first,
            } => {
                let mut tg = TaskGroup::new();
                let ids: Vec<TaskId> = members
                    .into_iter()
                    .map(|m| tg.spawn(run(m, None, case.clone())))
                    .collect();
                case.all.lock().unwrap().extend(&ids);
                for _ in 0..join_first {
                    let r = tg.join_next().await.expect("a member left to join");
                    if let Err(e) = r {
                        if !e.is_panic() {
                            case.fail(format!("a member joined before any abort: {e}"));
                        }
                    }
                }
                match end {
                    End::Drain => {
                        tg.abort_all();
                        while tg.join_next().await.is_some() {}
                        case.check_gone(&ids, "TaskGroup drained");
                    }
                    End::Shutdown => {
                        tg.shutdown().await;
                        if !tg.is_empty() {
                            case.fail(format!("shutdown left {} members", tg.len()));
                        }
                        case.check_gone(&ids, "TaskGroup::shutdown returned");
                    }
                    End::Drop => {
                        drop(tg);
                        case.wait_gone(&ids, "TaskGroup dropped").await;
                    }
                }
            }
            Group::Err { members } => {
                let (eg, gctx) = ErrGroup::<String>::with_context(&Context::background());
                let ids = Arc::new(Mutex::new(Vec::new()));
                for m in members {
                    let (ids, c, case) = (ids.clone(), gctx.clone(), case.clone());
                    eg.go(async move {
                        ids.lock()
                            .unwrap()
                            .push(TaskId::current().expect("in a task"));
                        run(m, Some(c), case).await
                    })
                    .await;
                }
                let waited = AssertUnwindSafe(eg.wait()).catch_unwind().await;
                let ids = ids.lock().unwrap().clone();
                case.check_gone(&ids, "ErrGroup::wait returned");
                if let Err(p) = waited {
                    std::panic::resume_unwind(p);
                }
            }
        }
        finish(node.outcome)
    })
}

fn quiet_planted_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if info.payload().downcast_ref::<&str>() != Some(&PLANTED) {
                default(info);
            }
        }));
    });
}

fn run_case(seed: u64, size: usize, procs: usize) {
    quiet_planted_panics();
    let mut rng = Rng(seed | 1);
    let mut budget = size - 1;
    // About 50 groups at most: every group's end takes a dump of every
    // task, so more groups would make a case quadratic in its size.
    let owner_one_in = (size / 200).max(6);
    let root = Node {
        outcome: Outcome::Ok,
        group: Some(group(&mut rng, &mut budget, 0, owner_one_in)),
    };
    let tasks = 1 + root.group.as_ref().map_or(0, count);
    let rt = Arc::new(
        goro::Runtime::builder()
            .procs(procs)
            .build()
            .expect("runtime"),
    );
    let case = Arc::new(Case {
        rt: Arc::downgrade(&rt),
        all: Mutex::new(Vec::new()),
        failures: Mutex::new(Vec::new()),
    });
    let c = case.clone();
    let started = Instant::now();
    let out = rt.block_on(async move {
        let root = goro::spawn(run(root, None, c.clone()));
        match goro::time::timeout(CASE_DEADLINE, root).await {
            Ok(r) => {
                // Members of an ErrGroup whose owner was aborted run on (Go's
                // errgroup does not stop them either) until a failing
                // sibling cancels the context: wait for every task.
                let deadline = Instant::now() + GONE_DEADLINE;
                let mut pause = POLL;
                loop {
                    let d = c.dump();
                    if d.tasks().is_empty() {
                        break;
                    }
                    if Instant::now() >= deadline {
                        c.fail(format!("tasks left after the root ended:\n{d}"));
                        break;
                    }
                    goro::time::sleep(pause).await;
                    pause = (pause * 2).min(POLL_MAX);
                }
                Ok(r)
            }
            Err(_) => Err(c.dump()),
        }
    });
    match out {
        Ok(_) => {}
        Err(d) => panic!(
            "seed {seed:#x}, {tasks} tasks, procs {procs}: the case did not finish within \
             {CASE_DEADLINE:?} (a group that never ends, or a lost wake-up); dump:\n{d}"
        ),
    }
    let failures = case.failures.lock().unwrap();
    assert!(
        failures.is_empty(),
        "seed {seed:#x}, {tasks} tasks, procs {procs}: {} checks failed; the first:\n{}",
        failures.len(),
        failures[0]
    );
    let n = case
        .all
        .lock()
        .unwrap()
        .iter()
        .collect::<HashSet<_>>()
        .len();
    assert!(
        n <= tasks,
        "seed {seed:#x}: {n} tasks ran, the tree has {tasks}"
    );
    eprintln!(
        "seed {seed:#x}: {tasks} tasks in the tree, {n} ran, procs {procs}, {:?}",
        started.elapsed()
    );
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn no_task_outlives_its_group(
        seed in any::<u64>(),
        size in 1usize..=10_000,
        procs in 1usize..=3,
    ) {
        run_case(seed, size, procs);
    }
}

/// The largest tree, always: the random sizes above may all come out small.
#[test]
fn no_task_outlives_its_group_at_ten_thousand_tasks() {
    run_case(0x5eed_1234_abcd, 10_000, 2);
}

/// `ErrGroup::wait` returns only after its members have left the task
/// table (`sync/errgroup.rs`, `MemberTask`: Go's `done` is dropped with the
/// member's future), many times over: the property above, for `ErrGroup`
/// alone and at volume.
#[test]
fn errgroup_wait_returns_after_its_members_leave_the_dump() {
    let rt = goro::Runtime::builder().procs(2).build().expect("runtime");
    let stale = rt.block_on(async {
        let mut stale = 0;
        for _ in 0..200 {
            let g = ErrGroup::<()>::new();
            let ids = Arc::new(Mutex::new(Vec::new()));
            for _ in 0..100 {
                let ids = ids.clone();
                g.go(async move {
                    ids.lock()
                        .unwrap()
                        .push(TaskId::current().expect("in a task"));
                    Ok(())
                })
                .await;
            }
            goro::time::timeout(GONE_DEADLINE, g.wait())
                .await
                .expect("the members return at once")
                .unwrap();
            let ids: HashSet<TaskId> = ids.lock().unwrap().iter().copied().collect();
            stale += rt
                .dump()
                .tasks()
                .iter()
                .filter(|t| ids.contains(&t.id))
                .count();
        }
        stale
    });
    assert_eq!(stale, 0, "members still in the dump when wait returned");
}
