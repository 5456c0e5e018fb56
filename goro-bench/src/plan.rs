//! The rows `run` and `compare` measure, and measuring them: a row is one
//! workload at one procs, with the quick op counts or not. [`plan_spec`]
//! turns a `run` selector (or `compare --full`/`--quick`) into rows,
//! [`plan_default`] gives the default compare's; [`suite`] measures the
//! planned rows with the chosen implementations and prints the table, the
//! legend and the summary, and writes the JSON and the chart.

use crate::cli::{default_procs, opts, Common};
use crate::gobench::GoBench;
use crate::harness::{self, Contender, Kind, Measurement, Opts, Ui};
use crate::{compare, registry, report};
use std::path::PathBuf;
use std::time::Instant;

/// The rows `compare --full` runs at these procs.
pub(crate) fn full_rows(reg: &[registry::Workload], procs: &[usize]) -> usize {
    reg.iter().map(|w| harness::procs_for(w, procs).len()).sum()
}

/// One planned row: a workload at a procs, with the quick op counts or not.
pub(crate) type Row<'a> = (&'a registry::Workload, usize, bool);

fn procs_of(common: &Common) -> Option<Vec<usize>> {
    common
        .procs
        .as_ref()
        .map(|v| v.iter().map(|&p| p as usize).collect())
}

/// The rows of a `run` selector (or `compare --full`/`--quick`: `all`).
pub(crate) fn plan_spec<'a>(
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
pub(crate) fn plan_default<'a>(
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

/// `run` and `compare`: the planned rows with the chosen impls.
pub(crate) fn suite(
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
    use crate::cli::COMPARE_HELP;

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
