//! The task dump: every live task, what it is doing and for how long (Go's
//! goroutine dump on SIGQUIT, made readable at 10,000 tasks).
//!
//! [`Runtime::dump`](crate::Runtime::dump) reads the records the scheduler
//! keeps in every task's header (`sched/task/meta.rs`) through the task
//! table (`sched/task/table.rs`). It takes no lock a running task waits on
//! for longer than a copy, and it never asks a task to stop or yield: a
//! task stuck in a ten-second loop is shown as running on its P for ten
//! seconds while the dump completes. (tokio's task dump has to wait for
//! every task to reach a yield point, and hangs on one that never does.)
//!
//! The text form groups tasks with the same state, reason and spawn site
//! into one entry with a count, the range of their durations and a few
//! ids: ten thousand workers parked on one channel read as one line.
//! Running tasks come first, then runnable ones, then parked ones, the
//! largest groups first.
//!
//! Members of a [`TaskGroup`](crate::TaskGroup) are listed under the task
//! that owns the group (`; in a task group of task 7`), not under whichever
//! task called `spawn` on it: the owner is the one that answers for them
//! (its drop aborts them). An entry never mixes group members with other
//! tasks.
//!
//! `GORO_DUMP_SIGNAL=SIGQUIT` (or `SIGUSR1`, `SIGUSR2`) prints the dump of
//! every runtime in the process to stderr when the signal arrives, and the
//! program keeps running (`signal.rs`).

use crate::sched::task::meta::{human, Reason, State, TaskId};
use crate::sched::Sched;
use std::collections::BTreeMap;
use std::fmt;
use std::panic::Location;
use std::time::Duration;

/// A snapshot of every live task of a runtime (see the module docs).
///
/// ```
/// let rt = goro::Runtime::builder().procs(1).build().unwrap();
/// rt.block_on(async {
///     let (tx, rx) = goro::chan::bounded::<u32>(0);
///     let h = goro::spawn_named("waiter", async move { rx.recv().await });
///     // Wait until the task has run and parked (a worker thread runs it).
///     let dump = loop {
///         let d = rt.dump();
///         let parked = |t: &goro::TaskInfo| matches!(t.state, goro::TaskState::Parked(..));
///         if d.tasks().iter().any(|t| t.id == h.id() && parked(t)) {
///             break d;
///         }
///         goro::time::sleep(std::time::Duration::from_millis(1)).await;
///     };
///     let t = dump.tasks().iter().find(|t| t.id == h.id()).unwrap();
///     assert_eq!(t.name.as_deref(), Some("waiter"));
///     assert_eq!(t.state, goro::TaskState::Parked(goro::WaitReason::ChanRecv, 0));
///     println!("{dump}");
///     drop(tx);
///     let _ = h.await;
/// });
/// ```
#[derive(Debug, Clone)]
pub struct Dump {
    tasks: Vec<TaskInfo>,
    procs: usize,
    /// `block_on` callers: polling, and parked (on what, last).
    block_on: (usize, usize, Reason),
}

/// One task in a [`Dump`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TaskInfo {
    /// The task's id (`JoinHandle::id`).
    pub id: TaskId,
    /// The name given to `spawn_named`, if any.
    pub name: Option<String>,
    /// Where it was spawned.
    pub location: &'static Location<'static>,
    /// The task that spawned it (`None`: spawned from outside any task).
    /// For a member of a [`TaskGroup`](crate::TaskGroup) (`in_group`), the
    /// task that owns the group (created it), whichever task called
    /// `spawn` on the group (`None`: a group made outside any task).
    pub parent: Option<TaskId>,
    /// Spawned into a [`TaskGroup`](crate::TaskGroup): `parent` is the
    /// group's owner.
    pub in_group: bool,
    /// What it was doing when the dump read it.
    pub state: State,
    /// How long it has been in `state` (to within the monitor's period,
    /// at most 10 ms).
    pub in_state_for: Duration,
    /// For a wait with a deadline (a sleep, a socket with a deadline): how
    /// long until it (zero if past).
    pub deadline_in: Option<Duration>,
}

impl Dump {
    pub(crate) fn take(sched: &Sched) -> Dump {
        let now = crate::sched::timer::clock::now();
        let mut tasks = Vec::new();
        sched.tasks().for_each(|m| {
            let (state, since) = m.get();
            let deadline_in = match state {
                State::Parked(Reason::Sleep | Reason::NetRead | Reason::NetWrite, d) if d != 0 => {
                    Some(Duration::from_nanos(d.saturating_sub(now)))
                }
                _ => None,
            };
            tasks.push(TaskInfo {
                id: m.id,
                name: m.name().map(str::to_owned),
                location: m.location,
                parent: m.parent(),
                in_group: m.in_group(),
                state,
                in_state_for: Duration::from_nanos(now.saturating_sub(since)),
                deadline_in,
            });
        });
        tasks.sort_by_key(|t| t.id);
        Dump {
            tasks,
            procs: sched.procs(),
            block_on: {
                let (polling, parked) = sched.block_on_callers();
                (polling, parked, sched.block_on_reason())
            },
        }
    }

    /// Every live task, by id.
    pub fn tasks(&self) -> &[TaskInfo] {
        &self.tasks
    }

    /// How many tasks are running, runnable and parked.
    pub fn counts(&self) -> (usize, usize, usize) {
        let mut c = (0, 0, 0);
        for t in &self.tasks {
            match t.state {
                State::Running(_) => c.0 += 1,
                State::Runnable(_) => c.1 += 1,
                State::Parked(..) => c.2 += 1,
            }
        }
        c
    }
}

/// Tasks shown as one entry.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct GroupKey {
    /// 0 running, 1 runnable, 2 parked: the display order.
    rank: u8,
    what: String,
    location: String,
    name: Option<String>,
    in_group: bool,
}

fn describe(state: State) -> (u8, String) {
    match state {
        State::Running(Some(p)) => (0, format!("running on P{p}")),
        State::Running(None) => (0, "running on a blocking thread".to_owned()),
        State::Runnable(Some(p)) => (1, format!("runnable in P{p}'s queue")),
        State::Runnable(None) => (1, "runnable in the global queue".to_owned()),
        State::Parked(Reason::Join, id) => (2, format!("parked on join (task {id})")),
        State::Parked(Reason::TaskGroup, _) => (2, "parked on task group join".to_owned()),
        State::Parked(r, _) => (2, format!("parked on {r}")),
    }
}

impl fmt::Display for Dump {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (running, runnable, parked) = self.counts();
        write!(
            f,
            "goro: {} tasks on {} Ps: {running} running, {runnable} runnable, {parked} parked; \
             block_on callers: {} polling, {} parked",
            self.tasks.len(),
            self.procs,
            self.block_on.0,
            self.block_on.1,
        )?;
        if self.block_on.1 > 0 {
            writeln!(f, " (last on {})", self.block_on.2)?;
        } else {
            writeln!(f)?;
        }
        let mut groups: BTreeMap<GroupKey, Vec<&TaskInfo>> = BTreeMap::new();
        for t in &self.tasks {
            let (rank, what) = describe(t.state);
            // Running tasks are shown one by one: there are at most a few.
            let what = if rank == 0 {
                format!("{what} (task {})", t.id)
            } else {
                what
            };
            groups
                .entry(GroupKey {
                    rank,
                    what,
                    location: t.location.to_string(),
                    name: t.name.clone(),
                    in_group: t.in_group,
                })
                .or_default()
                .push(t);
        }
        let mut entries: Vec<_> = groups.into_iter().collect();
        // Within a state, the largest groups first.
        entries.sort_by(|(a, ta), (b, tb)| {
            (a.rank, std::cmp::Reverse(ta.len()), a).cmp(&(b.rank, std::cmp::Reverse(tb.len()), b))
        });
        for (key, tasks) in entries {
            let lo = tasks
                .iter()
                .map(|t| t.in_state_for)
                .min()
                .unwrap_or_default();
            let hi = tasks
                .iter()
                .map(|t| t.in_state_for)
                .max()
                .unwrap_or_default();
            let dur = if human(lo) == human(hi) {
                format!("for {}", human(hi))
            } else {
                format!("for {} to {}", human(lo), human(hi))
            };
            let count = if tasks.len() == 1 {
                "1 task".to_owned()
            } else {
                format!("{} tasks", tasks.len())
            };
            write!(f, "\n{count} {} {dur}", key.what)?;
            if let Some(n) = &key.name {
                write!(f, ", named {n:?}")?;
            }
            let deadlines: Vec<Duration> = tasks.iter().filter_map(|t| t.deadline_in).collect();
            if let (Some(a), Some(b)) = (deadlines.iter().min(), deadlines.iter().max()) {
                if a == b {
                    write!(f, ", deadline in {}", human(*a))?;
                } else {
                    write!(f, ", deadlines in {} to {}", human(*a), human(*b))?;
                }
            }
            writeln!(f)?;
            writeln!(f, "    spawned at {}", key.location)?;
            let shown: Vec<String> = tasks.iter().take(5).map(|t| t.id.to_string()).collect();
            let more = if tasks.len() > 5 {
                format!(" and {} more", tasks.len() - 5)
            } else {
                String::new()
            };
            write!(f, "    tasks {}{more}", shown.join(", "))?;
            let mut parents: Vec<Option<TaskId>> = tasks.iter().map(|t| t.parent).collect();
            parents.sort();
            parents.dedup();
            match (key.in_group, parents.as_slice()) {
                (false, [Some(p)]) => write!(f, "; spawned by task {p}")?,
                (false, [None]) => write!(f, "; spawned from outside any task")?,
                (false, _) => write!(f, "; {} different parents", parents.len())?,
                (true, [Some(p)]) => write!(f, "; in a task group of task {p}")?,
                (true, [None]) => write!(f, "; in a task group made outside any task")?,
                (true, _) => write!(f, "; in task groups of {} tasks", parents.len())?,
            }
            writeln!(f)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(id: u64, state: State, secs: u64) -> TaskInfo {
        TaskInfo {
            id: TaskId(id),
            name: None,
            location: Location::caller(),
            parent: Some(TaskId(1)),
            in_group: false,
            state,
            in_state_for: Duration::from_secs(secs),
            deadline_in: None,
        }
    }

    #[test]
    fn groups_same_place_and_state_with_a_count() {
        let mut tasks: Vec<TaskInfo> = (10..1010)
            .map(|i| info(i, State::Parked(Reason::ChanRecv, 0), 2))
            .collect();
        tasks.push(info(5, State::Running(Some(1)), 10));
        let d = Dump {
            tasks,
            procs: 2,
            block_on: (0, 1, Reason::Join),
        };
        let text = d.to_string();
        assert!(
            text.contains("1 task running on P1 (task 5) for 10.0s"),
            "{text}"
        );
        assert!(
            text.contains("1000 tasks parked on chan receive for 2.0s"),
            "{text}"
        );
        assert!(text.contains("and 995 more"), "{text}");
        assert!(
            text.find("running").unwrap() < text.find("chan receive").unwrap(),
            "running tasks come first:\n{text}"
        );
    }

    #[test]
    fn group_members_are_listed_under_the_owner_apart_from_other_children() {
        let mut tasks: Vec<TaskInfo> = (10..20)
            .map(|i| TaskInfo {
                in_group: true,
                parent: Some(TaskId(7)),
                ..info(i, State::Parked(Reason::ChanRecv, 0), 1)
            })
            .collect();
        tasks.push(info(30, State::Parked(Reason::ChanRecv, 0), 1));
        let d = Dump {
            tasks,
            procs: 1,
            block_on: (0, 0, Reason::Other),
        };
        let text = d.to_string();
        assert!(
            text.contains("10 tasks parked on chan receive")
                && text.contains("; in a task group of task 7"),
            "{text}"
        );
        assert!(text.contains("tasks 30; spawned by task 1"), "{text}");
    }
}
