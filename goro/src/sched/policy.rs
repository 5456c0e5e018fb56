//! Scheduler policy: the seeds' switches.
//!
//! goro is built from five changes to Go's runtime (see the table below and the
//! crate docs). Each one is a field here, so that a single binary can run the
//! "before" and the "after" of every seed side by side:
//!
//! | seed | field(s) | on (`default`) | off (`legacy`) |
//! |---|---|---|---|
//! | 000 don't burn CPU | [`Policy::spin`], [`Policy::snoozers`] | bounded spin, then `sched_yield`, then park; one M at a time looks again | spin without yielding; every M |
//! | 001 per-P timers | [`Policy::timers`] | a timer heap per P | one global heap under one lock |
//! | 002 idle mask, bounded stealing | [`Policy::idle_mask`], [`Policy::steal_passes`] | mask on, 2 passes | mask off, 4 passes |
//! | 003 pool victim cache | [`Policy::pool_victim`] | a cycle moves primary to victim, drops the old victim | a cycle drops everything |
//! | 004 no thrashing | [`Policy::runnext_steal_pause`], [`Policy::runnext_wake`] | 3 µs pause; a spinner that only finds a pipeline's `runnext` watches it every 50 µs | no pause (a thief takes a lone `runnext` task at once); every spinner loops as Go's does |
//!
//! Two more fields are not seeds: [`Policy::runnext`] (Go had `runnext`
//! before seed 004, so `legacy` keeps it) and [`Policy::preempt`]
//! (cooperative preemption; Go has always preempted). In every policy a
//! put into a busy P's `runnext` wakes an idle P, as Go's `ready` does,
//! unless `runnext_wake=off`.
//!
//! `GORO_POLICY=name=value,...` overrides fields at start-up (see
//! [`Policy::from_env`]); a malformed value is an error that names the variable,
//! the field and the accepted form, never a silent default.

use std::fmt;
use std::time::Duration;

/// How every runtime wait behaves once the thing waited for is late (seed 000).
///
/// Applies to spinning worker threads looking for work, to the pause before
/// stealing a busy processor's `runnext`, and to [`crate::sync::Mutex`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpinPolicy {
    /// Spin `spin` times (each a short burst of `pause` instructions, doubling),
    /// then call `sched_yield` `yield_` times, then park. The default.
    Bounded {
        /// Rounds of active spinning.
        spin: u32,
        /// Rounds of `sched_yield` after spinning, before parking.
        yield_: u32,
    },
    /// Spin actively, never yielding the CPU (seed 000's "before").
    /// A wait that can park still does so after about 2,000 rounds
    /// (~100 µs), so that an idle runtime goes to sleep eventually.
    Unbounded,
}

impl SpinPolicy {
    /// The default bounded policy: a few microseconds of spinning, two yields.
    pub const DEFAULT: SpinPolicy = SpinPolicy::Bounded { spin: 6, yield_: 2 };
}

/// Where timers live (seed 001).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TimerPlacement {
    /// Each P owns a timer heap; a timer lives on the P that armed it and is
    /// fired by that P's scheduler loop. The default.
    #[default]
    PerP,
    /// One heap under one lock for the whole runtime, checked by every P
    /// (the seed's "before").
    Global,
}

/// Seed 004: who wakes an idle P for a task put into a busy P's `runnext`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunnextWake {
    /// Go's `ready` and `newproc`: every put into `runnext` calls `wakep`,
    /// so a spinning thread is on its way at once; the thief's pause
    /// ([`Policy::runnext_steal_pause`]) keeps it from stealing a task that
    /// the busy P is about to run itself.
    Eager,
    /// As `Eager`, but a spinner that finds nothing except tasks in busy
    /// Ps' `runnext` (a pipeline whose owner runs them itself) looks again
    /// every 50 µs, parked, instead of looping as Go's does. The default;
    /// see `sched/processor/idle.rs`, "Hand-off".
    Watch,
    /// Nobody until the monitor finds the P stuck (a poll longer than a
    /// 10 ms slice): no cooperative hand-off, for A/B runs against it.
    Off,
}

/// Seed 000: how many Ms may look again for work at once.
///
/// An M that finds nothing to run or steal looks again for a few
/// microseconds ([`Policy::spin`]: spinning, then `sched_yield`) before it
/// gives its P back and parks, so that work appearing a moment later costs
/// no park and no wake. One M looking again is enough to catch that work;
/// every further one only burns a core and reads the busy Ps' queues and
/// the channels' lines while they are being written. On 16 cores, fifteen
/// Ms looking again took fan-in from 260 to 852 ns a value and left the
/// contended rows at four to twelve times Go's CPU (BENCH_RESULTS.md, "16
/// cores at last"); Go's `findRunnable` has no such second look at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Snoozers {
    /// The first M to run dry looks again; the others give their P back at
    /// once. The default (`sched/machine/snooze.rs`).
    One,
    /// Every spinning M looks again (goro before 2026-11-29, and `legacy`).
    All,
}

/// Cooperative preemption: how many goro operations a task may complete
/// in one poll before the next one yields (see [`crate::coop`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Preempt {
    /// Never preempt: a task whose operations never block keeps its P until
    /// its poll returns (for A/B runs against cooperative preemption).
    Off,
    /// Yield at the first safe point after this many operations in one
    /// poll (1..=1,000,000). The default is 128, tokio's budget.
    Budget(u32),
}

impl Preempt {
    /// The default budget: 128 operations per poll.
    pub const DEFAULT: Preempt = Preempt::Budget(128);
}

impl Default for Preempt {
    fn default() -> Self {
        Preempt::DEFAULT
    }
}

impl Default for SpinPolicy {
    fn default() -> Self {
        SpinPolicy::DEFAULT
    }
}

/// The scheduler's policy switches; see the module docs for the table.
///
/// ```
/// use goro::{Policy, Runtime};
/// let rt = Runtime::builder().procs(2).policy(Policy::legacy()).build().unwrap();
/// assert_eq!(rt.block_on(async { 1 + 1 }), 2);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Policy {
    /// Seed 004: a task woken or spawned by a running task goes to the
    /// processor's `runnext` slot (and inherits the time slice) instead of the
    /// tail of the run queue.
    pub runnext: bool,
    /// Seed 004: how long a thief waits before taking a busy processor's
    /// `runnext` task, giving the owner the chance to run it itself.
    pub runnext_steal_pause: Duration,
    /// Seed 004: how a task put into a busy P's `runnext` reaches an idle
    /// P if the poll that readied it keeps running.
    pub runnext_wake: RunnextWake,
    /// Seed 002: thieves skip processors whose bit is set in the idle mask.
    pub idle_mask: bool,
    /// Seed 002: passes over all processors a spinning thread makes while
    /// stealing; `runnext` and timers are taken only on the last one. 1..=16.
    pub steal_passes: u32,
    /// Seed 000: how runtime waits spin, yield and park.
    pub spin: SpinPolicy,
    /// Seed 000: how many Ms may look again for work at once.
    pub snoozers: Snoozers,
    /// Seed 001: per-P timer heaps or one global heap.
    pub timers: TimerPlacement,
    /// Seed 003: a pool cycle moves each [`crate::sync::Pool`]'s cached
    /// values to its victim cache and drops the previous victim's, so a value
    /// survives one cycle unused; off, a cycle drops every cached value.
    /// Pools are global: a cycle uses the policy of the runtime whose
    /// monitor starts it, or for [`crate::sync::pool_cycle`] the caller's.
    pub pool_victim: bool,
    /// Cooperative preemption (not a seed: Go has always preempted).
    /// `legacy()` keeps it on, so that an A/B run compares the seeds alone.
    pub preempt: Preempt,
}

impl Default for Policy {
    /// Every improvement on.
    fn default() -> Self {
        Policy {
            runnext: true,
            runnext_steal_pause: Duration::from_micros(3),
            runnext_wake: RunnextWake::Watch,
            idle_mask: true,
            steal_passes: 2,
            spin: SpinPolicy::DEFAULT,
            snoozers: Snoozers::One,
            timers: TimerPlacement::PerP,
            pool_victim: true,
            preempt: Preempt::DEFAULT,
        }
    }
}

/// An error in a `GORO_POLICY` string or a policy field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyError {
    msg: String,
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.msg)
    }
}

impl std::error::Error for PolicyError {}

const ACCEPTED: &str = "accepted: comma-separated name=value with names \
    runnext=true|false, runnext_steal_pause=<n>ns|us|ms, runnext_wake=watch|eager|off, idle_mask=true|false, \
    steal_passes=1..16, spin=bounded|unbounded|bounded:<spin>:<yield>, snoozers=one|all, timers=per_p|global, \
    pool_victim=true|false, preempt=off|<ops per poll 1..1000000>, or the whole string 'default' or 'legacy'";

impl Policy {
    /// Every improvement off: the "before" of each seed.
    pub fn legacy() -> Policy {
        Policy {
            runnext: true,
            runnext_steal_pause: Duration::ZERO,
            runnext_wake: RunnextWake::Eager,
            idle_mask: false,
            steal_passes: 4,
            spin: SpinPolicy::Unbounded,
            snoozers: Snoozers::All,
            timers: TimerPlacement::Global,
            pool_victim: false,
            preempt: Preempt::DEFAULT,
        }
    }

    /// Checks the ranges of the fields.
    pub fn validate(&self) -> Result<(), PolicyError> {
        if !(1..=16).contains(&self.steal_passes) {
            return Err(PolicyError {
                msg: format!(
                    "policy field steal_passes={} is out of range: accepted 1..=16",
                    self.steal_passes
                ),
            });
        }
        if self.runnext_steal_pause > Duration::from_millis(10) {
            return Err(PolicyError {
                msg: format!(
                    "policy field runnext_steal_pause={:?} is out of range: accepted 0..=10ms",
                    self.runnext_steal_pause
                ),
            });
        }
        if let Preempt::Budget(n) = self.preempt {
            if !(1..=1_000_000).contains(&n) {
                return Err(PolicyError {
                    msg: format!(
                        "policy field preempt={n} is out of range: accepted off or 1..=1000000"
                    ),
                });
            }
        }
        Ok(())
    }

    /// Applies `name=value,...` overrides on top of `self`.
    ///
    /// ```
    /// let p = goro::Policy::default().with_overrides("runnext=false,steal_passes=4").unwrap();
    /// assert!(!p.runnext);
    /// assert_eq!(p.steal_passes, 4);
    /// assert!(goro::Policy::default().with_overrides("steal_passes=many").is_err());
    /// ```
    pub fn with_overrides(mut self, spec: &str) -> Result<Policy, PolicyError> {
        let err = |item: &str, why: String| PolicyError {
            msg: format!("GORO_POLICY item '{item}': {why}; {ACCEPTED}"),
        };
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            match item {
                "default" => {
                    self = Policy::default();
                    continue;
                }
                "legacy" => {
                    self = Policy::legacy();
                    continue;
                }
                _ => {}
            }
            let (name, value) = item
                .split_once('=')
                .ok_or_else(|| err(item, "expected name=value".into()))?;
            let (name, value) = (name.trim(), value.trim());
            let parse_bool = |v: &str| match v {
                "true" | "on" | "1" => Ok(true),
                "false" | "off" | "0" => Ok(false),
                _ => Err(err(item, format!("'{v}' is not a boolean"))),
            };
            match name {
                "runnext" => self.runnext = parse_bool(value)?,
                "idle_mask" => self.idle_mask = parse_bool(value)?,
                "pool_victim" => self.pool_victim = parse_bool(value)?,
                "steal_passes" => {
                    self.steal_passes = value
                        .parse()
                        .map_err(|_| err(item, format!("'{value}' is not a number")))?
                }
                "runnext_steal_pause" => {
                    self.runnext_steal_pause = parse_duration(value)
                        .ok_or_else(|| err(item, format!("'{value}' is not a duration")))?
                }
                "runnext_wake" => {
                    self.runnext_wake = match value {
                        "eager" => RunnextWake::Eager,
                        "watch" => RunnextWake::Watch,
                        "off" => RunnextWake::Off,
                        _ => return Err(err(item, format!("'{value}' is not a runnext wake"))),
                    }
                }
                "snoozers" => {
                    self.snoozers = match value {
                        "one" | "1" => Snoozers::One,
                        "all" => Snoozers::All,
                        _ => return Err(err(item, format!("'{value}' is not 'one' or 'all'"))),
                    }
                }
                "timers" => {
                    self.timers = match value {
                        "per_p" | "perp" | "per-p" => TimerPlacement::PerP,
                        "global" => TimerPlacement::Global,
                        _ => return Err(err(item, format!("'{value}' is not a timer placement"))),
                    }
                }
                "preempt" => {
                    self.preempt = match value {
                        "off" | "false" => Preempt::Off,
                        n => Preempt::Budget(n.parse().map_err(|_| {
                            err(
                                item,
                                format!("'{value}' is not 'off' or a number of operations"),
                            )
                        })?),
                    }
                }
                "spin" => {
                    self.spin = parse_spin(value)
                        .ok_or_else(|| err(item, format!("'{value}' is not a spin policy")))?
                }
                _ => return Err(err(item, format!("unknown field '{name}'"))),
            }
        }
        self.validate().map_err(|e| PolicyError {
            msg: format!("GORO_POLICY: {e}"),
        })?;
        Ok(self)
    }

    /// `Policy::default()` with the overrides of the `GORO_POLICY` environment
    /// variable, if set.
    pub fn from_env() -> Result<Policy, PolicyError> {
        match std::env::var("GORO_POLICY") {
            Ok(spec) => Policy::default().with_overrides(&spec),
            Err(std::env::VarError::NotPresent) => Ok(Policy::default()),
            Err(std::env::VarError::NotUnicode(_)) => Err(PolicyError {
                msg: format!("GORO_POLICY is not valid UTF-8; {ACCEPTED}"),
            }),
        }
    }
}

/// Parses `<n>ns`, `<n>us`, `<n>µs`, `<n>ms` or `<n>s`.
pub(crate) fn parse_duration(v: &str) -> Option<Duration> {
    let split = v.find(|c: char| !c.is_ascii_digit())?;
    let (num, unit) = v.split_at(split);
    let n: u64 = num.parse().ok()?;
    match unit {
        "ns" => Some(Duration::from_nanos(n)),
        "us" | "µs" => Some(Duration::from_micros(n)),
        "ms" => Some(Duration::from_millis(n)),
        "s" => Some(Duration::from_secs(n)),
        _ => None,
    }
}

fn parse_spin(v: &str) -> Option<SpinPolicy> {
    match v {
        "bounded" => Some(SpinPolicy::DEFAULT),
        "unbounded" => Some(SpinPolicy::Unbounded),
        _ => {
            let rest = v.strip_prefix("bounded:")?;
            let (s, y) = rest.split_once(':')?;
            Some(SpinPolicy::Bounded {
                spin: s.parse().ok()?,
                yield_: y.parse().ok()?,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_apply_in_order() {
        let p = Policy::default()
            .with_overrides("legacy, runnext=true, spin=bounded:3:1, runnext_steal_pause=5us")
            .unwrap();
        assert!(p.runnext);
        assert!(!p.idle_mask);
        assert_eq!(p.spin, SpinPolicy::Bounded { spin: 3, yield_: 1 });
        assert_eq!(p.runnext_steal_pause, Duration::from_micros(5));
    }

    #[test]
    fn preempt_is_on_in_default_and_legacy_and_parsed() {
        assert_eq!(Policy::default().preempt, Preempt::Budget(128));
        assert_eq!(Policy::legacy().preempt, Preempt::Budget(128));
        let p = Policy::default().with_overrides("preempt=off").unwrap();
        assert_eq!(p.preempt, Preempt::Off);
        let p = Policy::default().with_overrides("preempt=16").unwrap();
        assert_eq!(p.preempt, Preempt::Budget(16));
    }

    #[test]
    fn pool_victim_is_on_by_default_off_in_legacy_and_parsed() {
        assert!(Policy::default().pool_victim);
        assert!(!Policy::legacy().pool_victim);
        let p = Policy::default()
            .with_overrides("pool_victim=false")
            .unwrap();
        assert!(!p.pool_victim);
        let p = Policy::legacy().with_overrides("pool_victim=true").unwrap();
        assert!(p.pool_victim);
        let e = Policy::default()
            .with_overrides("pool_victim=sometimes")
            .unwrap_err()
            .to_string();
        assert!(e.contains("pool_victim") && e.contains("accepted"), "{e}");
    }

    #[test]
    fn one_m_looks_again_by_default_every_m_in_legacy() {
        assert_eq!(Policy::default().snoozers, Snoozers::One);
        assert_eq!(Policy::legacy().snoozers, Snoozers::All);
        let p = Policy::default().with_overrides("snoozers=all").unwrap();
        assert_eq!(p.snoozers, Snoozers::All);
        let p = Policy::legacy().with_overrides("snoozers=one").unwrap();
        assert_eq!(p.snoozers, Snoozers::One);
    }

    #[test]
    fn malformed_policy_names_the_item_and_the_accepted_form() {
        for bad in [
            "runnext",
            "runnext=maybe",
            "steal_passes=0",
            "nope=1",
            "spin=fast",
            "snoozers=two",
            "runnext_steal_pause=3",
            "preempt=0",
            "preempt=sometimes",
        ] {
            let e = Policy::default()
                .with_overrides(bad)
                .unwrap_err()
                .to_string();
            assert!(e.contains("GORO_POLICY"), "{bad}: {e}");
            assert!(e.contains("accepted"), "{bad}: {e}");
        }
    }
}
