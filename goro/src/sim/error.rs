//! Why a bubble's run did not return its root's output.

use crate::runtime::dump::{Dump, TaskInfo};
use crate::sched::task::meta::{human, Reason, State};
use crate::sched::Sched;
use std::fmt;
use std::time::Duration;

/// Why [`Builder::run`](super::Builder::run) returned no output.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// Every task left in the bubble is blocked, no timer is armed and
    /// nothing outside the bubble is running: nothing can ever wake them.
    /// A deadlock if the root is among them, a leak if it had returned.
    Deadlock(DeadlockReport),
    /// The run took more steps than [`Builder::max_steps`](super::Builder::max_steps).
    StepLimit {
        /// The run's seed.
        seed: u64,
        /// The limit.
        steps: u64,
    },
    /// [`Builder::run_twice`](super::Builder::run_twice): the same seed gave
    /// two schedules, (hash, steps) each.
    Nondeterministic {
        /// The seed both runs used.
        seed: u64,
        /// The first run's schedule hash and steps.
        first: (u64, u64),
        /// The second run's.
        second: (u64, u64),
    },
}

impl Error {
    /// The seed of the failing run: `GORO_SIM_SEED=seed` replays it.
    pub fn seed(&self) -> u64 {
        match self {
            Error::Deadlock(d) => d.seed,
            Error::StepLimit { seed, .. } | Error::Nondeterministic { seed, .. } => *seed,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Deadlock(d) => d.fmt(f),
            Error::StepLimit { seed, steps } => write!(
                f,
                "goro::sim: the bubble took more than {steps} steps (a livelock, or raise \
                 Builder::max_steps); seed {seed}, replay with GORO_SIM_SEED={seed}"
            ),
            Error::Nondeterministic {
                seed,
                first,
                second,
            } => write!(
                f,
                "goro::sim: seed {seed} gave two schedules (hash {:#x} in {} steps, then {:#x} in {}): \
                 something in the test chooses outside the seed (a HashMap's order, the real clock, \
                 a thread)",
                first.0, first.1, second.0, second.1
            ),
        }
    }
}

impl std::error::Error for Error {}

/// The tasks a deadlock or leak left blocked, as [`Error::Deadlock`]
/// reports them.
#[derive(Debug, Clone)]
pub struct DeadlockReport {
    seed: u64,
    root_returned: bool,
    root_waits: Reason,
    tasks: Vec<TaskInfo>,
    /// Each task's number in the bubble (1, 2, ... in spawn order), beside
    /// `tasks`.
    numbers: Vec<Option<u64>>,
    at: Duration,
}

impl DeadlockReport {
    pub(crate) fn take(
        sched: &Sched,
        seed: u64,
        root_returned: bool,
        root_waits: Reason,
        at: Duration,
    ) -> DeadlockReport {
        let tasks = Dump::take(sched).tasks().to_vec();
        let numbers = tasks
            .iter()
            .map(|t| sched.sim().and_then(|b| b.number_of(t.id.as_u64())))
            .collect();
        DeadlockReport {
            seed,
            root_returned,
            root_waits,
            tasks,
            numbers,
            at,
        }
    }

    /// True for a leak: the root had returned, and these tasks are
    /// blocked forever.
    pub fn root_returned(&self) -> bool {
        self.root_returned
    }

    /// The blocked tasks, by id (the root is not among them). The report
    /// names each by its number in the bubble too: 1, 2, ... in spawn
    /// order, the same in every run of the seed, where ids are not.
    pub fn tasks(&self) -> &[TaskInfo] {
        &self.tasks
    }

    /// What the root waits on (meaningless for a leak).
    pub fn root_waits(&self) -> Reason {
        self.root_waits
    }

    /// Virtual time from the bubble's start to the verdict.
    pub fn at(&self) -> Duration {
        self.at
    }

    /// The run's seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }
}

impl fmt::Display for DeadlockReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.tasks.len();
        let (tasks, are) = if n == 1 {
            ("task", "is")
        } else {
            ("tasks", "are")
        };
        let at = human(self.at);
        if self.root_returned {
            write!(
                f,
                "goro::sim: leak: the root returned and {n} {tasks} {are} blocked forever \
                 (at {at} of virtual time"
            )?;
        } else {
            write!(
                f,
                "goro::sim: deadlock: the root and {n} {tasks} are blocked, with no timer armed \
                 (at {at} of virtual time"
            )?;
        }
        let seed = self.seed;
        writeln!(f, "; seed {seed}, replay with GORO_SIM_SEED={seed})")?;
        if !self.root_returned {
            writeln!(f, "  root: blocked on {}", self.root_waits)?;
        }
        for (t, number) in self.tasks.iter().zip(&self.numbers) {
            match number {
                Some(k) => write!(f, "  task {k} (id {})", t.id)?,
                None => write!(f, "  task id {}", t.id)?,
            }
            if let Some(name) = &t.name {
                write!(f, " \"{name}\"")?;
            }
            write!(f, " spawned at {}: ", t.location)?;
            match t.state {
                State::Parked(r, _) => writeln!(f, "blocked on {r}")?,
                other => writeln!(f, "{other:?}")?,
            }
        }
        Ok(())
    }
}
