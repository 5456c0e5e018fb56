//! GoKer's blocking bugs under `goro::sim`: real deadlocks and goroutine
//! leaks from etcd, Kubernetes, gRPC-Go, CockroachDB, Moby and Syncthing,
//! ported from Go's `runtime/testdata/testgoroutineleakprofile/goker/`
//! (the GoBench suite), each as the buggy program and as its fix.
//!
//! Every bug module (`sim_goker/<bug>.rs`) keeps the Go program's shape:
//! the same goroutines, started in the same order, doing the same
//! operations, with `runtime.Gosched()` where the Go file has one and no
//! other yield. It exposes `buggy()` and `fixed()`, one run of the
//! scenario each (the Go programs repeat it to provoke the race; the
//! simulator searches schedules instead).
//!
//! For each bug, `<bug>_is_found` asserts that some seed in
//! `0..`[`SEEDS`] reports the buggy program as a deadlock or leak, and
//! `<bug>_fixed_reports_nothing` that the fixed one finishes on every
//! seed of `0..`[`FIXED_SEEDS`]. `seeds_to_find_table` (ignored; run it
//! with `--ignored --nocapture`) prints, per bug and strategy, the first
//! seed that finds it, as a Markdown table.

#[path = "sim_goker/cockroach13755.rs"]
mod cockroach13755;
#[path = "sim_goker/cockroach24808.rs"]
mod cockroach24808;
#[path = "sim_goker/etcd10492.rs"]
mod etcd10492;
#[path = "sim_goker/etcd6857.rs"]
mod etcd6857;
#[path = "sim_goker/etcd6873.rs"]
mod etcd6873;
#[path = "sim_goker/go.rs"]
mod go;
#[path = "sim_goker/grpc1424.rs"]
mod grpc1424;
#[path = "sim_goker/grpc1460.rs"]
mod grpc1460;
#[path = "sim_goker/kubernetes10182.rs"]
mod kubernetes10182;
#[path = "sim_goker/kubernetes25331.rs"]
mod kubernetes25331;
#[path = "sim_goker/kubernetes5316.rs"]
mod kubernetes5316;
#[path = "sim_goker/kubernetes6632.rs"]
mod kubernetes6632;
#[path = "sim_goker/moby17176.rs"]
mod moby17176;
#[path = "sim_goker/moby25384.rs"]
mod moby25384;
#[path = "sim_goker/moby28462.rs"]
mod moby28462;
#[path = "sim_goker/moby33781.rs"]
mod moby33781;
#[path = "sim_goker/syncthing4829.rs"]
mod syncthing4829;
#[path = "sim_goker/syncthing5795.rs"]
mod syncthing5795;

use goro::sim::{Builder, Error, Strategy};
use std::future::Future;
use std::pin::Pin;
use std::sync::mpsc;
use std::time::Duration;

/// Seeds a buggy program is searched with.
const SEEDS: u64 = 1000;

/// Seeds every fixed program must pass.
const FIXED_SEEDS: u64 = 1000;

/// Virtual Ps of every run.
const PROCS: usize = 4;

/// The longest one test may take (all its seeds); a hung bubble must fail
/// the test, not hang it.
const LIMIT: Duration = Duration::from_secs(120);

type Scenario = Pin<Box<dyn Future<Output = ()>>>;

/// One ported bug: its name and its two programs.
struct Bug {
    name: &'static str,
    buggy: fn() -> Scenario,
    fixed: fn() -> Scenario,
}

/// How one seed's run of a program ended.
enum Outcome {
    /// The root and every task finished.
    Finished,
    /// A deadlock or leak: every task left is blocked forever.
    Blocked(String),
    /// Any other error of the simulator.
    Failed(String),
}

fn run_one(program: fn() -> Scenario, seed: u64, strategy: Strategy) -> Outcome {
    let r = Builder::new()
        .seed(seed)
        .procs(PROCS)
        .strategy(strategy)
        .run(program());
    match r {
        Ok(()) => Outcome::Finished,
        Err(e @ Error::Deadlock(_)) => Outcome::Blocked(e.to_string()),
        Err(e) => Outcome::Failed(e.to_string()),
    }
}

/// Runs `f` on a thread of its own and fails with `what` if it takes
/// longer than [`LIMIT`].
fn within<T: Send + 'static>(what: String, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    let h = std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(LIMIT) {
        Ok(v) => {
            h.join().expect("the test thread ended");
            v
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => match h.join() {
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(()) => unreachable!("the test thread ended without a result"),
        },
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{what}: not done within {LIMIT:?}"),
    }
}

/// The first seed of `0..SEEDS` whose run of `bug`'s buggy program is a
/// deadlock or leak, with the report; `None` if every run finished.
/// Panics on any other error.
fn first_finding_seed(bug: &'static Bug, strategy: Strategy) -> Option<(u64, String)> {
    within(
        format!("{}: searching seeds 0..{SEEDS} with {strategy:?}", bug.name),
        move || {
            for seed in 0..SEEDS {
                match run_one(bug.buggy, seed, strategy) {
                    Outcome::Finished => {}
                    Outcome::Blocked(report) => return Some((seed, report)),
                    Outcome::Failed(e) => panic!(
                        "{}, buggy, seed {seed} with {strategy:?}: expected a finished run \
                         or a deadlock, got: {e}",
                        bug.name
                    ),
                }
            }
            None
        },
    )
}

/// The first seed of `0..seeds` on which `bug`'s fixed program does not
/// finish, with what happened.
fn first_failing_fixed_seed(
    bug: &'static Bug,
    seeds: u64,
    strategy: Strategy,
) -> Option<(u64, String)> {
    within(
        format!("{}: fixed, seeds 0..{seeds} with {strategy:?}", bug.name),
        move || {
            (0..seeds).find_map(|seed| match run_one(bug.fixed, seed, strategy) {
                Outcome::Finished => None,
                Outcome::Blocked(e) | Outcome::Failed(e) => Some((seed, e)),
            })
        },
    )
}

fn bug(name: &str) -> &'static Bug {
    BUGS.iter()
        .find(|b| b.name == name)
        .unwrap_or_else(|| panic!("no bug named {name}"))
}

fn assert_found(name: &str) {
    let bug = bug(name);
    let found = first_finding_seed(bug, Strategy::Uniform);
    assert!(
        found.is_some(),
        "{name}: the buggy program finished on every seed of 0..{SEEDS} \
         (Strategy::Uniform, {PROCS} procs); expected a deadlock or leak on at least one"
    );
}

fn assert_fixed(name: &str) {
    let bug = bug(name);
    if let Some((seed, e)) = first_failing_fixed_seed(bug, FIXED_SEEDS, Strategy::Uniform) {
        panic!(
            "{name}: the fixed program must finish on every seed of 0..{FIXED_SEEDS} \
             (Strategy::Uniform, {PROCS} procs); seed {seed} did not:\n{e}"
        );
    }
}

macro_rules! goker {
    ($($bug:ident: $found:ident, $fixed:ident;)*) => {
        /// Every ported bug.
        static BUGS: &[Bug] = &[$(Bug {
            name: stringify!($bug),
            buggy: || Box::pin($bug::buggy()),
            fixed: || Box::pin($bug::fixed()),
        }),*];

        $(
            #[test]
            fn $found() {
                assert_found(stringify!($bug));
            }

            #[test]
            fn $fixed() {
                assert_fixed(stringify!($bug));
            }
        )*
    };
}

goker! {
    cockroach13755: cockroach13755_is_found, cockroach13755_fixed_reports_nothing;
    cockroach24808: cockroach24808_is_found, cockroach24808_fixed_reports_nothing;
    etcd10492: etcd10492_is_found, etcd10492_fixed_reports_nothing;
    etcd6857: etcd6857_is_found, etcd6857_fixed_reports_nothing;
    etcd6873: etcd6873_is_found, etcd6873_fixed_reports_nothing;
    grpc1424: grpc1424_is_found, grpc1424_fixed_reports_nothing;
    grpc1460: grpc1460_is_found, grpc1460_fixed_reports_nothing;
    kubernetes10182: kubernetes10182_is_found, kubernetes10182_fixed_reports_nothing;
    kubernetes25331: kubernetes25331_is_found, kubernetes25331_fixed_reports_nothing;
    kubernetes5316: kubernetes5316_is_found, kubernetes5316_fixed_reports_nothing;
    kubernetes6632: kubernetes6632_is_found, kubernetes6632_fixed_reports_nothing;
    moby17176: moby17176_is_found, moby17176_fixed_reports_nothing;
    moby25384: moby25384_is_found, moby25384_fixed_reports_nothing;
    moby28462: moby28462_is_found, moby28462_fixed_reports_nothing;
    moby33781: moby33781_is_found, moby33781_fixed_reports_nothing;
    syncthing4829: syncthing4829_is_found, syncthing4829_fixed_reports_nothing;
    syncthing5795: syncthing5795_is_found, syncthing5795_fixed_reports_nothing;
}

/// Each fixed program on the real runtime (two Ps, real time): its root
/// must return. A smoke test of the ports themselves, outside the
/// simulator.
#[test]
fn fixed_programs_return_on_the_real_runtime() {
    for bug in BUGS {
        within(
            format!("{}: fixed, on the real runtime", bug.name),
            move || {
                let rt = goro::Runtime::builder()
                    .procs(2)
                    .build()
                    .expect("a runtime with two Ps");
                rt.block_on((bug.fixed)());
            },
        );
    }
}

/// The first seed of `0..SEEDS` that finds `bug` with `strategy`, and how
/// many of them do, as a table cell.
fn search_cell(bug: &'static Bug, strategy: Strategy) -> String {
    within(
        format!("{}: counting seeds 0..{SEEDS} with {strategy:?}", bug.name),
        move || {
            let mut first = None;
            let mut found = 0;
            for seed in 0..SEEDS {
                match run_one(bug.buggy, seed, strategy) {
                    Outcome::Finished => {}
                    Outcome::Blocked(_) => {
                        first.get_or_insert(seed);
                        found += 1;
                    }
                    Outcome::Failed(e) => {
                        let first_line = e.lines().next().unwrap_or_default().to_string();
                        return format!("seed {seed}: {first_line}");
                    }
                }
            }
            match first {
                Some(seed) => format!("{seed} (found by {found}/{SEEDS})"),
                None => "not found".to_string(),
            }
        },
    )
}

fn fixed_cell(bug: &'static Bug, strategy: Strategy) -> String {
    match first_failing_fixed_seed(bug, SEEDS, strategy) {
        None => format!("{SEEDS}/{SEEDS} finished"),
        Some((seed, e)) => {
            let first = e.lines().next().unwrap_or_default().to_string();
            format!("seed {seed}: {first}")
        }
    }
}

/// For every bug: the first seed of `0..SEEDS` that finds it, with uniform
/// choice and with PCT (depth 3), with how many of those seeds find it,
/// and how the fixed program fares on all of them, as a Markdown table on
/// stdout.
#[test]
#[ignore = "a report: run with --ignored --nocapture and keep its output"]
fn seeds_to_find_table() {
    let pct = Strategy::Pct { depth: 3 };
    println!(
        "| bug | first seed, Uniform | first seed, Pct {{ depth: 3 }} \
         | fixed, Uniform | fixed, Pct {{ depth: 3 }} |"
    );
    println!("|---|---|---|---|---|");
    for bug in BUGS {
        println!(
            "| {} | {} | {} | {} | {} |",
            bug.name,
            search_cell(bug, Strategy::Uniform),
            search_cell(bug, pct),
            fixed_cell(bug, Strategy::Uniform),
            fixed_cell(bug, pct),
        );
    }
    println!();
    println!("Seeds 0..{SEEDS}, {PROCS} virtual Ps.");
}
