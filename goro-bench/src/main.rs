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
//! Layout: `cli.rs` (the command line), `plan.rs` (the rows `run` and
//! `compare` measure, and measuring them), `registry.rs` (what a workload
//! is, selection), `workloads/` (one file per group), `rt.rs` (the runtime
//! trait and small sync helpers), `harness.rs` and `harness/` (interleaved,
//! guarded runs), `gobench.rs` (the Go column), `load.rs` (oversub's second
//! copy), `netload.rs` (the net group's load generator, one for every
//! server), `stats.rs` (medians, Mann-Whitney), `report.rs` and `report/`
//! (table, JSON, SVG), `compare.rs` (compare's default rows, the ratio
//! caveats, legend and summary), `ab.rs` (the seeds' A/B), `summarize.rs`
//! (the median and range over several runs' JSON).

mod ab;
mod cli;
mod compare;
mod gobench;
mod harness;
mod load;
mod netload;
mod plan;
mod registry;
mod report;
mod rt;
mod stats;
mod summarize;
mod workloads;

use clap::Parser;
use cli::{default_procs, default_svg, opts, Cli, Cmd, ImplArg};
use gobench::GoBench;
use plan::{full_rows, plan_default, plan_spec, suite};

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
