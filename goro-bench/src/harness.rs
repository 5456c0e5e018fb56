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
//! [`Placement`] says, runs the body as the main task, `goro::Runtime::run`,
//! or polls it in `block_on` itself); the harness waits for it with a
//! deadline. A panic (in the body or the runtime) or a timeout
//! ends that contender's row with one line on stderr; the rest goes on. A
//! timed-out run's thread cannot be killed: it is left behind holding its
//! runtime (later numbers of this process may be disturbed, and the line
//! says so). A Go run is a child process, killed at the deadline. For a
//! workload whose Go twin is a server (the net group), the twin is started
//! once per row (`goro-bench-go -serve`, as the Rust runtimes are built once
//! per row) and each run, warm-up included, drives it from here on a
//! guarded thread; the row's end kills it.

use crate::gobench::{GoBench, GoServer};
use crate::registry::{Body, Ctx, Drive, Placement, Workload};
use crate::stats;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{mpsc, Arc, Mutex};
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

/// The progress bar and the one-line messages printed around it.
pub struct Ui {
    pb: ProgressBar,
}

impl Ui {
    /// A bar of `total` steps (planned runs, warm-ups included) on stderr
    /// (hidden when stderr is not a terminal), with an ETA: the mean time
    /// per run so far times the runs still planned.
    pub fn new(total: u64) -> Ui {
        let pb = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        pb.set_style(
            ProgressStyle::with_template(
                "{elapsed_precise} [{bar:30}] {pos}/{len} runs, ETA {planned_eta}  {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .with_key("planned_eta", planned_eta)
            .progress_chars("=> "),
        );
        Ui { pb }
    }
    /// One line on stderr (above the bar).
    pub fn note(&self, msg: &str) {
        self.pb.suspend(|| eprintln!("{msg}"));
    }
    /// One line on stdout (above the bar).
    pub fn out(&self, msg: &str) {
        self.pb.suspend(|| println!("{msg}"));
    }
    /// What is running now.
    pub fn status(&self, msg: String) {
        self.pb.set_message(msg);
    }
    /// One step done.
    pub fn step(&self) {
        self.pb.inc(1);
    }
    /// Removes the bar.
    pub fn finish(&self) {
        self.pb.finish_and_clear();
    }
}

/// The bar's ETA: elapsed ÷ runs done × runs left (indicatif's own `{eta}`
/// follows the last few steps, which jump between a 5 ms and a 1 s run).
fn planned_eta(state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write) {
    let (pos, len) = (state.pos(), state.len().unwrap_or(0));
    let _ = if pos == 0 {
        write!(w, "?")
    } else {
        let left = state.elapsed().as_secs_f64() / pos as f64 * len.saturating_sub(pos) as f64;
        let s = left.round() as u64;
        write!(w, "{}:{:02}", s / 60, s % 60)
    };
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

enum State {
    Goro(Arc<goro::Runtime>, Body),
    Tokio(Arc<tokio::runtime::Runtime>, Body),
    Go,
    GoServe(Arc<GoServer>, Drive),
    Off,
}

/// The last panic message seen on a benchmark thread (the panic hook keeps
/// it instead of printing it, so a failure is reported once, in one line).
pub static LAST_PANIC: Mutex<Option<String>> = Mutex::new(None);

/// Installs the panic hook: panics on our own threads (`gb-*`: runs, goro
/// and tokio workers) are recorded quietly in [`LAST_PANIC`]; others print
/// as usual.
pub fn install_panic_hook() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let ours = std::thread::current()
            .name()
            .is_some_and(|n| n.starts_with("gb-"));
        if ours {
            let msg = panic_message(info.payload());
            let at = info
                .location()
                .map(|l| format!(" at {}:{}", l.file(), l.line()))
                .unwrap_or_default();
            *LAST_PANIC.lock().unwrap_or_else(|e| e.into_inner()) = Some(format!("{msg}{at}"));
        } else {
            default(info);
        }
    }));
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic".into()
    }
}

/// Runs `f` on a fresh thread and waits at most `timeout` for it.
fn guarded<T: Send + 'static>(
    timeout: Duration,
    f: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    LAST_PANIC.lock().unwrap_or_else(|e| e.into_inner()).take();
    let (tx, rx) = mpsc::channel();
    let h = std::thread::Builder::new()
        .name("gb-run".into())
        .spawn(move || {
            let r = catch_unwind(AssertUnwindSafe(f))
                .unwrap_or_else(|p| Err(format!("panicked: {}", panic_message(&*p))));
            let _ = tx.send(r);
        })
        .map_err(|e| format!("cannot start a run thread: {e}"))?;
    match rx.recv_timeout(timeout) {
        Ok(r) => {
            let _ = h.join();
            r
        }
        Err(mpsc::RecvTimeoutError::Timeout) => {
            let last = LAST_PANIC.lock().unwrap_or_else(|e| e.into_inner()).take();
            Err(format!(
                "timed out after {}s; its thread is left running, so later numbers of this process may be disturbed{}",
                timeout.as_secs(),
                last.map(|m| format!(" (a panic was seen: {m})")).unwrap_or_default()
            ))
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => Err("the run thread died".into()),
    }
}

fn build_goro(
    procs: usize,
    policy: &goro::Policy,
    find_cpu: bool,
) -> Result<Arc<goro::Runtime>, String> {
    goro::Runtime::builder()
        .procs(procs)
        .policy(policy.clone())
        .thread_name("gb-goro")
        .measure_find_cpu(find_cpu) // find_cpu_share (Opts::find_cpu)
        .build()
        .map(Arc::new)
        .map_err(|e| format!("cannot build the goro runtime: {e}"))
}

fn build_tokio(procs: usize) -> Result<Arc<tokio::runtime::Runtime>, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(procs)
        .enable_all()
        .thread_name("gb-tokio")
        .build()
        .map(Arc::new)
        .map_err(|e| format!("cannot build the tokio runtime: {e}"))
}

/// The goro counters a run adds as extras: the share of wall × procs spent
/// in find-runnable's slow path and in steal passes (seed 002's measure),
/// and steals (task migrations) / runnext steals (steals of a lone task) /
/// parks / wakeups (threads unparked or started) / preemptions per op.
/// Seed 002's work measures, which wall time on a machine with fewer cores
/// than procs cannot show: per search (slow-path entry) the other Ps'
/// queues read (about a cache line each) and the steal attempts that took
/// nothing; searches per op; and the slow path's thread CPU time over the
/// process CPU time of the measured region. Counted over the whole run
/// (setup included), so per-op counts and the CPU share are slightly high
/// for workloads with
/// heavy setup.
fn goro_extras(s: &mut Sample, before: &goro::Stats, after: &goro::Stats, procs: usize) {
    let d = |a: u64, b: u64| a.saturating_sub(b) as f64;
    let denom = (s.wall_ns as f64 * procs as f64).max(1.0);
    let ops = s.ops.max(1) as f64;
    let finds = d(after.find_runnable_calls, before.find_runnable_calls).max(1.0);
    s.extra.push((
        "inspected_per_find".into(),
        d(after.queues_inspected, before.queues_inspected) / finds,
    ));
    s.extra.push((
        "failed_steals_per_find".into(),
        d(after.steal_fails, before.steal_fails) / finds,
    ));
    s.extra.push((
        "finds_per_op".into(),
        d(after.find_runnable_calls, before.find_runnable_calls) / ops,
    ));
    if after.find_cpu_ns > 0 {
        // Only where measured (`Opts::find_cpu`), else the table shows 0%.
        s.extra.push((
            "find_cpu_share".into(),
            d(after.find_cpu_ns, before.find_cpu_ns) / (s.cpu_ns as f64).max(1.0),
        ));
    }
    s.extra.push((
        "find_runnable_share".into(),
        d(after.find_runnable_ns, before.find_runnable_ns) / denom,
    ));
    s.extra.push((
        "steal_share".into(),
        d(after.steal_ns, before.steal_ns) / denom,
    ));
    s.extra
        .push(("steals_per_op".into(), d(after.steals, before.steals) / ops));
    s.extra.push((
        "runnext_steals_per_op".into(),
        d(after.runnext_steals, before.runnext_steals) / ops,
    ));
    s.extra
        .push(("parks_per_op".into(), d(after.parks, before.parks) / ops));
    s.extra.push((
        "wakeups_per_op".into(),
        d(
            after.unparks + after.threads_started,
            before.unparks + before.threads_started,
        ) / ops,
    ));
    s.extra.push((
        "preemptions_per_op".into(),
        d(after.preemptions, before.preemptions) / ops,
    ));
    // Rounds of active spinning by threads looking for work (find-runnable
    // before it parks) or waiting for a busy P's lone task (`spins`).
    s.extra
        .push(("spins_per_op".into(), d(after.spins, before.spins) / ops));
}

/// The per-op counter every column has: voluntary context switches of the
/// process per op (`nvcsw` of the region's rusage: a thread that blocked in
/// the kernel, a futex wait that slept or a park), next to goro's own
/// `parks_per_op` and `wakeups_per_op`.
fn per_op_counters(s: &mut Sample) {
    let nvcsw = s.extra.iter().find(|(k, _)| k == "nvcsw").map(|(_, v)| *v);
    if let Some(n) = nvcsw {
        let per_op = n / s.ops.max(1) as f64;
        s.extra.push(("nvcsw_per_op".into(), per_op));
    }
}

fn to_sample(out: crate::registry::RunOut) -> Sample {
    Sample {
        ops: out.ops,
        wall_ns: out.wall_ns,
        cpu_ns: out.cpu_ns,
        extra: out.extra,
    }
}

fn run_once(
    state: &State,
    w: &Workload,
    ctx: &Ctx,
    opts: &Opts,
    go: &GoBench,
    ui: &Ui,
) -> Result<Sample, String> {
    let procs = ctx.procs;
    match state {
        State::Goro(rt, body) => {
            let (rt, body, ctx) = (rt.clone(), body.clone(), ctx.clone());
            let placement = w.placement;
            guarded(opts.timeout, move || {
                let s0 = rt.stats();
                let r = match placement {
                    Placement::Spawned => rt.block_on(async move { goro::spawn(body(ctx)).await }),
                    // A panic in the main task resumes here (`run`), and
                    // `guarded` reports it.
                    Placement::Main => Ok(rt.run(body(ctx))),
                    Placement::Local => Ok(rt.block_on(body(ctx))),
                };
                let s1 = rt.stats();
                let mut s = to_sample(r.map_err(|e| e.to_string())?);
                goro_extras(&mut s, &s0, &s1, procs);
                Ok(s)
            })
        }
        State::Tokio(rt, body) => {
            let (rt, body, ctx) = (rt.clone(), body.clone(), ctx.clone());
            let placement = w.placement;
            guarded(opts.timeout, move || {
                let r = match placement {
                    Placement::Spawned => rt.block_on(async move { tokio::spawn(body(ctx)).await }),
                    // `#[tokio::main]`: the body polled on this thread.
                    Placement::Main | Placement::Local => Ok(rt.block_on(body(ctx))),
                };
                Ok(to_sample(r.map_err(|e| e.to_string())?))
            })
        }
        State::Go => {
            let (s, stderr) = go.run(&w.name, procs, opts.quick, opts.timeout)?;
            if !stderr.is_empty() {
                ui.note(&format!(
                    "{} procs={procs} go says: {}",
                    w.name,
                    stderr.replace('\n', " | ")
                ));
            }
            Ok(s)
        }
        State::GoServe(server, drive) => {
            let (server, drive, ctx) = (server.clone(), *drive, ctx.clone());
            guarded(opts.timeout, move || {
                let probe = || server.cpu();
                drive(server.addr, &ctx, Some(&probe)).map(to_sample)
            })
        }
        State::Off => Err("off".into()),
    }
}

/// Measures one row: `w` at `procs` for every contender, interleaved.
pub fn measure_row(
    w: &Workload,
    procs: usize,
    contenders: &[Contender],
    opts: &Opts,
    go: &GoBench,
    ui: &Ui,
) -> Vec<Measurement> {
    let mut ms: Vec<Measurement> = contenders
        .iter()
        .map(|c| Measurement {
            workload: w.name.clone(),
            procs,
            label: c.label.clone(),
            impl_name: c.impl_name(),
            policy: c.policy_spec.clone(),
            samples: Vec::new(),
            missing: None,
            error: None,
        })
        .collect();
    let mut states: Vec<State> = Vec::new();
    for (c, m) in contenders.iter().zip(ms.iter_mut()) {
        let st = match &c.kind {
            Kind::Goro(p) => match &w.goro {
                Err(note) => {
                    m.missing = Some(note.to_string());
                    State::Off
                }
                Ok(b) => match build_goro(procs, p, opts.find_cpu) {
                    Ok(rt) => State::Goro(rt, b.clone()),
                    Err(e) => {
                        m.error = Some(e);
                        State::Off
                    }
                },
            },
            Kind::Tokio => match &w.tokio {
                Err(note) => {
                    m.missing = Some(note.to_string());
                    State::Off
                }
                Ok(b) => match build_tokio(procs) {
                    Ok(rt) => State::Tokio(rt, b.clone()),
                    Err(e) => {
                        m.error = Some(e);
                        State::Off
                    }
                },
            },
            Kind::Go => match w
                .go_note
                .map(str::to_string)
                .or_else(|| go.missing(&w.name))
            {
                Some(note) => {
                    m.missing = Some(note);
                    State::Off
                }
                None => match w.go_drive {
                    None => State::Go,
                    Some(drive) => match go.serve(&w.name, procs) {
                        Ok(server) => State::GoServe(Arc::new(server), drive),
                        Err(e) => {
                            m.error = Some(e);
                            State::Off
                        }
                    },
                },
            },
        };
        if let Some(e) = &m.error {
            ui.note(&format!("{} procs={procs} {}: {e}", w.name, c.label));
        }
        states.push(st);
    }
    let ctx_for = |c: &Contender| Ctx {
        procs,
        quick: opts.quick,
        runtime: if matches!(c.kind, Kind::Tokio) {
            "tokio"
        } else {
            "goro"
        },
        policy: c.policy_spec.clone(),
    };

    // Warm-up (the Go twin warms up inside each invocation; a served one
    // is warmed up here like the Rust runtimes).
    for (i, c) in contenders.iter().enumerate() {
        ui.status(format!("{} procs={procs} {} warm-up", w.name, c.label));
        if matches!(
            states[i],
            State::Goro(..) | State::Tokio(..) | State::GoServe(..)
        ) {
            if let Err(e) = run_once(&states[i], w, &ctx_for(c), opts, go, ui) {
                ui.note(&format!(
                    "{} procs={procs} {}: warm-up failed: {e}",
                    w.name, c.label
                ));
                ms[i].error = Some(e);
                states[i] = State::Off;
            }
        }
        ui.step();
    }
    for r in 0..opts.runs {
        for (i, c) in contenders.iter().enumerate() {
            ui.status(format!(
                "{} procs={procs} {} run {}/{}",
                w.name,
                c.label,
                r + 1,
                opts.runs
            ));
            if !matches!(states[i], State::Off) {
                match run_once(&states[i], w, &ctx_for(c), opts, go, ui) {
                    Ok(mut s) => {
                        per_op_counters(&mut s);
                        ms[i].samples.push(s)
                    }
                    Err(e) => {
                        ui.note(&format!(
                            "{} procs={procs} {}: run {} failed: {e}",
                            w.name,
                            c.label,
                            r + 1
                        ));
                        ms[i].error = Some(e);
                        states[i] = State::Off;
                    }
                }
            }
            ui.step();
        }
    }
    // Shut the row's runtimes down one by one, each under a deadline: a
    // runtime that cannot stop must not hang the report, and it is that
    // column's failure (a hang at shutdown is a lost wakeup too), which
    // fails `run` and `compare`.
    for (i, st) in states.into_iter().enumerate() {
        if matches!(st, State::Off) {
            continue;
        }
        if let Err(e) = guarded(opts.timeout.min(SHUTDOWN_LIMIT), move || {
            drop(st);
            Ok(())
        }) {
            let e = format!("shutting the runtime down: {e}");
            ui.note(&format!(
                "{} procs={procs} {}: {e}",
                w.name, contenders[i].label
            ));
            ms[i].error.get_or_insert(e);
        }
    }
    ms
}

/// Longest a row's runtime (or served Go twin) may take to shut down (or
/// the run deadline, `--timeout`, when that is shorter).
const SHUTDOWN_LIMIT: Duration = Duration::from_secs(20);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{body, Meter, RunOut};
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    /// Set to let the task stuck in its poll go (the test's cleanup).
    static RELEASE: AtomicBool = AtomicBool::new(false);
    /// Set by that task once its poll has begun.
    static STUCK: AtomicBool = AtomicBool::new(false);
    static CALLS: AtomicUsize = AtomicUsize::new(0);

    #[test]
    fn a_runtime_that_hangs_at_shutdown_fails_its_column() {
        // The body's last call leaves a task in a poll that does not return
        // (until RELEASE): the runs complete, the runtime's drop then waits
        // for that thread.
        let w =
            Workload::new("hang_at_shutdown", "sched", "op", (1, 1)).goro(Ok(body(|_ctx| async {
                let m = Meter::start();
                if CALLS.fetch_add(1, Ordering::SeqCst) == 1 {
                    drop(goro::spawn(async {
                        STUCK.store(true, Ordering::SeqCst);
                        while !RELEASE.load(Ordering::SeqCst) {
                            std::thread::sleep(Duration::from_millis(1));
                        }
                    }));
                    // Return only once the poll has begun: a shutdown
                    // before it would drop the task unpolled.
                    let deadline = std::time::Instant::now() + Duration::from_secs(10);
                    while !STUCK.load(Ordering::SeqCst) {
                        assert!(
                            std::time::Instant::now() < deadline,
                            "the stuck task was not polled within 10 s"
                        );
                        goro::yield_now().await;
                    }
                }
                RunOut::new(1, m.stop())
            })));
        let contenders = [Contender {
            label: "goro".into(),
            kind: Kind::Goro(goro::Policy::default()),
            policy_spec: String::new(),
        }];
        let opts = Opts {
            runs: 1,
            quick: true,
            timeout: Duration::from_secs(2),
            find_cpu: false,
        };
        let go = GoBench {
            bin: None,
            names: Default::default(),
            note: Some("not in this test".into()),
            broken: false,
        };
        let ui = Ui::new(steps(1, &opts));
        let ms = measure_row(&w, 2, &contenders, &opts, &go, &ui);
        RELEASE.store(true, Ordering::SeqCst);
        assert_eq!(ms[0].samples.len(), 1, "the run itself completed: {ms:?}");
        let e = ms[0].error.as_deref().unwrap_or("no error");
        assert!(
            e.starts_with("shutting the runtime down: timed out after 2s"),
            "{e}"
        );
    }
}
