//! [`Builder`]: a runtime's settings, from the caller and from the
//! environment (`GORO_PROCS`, `GORO_POLICY`, `GORO_DEADLOCK`, `GORO_PANIC`,
//! `GORO_STUCK`, `GORO_FLIGHT`, ...), checked and turned into a started [`Runtime`]. Every malformed
//! value is an `InvalidInput` error that names it and the accepted form.

use super::deadlock::{self, Deadlock, Detector};
use super::policy::Policy;
use super::{monitor, procs, signal, Runtime};
use crate::sched::{Sched, MAX_PROCS};
use std::io;
use std::sync::Arc;
use std::time::Duration;

/// The smallest stuck-poll threshold: below it the monitor would wake
/// more often than its own floor allows (`sched/machine/stuck.rs`).
const MIN_STUCK: Duration = Duration::from_micros(100);

/// Builds a [`Runtime`] with chosen settings.
///
/// ```
/// let rt = goro::Runtime::builder()
///     .procs(2)
///     .policy(goro::Policy::default())
///     .thread_name("worker")
///     .build()
///     .unwrap();
/// assert_eq!(rt.procs(), 2);
/// ```
#[derive(Debug, Clone, Default)]
pub struct Builder {
    procs: Option<usize>,
    policy: Option<Policy>,
    thread_name: Option<String>,
    pool_cycle: Option<Duration>,
    measure_find_cpu: bool,
    deadlock: Option<Deadlock>,
    deadlock_grace: Option<Duration>,
    unjoined_panic: Option<crate::UnjoinedPanic>,
    update_procs: Option<bool>,
    stuck_poll: Option<Option<Duration>>,
    stuck_sink: Option<StuckSink>,
    flight_dir: Option<std::path::PathBuf>,
    flight_latency: Option<Option<Duration>>,
    flight_interval: Option<Duration>,
}

/// Where stuck-poll reports go instead of stderr (tests).
#[derive(Clone)]
struct StuckSink(Arc<dyn Fn(&str) + Send + Sync>);

impl std::fmt::Debug for StuckSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StuckSink(..)")
    }
}

/// The threshold `#[goro::test]` sets for [`Builder::stuck_poll`].
pub const DEFAULT_TEST_STUCK_POLL: Duration = Duration::from_millis(20);

/// The accepted forms of [`Builder::stuck_poll`] and `GORO_STUCK`.
const STUCK_ACCEPTED: &str = "off, 0 (off) or a duration of 100us or more, as <n>ns, <n>us, <n>µs, <n>ms or <n>s (for example 20ms)";

/// Default interval between pool cycles (Go cycles pools at every GC).
pub const DEFAULT_POOL_CYCLE: Duration = Duration::from_secs(1);

impl Builder {
    /// The number of Ps: how many tasks run in parallel (Go's `GOMAXPROCS`).
    /// Default: `GORO_PROCS`, else the machine's parallelism: the smaller
    /// of the CPU affinity count and the cgroup CPU limit, rounded up
    /// (see [`procs::MachineProcs`]). Accepted: `1..=4096`; anything else
    /// makes `build` fail. [`Runtime::set_procs`] changes it later.
    pub fn procs(mut self, n: usize) -> Builder {
        self.procs = Some(n);
        self
    }

    /// The scheduler policy (default: [`Policy::default`]). `GORO_POLICY`,
    /// when set, overrides fields on top of it.
    pub fn policy(mut self, p: Policy) -> Builder {
        self.policy = Some(p);
        self
    }

    /// Prefix of worker thread names (default `goro`). A name with a NUL
    /// byte makes `build` fail (threads cannot be named so).
    pub fn thread_name(mut self, name: impl Into<String>) -> Builder {
        self.thread_name = Some(name.into());
        self
    }

    /// How often this runtime's monitor cycles every [`crate::sync::Pool`]
    /// (seed 003; Go does it at every garbage collection). Default 1 s;
    /// zero makes `build` fail. The monitor cycles only while some pool may
    /// hold values, and at most twice while the runtime is idle; see
    /// [`crate::sync::pool_cycle`] for what a cycle does. An interval too
    /// large for `Instant` means "never" (as for timers).
    ///
    /// ```
    /// use std::time::Duration;
    /// let rt = goro::Runtime::builder().pool_cycle(Duration::from_millis(100)).build().unwrap();
    /// # drop(rt);
    /// assert!(goro::Runtime::builder().pool_cycle(Duration::ZERO).build().is_err());
    /// ```
    pub fn pool_cycle(mut self, interval: Duration) -> Builder {
        self.pool_cycle = Some(interval);
        self
    }

    /// What to do about a likely deadlock: every task and the `block_on`
    /// future parked on one another, with nothing else that could wake
    /// them (see [`Deadlock`] and the module docs of
    /// [`runtime::deadlock`](crate::runtime::deadlock)). Default: `Off`, or
    /// `GORO_DEADLOCK` (`off`, `report`, `fail`, `exit`), which overrides
    /// this setting when set. `#[goro::test]` sets `Fail`, `#[goro::main]`
    /// `Exit`.
    ///
    /// ```
    /// let rt = goro::Runtime::builder()
    ///     .deadlock(goro::Deadlock::Report)
    ///     .deadlock_grace(std::time::Duration::from_millis(500))
    ///     .build()
    ///     .unwrap();
    /// # drop(rt);
    /// ```
    pub fn deadlock(mut self, mode: Deadlock) -> Builder {
        self.deadlock = Some(mode);
        self
    }

    /// What happens when a task panics and nobody joins it (its
    /// `JoinHandle` was dropped): [`UnjoinedPanic::Continue`] (the default:
    /// the panic hook has printed the message, the program goes on, as with
    /// Rust's threads and tokio) or [`UnjoinedPanic::Exit`] (exit status 2,
    /// as a goroutine's panic ends a Go program). Process-wide: the last
    /// runtime built sets it. `GORO_PANIC` (`continue`, `exit`) overrides
    /// it when set. `#[goro::main(panic = exit)]` sets `Exit`.
    ///
    /// [`UnjoinedPanic::Continue`]: crate::UnjoinedPanic::Continue
    /// [`UnjoinedPanic::Exit`]: crate::UnjoinedPanic::Exit
    ///
    /// ```
    /// let rt = goro::Runtime::builder()
    ///     .unjoined_panic(goro::UnjoinedPanic::Continue)
    ///     .build()
    ///     .unwrap();
    /// # drop(rt);
    /// ```
    pub fn unjoined_panic(mut self, policy: crate::UnjoinedPanic) -> Builder {
        self.unjoined_panic = Some(policy);
        self
    }

    /// How long everything must stay parked before the deadlock check
    /// reports (default 1 s). Accepted: 10 ms or more.
    pub fn deadlock_grace(mut self, grace: Duration) -> Builder {
        self.deadlock_grace = Some(grace);
        self
    }

    /// Whether the monitor follows the machine's CPU limit, resizing when
    /// it changes (default: on, unless `GORO_UPDATE_PROCS=0`). It applies
    /// only when the number of Ps came from the machine (not from
    /// [`Builder::procs`] or `GORO_PROCS`), and stops at the first
    /// [`Runtime::set_procs`]. The limit is re-read about once a second,
    /// and only while the runtime has work (see [`procs`]).
    ///
    /// ```
    /// let rt = goro::Runtime::builder().update_procs(false).build().unwrap();
    /// assert!(!rt.follows_procs());
    /// ```
    pub fn update_procs(mut self, on: bool) -> Builder {
        self.update_procs = Some(on);
        self
    }

    /// Reports a poll that runs longer than `threshold`: once per such
    /// poll, the monitor prints to stderr a line naming the task (id,
    /// name, spawn site), its P and how long it has run, then the native
    /// stack of the thread running it, taken with a signal (`SIGURG`), so
    /// that the frame that blocks (a `std::thread::sleep`, a
    /// `std::sync::Mutex`, a long loop) is named:
    ///
    /// ```text
    /// goro: stuck poll: task 17 "worker" spawned at src/main.rs:12:5, on P 1, running for 26ms
    ///    0: clock_nanosleep at ...
    ///    1: std::thread::sleep at .../std/src/thread/mod.rs:...
    ///    2: my_crate::worker::{{closure}} at src/main.rs:14
    /// ```
    ///
    /// Each report also counts in [`Stats::stuck_polls`](crate::Stats)
    /// and shows in the execution trace. Default: `None` (off) for a
    /// runtime built by hand; `#[goro::test]` sets 20 ms
    /// ([`DEFAULT_TEST_STUCK_POLL`]). `GORO_STUCK` (`20ms`, `1s`, `500us`,
    /// `off` or `0`) overrides this setting when set. Accepted: `None`,
    /// or 100 µs or more; anything else makes `build` fail. The report
    /// comes between 1 and 1.5 times the threshold into the poll (the
    /// monitor looks four times per threshold while a P is busy), later
    /// on a machine with more runnable threads than cores; the
    /// design and its caveats are in `sched/machine/stuck.rs` and
    /// `sched/machine/stack.rs`.
    ///
    /// ```
    /// use std::time::Duration;
    /// let rt = goro::Runtime::builder()
    ///     .stuck_poll(Some(Duration::from_millis(50)))
    ///     .build()
    ///     .unwrap();
    /// # drop(rt);
    /// assert!(goro::Runtime::builder().stuck_poll(Some(Duration::ZERO)).build().is_err());
    /// ```
    pub fn stuck_poll(mut self, threshold: Option<Duration>) -> Builder {
        self.stuck_poll = Some(threshold);
        self
    }

    /// Runs a flight recorder for the runtime's whole life and lets it
    /// write snapshots into `dir` by itself (created if missing): when a
    /// poll is stuck, when the deadlock report fires, when a task panics,
    /// when scheduling latency is high ([`Builder::flight_latency`]), and
    /// by hand ([`Runtime::flight_snapshot`]); at most one per
    /// [`Builder::flight_interval`]. Each snapshot is a raw trace file
    /// named after its trigger (`goro-flight-PID-N-SEQ-stuck.raw`), one
    /// line on stderr names it, and `goro-trace` converts it to Perfetto's
    /// format (see [`crate::trace`]). It keeps the last
    /// [`FLIGHT_WINDOW`](crate::trace::FLIGHT_WINDOW) within
    /// [`FLIGHT_BYTES`](crate::trace::FLIGHT_BYTES), and arms the
    /// stuck-poll report at 20 ms unless [`Builder::stuck_poll`] or
    /// `GORO_STUCK` says otherwise. `GORO_FLIGHT=dir` does the same and
    /// overrides this setting. While it runs, `trace_start` and
    /// `flight_recorder` fail (one session per runtime). Default: off.
    ///
    /// ```
    /// let dir = std::env::temp_dir().join(format!("goro-doc-flight-dir-{}", std::process::id()));
    /// let rt = goro::Runtime::builder().flight_dir(&dir).build().unwrap();
    /// # drop(rt);
    /// # std::fs::remove_dir_all(dir).unwrap();
    /// ```
    pub fn flight_dir(mut self, dir: impl Into<std::path::PathBuf>) -> Builder {
        self.flight_dir = Some(dir.into());
        self
    }

    /// The scheduling latency at which the flight recorder
    /// ([`Builder::flight_dir`]) writes a snapshot: when the 99th
    /// percentile of the sampled wake-to-run times over one second
    /// reaches it. Default 100 ms
    /// ([`DEFAULT_FLIGHT_LATENCY`](crate::sched::trace::DEFAULT_FLIGHT_LATENCY));
    /// `None` turns this trigger off. `GORO_FLIGHT_LATENCY` (`50ms`,
    /// `off`) overrides it. Accepted: `None`, or 100 µs or more.
    pub fn flight_latency(mut self, threshold: Option<Duration>) -> Builder {
        self.flight_latency = Some(threshold);
        self
    }

    /// The least time between two snapshots the flight recorder
    /// ([`Builder::flight_dir`]) writes by itself (default 10 s,
    /// [`DEFAULT_FLIGHT_INTERVAL`](crate::sched::trace::DEFAULT_FLIGHT_INTERVAL));
    /// triggers in between are counted and named in the next snapshot's
    /// line. Accepted: more than zero.
    pub fn flight_interval(mut self, interval: Duration) -> Builder {
        self.flight_interval = Some(interval);
        self
    }

    /// Sends stuck-poll reports ([`Builder::stuck_poll`]) to `sink`
    /// instead of stderr, each as one string (the first line and the
    /// frames, newline-terminated). For tests; not a stable interface.
    #[doc(hidden)]
    pub fn stuck_poll_sink(mut self, sink: impl Fn(&str) + Send + Sync + 'static) -> Builder {
        self.stuck_sink = Some(StuckSink(Arc::new(sink)));
        self
    }

    /// Counts the thread CPU time of find-runnable's slow path in
    /// `Stats::find_cpu_ns` (two `CLOCK_THREAD_CPUTIME_ID` reads per
    /// search, a few hundred ns; off by default, when no clock is read).
    /// For goro-bench's seed 002 measures; not a stable interface.
    #[doc(hidden)]
    pub fn measure_find_cpu(mut self, on: bool) -> Builder {
        self.measure_find_cpu = on;
        self
    }

    /// Starts the runtime. Fails with `InvalidInput` on a bad setting or a
    /// malformed environment variable, naming it and the accepted form.
    pub fn build(self) -> io::Result<Runtime> {
        let invalid = |msg: String| io::Error::new(io::ErrorKind::InvalidInput, msg);
        let flight = self.flight_config().map_err(invalid)?;
        let (procs, source) = match self.procs {
            Some(n) => (n, procs::ProcsSource::Builder),
            None => procs_from_env().map_err(invalid)?,
        };
        let update_procs = match self.update_procs {
            Some(on) => on,
            None => update_procs_from_env().map_err(invalid)?,
        };
        if !(1..=MAX_PROCS).contains(&procs) {
            return Err(invalid(format!(
                "goro: procs({procs}) is out of range: accepted 1..={MAX_PROCS}"
            )));
        }
        let policy = self.policy.unwrap_or_default();
        policy
            .validate()
            .map_err(|e| invalid(format!("goro: {e}")))?;
        let policy = match std::env::var("GORO_POLICY") {
            Ok(spec) => policy
                .with_overrides(&spec)
                .map_err(|e| invalid(e.to_string()))?,
            Err(std::env::VarError::NotPresent) => policy,
            Err(_) => return Err(invalid("GORO_POLICY is not valid UTF-8".into())),
        };
        let schedtrace = schedtrace_from_env().map_err(invalid)?;
        let stuck_poll = match threshold_from_env("GORO_STUCK").map_err(invalid)? {
            Some(v) => v,
            None => match self.stuck_poll {
                Some(t) => check_threshold("stuck_poll", t).map_err(invalid)?,
                // The flight recorder's stuck-poll trigger needs the watch.
                None => flight.as_ref().map(|_| DEFAULT_TEST_STUCK_POLL),
            },
        };
        let pool_cycle = self.pool_cycle.unwrap_or(DEFAULT_POOL_CYCLE);
        if pool_cycle.is_zero() {
            return Err(invalid(
                "goro: pool_cycle(0ns) is out of range: accepted a duration greater than zero"
                    .into(),
            ));
        }
        let thread_name = self.thread_name.unwrap_or_else(|| "goro".into());
        // std panics when it names a thread with an interior NUL: say so
        // here, before any thread is started.
        if thread_name.contains('\0') {
            return Err(invalid(format!(
                "goro: thread_name({thread_name:?}) contains a NUL byte: accepted a string without NUL bytes"
            )));
        }
        let sched = Sched::new(
            procs,
            policy,
            thread_name,
            schedtrace,
            pool_cycle,
            self.measure_find_cpu,
        );
        sched.init_idle();
        let deadlock =
            match env_var("GORO_DEADLOCK", "off, report, fail or exit").map_err(invalid)? {
                Some(v) => Deadlock::parse(&v).map_err(invalid)?,
                None => self.deadlock.unwrap_or_default(),
            };
        let unjoined_panic = match env_var("GORO_PANIC", "continue or exit").map_err(invalid)? {
            Some(v) => Some(crate::UnjoinedPanic::parse(&v).map_err(invalid)?),
            None => self.unjoined_panic,
        };
        if let Some(p) = unjoined_panic {
            crate::sched::task::unjoined::set(p);
        }
        let grace = self
            .deadlock_grace
            .unwrap_or(deadlock::DEFAULT_DEADLOCK_GRACE);
        if grace < Duration::from_millis(10) {
            return Err(invalid(format!(
                "goro: deadlock_grace({grace:?}) is out of range: accepted 10ms or more"
            )));
        }
        let detector = Arc::new(Detector::new());
        detector.configure(deadlock, grace);
        if let Some(v) =
            env_var("GORO_DUMP_SIGNAL", "SIGQUIT, SIGUSR1 or SIGUSR2").map_err(invalid)?
        {
            signal::register(&sched, signal::parse(&v).map_err(invalid)?)?;
        }
        let follow = update_procs && matches!(source, procs::ProcsSource::Machine(_));
        sched.set_follow_procs(follow);
        crate::sched::trace::from_env(&sched)?;
        if let Some(cfg) = flight {
            crate::sched::trace::auto::start(&sched, cfg)?;
        }
        if let Err(e) = sched.start_monitor(
            Box::new(monitor::RuntimeHooks::new(detector.clone())),
            stuck_poll,
            self.stuck_sink.map(|s| s.0),
        ) {
            // No Runtime will drop to stop the recorder's thread, which
            // holds the scheduler.
            crate::sched::trace::auto::stop(&sched);
            return Err(e);
        }
        Ok(Runtime {
            sched,
            deadlock: detector,
            source,
        })
    }

    /// The flight recorder's settings, from `GORO_FLIGHT` and
    /// `GORO_FLIGHT_LATENCY` over the builder's; `None`: off.
    fn flight_config(&self) -> Result<Option<crate::sched::trace::auto::Config>, String> {
        let from_env = crate::sched::trace::auto::dir_from_env();
        let by = if from_env.is_some() {
            "GORO_FLIGHT"
        } else {
            "Builder::flight_dir"
        };
        let Some(dir) = from_env.or(self.flight_dir.clone()) else {
            return Ok(None);
        };
        if let Some(v) = crate::sched::trace::env_session_var() {
            return Err(format!(
                "goro: {v} and the flight recorder ({by}) are both set: a runtime records one \
                 trace session at a time; accepted: one of them"
            ));
        }
        let latency = match threshold_from_env("GORO_FLIGHT_LATENCY")? {
            Some(v) => v,
            None => check_threshold(
                "flight_latency",
                self.flight_latency
                    .unwrap_or(Some(crate::sched::trace::DEFAULT_FLIGHT_LATENCY)),
            )?,
        };
        let interval = self
            .flight_interval
            .unwrap_or(crate::sched::trace::DEFAULT_FLIGHT_INTERVAL);
        if interval.is_zero() {
            return Err(
                "goro: flight_interval(0ns) is out of range: accepted a duration greater than zero"
                    .into(),
            );
        }
        Ok(Some(crate::sched::trace::auto::Config {
            dir,
            latency,
            interval,
        }))
    }
}

/// The value of the environment variable `name`, if set; a value that is
/// not UTF-8 is an error naming the variable and what it `accepted`.
fn env_var(name: &str, accepted: &str) -> Result<Option<String>, String> {
    match std::env::var(name) {
        Ok(v) => Ok(Some(v)),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(_) => Err(format!("{name} is not valid UTF-8: accepted {accepted}")),
    }
}

fn procs_from_env() -> Result<(usize, procs::ProcsSource), String> {
    let accepted = format!("an integer in 1..={MAX_PROCS}");
    match env_var("GORO_PROCS", &accepted)? {
        Some(v) => match v.trim().parse::<usize>() {
            Ok(n) if (1..=MAX_PROCS).contains(&n) => Ok((n, procs::ProcsSource::Env)),
            _ => Err(format!("GORO_PROCS='{v}' is invalid: accepted {accepted}")),
        },
        None => {
            let m = procs::MachineProcs::read(std::path::Path::new("/"));
            Ok((m.procs(), procs::ProcsSource::Machine(m)))
        }
    }
}

fn update_procs_from_env() -> Result<bool, String> {
    match env_var("GORO_UPDATE_PROCS", "0 or 1")? {
        Some(v) => match v.trim() {
            "0" => Ok(false),
            "1" => Ok(true),
            _ => Err(format!(
                "GORO_UPDATE_PROCS='{v}' is invalid: accepted 0 (do not follow the CPU limit) or 1"
            )),
        },
        None => Ok(true),
    }
}

/// A threshold variable (`GORO_STUCK`, `GORO_FLIGHT_LATENCY`):
/// `Some(threshold)` when set (`Some(None)`: off).
fn threshold_from_env(name: &str) -> Result<Option<Option<Duration>>, String> {
    let Some(v) = env_var(name, STUCK_ACCEPTED)? else {
        return Ok(None);
    };
    match v.trim() {
        "off" | "0" => Ok(Some(None)),
        t => match super::policy::parse_duration(t) {
            Some(d) if d >= MIN_STUCK => Ok(Some(Some(d))),
            _ => Err(format!(
                "{name}='{v}' is invalid: accepted {STUCK_ACCEPTED}"
            )),
        },
    }
}

/// A threshold setting of the builder (`stuck_poll`, `flight_latency`):
/// `None` (off) or at least [`MIN_STUCK`].
fn check_threshold(setting: &str, t: Option<Duration>) -> Result<Option<Duration>, String> {
    match t {
        Some(d) if d < MIN_STUCK => Err(format!(
            "goro: {setting}(Some({d:?})) is out of range: accepted None (off) or Some(d) with d \
             of 100us or more"
        )),
        t => Ok(t),
    }
}

fn schedtrace_from_env() -> Result<Option<Duration>, String> {
    match env_var("GORO_SCHEDTRACE", "a number of milliseconds")? {
        Some(v) => match v.trim().parse::<u64>() {
            Ok(0) => Ok(None),
            Ok(ms) => Ok(Some(Duration::from_millis(ms))),
            Err(_) => Err(format!(
                "GORO_SCHEDTRACE='{v}' is invalid: accepted a number of milliseconds (0 = off)"
            )),
        },
        None => Ok(None),
    }
}
