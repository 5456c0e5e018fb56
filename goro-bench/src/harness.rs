//! Running measurements: contenders side by side, interleaved, each run
//! guarded by a deadline.
//!
//! One *row* is one workload at one procs. Its contenders (goro, tokio, go
//! for `run`/`compare`; goro-old and goro-new for `ab`) each get their
//! runtime built once for the row, then one warm-up run each, then N rounds
//! of one run each in turn (A B C A B C ...), so drift of a shared machine
//! hits every contender alike and ratios within a row stay meaningful.
//!
//! A goro or tokio run executes on a fresh thread that calls `block_on` on
//! the row's runtime with the body spawned as a task (or, as the workload's
//! [`Placement`](crate::registry::Placement) says, runs the body as the
//! main task, `goro::Runtime::run`, or polls it in `block_on` itself); the
//! harness waits for it with a deadline. A panic (in the body or the
//! runtime) or a timeout ends that contender's row with one line on stderr;
//! the rest goes on. A timed-out run's thread cannot be killed: it is left
//! behind holding its runtime (later numbers of this process may be
//! disturbed, and the line says so). A Go run is a child process, killed at
//! the deadline. For a workload whose Go twin is a server (the net group),
//! the twin is started once per row (`goro-bench-go -serve`, as the Rust
//! runtimes are built once per row) and each run, warm-up included, drives
//! it from here on a guarded thread; the row's end kills it.
//!
//! Here: what a run produces and a row is made of ([`Sample`],
//! [`Contender`], [`Measurement`], [`Opts`]). Beside it: `harness/row.rs`
//! (one row's interleaved runs, [`measure_row`]), `harness/guard.rs` (a
//! run on its own thread under a deadline, and the panic hook that keeps
//! its panic to one line), `harness/build.rs` (the row's goro and tokio
//! runtimes), `harness/counters.rs` (the per-op counters a run adds as
//! extras) and `harness/ui.rs` (the progress line, [`Ui`]).

mod build;
mod counters;
mod guard;
mod row;
mod ui;

pub use guard::install_panic_hook;
pub use row::measure_row;
pub use ui::Ui;

use crate::registry::Workload;
use crate::stats;
use std::time::Duration;

/// One measured run, from any implementation.
#[derive(Clone, Debug, Default)]
pub struct Sample {
    /// Ops done.
    pub ops: u64,
    /// Wall nanoseconds of the measured region.
    pub wall_ns: u64,
    /// Process CPU nanoseconds over the measured region.
    pub cpu_ns: u64,
    /// Extra metrics.
    pub extra: Vec<(String, f64)>,
}

impl Sample {
    /// Wall ns per op.
    pub fn ns_per_op(&self) -> f64 {
        self.wall_ns as f64 / self.ops.max(1) as f64
    }
    /// CPU ns per op.
    pub fn cpu_per_op(&self) -> f64 {
        self.cpu_ns as f64 / self.ops.max(1) as f64
    }
}

/// What runs a contender.
#[derive(Clone, Debug)]
pub enum Kind {
    /// goro with this policy.
    Goro(goro::Policy),
    /// tokio's multi-thread runtime.
    Tokio,
    /// The Go twin.
    Go,
}

/// One column of a row.
#[derive(Clone, Debug)]
pub struct Contender {
    /// Column label: `goro`, `tokio`, `go`, `old`, `new`.
    pub label: String,
    /// What runs it.
    pub kind: Kind,
    /// The goro policy as overrides (`GORO_POLICY` syntax, "" = default),
    /// for reports and for the `oversub` second copy.
    pub policy_spec: String,
}

impl Contender {
    /// The implementation name: `goro`, `tokio` or `go`.
    pub fn impl_name(&self) -> &'static str {
        match self.kind {
            Kind::Goro(_) => "goro",
            Kind::Tokio => "tokio",
            Kind::Go => "go",
        }
    }
}

/// One contender's results in one row.
#[derive(Clone, Debug)]
pub struct Measurement {
    /// Workload name.
    pub workload: String,
    /// Procs.
    pub procs: usize,
    /// Contender label.
    pub label: String,
    /// `goro`, `tokio`, `go`.
    pub impl_name: &'static str,
    /// goro policy overrides ("" = default).
    pub policy: String,
    /// The measured runs.
    pub samples: Vec<Sample>,
    /// Why this contender has no body for the workload (not an error).
    pub missing: Option<String>,
    /// Why its runs stopped (panic, timeout, failed child).
    pub error: Option<String>,
}

impl Measurement {
    fn ns(&self) -> Vec<f64> {
        self.samples.iter().map(Sample::ns_per_op).collect()
    }
    /// Median wall ns/op, when there are samples.
    pub fn ns_per_op(&self) -> Option<f64> {
        (!self.samples.is_empty()).then(|| stats::median(&self.ns()))
    }
    /// All runs' ns/op.
    pub fn ns_values(&self) -> Vec<f64> {
        self.ns()
    }
    /// All runs' CPU ns/op.
    pub fn cpu_values(&self) -> Vec<f64> {
        self.samples.iter().map(Sample::cpu_per_op).collect()
    }
    /// (min, max) ns/op.
    pub fn spread(&self) -> (f64, f64) {
        stats::min_max(&self.ns())
    }
    /// benchstat's ± as a fraction.
    pub fn spread_frac(&self) -> f64 {
        stats::spread_frac(&self.ns())
    }
    /// Median CPU ns/op.
    pub fn cpu_per_op(&self) -> Option<f64> {
        (!self.samples.is_empty()).then(|| stats::median(&self.cpu_values()))
    }
    /// Median ops per run.
    pub fn ops(&self) -> f64 {
        stats::median(
            &self
                .samples
                .iter()
                .map(|s| s.ops as f64)
                .collect::<Vec<_>>(),
        )
    }
    /// All runs' values of one extra.
    pub fn extra_values(&self, key: &str) -> Vec<f64> {
        self.samples
            .iter()
            .filter_map(|s| s.extra.iter().find(|(k, _)| k == key).map(|(_, v)| *v))
            .collect()
    }
    /// Median of each extra over the runs, in first-seen order.
    pub fn extras(&self) -> Vec<(String, f64)> {
        let mut keys: Vec<String> = Vec::new();
        for s in &self.samples {
            for (k, _) in &s.extra {
                if !keys.contains(k) {
                    keys.push(k.clone());
                }
            }
        }
        keys.into_iter()
            .map(|k| {
                let v = stats::median(&self.extra_values(&k));
                (k, v)
            })
            .collect()
    }
}

/// Options of one command.
#[derive(Clone, Debug)]
pub struct Opts {
    /// Measured runs per contender.
    pub runs: usize,
    /// Quick op counts.
    pub quick: bool,
    /// Deadline of one run.
    pub timeout: Duration,
    /// Build goro runtimes with `measure_find_cpu` (the `find_cpu_share`
    /// extra). Only `ab` sets it: the thread CPU clock is a syscall (about
    /// 0.6 µs on the 2-core VM), two per search, which at burst/procs=128
    /// doubled goro's cpu/op (361 → 722 ns) and added a third to its
    /// time/op, too much to leave in the tables that compare goro with Go
    /// and tokio. Both sides of an ab pay it alike.
    pub find_cpu: bool,
}

/// The procs a workload runs at: its fixed procs, or each of `procs`.
pub fn procs_for(w: &Workload, procs: &[usize]) -> Vec<usize> {
    match w.fixed_procs {
        Some(p) => vec![p],
        None => procs.to_vec(),
    }
}

/// Steps [`measure_row`] takes for the progress bar.
pub fn steps(contenders: usize, opts: &Opts) -> u64 {
    (contenders * (opts.runs + 1)) as u64
}
