//! `goro-bench ab`: each seed's improvement on and off, side by side.
//!
//! For a seed, its workloads run on goro twice per row, interleaved: "old"
//! is `Policy::default()` with the seed's "before" overrides (the table of
//! goro-bench/README.md), "new" is `Policy::default()`. The output has benchstat's
//! shape: `name  old time/op  new time/op  delta`, with ± the larger
//! distance from the median to min or max, and a Mann-Whitney U p-value;
//! the delta is `~` when p > 0.05. A cpu/op table follows, then the seed's
//! own metrics (p99 for 000, timer lateness for 001, find-runnable share
//! for 002, ...).

use crate::gobench::GoBench;
use crate::harness::{self, Contender, Kind, Measurement, Opts, Ui};
use crate::registry::{self, Workload};
use crate::report::{dur, extra_value};
use crate::stats;

/// One row of the A/B table of goro-bench/README.md.
pub struct Seed {
    /// `000` .. `004`.
    pub id: &'static str,
    /// What the seed is.
    pub title: &'static str,
    /// Workload selectors (as on the command line).
    pub workloads: &'static [&'static str],
    /// The "before" policy, as overrides on `Policy::default()`.
    pub before: &'static str,
    /// Default procs (`None`: the command's default).
    pub procs: Option<&'static [usize]>,
    /// The issue that brings its workloads, for "not implemented yet".
    pub issue: &'static str,
    /// Extras worth their own table.
    pub extras: &'static [&'static str],
}

/// The seeds (goro-bench/README.md, "The seeds' A/B table").
pub const SEEDS: &[Seed] = &[
    Seed {
        id: "000",
        title: "don't burn CPU",
        workloads: &["oversub", "idle_cpu"],
        before: "spin=unbounded,snoozers=all",
        procs: None,
        issue: "sched",
        extras: &[
            "p50_ns",
            "p99_ns",
            "p999_ns",
            "cpu_ms_per_s",
            "wakeups_per_s",
        ],
    },
    Seed {
        id: "001",
        title: "per-P timers",
        workloads: &["time"],
        before: "timers=global",
        procs: Some(&[1, 2, 4]),
        issue: "timers",
        extras: &["avg_late_ns", "max_late_ns", "overhead_ratio"],
    },
    Seed {
        id: "002",
        title: "idle mask, bounded stealing",
        workloads: &["burst"],
        before: "idle_mask=false,steal_passes=4",
        // burst's rows are fixed at these procs (oversubscribed on small
        // machines: work per search, not wall time, is the measure).
        procs: Some(&[16, 64, 128]),
        issue: "sched",
        extras: &[
            "find_runnable_share",
            "steal_share",
            "inspected_per_find",
            "failed_steals_per_find",
            "finds_per_op",
            "find_cpu_share",
        ],
    },
    Seed {
        id: "003",
        title: "pool victim cache",
        workloads: &["pool_expensive_new", "pool_cycle"],
        before: "pool_victim=false",
        procs: None,
        issue: "pool",
        extras: &["new_per_op", "cycles_per_op", "p50_ns", "p95_ns"],
    },
    Seed {
        id: "004",
        title: "no thrashing",
        workloads: &["ring", "ring_buf"],
        before: "runnext_wake=eager,runnext_steal_pause=0ns",
        procs: Some(&[1, 2, 4]),
        issue: "sched",
        extras: &["steals_per_op", "runnext_steals_per_op", "wakeups_per_op"],
    },
];

fn find_seed(s: &str) -> Option<&'static Seed> {
    let s = s.trim().trim_start_matches("seed");
    let n: u32 = s.parse().ok()?;
    SEEDS.iter().find(|x| x.id.parse::<u32>().ok() == Some(n))
}

struct Plan<'a> {
    seed: &'static Seed,
    rows: Vec<(&'a Workload, usize)>,
    old: goro::Policy,
    old_spec: String,
}

/// What `ab` compares: by default a seed's "before" against
/// `Policy::default()` on the seed's workloads; each can be replaced.
#[derive(Default)]
pub struct Custom {
    /// Overrides for the "old" side instead of the seed's "before".
    pub old: Option<String>,
    /// Overrides for the "new" side (on `Policy::default()`).
    pub new: Option<String>,
    /// Workloads instead of the seed's.
    pub workloads: Option<String>,
}

/// Runs `ab`; returns the process exit code.
pub fn run(
    seed_arg: &str,
    procs: Option<Vec<usize>>,
    default_procs: &[usize],
    opts: &Opts,
    json: Option<&std::path::Path>,
    custom: &Custom,
) -> i32 {
    let new = match goro::Policy::default().with_overrides(custom.new.as_deref().unwrap_or("")) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("goro-bench ab: --new: {e}");
            return 2;
        }
    };
    let new_spec = custom.new.clone().unwrap_or_default();
    let (mut run_info, t0) = (crate::report::RunInfo::start(), std::time::Instant::now());
    let seeds: Vec<&'static Seed> = if seed_arg == "all" {
        SEEDS.iter().collect()
    } else {
        let mut v = Vec::new();
        for s in seed_arg.split(',') {
            match find_seed(s) {
                Some(x) => v.push(x),
                None => {
                    let ids: Vec<&str> = SEEDS.iter().map(|s| s.id).collect();
                    eprintln!(
                        "goro-bench ab: unknown seed '{s}'. Valid: all, {}",
                        ids.join(", ")
                    );
                    return 2;
                }
            }
        }
        v
    };
    let reg = registry::all();
    let mut plans: Vec<Plan> = Vec::new();
    let mut skipped: Vec<String> = Vec::new();
    for seed in seeds {
        let sels: Vec<&str> = match &custom.workloads {
            Some(w) => w.split(',').collect(),
            None => seed.workloads.to_vec(),
        };
        let mut ws: Vec<&Workload> = Vec::new();
        for sel in sels {
            match registry::select(&reg, sel) {
                Ok(v) => ws.extend(v),
                Err(e) if custom.workloads.is_some() => {
                    eprintln!("goro-bench ab: --workloads: {e}");
                    return 2;
                }
                Err(_) => {}
            }
        }
        if ws.is_empty() {
            skipped.push(format!(
                "seed {}: workloads not implemented yet (issue: {})",
                seed.id, seed.issue
            ));
            continue;
        }
        let old_spec = custom
            .old
            .clone()
            .unwrap_or_else(|| seed.before.to_string());
        let old = match goro::Policy::default().with_overrides(&old_spec) {
            Ok(p) => p,
            Err(e) if custom.old.is_some() => {
                eprintln!("goro-bench ab: --old: {e}");
                return 2;
            }
            Err(e) => {
                skipped.push(format!(
                    "seed {}: its \"before\" policy '{}' is not accepted by this goro ({e})",
                    seed.id, seed.before
                ));
                continue;
            }
        };
        let ps: Vec<usize> = procs.clone().unwrap_or_else(|| {
            seed.procs
                .map(<[usize]>::to_vec)
                .unwrap_or_else(|| default_procs.to_vec())
        });
        let rows = ws
            .iter()
            .flat_map(|w| harness::procs_for(w, &ps).into_iter().map(move |p| (*w, p)))
            .collect();
        plans.push(Plan {
            seed,
            rows,
            old,
            old_spec,
        });
    }
    for s in &skipped {
        println!("{s}");
    }
    if plans.is_empty() {
        return 0;
    }

    let go = GoBench {
        bin: None,
        names: Default::default(),
        note: Some("ab runs goro only".into()),
        broken: false,
    };
    // ab alone pays for find_cpu_share's clock reads (Opts::find_cpu).
    let opts = &Opts {
        find_cpu: true,
        ..opts.clone()
    };
    let n_rows: usize = plans.iter().map(|p| p.rows.len()).sum();
    let ui = Ui::new(n_rows as u64 * harness::steps(2, opts));
    let min_p = stats::min_p(opts.runs, opts.runs);
    if min_p > 0.05 {
        ui.note(&format!(
            "note: with {} runs per side the smallest possible p is {min_p:.3}, so no delta can show as significant; use --runs 5 or more",
            opts.runs
        ));
    }
    let mut all_ms: Vec<Measurement> = Vec::new();
    for plan in &plans {
        let contenders = [
            Contender {
                label: "old".into(),
                kind: Kind::Goro(plan.old.clone()),
                policy_spec: plan.old_spec.clone(),
            },
            Contender {
                label: "new".into(),
                kind: Kind::Goro(new.clone()),
                policy_spec: new_spec.clone(),
            },
        ];
        let mut rows: Vec<(String, Measurement, Measurement)> = Vec::new();
        for (w, p) in &plan.rows {
            let mut ms = harness::measure_row(w, *p, &contenders, opts, &go, &ui);
            let new = ms.pop().unwrap();
            let old = ms.pop().unwrap();
            all_ms.push(old.clone());
            all_ms.push(new.clone());
            let name = match w.fixed_procs {
                Some(_) => w.name.clone(), // burst/procs=16 says it already
                None => format!("{}/procs={p}", w.name),
            };
            rows.push((name, old, new));
        }
        let mut out = vec![
            String::new(),
            format!(
                "seed {} ({}): old = Policy::default() + {}, new = Policy::default(){}",
                plan.seed.id,
                plan.seed.title,
                plan.old_spec,
                if new_spec.is_empty() {
                    String::new()
                } else {
                    format!(" + {new_spec}")
                }
            ),
        ];
        out.extend(table("time/op", &rows, Measurement::ns_values, dur));
        out.extend(table("cpu/op", &rows, Measurement::cpu_values, dur));
        for key in plan.seed.extras {
            // A table only where the metric exists and is not zero throughout.
            let has = rows.iter().any(|(_, o, n)| {
                o.extra_values(key)
                    .iter()
                    .chain(&n.extra_values(key))
                    .any(|v| *v != 0.0)
            });
            if has {
                let k = key.to_string();
                out.extend(table(
                    key,
                    &rows,
                    move |m: &Measurement| m.extra_values(&k),
                    |v| extra_value(key, v),
                ));
            }
        }
        let mut notes: Vec<String> = Vec::new();
        for (_, o, n) in &rows {
            for m in [o, n] {
                let line = match (&m.missing, &m.error) {
                    (Some(note), _) => format!("note: {} {}: {note}", m.workload, m.label),
                    (_, Some(e)) => {
                        format!("failed: {} procs={} {}: {e}", m.workload, m.procs, m.label)
                    }
                    _ => continue,
                };
                if !notes.contains(&line) {
                    notes.push(line);
                }
            }
        }
        out.extend(notes);
        for l in out {
            ui.out(&l);
        }
    }
    ui.finish();
    // A failed run (panic, timeout, a failing Go child) was reported on its
    // own line; the exit code stays 0 so the rest of a CI job runs. Only
    // bad flags (and unwritable output files) fail the command.
    let failed = all_ms.iter().filter(|m| m.error.is_some()).count();
    if failed > 0 {
        println!("{failed} measurement(s) failed; see the lines above");
    }
    let code = 0;
    run_info.finish(t0);
    println!("{}", run_info.end_line());
    if let Some(path) = json {
        if let Err(e) = crate::report::write_json(path, &crate::report::json(&all_ms, &run_info)) {
            eprintln!("goro-bench: {e}");
            return 1;
        }
    }
    code
}

/// One benchstat-shaped table for one metric.
fn table(
    unit: &str,
    rows: &[(String, Measurement, Measurement)],
    values: impl Fn(&Measurement) -> Vec<f64>,
    fmt: impl Fn(f64) -> String,
) -> Vec<String> {
    let name_w = rows.iter().map(|r| r.0.len()).max().unwrap_or(4).max(10);
    let mut out = vec![
        String::new(),
        format!(
            "{:<name_w$}  {:>16}  {:>16}  {:>9}",
            "name",
            format!("old {unit}"),
            format!("new {unit}"),
            "delta"
        ),
    ];
    let mut logs: Vec<(f64, f64)> = Vec::new();
    for (name, old, new) in rows {
        let (a, b) = (values(old), values(new));
        if a.is_empty() || b.is_empty() {
            if old.missing.is_none() && old.error.is_none() && new.error.is_none() {
                continue; // this metric does not apply to this workload
            }
            out.push(format!(
                "{name:<name_w$}  {:>16}  {:>16}  {:>9}",
                "-", "-", "see notes"
            ));
            continue;
        }
        let (ma, mb) = (stats::median(&a), stats::median(&b));
        let cell =
            |m: f64, xs: &[f64]| format!("{} ±{:.0}%", fmt(m), stats::spread_frac(xs) * 100.0);
        let t = stats::mann_whitney(&a, &b);
        let delta = if t.p > 0.05 {
            "~".to_string()
        } else if ma != 0.0 {
            format!("{:+.2}%", (mb - ma) / ma * 100.0)
        } else {
            "-".into()
        };
        let approx = if t.exact { "" } else { "≈" };
        out.push(format!(
            "{name:<name_w$}  {:>16}  {:>16}  {delta:>9}  (p={approx}{:.3} n={}+{})",
            cell(ma, &a),
            cell(mb, &b),
            t.p,
            a.len(),
            b.len()
        ));
        if ma > 0.0 && mb > 0.0 {
            logs.push((ma.ln(), mb.ln()));
        }
    }
    if logs.len() > 1 {
        let k = logs.len() as f64;
        let ga = (logs.iter().map(|x| x.0).sum::<f64>() / k).exp();
        let gb = (logs.iter().map(|x| x.1).sum::<f64>() / k).exp();
        out.push(format!(
            "{:<name_w$}  {:>16}  {:>16}  {:>+8.2}%",
            "[Geo mean]",
            fmt(ga),
            fmt(gb),
            (gb - ga) / ga * 100.0
        ));
    }
    out
}
