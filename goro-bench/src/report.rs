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

/// One JSON object per measurement (see goro-bench/README.md): `workload`,
/// `procs`, `impl`, `ns_per_op`, `cpu_ns_per_op`, `runs`, `spread`
/// [min, max], `ops`, then the extras (medians over the runs). goro rows
/// also carry `policy` (overrides on `Policy::default()`, "" = default) and
/// ab rows a `label`. A failed contender is an object with `error`.
pub fn json(all: &[Measurement]) -> Value {
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

/// Draws goro ÷ each peer per row as horizontal bars from 1.0 on a log
/// axis: one bar per ratio that exists (a row without a tokio column has
/// only its go bar), rows packed top to bottom, each bar labelled with its
/// value and marks.
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
    // legend box.
    const GAP: f64 = 0.35;
    const TOP: f64 = 2.6;
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
    let vals: Vec<f64> = bars
        .iter()
        .map(|(_, r)| r.value)
        .filter(|v| *v > 0.0)
        .collect();
    let lo = vals.iter().copied().fold(1.0f64, f64::min) / 1.6;
    let hi = vals.iter().copied().fold(1.0f64, f64::max) * 1.6;
    let height = (70.0 + 15.0 * total).round() as u32;
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
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .y_label_formatter(&|_| String::new())
        .x_label_formatter(&|x| format!("{x:.2}"))
        .draw()
        .map_err(|e| err(&e))?;
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
    chart
        .draw_series(bars.iter().map(|(y, r)| {
            let right = r.value >= 1.0;
            let anchor = if right { HPos::Left } else { HPos::Right };
            let style = ("sans-serif", 11)
                .into_font()
                .color(&BLACK)
                .pos(Pos::new(anchor, VPos::Center));
            let x = if right {
                r.value * 1.02
            } else {
                r.value / 1.02
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
    // The key, in the top band.
    let key: Vec<(String, RGBColor)> = {
        let mut k = Vec::new();
        for (peer, c) in [("go", blue), ("tokio", orange)] {
            if bars.iter().any(|(_, r)| r.peer == peer) {
                k.push((format!("goro / {peer}"), c));
            }
        }
        k
    };
    let (kx, ky) = chart.backend_coord(&(lo, 0.9));
    let mut x = kx + 8;
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
    root.draw(&Text::new(
        "marks: c = CPU ns/op, s = win partly from stackless tasks, x = not comparable (pale)",
        (x + 10, ky),
        style,
    ))
    .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}
