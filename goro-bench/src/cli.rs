//! The command line of goro-bench (clap's derive): the commands ([`Cmd`]),
//! the options every measuring command shares ([`Common`]), and their
//! defaults as the commands read them: [`opts`] (runs, op counts,
//! deadline), [`default_procs`] and [`default_svg`].

use crate::harness::Opts;
use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Parser)]
#[command(
    name = "goro-bench",
    version,
    about = "goro vs tokio vs Go, side by side (see goro-bench/README.md)"
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) cmd: Cmd,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum ImplArg {
    Goro,
    Tokio,
    Go,
}

#[derive(clap::Args, Clone)]
pub(crate) struct Common {
    /// Procs (goro Ps, tokio workers, GOMAXPROCS), comma-separated [default: 1,2, plus 4 on 4+ cores]
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub(crate) procs: Option<Vec<u32>>,
    /// Measured runs per implementation [default: 5; default compare 7; 3 with --quick]
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(crate) runs: Option<u32>,
    /// Smaller op counts (and 3 runs); `compare --quick` runs every
    /// workload so (about 2 minutes on 2 cores: CI's smoke test)
    #[arg(long)]
    pub(crate) quick: bool,
    /// Deadline of one run in seconds; a run past it is reported and abandoned.
    /// Exit status (run, compare): 1 if any run panicked, timed out or
    /// failed its check, or a runtime did not shut down; no `go` on the
    /// PATH is a warning only
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) timeout: u64,
    /// Write the measurements as JSON to FILE
    #[arg(long, value_name = "FILE")]
    pub(crate) json: Option<PathBuf>,
}

#[derive(Subcommand)]
pub(crate) enum Cmd {
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

pub(crate) const COMPARE_HELP: &str = "\
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

pub(crate) fn default_procs() -> Vec<usize> {
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    if cores >= 4 {
        vec![1, 2, 4]
    } else {
        vec![1, 2]
    }
}

pub(crate) fn opts(c: &Common, default_runs: usize, quick_runs: usize) -> Opts {
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

/// The chart's default path: `target/goro-bench/compare.svg` of the
/// workspace the binary was built in (found from the binary's own path,
/// `target/<profile>/goro-bench`), else under `./target`.
pub(crate) fn default_svg() -> PathBuf {
    let target = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent()?.parent().map(|p| p.to_path_buf()))
        .filter(|t| t.file_name().is_some_and(|n| n == "target") || t.join("CACHEDIR.TAG").exists())
        .unwrap_or_else(|| PathBuf::from("target"));
    target.join("goro-bench").join("compare.svg")
}
