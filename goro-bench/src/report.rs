//! The ratio table of `run`/`compare`, its JSON, and the SVG chart.

use crate::compare::{Ratio, RowResult};
use crate::harness::Measurement;
use crate::registry::Workload;
use serde_json::{json, Map, Value};

/// Formats a ns/op (or any positive) value with about four digits.
pub fn num(x: f64) -> String {
    if !x.is_finite() {
        "-".into()
    } else if x >= 100_000.0 {
        format!("{x:.0}")
    } else if x >= 100.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

/// A duration in ns as benchstat prints it (`312ns`, `1.23µs`, `4.56ms`).
pub fn dur(ns: f64) -> String {
    if !ns.is_finite() {
        "-".into()
    } else if ns < 1e3 {
        format!("{}ns", sig(ns))
    } else if ns < 1e6 {
        format!("{}µs", sig(ns / 1e3))
    } else if ns < 1e9 {
        format!("{}ms", sig(ns / 1e6))
    } else {
        format!("{}s", sig(ns / 1e9))
    }
}

/// About three significant digits (`312`, `45.6`, `1.23`, `0.00431`).
fn sig(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let digits = (2 - x.abs().log10().floor() as i32).clamp(0, 9) as usize;
    format!("{x:.digits$}")
}

/// An extra's value for humans: `_share` as a percentage, `_ns` as a duration.
pub fn extra_value(key: &str, v: f64) -> String {
    if key.ends_with("_share") {
        format!("{}%", sig(v * 100.0))
    } else if key.ends_with("_ns") {
        dur(v)
    } else {
        sig(v)
    }
}

/// The streamed table: a header, then a line (or a few) per row.
pub struct Table {
    impls: Vec<&'static str>,
    /// Width of the workload column: the longest name printed.
    name_w: usize,
}

const NAME_W: usize = 20;
const COL_W: usize = 13;

impl Table {
    /// A table over these implementations, in this order, whose longest
    /// workload cell (name and any ` (q)`) is `longest` characters.
    pub fn new(impls: Vec<&'static str>, longest: usize) -> Table {
        Table {
            impls,
            name_w: longest.max(NAME_W),
        }
    }

    fn has(&self, i: &str) -> bool {
        self.impls.contains(&i)
    }

    /// The peers goro is divided by, in column order.
    pub fn peers(&self) -> Vec<&'static str> {
        ["go", "tokio"]
            .into_iter()
            .filter(|p| self.has("goro") && self.has(p))
            .collect()
    }

    /// The header lines.
    pub fn header(&self) -> String {
        let w = self.name_w;
        let mut s = format!("{:<w$} {:>5}", "workload", "procs");
        for i in &self.impls {
            s += &format!(" {:>COL_W$}", format!("{i} ns/op"));
        }
        for p in self.peers() {
            s += &format!(" {:>10}", format!("goro/{p}"));
        }
        s += &format!("   cpu ns/op ({})", self.impls.join(" / "));
        let rule = "-".repeat(s.chars().count());
        format!("{s}\n{rule}")
    }

    /// The row line for `ms` (one measurement per implementation), plus one
    /// line per extra the workload shows; `quick` marks a row run with the
    /// quick op counts in a run that is not `--quick`. Returns the lines and
    /// the extras printed.
    pub fn row(
        &self,
        w: &Workload,
        procs: usize,
        ms: &[Measurement],
        quick: bool,
    ) -> (Vec<String>, Vec<&'static str>) {
        let get = |i: &str| ms.iter().find(|m| m.impl_name == i);
        let name = if quick {
            format!("{} (q)", w.name)
        } else {
            w.name.clone()
        };
        let nw = self.name_w;
        let mut s = format!("{name:<nw$} {procs:>5}");
        for i in &self.impls {
            let cell = match get(i) {
                Some(m) if !m.samples.is_empty() => {
                    let bang = if m.error.is_some() { "!" } else { "" };
                    format!(
                        "{}{bang} ±{:.0}%",
                        num(m.ns_per_op().unwrap()),
                        m.spread_frac() * 100.0
                    )
                }
                Some(m) if m.error.is_some() => "failed".into(),
                _ => "-".into(),
            };
            s += &format!(" {cell:>COL_W$}");
        }
        for p in self.peers() {
            let cell = crate::compare::ratio(w, ms, p)
                .map(|r| r.cell())
                .unwrap_or_else(|| "-".into());
            s += &format!(" {cell:>10}");
        }
        let cpu: Vec<String> = self
            .impls
            .iter()
            .map(|i| {
                get(i)
                    .and_then(Measurement::cpu_per_op)
                    .map(num)
                    .unwrap_or("-".into())
            })
            .collect();
        s += &format!("   {}", cpu.join(" / "));
        let mut lines = vec![s];
        let mut shown = Vec::new();
        for key in w.show {
            let vals: Vec<String> = self
                .impls
                .iter()
                .filter_map(|i| {
                    let m = get(i)?;
                    let v = m.extras().into_iter().find(|(k, _)| k == key)?.1;
                    Some(format!("{i} {}", extra_value(key, v)))
                })
                .collect();
            if !vals.is_empty() {
                lines.push(format!("{:<nw$}   {key}: {}", "", vals.join(", ")));
                shown.push(*key);
            }
        }
        (lines, shown)
    }
}

/// The notes under a table: empty columns grouped by reason, then failures.
/// A reason equal to `said` (already printed once, e.g. "go: not on PATH")
/// is not repeated.
pub fn notes(all: &[Measurement], said: Option<&str>) -> Vec<String> {
    let mut groups: Vec<((String, String), Vec<String>)> = Vec::new();
    for m in all {
        if let Some(note) = m.missing.as_ref().filter(|n| Some(n.as_str()) != said) {
            let key = (m.label.clone(), note.clone());
            let name = m.workload.clone();
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, names)) => {
                    if !names.contains(&name) {
                        names.push(name)
                    }
                }
                None => groups.push((key, vec![name])),
            }
        }
    }
    let mut out: Vec<String> = groups
        .into_iter()
        .map(|((label, note), names)| {
            format!(
                "note: {label} column empty for {}: {note}",
                names.join(", ")
            )
        })
        .collect();
    for m in all {
        if let Some(e) = &m.error {
            out.push(format!(
                "failed: {} procs={} {}: {e}",
                m.workload, m.procs, m.label
            ));
        }
    }
    out
}

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

/// The ticks of the chart's log axis over `lo..hi` (both > 0): 1, 2 and 5
/// times the powers of ten, 1.0 always (the line the bars start from),
/// then the powers of ten, then the 2s and 5s, each kept only if its label
/// stays `min_gap` pixels from every label kept before it (`px` maps a
/// value to its pixel column), so no two labels overlap. Sorted.
pub fn log_ticks(lo: f64, hi: f64, min_gap: f64, px: impl Fn(f64) -> f64) -> Vec<f64> {
    let mut cands: Vec<(u8, f64)> = Vec::new();
    let (k0, k1) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    for k in k0..=k1 {
        for (prio, m) in [(1u8, 1.0), (2, 2.0), (2, 5.0)] {
            let v = m * 10f64.powi(k);
            if v >= lo && v <= hi {
                cands.push((if v == 1.0 { 0 } else { prio }, v));
            }
        }
    }
    cands.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let mut kept: Vec<f64> = Vec::new();
    for (_, v) in cands {
        if kept.iter().all(|&k| (px(k) - px(v)).abs() >= min_gap) {
            kept.push(v);
        }
    }
    kept.sort_by(f64::total_cmp);
    kept
}

/// A tick's label: `0.05`, `0.2`, `1`, `20`.
pub fn tick_label(v: f64) -> String {
    let decimals = (-(v.log10().floor() as i32)).max(0) as usize;
    format!("{v:.decimals$}")
}

/// Draws goro ÷ each peer per row as horizontal bars from 1.0 on a log
/// axis: one bar per ratio that exists (a row without a tokio column has
/// only its go bar), rows packed top to bottom, each bar with its error
/// bar (the ratio's range over the runs, [`Ratio::lo`]..[`Ratio::hi`]: one
/// that crosses the 1.0 line is within noise) and labelled with its value
/// and marks beyond the error bar's end. The axis's ticks are chosen so
/// that no two labels overlap ([`log_ticks`]).
pub fn svg(path: &std::path::Path, rows: &[RowResult]) -> Result<(), String> {
    use plotters::prelude::*;
    use plotters::style::text_anchor::{HPos, Pos, VPos};
    let rows: Vec<&RowResult> = rows.iter().filter(|r| !r.ratios.is_empty()).collect();
    if rows.is_empty() {
        return Err("no row has a ratio to draw".into());
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    }
    // Slots from the top: one unit per bar, GAP between rows, TOP for the
    // key (three lines).
    const GAP: f64 = 0.35;
    const TOP: f64 = 3.8;
    let mut bars: Vec<(f64, &Ratio)> = Vec::new();
    let mut labels: Vec<(f64, String)> = Vec::new();
    let mut y = TOP;
    for r in &rows {
        let start = y;
        for x in &r.ratios {
            bars.push((y, x));
            y += 1.0;
        }
        labels.push(((start + y) / 2.0, r.label()));
        y += GAP;
    }
    let total = y;
    // The axis holds every bar and every finite end of an error bar.
    let ends: Vec<f64> = bars
        .iter()
        .flat_map(|(_, r)| [r.value, r.lo, r.hi])
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    let lo = ends.iter().copied().fold(1.0f64, f64::min) / 1.6;
    let hi = ends.iter().copied().fold(1.0f64, f64::max) * 1.6;
    let height = (90.0 + 15.0 * total).round() as u32;
    let root = SVGBackend::new(path, (960, height)).into_drawing_area();
    let err = |e: &dyn std::fmt::Debug| format!("drawing {}: {e:?}", path.display());
    root.fill(&WHITE).map_err(|e| err(&e))?;
    // The y axis runs downwards: row 0 at the top.
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "goro ÷ peer, median ns/op (c: CPU ns/op), log scale: left of 1.0 goro is faster",
            ("sans-serif", 15),
        )
        .margin(8)
        .x_label_area_size(30)
        .y_label_area_size(190)
        .build_cartesian_2d((lo..hi).log_scale(), total..0f64)
        .map_err(|e| err(&e))?;
    // Axes only: the ticks, grid lines and labels are drawn below, where
    // their spacing is known.
    chart
        .configure_mesh()
        .disable_mesh()
        .x_labels(0)
        .y_labels(0)
        .x_label_formatter(&|_| String::new())
        .y_label_formatter(&|_| String::new())
        .draw()
        .map_err(|e| err(&e))?;
    let px = |v: f64| chart.backend_coord(&(v, total)).0 as f64;
    let grey = RGBColor(220, 220, 220);
    for t in log_ticks(lo, hi, 44.0, px) {
        chart
            .draw_series(LineSeries::new(
                [(t, TOP - 0.2), (t, total)],
                grey.stroke_width(1),
            ))
            .map_err(|e| err(&e))?;
        let (tx, ty) = chart.backend_coord(&(t, total));
        let style = ("sans-serif", 11)
            .into_font()
            .color(&BLACK)
            .pos(Pos::new(HPos::Center, VPos::Top));
        root.draw(&Text::new(tick_label(t), (tx, ty + 6), style))
            .map_err(|e| err(&e))?;
    }
    for (yc, label) in &labels {
        let (px, py) = chart.backend_coord(&(lo, *yc));
        let style = ("sans-serif", 12)
            .into_font()
            .color(&BLACK)
            .pos(Pos::new(HPos::Right, VPos::Center));
        root.draw(&Text::new(label.clone(), (px - 6, py), style))
            .map_err(|e| err(&e))?;
    }
    let blue = RGBColor(31, 119, 180);
    let orange = RGBColor(255, 127, 14);
    let color = |peer: &str| if peer == "go" { blue } else { orange };
    chart
        .draw_series(bars.iter().map(|(y, r)| {
            let c = color(r.peer);
            let style = if r.excluded {
                c.mix(0.35).filled()
            } else {
                c.filled()
            };
            Rectangle::new(
                [(r.value.min(1.0), y + 0.12), (r.value.max(1.0), y + 0.88)],
                style,
            )
        }))
        .map_err(|e| err(&e))?;
    // Error bars: the ratio's range over the runs, with caps.
    let clamp = |v: f64| v.clamp(lo, hi);
    for (y, r) in &bars {
        let (a, b) = (clamp(r.lo), clamp(r.hi));
        if !(a.is_finite() && b.is_finite()) || a >= b {
            continue;
        }
        let mid = y + 0.5;
        let line = |pts: [(f64, f64); 2]| LineSeries::new(pts, BLACK.stroke_width(1));
        chart
            .draw_series(line([(a, mid), (b, mid)]))
            .map_err(|e| err(&e))?;
        chart
            .draw_series(line([(a, y + 0.25), (a, y + 0.75)]))
            .map_err(|e| err(&e))?;
        chart
            .draw_series(line([(b, y + 0.25), (b, y + 0.75)]))
            .map_err(|e| err(&e))?;
    }
    // Value labels, beyond the bar and its error bar.
    chart
        .draw_series(bars.iter().map(|(y, r)| {
            let right = r.value >= 1.0;
            let anchor = if right { HPos::Left } else { HPos::Right };
            let style = ("sans-serif", 11)
                .into_font()
                .color(&BLACK)
                .pos(Pos::new(anchor, VPos::Center));
            let x = if right {
                clamp(r.value.max(r.hi)) * 1.03
            } else {
                clamp(r.value.min(r.lo)) / 1.03
            };
            Text::new(r.cell(), (x, y + 0.5), style)
        }))
        .map_err(|e| err(&e))?;
    chart
        .draw_series(LineSeries::new(
            [(1.0, TOP - 0.2), (1.0, total)],
            BLACK.stroke_width(1),
        ))
        .map_err(|e| err(&e))?;
    // The key, in the top band (from the image's left edge, over the
    // empty row-label column): the colours, what an error bar is, the marks.
    let key: Vec<(String, RGBColor)> = {
        let mut k = Vec::new();
        for (peer, c) in [("go", blue), ("tokio", orange)] {
            if bars.iter().any(|(_, r)| r.peer == peer) {
                k.push((format!("goro / {peer}"), c));
            }
        }
        k
    };
    let line_y = |units: f64| chart.backend_coord(&(lo, units)).1;
    let mut x = 12;
    let ky = line_y(0.9);
    for (text, c) in key {
        root.draw(&Rectangle::new([(x, ky - 5), (x + 12, ky + 5)], c.filled()))
            .map_err(|e| err(&e))?;
        let style = ("sans-serif", 12)
            .into_font()
            .color(&BLACK)
            .pos(Pos::new(HPos::Left, VPos::Center));
        root.draw(&Text::new(text, (x + 16, ky), style))
            .map_err(|e| err(&e))?;
        x += 110;
    }
    let style = ("sans-serif", 11)
        .into_font()
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    for (units, text) in [
        (1.9, "error bar: goro's fastest run ÷ the peer's slowest .. goro's slowest ÷ the peer's fastest; one that crosses 1.0 is within noise (~)"),
        (2.9, "marks: c CPU ns/op, s partly from stackless tasks, x not comparable, d a different operation (x, d: pale, out of the mean), ~ within noise"),
    ] {
        root.draw(&Text::new(text, (12, line_y(units)), style.clone()))
            .map_err(|e| err(&e))?;
    }
    root.present().map_err(|e| err(&e))?;
    Ok(())
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

    #[test]
    fn axis_ticks_keep_one_and_never_crowd_their_labels() {
        // A log axis 0.05..20 over 700 px.
        let (lo, hi, w) = (0.05f64, 20.0f64, 700.0);
        let px = |v: f64| (v / lo).ln() / (hi / lo).ln() * w;
        for gap in [20.0, 44.0, 120.0] {
            let t = log_ticks(lo, hi, gap, px);
            assert!(t.contains(&1.0), "{t:?}");
            for pair in t.windows(2) {
                assert!(px(pair[1]) - px(pair[0]) >= gap, "{t:?} at gap {gap}");
            }
        }
        // Wide gaps keep the powers of ten before the 2s and 5s.
        assert_eq!(log_ticks(lo, hi, 120.0, px), vec![0.1, 1.0, 10.0]);
        assert_eq!(tick_label(0.05), "0.05");
        assert_eq!(tick_label(0.2), "0.2");
        assert_eq!(tick_label(1.0), "1");
        assert_eq!(tick_label(20.0), "20");
    }

    #[test]
    fn the_chart_draws_error_bars_and_distinct_axis_labels() {
        let r = |peer, value: f64, lo, hi| Ratio {
            peer,
            value,
            basis: crate::compare::Basis::Wall,
            lo,
            hi,
            slower_beyond_noise: lo > 1.0,
            stackless: false,
            excluded: false,
            different_op: false,
        };
        let rows = vec![
            RowResult {
                name: "spawn_chain".into(),
                group: "sched",
                procs: 2,
                ratios: vec![r("go", 0.6, 0.3, 1.4), r("tokio", 0.8, 0.7, 0.9)],
            },
            RowResult {
                name: "pool".into(),
                group: "pool",
                procs: 1,
                ratios: vec![r("tokio", 2.5, 2.2, f64::INFINITY)],
            },
        ];
        let path =
            std::env::temp_dir().join(format!("goro-bench-chart-{}.svg", std::process::id()));
        svg(&path, &rows).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        assert!(
            text.contains("0.60~") && text.contains("0.80") && text.contains("2.50"),
            "{text}"
        );
        assert!(
            text.contains("error bar"),
            "the key explains the error bars"
        );
        // Each tick label once: plotters' own labels are off.
        let ticks: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("<text") && l.contains("text-anchor=\"middle\""))
            .collect();
        assert!(!ticks.is_empty(), "{text}");
    }
}
