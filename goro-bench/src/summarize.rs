//! `goro-bench summarize FILE.json...`: several `compare` (or `run`) JSON
//! files read as one result, the median and the range (min–max) over the
//! runs of each group's geometric mean and of each row's ratio, with the
//! load each run saw.
//!
//! One compare on the shared 2-core VM moves a row's ratio by a third
//! (goro-bench/README.md, "compare"); a headline number is the median of
//! three or more runs, given with its range and the load averages of each
//! run (the JSON's last element, `run`; files from before goro-bench
//! recorded the load have none). The ratios are recomputed from each
//! file's medians with `compare`'s rules: the same basis per row (wall or
//! CPU ns/op, `compare::basis`) and the same rows left out of the go mean
//! (`x`, `d`). The run-to-run spread of a file's own runs is not in its
//! JSON beyond `spread`, so no `~` here: the range over the files is the
//! noise this reports.

use crate::compare::{self, Basis};
use crate::report;
use crate::stats;
use serde_json::Value;
use std::collections::BTreeMap;

/// One file's ratios: (workload, procs, peer) → goro ÷ peer, and its run
/// line.
struct File {
    name: String,
    ratios: BTreeMap<(String, usize, &'static str), f64>,
    run: Option<String>,
}

fn load_text(v: &Value) -> String {
    match v.as_array() {
        Some(a) if a.len() == 3 => a
            .iter()
            .map(|x| x.as_f64().map(|f| format!("{f:.2}")).unwrap_or("?".into()))
            .collect::<Vec<_>>()
            .join(" "),
        _ => "unknown".into(),
    }
}

fn read(path: &str) -> Result<File, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("reading {path}: {e}"))?;
    let v: Value = serde_json::from_str(&text).map_err(|e| format!("{path}: {e}"))?;
    let arr = v
        .as_array()
        .ok_or(format!("{path}: not a goro-bench JSON array"))?;
    // (workload, procs) → impl → (wall, cpu) medians.
    let mut cells: BTreeMap<(String, usize), BTreeMap<String, (f64, f64)>> = BTreeMap::new();
    let mut run = None;
    for o in arr {
        if let Some(r) = o.get("run") {
            run = Some(format!(
                "load {} at start, {} at end; {} CPUs; took {} s; goro-bench {}",
                load_text(&r["loadavg_start"]),
                load_text(&r["loadavg_end"]),
                r["cpus"],
                r["took_s"],
                r["command"].as_str().unwrap_or("?")
            ));
            continue;
        }
        let (Some(w), Some(p), Some(i)) = (
            o["workload"].as_str(),
            o["procs"].as_u64(),
            o["impl"].as_str(),
        ) else {
            continue;
        };
        if o.get("label").is_some() {
            continue; // an `ab` side, not a column of compare
        }
        if let (Some(ns), Some(cpu)) = (o["ns_per_op"].as_f64(), o["cpu_ns_per_op"].as_f64()) {
            cells
                .entry((w.to_string(), p as usize))
                .or_default()
                .insert(i.to_string(), (ns, cpu));
        }
    }
    let mut ratios = BTreeMap::new();
    for ((w, p), impls) in &cells {
        let Some(g) = impls.get("goro") else { continue };
        for peer in ["go", "tokio"] {
            let Some(x) = impls.get(peer) else { continue };
            let (num, den) = match compare::basis(w) {
                Basis::Wall => (g.0, x.0),
                Basis::Cpu => (g.1, x.1),
            };
            if den > 0.0 && num.is_finite() {
                ratios.insert((w.clone(), *p, peer), num / den);
            }
        }
    }
    Ok(File {
        name: path.to_string(),
        ratios,
        run,
    })
}

/// Left out of a group's go mean, as in `compare`'s summary.
fn excluded(workload: &str, peer: &str) -> bool {
    peer == "go"
        && (compare::not_comparable_go(workload).is_some()
            || compare::different_op_go(workload).is_some())
}

/// `0.48 (0.45–0.52)`: the median and the range of `xs`.
fn median_range(xs: &[f64]) -> String {
    if xs.is_empty() {
        return "-".into();
    }
    let (lo, hi) = stats::min_max(xs);
    format!("{:.2} ({lo:.2}–{hi:.2})", stats::median(xs))
}

/// The summary's lines for these files.
pub fn lines(paths: &[String]) -> Result<Vec<String>, String> {
    let files: Vec<File> = paths.iter().map(|p| read(p)).collect::<Result<_, _>>()?;
    let reg = crate::registry::all();
    let group_of = |w: &str| {
        reg.iter()
            .find(|x| x.name == w)
            .map(|x| x.group)
            .unwrap_or("?")
    };
    let mut out = vec![format!(
        "summary of {} runs: the median over the runs, (min–max), [rows in each run's mean]",
        files.len()
    )];
    for (i, f) in files.iter().enumerate() {
        out.push(format!(
            "  run {}: {}: {}",
            i + 1,
            f.name,
            f.run
                .as_deref()
                .unwrap_or("no load recorded (a file written before goro-bench recorded the load)")
        ));
    }
    let mut groups: Vec<&'static str> = Vec::new();
    for f in &files {
        for (w, _, _) in f.ratios.keys() {
            let g = group_of(w);
            if !groups.contains(&g) {
                groups.push(g);
            }
        }
    }
    let peers: Vec<&str> = ["go", "tokio"]
        .into_iter()
        .filter(|p| files.iter().any(|f| f.ratios.keys().any(|k| k.2 == *p)))
        .collect();
    let mut head = format!("  {:<8}", "group");
    for p in &peers {
        head += &format!("  {:<28}", format!("goro ÷ {p}"));
    }
    out.push(head.trim_end().to_string());
    for g in groups.iter().copied().chain(std::iter::once("all")) {
        let mut line = format!("  {g:<8}");
        for p in &peers {
            let mut means = Vec::new();
            let mut counts = Vec::new();
            for f in &files {
                let v: Vec<f64> = f
                    .ratios
                    .iter()
                    .filter(|((w, _, peer), _)| {
                        peer == p && !excluded(w, p) && (g == "all" || group_of(w) == g)
                    })
                    .map(|(_, r)| *r)
                    .collect();
                if !v.is_empty() {
                    counts.push(v.len());
                    means.push(compare::geomean(&v));
                }
            }
            counts.dedup();
            let n = counts
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join("/");
            line += &format!("  {:<28}", format!("{} [{n}]", median_range(&means)));
        }
        out.push(line.trim_end().to_string());
    }
    out.push("  per row (x, d: left out of the go mean):".into());
    let mut keys: Vec<(String, usize)> = Vec::new();
    for f in &files {
        for (w, p, _) in f.ratios.keys() {
            if !keys.contains(&(w.clone(), *p)) {
                keys.push((w.clone(), *p));
            }
        }
    }
    for (w, p) in keys {
        let mut line = format!("    {:<34}", format!("{w} p{p}"));
        for peer in &peers {
            let v: Vec<f64> = files
                .iter()
                .filter_map(|f| f.ratios.get(&(w.clone(), p, *peer)).copied())
                .collect();
            let mark = if excluded(&w, peer) {
                if compare::different_op_go(&w).is_some() {
                    " d"
                } else {
                    " x"
                }
            } else {
                ""
            };
            line += &format!("  {:<28}", format!("{peer} {}{mark}", median_range(&v)));
        }
        out.push(line.trim_end().to_string());
    }
    out.push(format!(
        "  the load now: {}",
        report::loadavg()
            .map(|l| format!("{:.2} {:.2} {:.2}", l[0], l[1], l[2]))
            .unwrap_or("unknown".into())
    ));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_runs_give_the_median_and_range_of_each_group_and_row() {
        let dir = std::env::temp_dir();
        let mut paths = Vec::new();
        for (i, (goro, go)) in [(50.0, 100.0), (60.0, 100.0), (90.0, 100.0)]
            .iter()
            .enumerate()
        {
            let v = serde_json::json!([
                {"workload": "ring/n=100", "procs": 2, "impl": "goro", "ns_per_op": goro, "cpu_ns_per_op": goro},
                {"workload": "ring/n=100", "procs": 2, "impl": "go", "ns_per_op": go, "cpu_ns_per_op": go},
                {"workload": "yield_many", "procs": 2, "impl": "goro", "ns_per_op": 10.0, "cpu_ns_per_op": 10.0},
                {"workload": "yield_many", "procs": 2, "impl": "go", "ns_per_op": 50.0, "cpu_ns_per_op": 50.0},
                {"run": {"command": "compare", "cpus": 2, "loadavg_start": [1.0, 1.0, 1.0], "loadavg_end": [2.0, 1.5, 1.0], "took_s": 40.0}}
            ]);
            let p = dir.join(format!(
                "goro-bench-summarize-{}-{i}.json",
                std::process::id()
            ));
            std::fs::write(&p, v.to_string()).unwrap();
            paths.push(p.to_string_lossy().into_owned());
        }
        let out = lines(&paths).unwrap().join("\n");
        for p in &paths {
            let _ = std::fs::remove_file(p);
        }
        // The sched group holds only ring (yield_many vs go is `d`).
        assert!(out.contains("sched     0.60 (0.50–0.90) [1]"), "{out}");
        assert!(out.contains("ring/n=100 p2"), "{out}");
        assert!(out.contains("go 0.20 (0.20–0.20) d"), "{out}");
        assert!(
            out.contains("load 1.00 1.00 1.00 at start, 2.00 1.50 1.00 at end"),
            "{out}"
        );
    }
}
