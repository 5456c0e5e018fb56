//! What the scheduler knows about each task, kept up to date as it runs.
//!
//! Go keeps a goroutine's status, wait reason and `waitsince` in the `g`
//! itself, and a goroutine dump (SIGQUIT, `runtime.Stack`) only reads them.
//! goro does the same: every task carries a [`TaskMeta`] in its header
//! (in the task's one allocation, `raw/`), and the
//! scheduler writes into it at the transitions it passes through anyway:
//!
//! * **spawn** — id, parent, spawn location (`#[track_caller]`), name;
//!   for a [`TaskGroup`](crate::TaskGroup) member the parent is the
//!   group's owner (see "Group members" below);
//! * **queued** (`Sched::schedule`, `spawn`) — runnable, on which P's queue
//!   or the global one;
//! * **polled** (`Machine::execute`) — running on P n;
//! * **parked** (the task's poll returned `Pending`) — on what: each goro
//!   primitive names itself with [`blocked_on`] just before it returns
//!   `Pending` (a thread-local store on the parking path only), and a
//!   future outside goro's reach shows as [`Reason::Other`].
//!
//! Each transition is two relaxed stores into a header the poll touches
//! anyway. "Since when" comes from the coarse clock (`time::clock::coarse`),
//! which the monitor refreshes while any P is busy: reading `Instant::now`
//! at every transition would cost a ring hop a third of its time, and a
//! dump needs milliseconds, not nanoseconds.
//!
//! A reader (the task dump, the deadlock check) loads the fields without
//! any lock against the task, so it never waits for a running task; it may
//! see a task between two stores (the new state with the old `since`),
//! which is a snapshot's usual fuzziness.
//!
//! # Group members
//!
//! A [`TaskGroup`](crate::TaskGroup) member records the task that owns the
//! group (the one that called `TaskGroup::new`) as its parent, whichever
//! task called `spawn` on it, and is flagged `in_group`, so the dump lists
//! the members under their owner even when the group was handed to another
//! task. The group passes its owner down the spawn path ([`Parent`], in
//! `task::Spawn`). The flag is the top bit of the parent's id, so the
//! record keeps one word for both (an `Option<TaskId>` took two).
//!
//! Ids are unique in the process and never reused; each thread takes them
//! from the shared counter in batches (Go's `goidcache`), so spawning does
//! not bounce one cache line between Ps.

use crate::sched::context::{IdBatch, Polling, CTX};
use std::fmt;
use std::panic::Location;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A task's number: unique in the process, never reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TaskId(pub(crate) u64);

impl TaskId {
    /// The number itself.
    pub fn as_u64(self) -> u64 {
        self.0
    }

    /// The id of the task being polled on this thread (tokio's
    /// `task::try_id`); `None` outside a task (on a `block_on` caller, on
    /// a plain thread).
    ///
    /// ```
    /// let rt = goro::Runtime::builder().procs(1).build().unwrap();
    /// rt.block_on(async {
    ///     assert_eq!(goro::TaskId::current(), None, "block_on is not a task");
    ///     let h = goro::spawn(async { goro::TaskId::current() });
    ///     let id = h.id();
    ///     assert_eq!(h.await.unwrap(), Some(id));
    /// });
    /// ```
    pub fn current() -> Option<TaskId> {
        current_task()
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// What a parked task waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Reason {
    /// A future goro does not know (a foreign primitive, a hand-written
    /// future): whatever it waits on did not say.
    Other,
    /// `Receiver::recv` on an empty channel.
    ChanRecv,
    /// `Sender::send` on a full channel.
    ChanSend,
    /// A `select!` with no ready case.
    Select,
    /// `never()`, or a `select! {}` with no case: waits forever.
    Forever,
    /// `sleep`, `sleep_until`, an interval's tick (detail: the deadline).
    Sleep,
    /// A socket read or accept (detail: its deadline, if any).
    NetRead,
    /// A socket write or connect (detail: its deadline, if any).
    NetWrite,
    /// `Mutex::lock`.
    Mutex,
    /// `RwLock::read` / `write`.
    RwLock,
    /// `Semaphore::acquire`.
    Semaphore,
    /// `WaitGroup::wait`.
    WaitGroup,
    /// `OnceCell` initialised by another task.
    Once,
    /// Awaiting a `JoinHandle` (detail: the joined task's id).
    Join,
    /// `TaskGroup::join_next` with no member finished yet.
    TaskGroup,
}

impl Reason {
    const ALL: [Reason; 15] = [
        Reason::Other,
        Reason::ChanRecv,
        Reason::ChanSend,
        Reason::Select,
        Reason::Forever,
        Reason::Sleep,
        Reason::NetRead,
        Reason::NetWrite,
        Reason::Mutex,
        Reason::RwLock,
        Reason::Semaphore,
        Reason::WaitGroup,
        Reason::Once,
        Reason::Join,
        Reason::TaskGroup,
    ];

    pub(crate) fn from_u8(v: u8) -> Reason {
        Reason::ALL
            .get(v as usize)
            .copied()
            .unwrap_or(Reason::Other)
    }

    /// Go's wait-reason wording.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Other => "other future",
            Reason::ChanRecv => "chan receive",
            Reason::ChanSend => "chan send",
            Reason::Select => "select",
            Reason::Forever => "select (no cases)",
            Reason::Sleep => "sleep",
            Reason::NetRead => "net read",
            Reason::NetWrite => "net write",
            Reason::Mutex => "mutex",
            Reason::RwLock => "rwlock",
            Reason::Semaphore => "semaphore",
            Reason::WaitGroup => "waitgroup",
            Reason::Once => "once",
            Reason::Join => "join",
            Reason::TaskGroup => "task group join",
        }
    }

    /// True when only another task (or a thread outside goro holding a
    /// waker) can end the wait: a goro primitive with no timer and no
    /// socket involved. False for `Other`: a foreign future may have a
    /// waker source of its own.
    pub(crate) fn needs_a_task(self) -> bool {
        !matches!(
            self,
            Reason::Other | Reason::Sleep | Reason::NetRead | Reason::NetWrite
        )
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A task's state as the scheduler last wrote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Queued: on P `Some(n)`'s run queue, or the global queue (`None`).
    Runnable(Option<usize>),
    /// Being polled on P n (or, for `None`, outside a P: a blocking-pool
    /// thread, or a poll handed off by `block_in_place`).
    Running(Option<usize>),
    /// Waiting, on what; `detail` is the deadline on the timer clock (for
    /// `Sleep`/`NetRead`/`NetWrite`; 0 for none) or the joined task's id
    /// (`Join`).
    Parked(Reason, u64),
}

// The state word, written in one store: kind in bits 0..2, reason in
// 2..6, P + 1 (0 for none) in 6..20, and since when in 20..64, in units of
// 1,024 ns of the coarse clock (2^44 of them: 200 days; `MAX_PROCS` + 1
// fits in 14 bits).
const RUNNABLE: u64 = 0;
const RUNNING: u64 = 1;
const PARKED: u64 = 2;
const P_SHIFT: u32 = 6;
const SINCE_SHIFT: u32 = 20;
const SINCE_UNIT: u32 = 10;

const _: () = assert!(crate::sched::MAX_PROCS < 1 << (SINCE_SHIFT - P_SHIFT));
const _: () = assert!(Reason::ALL.len() <= 16);

fn pack_p(p: Option<usize>) -> u64 {
    p.map_or(0, |p| p as u64 + 1) << P_SHIFT
}

fn unpack_p(word: u64) -> Option<usize> {
    match (word >> P_SHIFT) & ((1 << (SINCE_SHIFT - P_SHIFT)) - 1) {
        0 => None,
        n => Some(n as usize - 1),
    }
}

/// Per-task record, in the task's header.
pub(crate) struct TaskMeta {
    pub(crate) id: TaskId,
    /// The parent's id (0: none) and [`IN_GROUP`]: one word, read through
    /// [`TaskMeta::parent`] and [`TaskMeta::in_group`].
    parent: u64,
    pub(crate) location: &'static Location<'static>,
    /// The name, boxed once more so that the record keeps one word for it
    /// (named tasks are the few; see [`TaskMeta::name`]).
    name: Option<Box<Box<str>>>,
    /// State and since when (the coarse clock), packed as above.
    state: AtomicU64,
    /// A parked task's deadline or joined task (see [`State::Parked`]).
    detail: AtomicU64,
    /// When a sampled wake made it ready (timer clock; 0: not sampled),
    /// for the wake-to-run histogram (`runtime/metrics.rs`).
    woke_at: AtomicU64,
    /// Where the task table holds this task: shard << 48 | its entry's
    /// address, or `u64::MAX` while not in a table. Written by the table
    /// only.
    pub(crate) slot: AtomicU64,
}

impl TaskMeta {
    /// A new task's record: runnable, to be queued on P `p` (or globally).
    pub(crate) fn new(
        location: &'static Location<'static>,
        name: Option<Box<str>>,
        p: Option<usize>,
        parent: Parent,
        now: u64,
    ) -> TaskMeta {
        let parent = if parent == Parent::SPAWNER {
            polling_id()
        } else {
            parent.0
        };
        TaskMeta {
            id: next_id(),
            parent,
            location,
            name: name.map(Box::new),
            state: AtomicU64::new(RUNNABLE | pack_p(p) | (now >> SINCE_UNIT) << SINCE_SHIFT),
            detail: AtomicU64::new(0),
            woke_at: AtomicU64::new(0),
            slot: AtomicU64::new(u64::MAX),
        }
    }

    /// The name given at spawn (`spawn_named`), if any.
    pub(crate) fn name(&self) -> Option<&str> {
        self.name.as_deref().map(|n| &**n)
    }

    /// The task that spawned this one; `None` from outside any task. For a
    /// group member ([`TaskMeta::in_group`]), the group's owner instead.
    pub(crate) fn parent(&self) -> Option<TaskId> {
        match self.parent & !IN_GROUP {
            0 => None,
            id => Some(TaskId(id)),
        }
    }

    /// Spawned into a `TaskGroup`: [`TaskMeta::parent`] is the group's owner.
    pub(crate) fn in_group(&self) -> bool {
        self.parent & IN_GROUP != 0
    }

    /// Records a state change at `now` (the coarse clock).
    #[inline]
    pub(crate) fn set(&self, state: State, now: u64) {
        // Relaxed: a progress record for readers that tolerate a snapshot
        // a moment old; nothing synchronizes through it.
        let word = match state {
            State::Runnable(p) => RUNNABLE | pack_p(p),
            State::Running(p) => RUNNING | pack_p(p),
            State::Parked(r, d) => {
                self.detail.store(d, Ordering::Relaxed);
                PARKED | (r as u64) << 2
            }
        };
        self.state
            .store(word | (now >> SINCE_UNIT) << SINCE_SHIFT, Ordering::Relaxed);
    }

    /// Records that a sampled wake readied the task at `now`.
    #[inline]
    pub(crate) fn mark_woken(&self, now: u64) {
        self.woke_at.store(now, Ordering::Relaxed);
    }

    /// When a sampled wake readied it, if one did since the last call.
    #[inline]
    pub(crate) fn take_woken(&self) -> Option<u64> {
        match self.woke_at.load(Ordering::Relaxed) {
            0 => None,
            t => {
                self.woke_at.store(0, Ordering::Relaxed);
                Some(t)
            }
        }
    }

    /// The state and since when (the coarse clock, to 1 µs).
    pub(crate) fn get(&self) -> (State, u64) {
        let word = self.state.load(Ordering::Relaxed);
        let since = (word >> SINCE_SHIFT) << SINCE_UNIT;
        let state = match word & 3 {
            RUNNING => State::Running(unpack_p(word)),
            PARKED => State::Parked(
                Reason::from_u8((word >> 2) as u8 & 15),
                self.detail.load(Ordering::Relaxed),
            ),
            _ => State::Runnable(unpack_p(word)),
        };
        (state, since)
    }
}

/// Ids handed to one thread at a time.
const ID_BATCH: u64 = 256;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The bit of [`TaskMeta`]'s parent word that marks a `TaskGroup` member
/// (ids stay below 2^56: the trace packs flags above them).
const IN_GROUP: u64 = 1 << 63;

/// Whom a new task's record names as its parent: the task being polled on
/// the spawning thread ([`Parent::SPAWNER`]), or for a `TaskGroup` member
/// the group's owner, whichever task spawns it. The parent word itself, so
/// that the common case costs one compare at spawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Parent(u64);

impl Parent {
    /// The task being polled on the spawning thread (none outside a task).
    pub(crate) const SPAWNER: Parent = Parent(u64::MAX);

    /// A member of a group owned by `owner` (`None`: a group made outside
    /// any task).
    pub(crate) fn group_owner(owner: Option<TaskId>) -> Parent {
        Parent(owner.map_or(0, |t| t.0) | IN_GROUP)
    }
}

fn next_id() -> TaskId {
    CTX.with(|c| {
        let mut b = c.ids.get();
        if b.next == b.end {
            // Relaxed: uniqueness only needs the atomicity of the add.
            b.next = NEXT_ID.fetch_add(ID_BATCH, Ordering::Relaxed);
            b.end = b.next + ID_BATCH;
        }
        c.ids.set(IdBatch {
            next: b.next + 1,
            end: b.end,
        });
        TaskId(b.next)
    })
}

/// The task being polled on this thread, if any.
pub(crate) fn current_task() -> Option<TaskId> {
    Some(polling_id()).filter(|&id| id != 0).map(TaskId)
}

/// The id of the task being polled on this thread, 0 if none: the raw
/// word a new task's record stores as its parent.
fn polling_id() -> u64 {
    CTX.try_with(|c| c.polling.get().task).unwrap_or(0)
}

/// Says why the current poll is about to return `Pending`. Called by goro's
/// primitives on their parking path; the last call in a poll wins (a
/// `select!` names itself after its cases have).
#[inline]
pub(crate) fn blocked_on(reason: Reason, detail: u64) {
    let _ = CTX.try_with(|c| {
        let task = c.polling.get().task;
        c.polling.set(Polling {
            task,
            reason: reason as u8,
            detail,
        });
    });
}

/// Marks `id` as the task polled on this thread until the guard goes;
/// the guard's `reason` reads what the poll said when it parked.
pub(crate) struct PollScope {
    outer: Polling,
}

impl PollScope {
    #[inline]
    pub(crate) fn enter(id: TaskId) -> PollScope {
        let outer = CTX
            .try_with(|c| {
                c.polling.replace(Polling {
                    task: id.0,
                    reason: Reason::Other as u8,
                    detail: 0,
                })
            })
            .unwrap_or(Polling::NONE);
        PollScope { outer }
    }

    /// The reason the poll gave for returning `Pending`.
    #[inline]
    pub(crate) fn reason(&self) -> (Reason, u64) {
        CTX.try_with(|c| {
            let p = c.polling.get();
            (Reason::from_u8(p.reason), p.detail)
        })
        .unwrap_or((Reason::Other, 0))
    }
}

impl Drop for PollScope {
    #[inline]
    fn drop(&mut self) {
        let _ = CTX.try_with(|c| c.polling.set(self.outer));
    }
}

/// A duration in a person's units: `850µs`, `12ms`, `3.2s`, `5m10s`.
pub(crate) fn human(d: Duration) -> String {
    let ns = d.as_nanos();
    if ns < 1_000_000 {
        format!("{}µs", ns / 1_000)
    } else if ns < 1_000_000_000 {
        format!("{}ms", ns / 1_000_000)
    } else if ns < 60_000_000_000 {
        format!("{:.1}s", d.as_secs_f64())
    } else {
        let s = d.as_secs();
        format!("{}m{}s", s / 60, s % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_round_trips() {
        let m = TaskMeta::new(Location::caller(), None, None, Parent::SPAWNER, 5);
        for s in [
            State::Runnable(None),
            State::Runnable(Some(3)),
            State::Running(Some(0)),
            State::Running(Some(crate::sched::MAX_PROCS - 1)),
            State::Running(None),
            State::Parked(Reason::Sleep, 1234),
            State::Parked(Reason::Join, 7),
        ] {
            m.set(s, 9 << 20);
            assert_eq!(m.get(), (s, 9 << 20), "state {s:?} did not round-trip");
        }
    }

    #[test]
    fn ids_are_unique_across_threads() {
        let ids: Vec<u64> = (0..4)
            .map(|_| std::thread::spawn(|| (0..1000).map(|_| next_id().0).collect::<Vec<_>>()))
            .flat_map(|h| h.join().unwrap())
            .collect();
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), ids.len(), "a task id was handed out twice");
    }

    #[test]
    fn every_reason_round_trips() {
        for r in Reason::ALL {
            assert_eq!(Reason::from_u8(r as u8), r);
        }
    }
}
