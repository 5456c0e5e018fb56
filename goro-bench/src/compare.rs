//! What `compare` runs by default, the caveats that change how a row's
//! ratio reads, and the legend and summary printed with the table.
//!
//! The default row set ([`DEFAULT`]) is a few rows of each group, chosen to
//! be stable (a spread of a few percent on the 2-core VM) and to answer in
//! about a minute with the Go twins; `compare --full` runs every workload.
//! A row's ratio is goro's median over the peer's median, of wall ns/op
//! ([`Basis::Wall`]) or, for the rows in [`basis`], CPU ns/op.

use crate::harness::Measurement;
use crate::registry::Workload;
use crate::stats;

/// One entry of the default row set.
pub struct Pick {
    /// A workload name (`ring/n=10000`).
    pub name: &'static str,
    /// The procs it runs at (`--procs` replaces them).
    pub procs: &'static [usize],
    /// With `--quick`'s (10x smaller) op counts, which the Go twin shares:
    /// for the rows whose normal run takes 0.3 s or more.
    pub quick: bool,
}

const fn pick(name: &'static str, procs: &'static [usize], quick: bool) -> Pick {
    Pick { name, procs, quick }
}

/// The default `compare`: 27 rows, ~60 s with Go on the 2-core VM.
/// Each row is here because its ratio was stable across the full compares
/// of bench/results (2026-11-23/24) and it says something the others do
/// not; losses are kept (`select_uncontended` p2 vs Go, `pool*` vs tokio).
/// Left out: rows whose ns/op is fixed by design (`idle_cpu`, `spawn_busy`,
/// `wake_busy`, `timer_latency`: their extras carry the result, seconds per
/// run), `oversub/*` (a second process), and near-duplicates (`ring/n=10`
/// ... `n=1000` read alike, so do the `ring_buf` and `with_timeout` rows).
pub const DEFAULT: &[Pick] = &[
    // sched
    pick("spawn_chain", &[2], false),
    pick("spawn_many", &[2], false),
    pick("yield_many", &[2], false),
    pick("ping_pong", &[1, 2], true),
    pick("ring/n=100", &[2], true),
    pick("ring/n=10000", &[2], true),
    pick("burst/procs=16", &[16], true),
    pick("ping_pong_hog", &[2], false),
    // chan
    pick("chan_uncontended", &[2], true),
    pick("chan_contended", &[2], true),
    pick("chan_prodcons/cap=0", &[2], true),
    pick("select_uncontended", &[2], true),
    pick("select_contended", &[2], true),
    // time
    pick("after_func_1000", &[1], true),
    pick("stop", &[2], true),
    pick("reset", &[2], true),
    pick("sleep_1000", &[2], true),
    pick("simultaneous_after_func_1000", &[2], true),
    pick("ticker", &[2], true),
    pick("with_timeout/c=4000", &[2], true),
    // pool
    pick("pool", &[2], false),
    pick("pool_overflow", &[2], false),
    pick("pool_starvation", &[2], true),
    pick("pool_cycle/n=100000", &[1], true),
    // net
    pick("tcp_echo", &[2], true),
    pick("http_hello", &[2], true),
];

/// What a row's ratio divides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Basis {
    /// Median wall ns/op.
    Wall,
    /// Median CPU ns/op (user + system of the process).
    Cpu,
}

/// The rows whose ratio is of CPU ns/op: their wall time is set by design
/// or by a timer's granularity, not by the runtime's work.
///
/// - `idle_cpu`: one idle millisecond per op, whatever the runtime.
/// - `sleep_1000`, `simultaneous_after_func_1000`: 1000 timers of ~0 ns
///   armed at once, then wait for all. tokio's timer wheel rounds each
///   deadline up to its next 1 ms tick, so a round waits for the tick:
///   tokio's wall time per op was ~3.5x its CPU time (sleep_1000 procs 1:
///   1480 ns wall, 421 ns CPU; simultaneous_after_func_1000: 1482 and
///   420, full compare at c6b32c6), and a wall ratio measured the tick,
///   not the work. goro's and Go's wall and CPU agree there, so their
///   ratio changes little (sleep_1000 procs 2 vs Go: 0.74 wall, 0.75 CPU).
///   The whole row uses CPU, both peers alike.
pub fn basis(name: &str) -> Basis {
    match name {
        "idle_cpu" | "sleep_1000" | "simultaneous_after_func_1000" => Basis::Cpu,
        _ => Basis::Wall,
    }
}

/// Rows whose win over Go comes (in part) from goro's tasks being
/// stackless: many live tasks, each a few hundred bytes where a goroutine
/// has its own stack (8 KiB to start) to allocate and touch. A program that
/// does not hold thousands of tasks keeps little of such a win; tokio's
/// tasks are stackless too, so this reads on the go ratio only.
pub fn stackless(name: &str) -> bool {
    matches!(name, "spawn_many" | "ring/n=10000" | "ring_buf/n=10000")
}

/// Why a row's go ratio is not comparable (left out of the go mean).
pub fn not_comparable_go(name: &str) -> Option<&'static str> {
    (name.starts_with("pool_cycle") || name == "pool_expensive_new").then_some(
        "goro measures a caller-side pointer swap, the reclaim done later on another thread; Go measures a stop-the-world runtime.GC()",
    )
}

/// Rows where Go's twin does a different operation than goro's body under
/// the same name (marked `d`, left out of the go mean). `yield_many`:
/// `goro::yield_now` (like tokio's `yield_now`) puts the task at the tail
/// of its P's local queue, on its warm P and without a lock; Go's
/// `runtime.Gosched` puts the goroutine on the global run queue, under the
/// scheduler's lock, where a P looks only every 61st schedule or when its
/// own queue is empty. The row times two different paths, not one path done
/// better (`goro/src/sched/task/spawn.rs`, `yield_now`).
pub fn different_op_go(name: &str) -> Option<&'static str> {
    (name == "yield_many").then_some(
        "goro's yield_now requeues on its P's local queue (no lock); Go's runtime.Gosched puts the goroutine on the global run queue (the scheduler's lock)",
    )
}

/// goro over one peer in one row.
#[derive(Clone, Debug)]
pub struct Ratio {
    /// `tokio`, `go`.
    pub peer: &'static str,
    /// goro's median ÷ the peer's median.
    pub value: f64,
    /// Of wall or CPU ns/op.
    pub basis: Basis,
    /// The ratio's range over the runs: goro's fastest run ÷ the peer's
    /// slowest, and goro's slowest ÷ the peer's fastest. It holds 1.0
    /// exactly when the two run ranges overlap ([`Ratio::within_noise`]);
    /// the chart draws it as the bar's error bar.
    pub lo: f64,
    /// See [`Ratio::lo`].
    pub hi: f64,
    /// Every goro run slower than every run of the peer (`lo > 1`).
    pub slower_beyond_noise: bool,
    /// The win is (partly) from stackless tasks (go ratio only).
    pub stackless: bool,
    /// Not comparable, left out of the mean (go ratio only): `x` (the
    /// measures differ) or `d` ([`different_op_go`]).
    pub excluded: bool,
    /// Go's twin does a different operation ([`different_op_go`]).
    pub different_op: bool,
}

impl Ratio {
    /// The ratio cannot be told from 1.0: the run ranges overlap, so a
    /// value below 1 is no clean win and one above 1 no clean loss.
    pub fn within_noise(&self) -> bool {
        self.lo <= 1.0 && self.hi >= 1.0
    }
    /// The marks after the value in the table: `c` CPU basis, `s`
    /// stackless, `x` not comparable, `d` a different operation, `~`
    /// within noise.
    pub fn marks(&self) -> String {
        let mut m = String::new();
        if self.basis == Basis::Cpu {
            m.push('c');
        }
        if self.stackless {
            m.push('s');
        }
        if self.different_op {
            m.push('d');
        } else if self.excluded {
            m.push('x');
        }
        if self.within_noise() {
            m.push('~');
        }
        m
    }
    /// The table cell: `0.54`, `0.81c`, `0.13x`, `0.60~`.
    pub fn cell(&self) -> String {
        format!("{:.2}{}", self.value, self.marks())
    }
}

/// goro ÷ `peer` in a row of measurements, when both have runs.
pub fn ratio(w: &Workload, ms: &[Measurement], peer: &'static str) -> Option<Ratio> {
    let get = |i: &str| {
        ms.iter()
            .find(|m| m.impl_name == i && !m.samples.is_empty())
    };
    let (g, p) = (get("goro")?, get(peer)?);
    let b = basis(&w.name);
    let vals = |m: &Measurement| match b {
        Basis::Wall => m.ns_values(),
        Basis::Cpu => m.cpu_values(),
    };
    let (gv, pv) = (vals(g), vals(p));
    let (gm, pm) = (stats::median(&gv), stats::median(&pv));
    if pm.is_nan() || pm <= 0.0 || gm.is_nan() {
        return None;
    }
    let go = peer == "go";
    let ((gmin, gmax), (pmin, pmax)) = (stats::min_max(&gv), stats::min_max(&pv));
    let different_op = go && different_op_go(&w.name).is_some();
    Some(Ratio {
        peer,
        value: gm / pm,
        basis: b,
        lo: gmin / pmax,
        hi: if pmin > 0.0 {
            gmax / pmin
        } else {
            f64::INFINITY
        },
        slower_beyond_noise: gmin > pmax,
        stackless: go && stackless(&w.name) && gm < pm,
        excluded: go && (not_comparable_go(&w.name).is_some() || different_op),
        different_op,
    })
}

/// One row's ratios, for the summary and the chart.
#[derive(Clone, Debug)]
pub struct RowResult {
    /// Workload name.
    pub name: String,
    /// Its group.
    pub group: &'static str,
    /// Procs.
    pub procs: usize,
    /// One per peer with a result.
    pub ratios: Vec<Ratio>,
}

impl RowResult {
    /// `ring/n=100 p2`.
    pub fn label(&self) -> String {
        format!("{} p{}", self.name, self.procs)
    }
}

/// What an extra metric under a row means, for the legend. `p50_ns` and
/// friends mean different things in different groups, hence the workload.
pub fn extra_meaning(workload: &str, key: &str) -> &'static str {
    let base = workload.split('/').next().unwrap_or(workload);
    match (base, key) {
        (_, "find_runnable_share") => {
            "goro only: share of wall x procs its Ps spent looking for work (find-runnable's slow path, stealing included)"
        }
        (_, "steal_share") => "goro only: share of wall x procs spent in steal passes",
        (_, "inspected_per_find") => {
            "goro only: other Ps' run queues read per search for work (about a cache line each)"
        }
        (_, "find_cpu_share") => "goro only: CPU of the searches for work over the process's CPU",
        (_, "cpu_ms_per_s") => "CPU ms burnt per second of idleness",
        (_, "wakeups_per_s") => "voluntary context switches (thread sleeps/wakeups) per idle second",
        ("spawn_busy" | "wake_busy", "p50_ns") => {
            "median latency from spawn (wake) to the child's first poll while the spawner computes 20 ms"
        }
        ("spawn_busy" | "wake_busy", "max_ns") => "the worst such latency",
        ("oversub", "p50_ns" | "p99_ns" | "p999_ns") => "quantiles of one op's latency",
        ("pool_cycle", "p50_ns" | "p95_ns") => {
            "quantiles of one cycle's wall time as the caller sees it (goro: a pointer swap; Go: runtime.GC())"
        }
        ("tcp_echo" | "http_hello", "p50_ns" | "p99_ns" | "p999_ns") => {
            "quantiles of one request's latency at the client"
        }
        (_, "p50_ns" | "p95_ns" | "p99_ns" | "p999_ns") => "latency quantiles of one op",
        (_, "max_gap_ns") => "hog: the 1 ms sleeper's longest gap between wakeups (1 ms = perfect)",
        (_, "hog_ops_per_s") => "hog: the hog task's own iterations per second",
        (_, "avg_late_ns") => "how late a 1 ms timer armed by a busy task fired, mean",
        (_, "max_late_ns") => "the same, worst",
        (_, "overhead_ratio") => "sleep_fan: wall / ideal (100 sleeps of 1 ms); 1.0 = no overhead",
        (_, "new_per_op") => "pool_expensive_new: calls of the pool's new (a 1 ms sleep) per op",
        (_, "cycles_per_op") => "pool cycles per op",
        (_, "req_per_s") => "requests (echoed messages) per second over all connections",
        (_, "nvcsw_per_op") => {
            "voluntary context switches of the process per op: a thread that blocked in the kernel (a futex wait that slept, a park); every column"
        }
        (_, "parks_per_op") => "goro only: worker threads gone to sleep per op",
        (_, "wakeups_per_op") => "goro only: sleeping worker threads woken (or started) per op",
        (_, "spins_per_op") => {
            "goro only: spin rounds per op of threads looking for work before parking (or waiting on a busy P's lone task)"
        }
        (_, "server_cpu_ns_per_op") => {
            "CPU per op of the server alone: cpu ns/op minus the load generator's, which is the same code for every column"
        }
        _ => "a workload-specific metric (see the workload's source)",
    }
}

/// The legend printed under the table: what the columns, marks and the
/// extras that appeared mean. `extras` is (workload, key) per extra line
/// printed.
pub fn legend(
    rows: &[RowResult],
    extras: &[(String, &'static str)],
    runs: usize,
    quick_rows: bool,
) -> Vec<String> {
    let mut out = vec![
        "legend:".to_string(),
        "  ns/op      median wall time of one op over the measured runs".to_string(),
        format!(
            "  ±N%        spread of the wall ns/op over those {runs} runs (warm-up excluded): the larger distance from the median to the fastest or slowest run, as % of the median (stats::spread_frac, benchstat's ±)"
        ),
        "  !          the column's runs stopped early (failure reported below); the median is of the runs done".to_string(),
        "  goro/X     goro's median ÷ X's median: below 1 goro is faster (or cheaper); 0.50 = half the time".to_string(),
        "  cpu ns/op  median user+system CPU per op of the process running the workload (all its threads; net rows: the load generator's too)".to_string(),
    ];
    let any = |f: &dyn Fn(&Ratio) -> bool| rows.iter().flat_map(|r| &r.ratios).any(f);
    if any(&|r| r.basis == Basis::Cpu) {
        out.push("  c          ratio of CPU ns/op instead of wall, for both peers: the row's wall time is set by design (idle_cpu) or by tokio's 1 ms timer tick (sleep_1000, simultaneous_after_func_1000: tokio's wall is ~3x its CPU)".to_string());
    }
    if any(&|r| r.stackless) {
        out.push("  s          the win over Go is partly from stackless tasks (thousands of live tasks, no 8 KiB stack each); a program with few tasks keeps little of it".to_string());
    }
    if any(&|r| r.excluded && !r.different_op) {
        out.push("  x          not comparable with Go (pool cycles: goro measures a caller-side pointer swap, the reclaim done later on another thread; Go a stop-the-world runtime.GC()); left out of the mean".to_string());
    }
    if any(&|r| r.different_op) {
        out.push("  d          a different operation on Go's side (yield_many: goro's yield_now, like tokio's, requeues the task on its P's local queue without a lock; Go's runtime.Gosched puts it on the global run queue under the scheduler's lock); left out of the go mean".to_string());
    }
    if any(&|r| r.within_noise()) {
        out.push("  ~          within noise: the ratio's range over the runs (goro's fastest ÷ the peer's slowest .. goro's slowest ÷ the peer's fastest; the chart's error bar) holds 1.0, i.e. the run ranges overlap: a ratio below 1 so marked is no clean win, one above 1 no clean loss".to_string());
    }
    if rows
        .iter()
        .any(|r| r.procs == 1 && r.ratios.iter().any(|x| x.peer == "tokio"))
    {
        out.push("  tokio p1   tokio at procs 1 is its multi-thread runtime with one worker thread (worker_threads(1)), never current_thread: the body is spawned onto the worker (fan_in/main, fan_in/local: polled by block_on on the calling thread beside it)".to_string());
    }
    if quick_rows {
        out.push(
            "  (q)        the row ran with --quick's op counts (10x fewer ops per run; Go's twin too)"
                .to_string(),
        );
    }
    // Extras: the keys that mean one thing on one line.
    let mut seen: Vec<(&'static str, Vec<&'static str>)> = Vec::new();
    for (w, key) in extras {
        let meaning = extra_meaning(w, key);
        match seen.iter_mut().find(|(m, _)| *m == meaning) {
            Some((_, keys)) => {
                if !keys.contains(key) {
                    keys.push(key)
                }
            }
            None => seen.push((meaning, vec![key])),
        }
    }
    if !seen.is_empty() {
        out.push("  extra metrics under a row (medians over the runs):".to_string());
    }
    for (meaning, keys) in seen {
        out.push(format!("    {}: {meaning}", keys.join(", ")));
    }
    out
}

/// The exit status of `run` and `compare`: 1 when any measurement failed,
/// whichever column (a panic, a timeout, a failed check, a failing Go child,
/// a runtime that did not shut down), or when a go toolchain is present but
/// the twins are unusable (`go_broken`); else 0. A column that is only
/// missing (no `go` on the PATH, no twin for a row) is a warning.
pub fn exit_status(all: &[Measurement], go_broken: bool) -> i32 {
    i32::from(go_broken || all.iter().any(|m| m.error.is_some()))
}

/// Geometric mean; NaN when empty.
pub fn geomean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    (xs.iter().map(|x| x.ln()).sum::<f64>() / xs.len() as f64).exp()
}

/// The summary: per group and overall, the geometric mean of goro ÷ each
/// peer; then the rows where goro loses, the stackless wins and the rows
/// left out.
pub fn summary(rows: &[RowResult], peers: &[&'static str]) -> Vec<String> {
    let peers: Vec<&'static str> = peers
        .iter()
        .copied()
        .filter(|p| rows.iter().any(|r| r.ratios.iter().any(|x| x.peer == *p)))
        .collect();
    if peers.is_empty() {
        return Vec::new();
    }
    let mut out = vec![
        "summary: geometric mean of goro ÷ peer per group (below 1 = goro faster); rows in ()"
            .to_string(),
    ];
    let mut groups: Vec<&'static str> = rows.iter().map(|r| r.group).collect();
    groups.dedup();
    let mean_of = |it: &mut dyn Iterator<Item = &RowResult>, peer: &str| {
        let v: Vec<f64> = it
            .flat_map(|r| &r.ratios)
            .filter(|x| x.peer == peer && !x.excluded)
            .map(|x| x.value)
            .collect();
        (geomean(&v), v.len())
    };
    let cell = |(m, n): (f64, usize)| {
        if n == 0 {
            format!("{:>12}", "-")
        } else {
            format!("{:>12}", format!("{m:.2} ({n})"))
        }
    };
    let mut head = format!("  {:<8}", "group");
    for p in &peers {
        head += &format!("{:>12}", format!("vs {p}"));
    }
    out.push(head);
    for g in groups.iter().chain(std::iter::once(&"all")) {
        let mut line = format!("  {g:<8}");
        for p in &peers {
            let m = mean_of(&mut rows.iter().filter(|r| *g == "all" || r.group == *g), p);
            line += &cell(m);
        }
        out.push(line);
    }
    let list = |pred: &dyn Fn(&Ratio) -> bool| -> Vec<String> {
        rows.iter()
            .flat_map(|r| {
                r.ratios
                    .iter()
                    .filter(|x| pred(x))
                    .map(move |x| format!("{} vs {} {:.2}", r.label(), x.peer, x.value))
            })
            .collect()
    };
    if peers.contains(&"go") {
        let stackless: Vec<&RowResult> = rows
            .iter()
            .filter(|r| r.ratios.iter().any(|x| x.stackless))
            .collect();
        if !stackless.is_empty() {
            let (m, n) = mean_of(
                &mut rows
                    .iter()
                    .filter(|r| !r.ratios.iter().any(|x| x.stackless)),
                "go",
            );
            out.push(format!(
                "  vs go without the stackless wins (s): {m:.2} ({n}); those rows: {}",
                list(&|x| x.stackless).join(", ")
            ));
        }
        let excluded = list(&|x| x.excluded);
        if !excluded.is_empty() {
            out.push(format!(
                "  left out of the go mean, not comparable (x) or a different operation (d): {}",
                excluded.join(", ")
            ));
        }
    }
    for p in &peers {
        let count = |pred: &dyn Fn(&Ratio) -> bool| {
            rows.iter()
                .flat_map(|r| &r.ratios)
                .filter(|x| x.peer == *p && !x.excluded && pred(x))
                .count()
        };
        out.push(format!(
            "  vs {p}: goro faster beyond noise in {}, slower beyond noise in {}, within noise (~) in {} rows",
            count(&|x| !x.within_noise() && x.value < 1.0),
            count(&|x| !x.within_noise() && x.value > 1.0),
            count(&|x| x.within_noise()),
        ));
    }
    let lose = list(&|x| x.value > 1.0 && x.slower_beyond_noise && !x.excluded);
    out.push(if lose.is_empty() {
        "  goro slower beyond noise: none".to_string()
    } else {
        format!(
            "  goro slower beyond noise (every goro run slower than every peer run): {}",
            lose.join(", ")
        )
    });
    let close = list(&|x| x.value > 1.0 && !x.slower_beyond_noise && !x.excluded);
    if !close.is_empty() {
        out.push(format!(
            "  goro slower within noise (run ranges overlap): {}",
            close.join(", ")
        ));
    }
    let unclear = list(&|x| x.value <= 1.0 && x.within_noise() && !x.excluded);
    if !unclear.is_empty() {
        out.push(format!(
            "  goro faster within noise (run ranges overlap, no clean win): {}",
            unclear.join(", ")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_rows_exist() {
        let reg = crate::registry::all();
        for p in DEFAULT {
            assert!(
                reg.iter().any(|w| w.name == p.name),
                "{} is not a workload",
                p.name
            );
        }
    }

    #[test]
    fn caveats() {
        assert_eq!(basis("sleep_1000"), Basis::Cpu);
        assert_eq!(basis("simultaneous_after_func_1000"), Basis::Cpu);
        assert_eq!(basis("ring/n=100"), Basis::Wall);
        assert!(stackless("ring/n=10000") && !stackless("ring/n=100"));
        assert!(not_comparable_go("pool_cycle/n=1000").is_some());
        assert!(not_comparable_go("pool_expensive_new").is_some());
        assert!(not_comparable_go("pool").is_none());
    }

    #[test]
    fn excluded_rows_stay_out_of_the_go_mean() {
        let mut x = row("pool", "go", 0.01, false);
        x.ratios[0].excluded = true;
        let rows = vec![row("pool", "go", 0.5, false), x];
        let s = summary(&rows, &["go"]).join("\n");
        assert!(s.contains("0.50 (1)"), "{s}");
        assert!(
            s.contains("not comparable (x) or a different operation (d): pool_w p1 vs go 0.01"),
            "{s}"
        );
    }

    #[test]
    fn geomean_of_inverse_pairs_is_one() {
        assert!((geomean(&[0.5, 2.0]) - 1.0).abs() < 1e-12);
        assert!(geomean(&[]).is_nan());
    }

    /// A row whose ratio is `v`: beyond noise (the range a tenth around
    /// `v`, away from 1.0) when `clear`, else a range holding 1.0.
    fn row(group: &'static str, peer: &'static str, v: f64, clear: bool) -> RowResult {
        let (lo, hi) = if clear {
            (v * 0.95, v * 1.05)
        } else {
            (v.min(1.0) * 0.9, v.max(1.0) * 1.1)
        };
        RowResult {
            name: format!("{group}_w"),
            group,
            procs: 1,
            ratios: vec![Ratio {
                peer,
                value: v,
                basis: Basis::Wall,
                lo,
                hi,
                slower_beyond_noise: lo > 1.0,
                stackless: false,
                excluded: false,
                different_op: false,
            }],
        }
    }

    #[test]
    fn summary_names_losses() {
        let rows = vec![
            row("sched", "go", 0.5, false),
            row("pool", "go", 1.5, true),
            row("chan", "go", 1.1, false),
        ];
        let s = summary(&rows, &["tokio", "go"]).join("\n");
        assert!(
            s.contains(
                "beyond noise (every goro run slower than every peer run): pool_w p1 vs go 1.50"
            ),
            "{s}"
        );
        assert!(
            s.contains("within noise (run ranges overlap): chan_w p1 vs go 1.10"),
            "{s}"
        );
        assert!(!s.contains("vs tokio"), "{s}");
        assert!(
            s.contains(
                "faster within noise (run ranges overlap, no clean win): sched_w p1 vs go 0.50"
            ),
            "{s}"
        );
        assert!(
            s.contains("vs go: goro faster beyond noise in 0, slower beyond noise in 1, within noise (~) in 2 rows"),
            "{s}"
        );
    }

    /// One measurement of `imp` with these wall ns/op per run (one op each).
    fn meas(workload: &str, procs: usize, imp: &'static str, ns: &[u64]) -> Measurement {
        Measurement {
            workload: workload.into(),
            procs,
            label: imp.into(),
            impl_name: imp,
            policy: String::new(),
            samples: ns
                .iter()
                .map(|&n| crate::harness::Sample {
                    ops: 1,
                    wall_ns: n,
                    cpu_ns: n,
                    extra: Vec::new(),
                })
                .collect(),
            missing: None,
            error: None,
        }
    }

    #[test]
    fn a_win_whose_runs_overlap_the_peers_is_marked_within_noise() {
        // spawn_chain 0.60 ±80%: the median is well below the peer's, but
        // goro's slowest run is slower than the peer's fastest.
        let w = Workload::new("spawn_chain", "sched", "op", (1, 1));
        let ms = [
            meas("spawn_chain", 2, "goro", &[40, 60, 108]),
            meas("spawn_chain", 2, "go", &[95, 100, 105]),
        ];
        let r = ratio(&w, &ms, "go").unwrap();
        assert!((r.value - 0.60).abs() < 1e-9, "{r:?}");
        assert!(r.within_noise() && !r.slower_beyond_noise, "{r:?}");
        assert_eq!(r.cell(), "0.60~");
        assert!((r.lo - 40.0 / 105.0).abs() < 1e-9 && (r.hi - 108.0 / 95.0).abs() < 1e-9);
        // Every goro run faster than every peer run: a clean win.
        let ms = [
            meas("spawn_chain", 2, "goro", &[55, 60, 65]),
            meas("spawn_chain", 2, "go", &[95, 100, 105]),
        ];
        let r = ratio(&w, &ms, "go").unwrap();
        assert!(!r.within_noise(), "{r:?}");
        assert_eq!(r.cell(), "0.60");
    }

    #[test]
    fn any_failed_column_fails_the_command_and_a_missing_go_does_not() {
        let ok = meas("ring/n=100", 2, "goro", &[1, 2, 3]);
        let mut tokio_failed = meas("ring/n=100", 2, "tokio", &[1]);
        tokio_failed.error = Some("panicked: boom".into());
        let mut go_failed = meas("ring/n=100", 2, "go", &[]);
        go_failed.error = Some("exit status 2".into());
        let mut go_missing = meas("ring/n=100", 2, "go", &[]);
        go_missing.missing = Some("go: not on PATH; the go column is left empty".into());
        let mut goro_hung = meas("ring/n=100", 2, "goro", &[1, 2, 3]);
        goro_hung.error = Some("shutting the runtime down: timed out after 20s".into());
        assert_eq!(exit_status(&[ok.clone(), go_missing.clone()], false), 0);
        assert_eq!(exit_status(&[ok.clone(), tokio_failed], false), 1);
        assert_eq!(exit_status(&[ok.clone(), go_failed], false), 1);
        assert_eq!(exit_status(&[goro_hung, go_missing.clone()], false), 1);
        // go on the PATH but bench/go does not build: every go column is
        // only "missing", and the command still fails.
        assert_eq!(exit_status(&[ok, go_missing], true), 1);
    }

    #[test]
    fn yield_many_against_go_is_a_different_operation_left_out_of_the_mean() {
        let w = Workload::new("yield_many", "sched", "op", (1, 1));
        let ms = [
            meas("yield_many", 2, "goro", &[10, 10, 10]),
            meas("yield_many", 2, "tokio", &[40, 40, 40]),
            meas("yield_many", 2, "go", &[50, 50, 50]),
        ];
        let go = ratio(&w, &ms, "go").unwrap();
        assert!(go.different_op && go.excluded, "{go:?}");
        assert_eq!(go.cell(), "0.20d");
        let tokio = ratio(&w, &ms, "tokio").unwrap();
        assert!(!tokio.different_op && !tokio.excluded, "{tokio:?}");
        let rows = vec![RowResult {
            name: w.name.clone(),
            group: "sched",
            procs: 1,
            ratios: vec![go, tokio],
        }];
        let s = summary(&rows, &["go", "tokio"]).join("\n");
        assert!(
            s.contains("a different operation (d): yield_many p1 vs go 0.20"),
            "{s}"
        );
        let l = legend(&rows, &[], 3, false).join("\n");
        assert!(l.contains("  d  ") && l.contains("runtime.Gosched"), "{l}");
        assert!(
            l.contains("tokio p1") && l.contains("never current_thread"),
            "{l}"
        );
    }
}
