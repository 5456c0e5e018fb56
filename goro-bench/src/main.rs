//! goro-bench: the same workloads on goro, tokio and Go, interleaved in one
//! run, reported as ratios (see goro-bench/README.md).
//!
//! ```text
//! goro-bench list
//! goro-bench run <workload|group>[,...] [--procs 1,2,4] [--impl goro,tokio,go] [--runs N] [--quick] [--json FILE]
//! goro-bench compare [--full | --quick] [--json FILE] [--svg FILE | --no-svg] [--procs ...]
//! goro-bench ab <seed|all> [--procs ...] [--runs N] [--quick]
//! goro-bench summarize FILE.json...
//! ```
//!
//! Layout: `registry.rs` (what a workload is, selection), `workloads/` (one
//! file per group), `rt.rs` (the runtime trait and small sync helpers),
//! `harness.rs` (interleaved, guarded runs), `gobench.rs` (the Go column),
//! `load.rs` (oversub's second copy), `netload.rs` (the net group's load
//! generator, one for every server), `stats.rs` (medians, Mann-Whitney),
//! `report.rs` (table, JSON, SVG), `compare.rs` (compare's default rows,
//! the ratio caveats, legend and summary), `ab.rs` (the seeds' A/B),
//! `summarize.rs` (the median and range over several runs' JSON).

mod ab;
mod compare;
mod gobench;
mod harness;
mod load;
mod netload;
mod registry;
mod report;
mod rt;
mod stats;
mod summarize;
mod workloads;

use clap::{Parser, Subcommand, ValueEnum};
use gobench::GoBench;
use harness::{Contender, Kind, Measurement, Opts, Ui};
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(
    name = "goro-bench",
    version,
    about = "goro vs tokio vs Go, side by side (see goro-bench/README.md)"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ImplArg {
    Goro,
    Tokio,
    Go,
}

#[derive(clap::Args, Clone)]
struct Common {
    /// Procs (goro Ps, tokio workers, GOMAXPROCS), comma-separated [default: 1,2, plus 4 on 4+ cores]
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..=4096))]
    procs: Option<Vec<u32>>,
    /// Measured runs per implementation [default: 5; default compare 7; 3 with --quick]
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000))]
    runs: Option<u32>,
    /// Smaller op counts (and 3 runs); `compare --quick` runs every
    /// workload so (about 2 minutes on 2 cores: CI's smoke test)
    #[arg(long)]
    quick: bool,
    /// Deadline of one run in seconds; a run past it is reported and abandoned.
    /// Exit status (run, compare): 1 if any run panicked, timed out or
    /// failed its check, or a runtime did not shut down; no `go` on the
    /// PATH is a warning only
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    timeout: u64,
    /// Write the measurements as JSON to FILE
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

#[derive(Subcommand)]
enum Cmd {
    /// Every workload, one line each
    List,
    /// Run workloads or groups (comma-separated; `all`, a group, a name, or a base name like `ring`)
    Run {
        /// Workloads: e.g. spawn_chain,ring or sched
        workloads: String,
        /// Implementations to run, comma-separated
        #[arg(
            long = "impl",
            value_enum,
            value_delimiter = ',',
            default_value = "goro,tokio,go"
        )]
        impls: Vec<ImplArg>,
        #[command(flatten)]
        common: Common,
    },
    /// goro against tokio and Go on a representative row set: table, legend, summary, chart
    #[command(after_help = COMPARE_HELP)]
    Compare {
        /// Every workload (about 11 minutes on 2 cores) instead of the default set
        #[arg(long, conflicts_with = "quick")]
        full: bool,
        /// Write the chart (SVG) to FILE [default: target/goro-bench/compare.svg]
        #[arg(long, value_name = "FILE", conflicts_with = "no_svg")]
        svg: Option<PathBuf>,
        /// Draw no chart
        #[arg(long)]
        no_svg: bool,
        #[command(flatten)]
        common: Common,
    },
    /// A seed's improvement on vs off on goro (Policy::default() vs its "before")
    #[command(
        after_help = "ab runs 10 times per side by default, 5 with --quick: with 3 no p-value can fall under 0.05."
    )]
    Ab {
        /// 000..004, or all
        seed: String,
        /// GORO_POLICY overrides for the "old" side instead of the seed's
        /// "before" (e.g. `runnext_wake=off`)
        #[arg(long)]
        old: Option<String>,
        /// GORO_POLICY overrides for the "new" side (default: none, i.e.
        /// `Policy::default()`)
        #[arg(long)]
        new: Option<String>,
        /// Workloads instead of the seed's (as for `run`)
        #[arg(long)]
        workloads: Option<String>,
        #[command(flatten)]
        common: Common,
    },
    /// The median and range over several `compare` (or `run`) JSON files:
    /// per group and per row, with each run's load
    #[command(
        after_help = "Give three or more runs of the same command (compare --json FILE each time); each ratio is recomputed from the file's medians with compare's rules (basis, the rows left out of the go mean)."
    )]
    Summarize {
        /// The JSON files written by --json
        #[arg(required = true)]
        files: Vec<String>,
    },
    /// (internal) the second copy of the process for `oversub`
    #[command(name = "__load", hide = true)]
    Load {
        #[arg(long)]
        workload: String,
        #[arg(long)]
        runtime: String,
        #[arg(long)]
        procs: usize,
        #[arg(long, default_value = "")]
        policy: String,
        #[arg(long)]
        quick: bool,
    },
}

const COMPARE_HELP: &str = "\
By default compare runs 27 rows, a few of each group (sched, chan, time,
pool, net), 7 runs each, in about a minute on 2 cores with the Go twins;
--full runs every workload at normal op counts, --quick every workload at
the small op counts with 3 runs. Under the table: a legend (what ratio, ±
and each extra metric mean), a summary (geometric means of goro ÷ tokio and
goro ÷ Go per group, the rows where goro loses) and the path of the chart.

Exit status: 1 when a run of any column (goro, tokio, Go) panics, times out
or fails its own check, when a row's runtime does not shut down, or when a
go toolchain is on the PATH but the twins do not build; no go toolchain is a
warning and leaves the Go column empty. The load averages at the start and
the end are printed and written into the JSON. Details: goro-bench/README.md";

fn default_procs() -> Vec<usize> {
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    if cores >= 4 {
        vec![1, 2, 4]
    } else {
        vec![1, 2]
    }
}

fn opts(c: &Common, default_runs: usize, quick_runs: usize) -> Opts {
    Opts {
        runs: c
            .runs
            .map(|r| r as usize)
            .unwrap_or(if c.quick { quick_runs } else { default_runs }),
        quick: c.quick,
        timeout: Duration::from_secs(c.timeout),
        find_cpu: false,
    }
}

fn main() {
    let cli = Cli::parse();
    harness::install_panic_hook();
    if std::env::var_os("GORO_POLICY").is_some() && !matches!(cli.cmd, Cmd::Load { .. }) {
        eprintln!("goro-bench: warning: GORO_POLICY is set and overrides every goro policy here (ab's old/new included)");
    }
    let code = match cli.cmd {
        Cmd::List => list(),
        Cmd::Run {
            workloads,
            impls,
            common,
        } => {
            let mut names: Vec<&'static str> = Vec::new();
            for i in impls {
                let n = match i {
                    ImplArg::Goro => "goro",
                    ImplArg::Tokio => "tokio",
                    ImplArg::Go => "go",
                };
                if !names.contains(&n) {
                    names.push(n);
                }
            }
            let reg = registry::all();
            match plan_spec(&reg, &workloads, &common) {
                Ok(rows) => suite(rows, &names, &common, None, 5),
                Err(e) => {
                    eprintln!("goro-bench: {e}");
                    2
                }
            }
        }
        Cmd::Compare {
            full,
            svg,
            no_svg,
            common,
        } => {
            let reg = registry::all();
            let rows = if full || common.quick {
                plan_spec(&reg, "all", &common)
            } else {
                plan_default(&reg, &common)
            };
            let chart = (!no_svg).then(|| svg.unwrap_or_else(default_svg));
            match rows {
                // The default set's rows are short (quick op counts):
                // 7 runs for a stable median, still about a minute.
                Ok(rows) => suite(
                    rows,
                    &["goro", "tokio", "go"],
                    &common,
                    chart,
                    if full { 5 } else { 7 },
                ),
                Err(e) => {
                    eprintln!("goro-bench: {e}");
                    2
                }
            }
        }
        Cmd::Ab {
            seed,
            old,
            new,
            workloads,
            common,
        } => {
            let procs = common
                .procs
                .as_ref()
                .map(|v| v.iter().map(|&p| p as usize).collect());
            ab::run(
                &seed,
                procs,
                &default_procs(),
                &opts(&common, 10, 5),
                common.json.as_deref(),
                &ab::Custom {
                    old,
                    new,
                    workloads,
                },
            )
        }
        Cmd::Summarize { files } => match summarize::lines(&files) {
            Ok(lines) => {
                for l in lines {
                    println!("{l}");
                }
                0
            }
            Err(e) => {
                eprintln!("goro-bench summarize: {e}");
                2
            }
        },
        Cmd::Load {
            workload,
            runtime,
            procs,
            policy,
            quick,
        } => load::load_main(&workload, &runtime, procs, &policy, quick),
    };
    std::process::exit(code);
}

fn list() -> i32 {
    let reg = registry::all();
    let go = GoBench::prepare();
    if let Some(n) = &go.note {
        eprintln!("{n}");
    }
    println!(
        "{:<22} {:<6} {:<5} {:>17}  {:<14} one op",
        "workload", "group", "seed", "ops normal/quick", "impls"
    );
    let mut notes: Vec<String> = Vec::new();
    for w in &reg {
        let mut impls = Vec::new();
        impls.push(if w.goro.is_ok() { "goro" } else { "-" });
        impls.push(if w.tokio.is_ok() { "tokio" } else { "-" });
        let go_missing = w
            .go_note
            .map(str::to_string)
            .or_else(|| go.missing(&w.name));
        impls.push(if go_missing.is_none() { "go" } else { "-" });
        let procs = w
            .fixed_procs
            .map(|p| format!(" (always procs={p})"))
            .unwrap_or_default();
        println!(
            "{:<22} {:<6} {:<5} {:>17}  {:<14} {}{procs}",
            w.name,
            w.group,
            w.seed.unwrap_or(""),
            format!("{}/{}", w.ops.0, w.ops.1),
            impls.join(" "),
            w.op
        );
        for n in [
            w.goro.as_ref().err().map(|e| format!("goro: {e}")),
            w.tokio.as_ref().err().map(|e| format!("tokio: {e}")),
            go_missing.filter(|_| go.note.is_none()),
        ]
        .into_iter()
        .flatten()
        {
            let line = format!("{n}: {}", w.name);
            notes.push(line);
        }
    }
    // Group the notes by reason.
    let mut by: Vec<(String, Vec<String>)> = Vec::new();
    for n in notes {
        let (why, name) = n.rsplit_once(": ").unwrap();
        match by.iter_mut().find(|(w, _)| w == why) {
            Some((_, v)) => v.push(name.to_string()),
            None => by.push((why.to_string(), vec![name.to_string()])),
        }
    }
    for (why, names) in by {
        println!("note: {why}: {}", names.join(", "));
    }
    let procs = default_procs();
    println!(
        "{} workloads; {} rows in `compare --full` at procs {} (a workload with fixed procs runs once); {} rows in the default `compare`",
        reg.len(),
        full_rows(&reg, &procs),
        procs
            .iter()
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
            .join(","),
        compare::DEFAULT.iter().map(|p| p.procs.len()).sum::<usize>(),
    );
    0
}

/// The rows `compare --full` runs at these procs.
fn full_rows(reg: &[registry::Workload], procs: &[usize]) -> usize {
    reg.iter().map(|w| harness::procs_for(w, procs).len()).sum()
}

/// One planned row: a workload at a procs, with the quick op counts or not.
type Row<'a> = (&'a registry::Workload, usize, bool);

fn procs_of(common: &Common) -> Option<Vec<usize>> {
    common
        .procs
        .as_ref()
        .map(|v| v.iter().map(|&p| p as usize).collect())
}

/// The rows of a `run` selector (or `compare --full`/`--quick`: `all`).
fn plan_spec<'a>(
    reg: &'a [registry::Workload],
    spec: &str,
    common: &Common,
) -> Result<Vec<Row<'a>>, String> {
    let ws = registry::select(reg, spec)?;
    let procs = procs_of(common).unwrap_or_else(default_procs);
    Ok(ws
        .into_iter()
        .flat_map(|w| {
            harness::procs_for(w, &procs)
                .into_iter()
                .map(move |p| (w, p, common.quick))
        })
        .collect())
}

/// The default compare's rows ([`compare::DEFAULT`]); `--procs` replaces
/// each row's procs.
fn plan_default<'a>(
    reg: &'a [registry::Workload],
    common: &Common,
) -> Result<Vec<Row<'a>>, String> {
    let procs = procs_of(common);
    let mut rows = Vec::new();
    for p in compare::DEFAULT {
        let w = reg
            .iter()
            .find(|w| w.name == p.name)
            .ok_or_else(|| format!("the default set names an unknown workload {}", p.name))?;
        let ps = match (&procs, w.fixed_procs) {
            (_, Some(f)) => vec![f],
            (Some(v), None) => v.clone(),
            (None, None) => p.procs.to_vec(),
        };
        rows.extend(ps.into_iter().map(|n| (w, n, p.quick || common.quick)));
    }
    Ok(rows)
}

/// The chart's default path: `target/goro-bench/compare.svg` of the
/// workspace the binary was built in (found from the binary's own path,
/// `target/<profile>/goro-bench`), else under `./target`.
fn default_svg() -> PathBuf {
    let target = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent()?.parent().map(|p| p.to_path_buf()))
        .filter(|t| t.file_name().is_some_and(|n| n == "target") || t.join("CACHEDIR.TAG").exists())
        .unwrap_or_else(|| PathBuf::from("target"));
    target.join("goro-bench").join("compare.svg")
}

/// `run` and `compare`: the planned rows with the chosen impls.
fn suite(
    rows: Vec<Row<'_>>,
    impls: &[&'static str],
    common: &Common,
    svg: Option<PathBuf>,
    default_runs: usize,
) -> i32 {
    let opts = opts(common, default_runs, 3);
    let go = if impls.contains(&"go") {
        let g = GoBench::prepare();
        if let Some(n) = &g.note {
            eprintln!("{n}");
        }
        g
    } else {
        GoBench {
            bin: None,
            names: Default::default(),
            note: Some("go not selected".into()),
            broken: false,
        }
    };
    let contenders: Vec<Contender> = impls
        .iter()
        .map(|&i| Contender {
            label: i.to_string(),
            kind: match i {
                "goro" => Kind::Goro(goro::Policy::default()),
                "tokio" => Kind::Tokio,
                _ => Kind::Go,
            },
            policy_spec: String::new(),
        })
        .collect();
    let ui = Ui::new(rows.len() as u64 * harness::steps(contenders.len(), &opts));
    let longest = rows
        .iter()
        .map(|(w, _, q)| w.name.chars().count() + if *q && !opts.quick { 4 } else { 0 })
        .max()
        .unwrap_or(0);
    let table = report::Table::new(impls.to_vec(), longest);
    let t0 = Instant::now();
    let mut run_info = report::RunInfo::start();
    ui.out(&run_info.start_line());
    let n_quick = rows.iter().filter(|r| r.2).count();
    ui.out(&format!(
        "goro-bench: {} rows, {} runs each{}, interleaved {}",
        rows.len(),
        opts.runs,
        if opts.quick {
            ", quick op counts".to_string()
        } else if n_quick > 0 {
            format!(", {n_quick} of them (q) with --quick's op counts")
        } else {
            String::new()
        },
        impls.join(" ")
    ));
    ui.out(&table.header());
    let mut all: Vec<Measurement> = Vec::new();
    let mut results: Vec<compare::RowResult> = Vec::new();
    let mut extras: Vec<(String, &'static str)> = Vec::new();
    for (w, p, quick) in rows {
        let row_opts = Opts {
            quick,
            ..opts.clone()
        };
        let ms = harness::measure_row(w, p, &contenders, &row_opts, &go, &ui);
        let (lines, shown) = table.row(w, p, &ms, quick && !opts.quick);
        for l in lines {
            ui.out(&l);
        }
        extras.extend(shown.into_iter().map(|k| (w.name.clone(), k)));
        results.push(compare::RowResult {
            name: w.name.clone(),
            group: w.group,
            procs: p,
            ratios: table
                .peers()
                .into_iter()
                .filter_map(|peer| compare::ratio(w, &ms, peer))
                .collect(),
        });
        all.extend(ms);
    }
    ui.finish();
    for n in report::notes(&all, go.note.as_deref()) {
        println!("{n}");
    }
    println!();
    for l in compare::legend(&results, &extras, opts.runs, n_quick > 0 && !opts.quick) {
        println!("{l}");
    }
    println!();
    for l in compare::summary(&results, &table.peers()) {
        println!("{l}");
    }
    run_info.finish(t0);
    println!("{}", run_info.end_line());
    println!("took {:.1}s", run_info.took_s);
    // A failed run (panic, timeout, a failing Go child, a runtime that did
    // not shut down) was reported on its own line and the rest of the rows
    // still ran; it fails the command, whichever column it was in: a hang
    // is what a lost wakeup looks like, and a twin that fails leaves a
    // ratio missing that the summary would not name. A toolchain that is
    // absent (no `go` on the PATH) only leaves its column empty, a warning;
    // one that is present but cannot build or list the twins fails.
    let failed = all.iter().filter(|m| m.error.is_some()).count();
    let goro_failed = all
        .iter()
        .filter(|m| m.error.is_some() && m.impl_name == "goro")
        .count();
    if failed > 0 {
        println!("{failed} measurement(s) failed ({goro_failed} of goro's); see the lines above");
    }
    let mut code = compare::exit_status(&all, go.broken);
    if go.broken {
        println!(
            "the Go twins are unusable although go is on the PATH (or GORO_BENCH_GO_BIN names one): {}",
            go.note.as_deref().unwrap_or("?")
        );
    }
    if let Some(path) = &common.json {
        match report::write_json(path, &report::json(&all, &run_info)) {
            Ok(()) => println!("wrote {}", path.display()),
            Err(e) => {
                eprintln!("goro-bench: {e}");
                code = 1;
            }
        }
    }
    if let Some(path) = &svg {
        match report::svg(path, &results) {
            Ok(()) => println!("chart: {}", path.display()),
            Err(e) => {
                eprintln!("goro-bench: svg: {e}");
                code = 1;
            }
        }
    }
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The number right after `before` in `text` (line breaks read as
    /// spaces, as the docs wrap them).
    fn number_after(text: &str, before: &str) -> Option<usize> {
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let rest = &flat[flat.find(before)? + before.len()..];
        rest.split(|c: char| !c.is_ascii_digit())
            .next()?
            .parse()
            .ok()
    }

    #[test]
    fn the_row_counts_the_docs_give_are_the_registrys() {
        let reg = registry::all();
        let full = full_rows(&reg, &[1, 2]);
        let default: usize = compare::DEFAULT.iter().map(|p| p.procs.len()).sum();
        let readme = include_str!("../../README.md");
        let bench_readme = include_str!("../README.md");
        assert_eq!(
            number_after(readme, "`compare --full` runs all "),
            Some(full),
            "README.md: `compare --full` runs all N rows (at procs 1,2 on the 2-core VM)"
        );
        assert_eq!(
            number_after(readme, "about a minute after the build ("),
            Some(default),
            "README.md: the default compare's row count"
        );
        assert_eq!(
            number_after(bench_readme, "**Default** (no flag): "),
            Some(default),
            "goro-bench/README.md: the default compare's row count"
        );
        assert_eq!(
            number_after(COMPARE_HELP, "By default compare runs "),
            Some(default),
            "COMPARE_HELP"
        );
    }
}
