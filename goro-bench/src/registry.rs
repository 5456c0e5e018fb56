//! The workload registry: what a workload is, how one run reports, and how
//! names on the command line select workloads.
//!
//! A workload is data ([`Workload`]): its name and group as in goro-bench/README.md,
//! the seed it measures, what one op is, the op counts (identical to the Go
//! twin's), and one *body* per Rust runtime. A body is a function from
//! [`Ctx`] to a future; the harness spawns that future as a task of the
//! runtime under test (as Go's benchmark body runs in a goroutine), unless
//! the workload asks for another [`Placement`], and the future does its own
//! setup, brackets the measured part with a [`Meter`], tears down, and
//! returns a [`RunOut`].
//!
//! Each group lives in one file under `src/workloads/` with a `register`
//! function; see `workloads/mod.rs` for how to add one.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

/// One measured run's result future.
pub type BoxRun = Pin<Box<dyn Future<Output = RunOut> + Send + 'static>>;
/// A workload body for one runtime.
pub type Body = Arc<dyn Fn(Ctx) -> BoxRun + Send + Sync>;

/// The Go column of a workload whose Go twin is a server (the net group):
/// runs the load against the twin's address (`goro-bench-go -serve`), with
/// a probe for the twin process's CPU.
pub type Drive =
    fn(std::net::SocketAddr, &Ctx, Option<crate::netload::CpuProbe>) -> Result<RunOut, String>;

/// What a body is told about the run.
#[derive(Clone, Debug)]
pub struct Ctx {
    /// Ps (goro) / worker threads (tokio).
    pub procs: usize,
    /// `--quick`: the smaller op counts.
    pub quick: bool,
    /// `"goro"` or `"tokio"`: the runtime the body runs on (for workloads
    /// that start a second copy of themselves, `oversub`).
    pub runtime: &'static str,
    /// goro policy overrides in force (`GORO_POLICY` syntax; empty = default).
    pub policy: String,
}

impl Ctx {
    /// `normal`, or `quick` with `--quick` (Go's `b.Size`).
    pub fn size(&self, normal: u64, quick: u64) -> u64 {
        if self.quick {
            quick
        } else {
            normal
        }
    }
}

/// The numbers of one measured run.
#[derive(Clone, Debug, Default)]
pub struct RunOut {
    /// Ops done in the measured region.
    pub ops: u64,
    /// Wall time of the measured region (monotonic clock).
    pub wall_ns: u64,
    /// User+sys CPU of the whole process over the measured region.
    pub cpu_ns: u64,
    /// Workload-specific metrics (`p99_ns`, `n`, ...).
    pub extra: Vec<(String, f64)>,
}

impl RunOut {
    /// A result for `ops` ops over the region `m`; the region's context
    /// switches go into the extras, as the Go side reports them.
    pub fn new(ops: u64, m: Measured) -> RunOut {
        RunOut {
            ops,
            wall_ns: m.wall_ns,
            cpu_ns: m.cpu_ns,
            extra: vec![
                ("nvcsw".into(), m.nvcsw as f64),
                ("nivcsw".into(), m.nivcsw as f64),
            ],
        }
    }

    /// Adds an extra metric.
    pub fn extra(mut self, key: &str, v: impl Into<f64>) -> RunOut {
        self.extra.push((key.to_string(), v.into()));
        self
    }
}

/// The start of a measured region: wall clock and the process's rusage.
pub struct Meter {
    t0: Instant,
    ru0: libc::rusage,
}

/// A closed measured region.
#[derive(Clone, Copy, Debug)]
pub struct Measured {
    /// Wall nanoseconds.
    pub wall_ns: u64,
    /// User+sys CPU nanoseconds of the whole process (all threads).
    pub cpu_ns: u64,
    /// Voluntary context switches of the process (≈ thread sleeps/wakeups).
    pub nvcsw: i64,
    /// Involuntary context switches (preemptions).
    pub nivcsw: i64,
}

fn rusage() -> libc::rusage {
    // SAFETY: getrusage writes a plain-data struct we own; RUSAGE_SELF is
    // always valid, so the call cannot fail.
    unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    }
}

fn cpu_ns(ru: &libc::rusage) -> i64 {
    // time_t and suseconds_t are i64 on the 64-bit Linux targets this runs on.
    let tv = |t: libc::timeval| t.tv_sec * 1_000_000_000 + t.tv_usec * 1_000;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

impl Meter {
    /// Opens the region (rusage first, then the clock, as the Go twin does).
    pub fn start() -> Meter {
        let ru0 = rusage();
        Meter {
            t0: Instant::now(),
            ru0,
        }
    }

    /// Closes the region (the clock first, then rusage).
    pub fn stop(self) -> Measured {
        let wall = self.t0.elapsed();
        let ru1 = rusage();
        Measured {
            wall_ns: wall.as_nanos() as u64,
            cpu_ns: (cpu_ns(&ru1) - cpu_ns(&self.ru0)).max(0) as u64,
            nvcsw: ru1.ru_nvcsw - self.ru0.ru_nvcsw,
            nivcsw: ru1.ru_nivcsw - self.ru0.ru_nivcsw,
        }
    }
}

/// Where the harness runs a workload's body: which future is the root of
/// a run. Every workload but the `fan_in` rows is [`Placement::Spawned`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Placement {
    /// A task spawned from the run thread's `block_on`, which only waits
    /// for it: goro `rt.block_on(async { goro::spawn(body).await })`, tokio
    /// the same with `tokio::spawn` (Go: the body in a goroutine the
    /// benchmark goroutine waits for).
    #[default]
    Spawned,
    /// The runtime's main task, as a program's `main` runs: goro
    /// `rt.run(body)` (what `#[goro::main]` expands to: the body is a task
    /// on the Ps); tokio `rt.block_on(body)` (what `#[tokio::main]` does:
    /// the body is polled on the calling thread). Go: the benchmark
    /// goroutine itself.
    Main,
    /// Polled on the run thread outside every P: goro `rt.block_on(body)`
    /// (`#[goro::main(local)]`, and `#[goro::main]` before `Runtime::run`);
    /// tokio `rt.block_on(body)`, the same program as [`Placement::Main`].
    Local,
}

/// One workload of goro-bench/README.md.
pub struct Workload {
    /// As in goro-bench/README.md and the Go twin's `-list`, e.g. `ring/n=100`.
    pub name: String,
    /// `sched`, `chan`, ...
    pub group: &'static str,
    /// The seed it measures (`"004"`), if any.
    pub seed: Option<&'static str>,
    /// One line: what one op is.
    pub op: String,
    /// Ops per run, normal and `--quick` (nominal: bodies report the exact count).
    pub ops: (u64, u64),
    /// Runs at this many procs whatever `--procs` says (`burst/procs=16`).
    pub fixed_procs: Option<usize>,
    /// The goro body, or why there is none.
    pub goro: Result<Body, &'static str>,
    /// The tokio body, or why there is none.
    pub tokio: Result<Body, &'static str>,
    /// Why the Go column is empty by design (no twin in `bench/go`).
    pub go_note: Option<&'static str>,
    /// The Go twin serves and this drives it from here (the net group);
    /// `None`: the twin runs the whole workload itself.
    pub go_drive: Option<Drive>,
    /// Extra metrics worth a line under the table row.
    pub show: &'static [&'static str],
    /// Where the harness runs the body.
    pub placement: Placement,
}

/// Wraps an async body function into a [`Body`].
pub fn body<Fut>(f: impl Fn(Ctx) -> Fut + Send + Sync + 'static) -> Body
where
    Fut: Future<Output = RunOut> + Send + 'static,
{
    Arc::new(move |ctx| Box::pin(f(ctx)) as BoxRun)
}

impl Workload {
    /// A workload with no bodies yet.
    pub fn new(
        name: impl Into<String>,
        group: &'static str,
        op: impl Into<String>,
        ops: (u64, u64),
    ) -> Workload {
        Workload {
            name: name.into(),
            group,
            seed: None,
            op: op.into(),
            ops,
            fixed_procs: None,
            goro: Err("not written"),
            tokio: Err("not written"),
            go_note: None,
            go_drive: None,
            show: &[],
            placement: Placement::Spawned,
        }
    }
    /// The seed this workload measures.
    pub fn seed(mut self, s: &'static str) -> Self {
        self.seed = Some(s);
        self
    }
    /// The goro body (or `Err(note)`).
    pub fn goro(mut self, b: Result<Body, &'static str>) -> Self {
        self.goro = b;
        self
    }
    /// The tokio body (or `Err(note)`).
    pub fn tokio(mut self, b: Result<Body, &'static str>) -> Self {
        self.tokio = b;
        self
    }
    /// No Go twin, and why.
    pub fn no_go(mut self, note: &'static str) -> Self {
        self.go_note = Some(note);
        self
    }
    /// The Go twin serves this workload (`-serve`); `drive` runs the load.
    pub fn go_served(mut self, drive: Drive) -> Self {
        self.go_drive = Some(drive);
        self
    }
    /// Always run at `p` procs.
    pub fn fixed_procs(mut self, p: usize) -> Self {
        self.fixed_procs = Some(p);
        self
    }
    /// Where the harness runs the body (default [`Placement::Spawned`]).
    pub fn placement(mut self, p: Placement) -> Self {
        self.placement = p;
        self
    }
    /// Extras to print under the row.
    pub fn show(mut self, keys: &'static [&'static str]) -> Self {
        self.show = keys;
        self
    }
    /// The name before the first `/` (`ring` for `ring/n=100`).
    pub fn base(&self) -> &str {
        self.name.split('/').next().unwrap_or(&self.name)
    }
}

/// Every workload, in goro-bench/README.md order.
pub fn all() -> Vec<Workload> {
    let mut v = Vec::new();
    crate::workloads::register(&mut v);
    v
}

/// Resolves a comma-separated list of selectors: `all`, a group (`sched`),
/// a workload name (`ring/n=100`) or a base name (`ring` = every `ring/n=...`).
/// Keeps registry order, no duplicates. An unknown selector is an error that
/// lists the valid names.
pub fn select<'a>(reg: &'a [Workload], spec: &str) -> Result<Vec<&'a Workload>, String> {
    let mut picked = vec![false; reg.len()];
    for sel in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let mut hit = false;
        for (i, w) in reg.iter().enumerate() {
            if sel == "all" || w.group == sel || w.name == sel || w.base() == sel {
                picked[i] = true;
                hit = true;
            }
        }
        if !hit {
            let mut groups: Vec<&str> = reg.iter().map(|w| w.group).collect();
            groups.dedup();
            let names: Vec<&str> = reg.iter().map(|w| w.name.as_str()).collect();
            return Err(format!(
                "unknown workload '{sel}'. Valid: all, the groups {}, or one of: {}",
                groups.join(", "),
                names.join(", ")
            ));
        }
    }
    let out: Vec<&Workload> = reg
        .iter()
        .zip(picked)
        .filter_map(|(w, p)| p.then_some(w))
        .collect();
    if out.is_empty() {
        return Err("no workload selected".into());
    }
    Ok(out)
}
