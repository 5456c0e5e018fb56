//! Where the default number of Ps comes from, and the monitor's following
//! of it.
//!
//! The default is the machine's: the smaller of the CPU affinity count
//! (`sched_getaffinity`: the CPUs this process may run on) and the CPU
//! limit of its cgroups (`cgroup.rs`), at least 1. `GORO_PROCS` or
//! [`crate::Builder::procs`] replace it, as Go's `GOMAXPROCS` variable
//! does. What was decided, and why, is kept in a [`ProcsSource`] that
//! [`crate::Runtime::procs_source`] returns; nothing is printed, not even
//! when a cgroup file cannot be parsed (the source carries the error).
//!
//! # Following the limit
//!
//! A container's limit can change while the process runs (an orchestrator
//! scales it). When the default came from the machine, the monitor reads
//! it again about once a second (`FOLLOW_EVERY`, Go's choice) and resizes
//! (`sched/processor/resize.rs`) when the result differs. It does so only in rounds
//! where it is awake for other work: an idle runtime keeps its zero
//! wakeups, and the limit is re-read when work comes back. Turned off by
//! [`crate::Builder::update_procs`]`(false)` or `GORO_UPDATE_PROCS=0` (Go:
//! `GODEBUG=updatemaxprocs=0`), and by the first
//! [`crate::Runtime::set_procs`]: a number set by hand is kept.

use super::cgroup::{cpu_limit, CgroupError, CpuLimit};
use crate::sched::Sched;
use std::path::Path;

use std::time::{Duration, Instant};

/// How often the monitor re-reads the machine's limit while it has work.
pub(crate) const FOLLOW_EVERY: Duration = Duration::from_secs(1);

/// Why the runtime has the number of Ps it started with.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProcsSource {
    /// [`crate::Builder::procs`].
    Builder,
    /// The `GORO_PROCS` environment variable.
    Env,
    /// The machine: see [`MachineProcs`].
    Machine(MachineProcs),
}

/// The machine's parallelism as the runtime read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MachineProcs {
    /// CPUs in this process's affinity mask.
    pub affinity: usize,
    /// The cgroup CPU limit: none, one (with the directory that sets it),
    /// or the file that could not be parsed (then the affinity count
    /// applies).
    pub cgroup: Result<Option<CpuLimit>, CgroupError>,
}

impl MachineProcs {
    /// The machine's parallelism: `min(affinity, limit)`, at least 1, at
    /// most [`crate::runtime::MAX_PROCS`].
    pub fn procs(&self) -> usize {
        let limit = match &self.cgroup {
            Ok(Some(l)) => l.cpus,
            _ => usize::MAX,
        };
        self.affinity.min(limit).clamp(1, crate::runtime::MAX_PROCS)
    }

    /// Reads the affinity mask of this process and the cgroup files under
    /// `root` (`/` for this process; tests pass a fixture tree).
    pub fn read(root: &Path) -> MachineProcs {
        MachineProcs {
            affinity: affinity_count(),
            cgroup: cpu_limit(root),
        }
    }
}

/// CPUs in this process's affinity mask (`sched_getaffinity`), or the
/// available parallelism if the call fails.
pub fn affinity_count() -> usize {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity
    // writes at most `size_of::<cpu_set_t>()` bytes into it.
    let n = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0 {
            libc::CPU_COUNT(&set) as usize
        } else {
            0
        }
    };
    if n > 0 {
        n
    } else {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    }
}

/// The monitor's state for following the limit.
pub(crate) struct Follow {
    next: Instant,
}

impl Follow {
    pub(crate) fn new() -> Follow {
        Follow {
            next: Instant::now() + FOLLOW_EVERY,
        }
    }

    /// Called in every monitor round that had work: re-reads the limit if
    /// a second has passed, and resizes if it changed.
    pub(crate) fn tick(&mut self, sched: &Sched) {
        // Relaxed: a flag read once a round; a stale value delays a
        // re-read (or one last resize) by a round.
        if !sched.follows_procs() {
            return;
        }
        let now = Instant::now();
        if now < self.next {
            return;
        }
        self.next = now + FOLLOW_EVERY;
        let want = MachineProcs::read(Path::new("/")).procs();
        if want != sched.procs() {
            sched.resize_to(want, false);
        }
    }
}
