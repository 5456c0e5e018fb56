//! The measurements as JSON (`--json FILE`): one object per measurement,
//! then the run's own object ([`RunInfo`]): the command, the CPUs and the
//! load averages at its start and end, so that several runs of one command
//! can be read with the load each saw. `RunInfo` also prints those as the
//! load lines around the table.

use crate::harness::Measurement;
use serde_json::{json, Map, Value};

/// What a command ran beside: the load averages of `/proc/loadavg` at its
/// start and end and the CPUs the process may use, so that several runs of
/// one command can be read with the load each saw (a 2-core machine with a
/// build beside it reads ±50%, BENCH_RESULTS.md).
#[derive(Clone, Debug, Default)]
pub struct RunInfo {
    /// The arguments after `goro-bench`.
    pub command: String,
    /// `available_parallelism`.
    pub cpus: usize,
    /// 1, 5 and 15 minute load averages at the start; `None` where
    /// `/proc/loadavg` cannot be read.
    pub load_start: Option<[f64; 3]>,
    /// The same at the end.
    pub load_end: Option<[f64; 3]>,
    /// Seconds from start to end.
    pub took_s: f64,
}

/// The first three fields of a `/proc/loadavg` line.
pub fn parse_loadavg(line: &str) -> Option<[f64; 3]> {
    let mut it = line.split_whitespace().map(|f| f.parse::<f64>().ok());
    Some([it.next()??, it.next()??, it.next()??])
}

/// The load averages now.
pub fn loadavg() -> Option<[f64; 3]> {
    parse_loadavg(&std::fs::read_to_string("/proc/loadavg").ok()?)
}

fn load_text(l: Option<[f64; 3]>) -> String {
    match l {
        Some([a, b, c]) => format!("{a:.2} {b:.2} {c:.2}"),
        None => "unknown".into(),
    }
}

impl RunInfo {
    /// Taken at a command's start.
    pub fn start() -> RunInfo {
        RunInfo {
            command: std::env::args().skip(1).collect::<Vec<_>>().join(" "),
            cpus: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            load_start: loadavg(),
            load_end: None,
            took_s: 0.0,
        }
    }
    /// Records the end: the load now and the time since `t0`.
    pub fn finish(&mut self, t0: std::time::Instant) {
        self.load_end = loadavg();
        self.took_s = t0.elapsed().as_secs_f64();
    }
    /// The line printed at the start.
    pub fn start_line(&self) -> String {
        format!(
            "load average at start (1, 5, 15 min): {}; {} CPUs",
            load_text(self.load_start),
            self.cpus
        )
    }
    /// The line printed at the end.
    pub fn end_line(&self) -> String {
        format!(
            "load average (1, 5, 15 min): {} at start, {} at end; {} CPUs",
            load_text(self.load_start),
            load_text(self.load_end),
            self.cpus
        )
    }
    /// The JSON object (the last element of [`json()`]'s array).
    pub fn json(&self) -> Value {
        json!({ "run": {
            "command": self.command,
            "cpus": self.cpus,
            "loadavg_start": self.load_start,
            "loadavg_end": self.load_end,
            "took_s": round2(self.took_s),
        }})
    }
}

/// One JSON object per measurement (see goro-bench/README.md): `workload`,
/// `procs`, `impl`, `ns_per_op`, `cpu_ns_per_op`, `runs`, `spread`
/// [min, max], `ops`, then the extras (medians over the runs). goro rows
/// also carry `policy` (overrides on `Policy::default()`, "" = default) and
/// ab rows a `label`. A failed contender is an object with `error`. The
/// last element is `{"run": ...}` ([`RunInfo::json`]): the command, the
/// CPUs and the load averages at its start and end.
pub fn json(all: &[Measurement], run: &RunInfo) -> Value {
    let mut arr = Vec::new();
    for m in all {
        if m.samples.is_empty() && m.error.is_none() {
            continue; // no body for this impl: the text notes say why
        }
        let mut o = Map::new();
        o.insert("workload".into(), json!(m.workload));
        o.insert("procs".into(), json!(m.procs));
        o.insert("impl".into(), json!(m.impl_name));
        if m.label != m.impl_name {
            o.insert("label".into(), json!(m.label));
        }
        if m.impl_name == "goro" {
            o.insert("policy".into(), json!(m.policy));
        }
        if !m.samples.is_empty() {
            let (lo, hi) = m.spread();
            o.insert("ns_per_op".into(), json!(round2(m.ns_per_op().unwrap())));
            o.insert(
                "cpu_ns_per_op".into(),
                json!(round2(m.cpu_per_op().unwrap())),
            );
            o.insert("runs".into(), json!(m.samples.len()));
            o.insert("spread".into(), json!([round2(lo), round2(hi)]));
            o.insert("ops".into(), json!(m.ops().round() as u64));
            for (k, v) in m.extras() {
                if !o.contains_key(&k) && v.is_finite() {
                    o.insert(k, json!(round4(v)));
                }
            }
        }
        if let Some(e) = &m.error {
            o.insert("error".into(), json!(e));
        }
        arr.push(Value::Object(o));
    }
    arr.push(run.json());
    Value::Array(arr)
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

fn round4(x: f64) -> f64 {
    if x.abs() >= 1.0 {
        round2(x)
    } else {
        (x * 1e4).round() / 1e4
    }
}

/// Writes `v` to `path`, pretty-printed.
pub fn write_json(path: &std::path::Path, v: &Value) -> Result<(), String> {
    let s = serde_json::to_string_pretty(v).map_err(|e| e.to_string())?;
    std::fs::write(path, s + "\n").map_err(|e| format!("writing {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loadavg_lines_parse_and_a_bad_one_is_none() {
        assert_eq!(
            parse_loadavg("0.53 1.13 1.52 3/104 9054\n"),
            Some([0.53, 1.13, 1.52])
        );
        assert_eq!(parse_loadavg("0.53 x 1.52"), None);
        assert_eq!(parse_loadavg(""), None);
    }

    #[test]
    fn the_json_ends_with_the_run_and_its_load() {
        let run = RunInfo {
            command: "compare --quick".into(),
            cpus: 2,
            load_start: Some([1.0, 0.5, 0.25]),
            load_end: None,
            took_s: 12.345,
        };
        let v = json(&[], &run);
        let last = v.as_array().unwrap().last().unwrap();
        assert_eq!(last["run"]["loadavg_start"], json!([1.0, 0.5, 0.25]));
        assert!(last["run"]["loadavg_end"].is_null());
        assert_eq!(last["run"]["took_s"], json!(12.35));
        assert!(run
            .end_line()
            .contains("1.00 0.50 0.25 at start, unknown at end; 2 CPUs"));
    }
}
