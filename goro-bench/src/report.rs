//! The ratio table of `run`/`compare`, its JSON, and the SVG chart.

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
}

const NAME_W: usize = 22;
const COL_W: usize = 15;

impl Table {
    /// A table over these implementations, in this order.
    pub fn new(impls: Vec<&'static str>) -> Table {
        Table { impls }
    }

    fn has(&self, i: &str) -> bool {
        self.impls.contains(&i)
    }

    fn ratios(&self) -> Vec<(&'static str, &'static str)> {
        [("goro", "go"), ("goro", "tokio")]
            .into_iter()
            .filter(|(a, b)| self.has(a) && self.has(b))
            .collect()
    }

    /// The header lines.
    pub fn header(&self) -> String {
        let mut s = format!("{:<NAME_W$} {:>5}", "workload", "procs");
        for i in &self.impls {
            s += &format!(" {:>COL_W$}", format!("{i} ns/op"));
        }
        for (a, b) in self.ratios() {
            s += &format!(" {:>10}", format!("{a}/{b}"));
        }
        s += &format!("   cpu ns/op ({})", self.impls.join(" / "));
        let rule = "-".repeat(s.chars().count());
        format!("{s}\n{rule}")
    }

    /// The row line for `ms` (one measurement per implementation), plus one
    /// line per extra the workload shows.
    pub fn row(&self, w: &Workload, procs: usize, ms: &[Measurement]) -> Vec<String> {
        let get = |i: &str| ms.iter().find(|m| m.impl_name == i);
        let med = |i: &str| get(i).and_then(Measurement::ns_per_op);
        let mut s = format!("{:<NAME_W$} {:>5}", w.name, procs);
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
        for (a, b) in self.ratios() {
            let cell = match (med(a), med(b)) {
                (Some(x), Some(y)) if y > 0.0 => format!("{:.2}", x / y),
                _ => "-".into(),
            };
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
                lines.push(format!("{:<NAME_W$}   {key}: {}", "", vals.join(", ")));
            }
        }
        lines
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

/// One bar group of the chart.
pub struct RatioRow {
    /// `ring/n=100 p2`.
    pub label: String,
    /// goro ns/op / go ns/op.
    pub goro_go: Option<f64>,
    /// goro ns/op / tokio ns/op.
    pub goro_tokio: Option<f64>,
}

/// Draws the two ratios per row as horizontal bars from 1.0 on a log axis.
pub fn svg(path: &std::path::Path, rows: &[RatioRow]) -> Result<(), String> {
    use plotters::prelude::*;
    let rows: Vec<&RatioRow> = rows
        .iter()
        .filter(|r| r.goro_go.is_some() || r.goro_tokio.is_some())
        .collect();
    if rows.is_empty() {
        return Err("no row has a ratio to draw".into());
    }
    let n = rows.len();
    let vals: Vec<f64> = rows
        .iter()
        .flat_map(|r| [r.goro_go, r.goro_tokio])
        .flatten()
        .filter(|v| *v > 0.0)
        .collect();
    let lo = vals.iter().copied().fold(1.0f64, f64::min) / 1.5;
    let hi = vals.iter().copied().fold(1.0f64, f64::max) * 1.5;
    let height = 190 + 26 * n as u32;
    let root = SVGBackend::new(path, (1100, height)).into_drawing_area();
    let err = |e: &dyn std::fmt::Debug| format!("drawing {}: {e:?}", path.display());
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let labels: Vec<String> = rows.iter().map(|r| r.label.clone()).collect();
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "goro ns/op ÷ go and ÷ tokio (log scale; the 1.0 line is parity, left of it goro is faster)",
            ("sans-serif", 16),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(230)
        .build_cartesian_2d((lo..hi).log_scale(), 0f64..n as f64 + 2.0) // the top band holds the legend
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .y_label_formatter(&|_| String::new())
        .x_label_formatter(&|x| format!("{x:.2}"))
        .x_desc("ratio of ns/op")
        .draw()
        .map_err(|e| err(&e))?;
    // Row labels, drawn on the root area at the rows' pixel positions
    // (plotters' key points would not line up with the bar pairs).
    for (i, label) in labels.iter().enumerate() {
        let (px, py) = chart.backend_coord(&(lo, (n - 1 - i) as f64 + 0.5));
        let style = ("sans-serif", 12).into_font().color(&BLACK).pos(
            plotters::style::text_anchor::Pos::new(
                plotters::style::text_anchor::HPos::Right,
                plotters::style::text_anchor::VPos::Center,
            ),
        );
        root.draw(&Text::new(label.clone(), (px - 6, py), style))
            .map_err(|e| err(&e))?;
    }
    let bar = |i: usize, v: f64, upper: bool| {
        let y0 = (n - 1 - i) as f64;
        let (a, b) = if upper {
            (y0 + 0.52, y0 + 0.9)
        } else {
            (y0 + 0.1, y0 + 0.48)
        };
        [(v.min(1.0), a), (v.max(1.0), b)]
    };
    let blue = RGBColor(31, 119, 180);
    let orange = RGBColor(255, 127, 14);
    chart
        .draw_series(rows.iter().enumerate().filter_map(|(i, r)| {
            r.goro_go
                .map(|v| Rectangle::new(bar(i, v, true), blue.filled()))
        }))
        .map_err(|e| err(&e))?
        .label("goro / go")
        .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], blue.filled()));
    chart
        .draw_series(rows.iter().enumerate().filter_map(|(i, r)| {
            r.goro_tokio
                .map(|v| Rectangle::new(bar(i, v, false), orange.filled()))
        }))
        .map_err(|e| err(&e))?
        .label("goro / tokio")
        .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], orange.filled()));
    chart
        .draw_series(LineSeries::new(
            [(1.0, 0.0), (1.0, n as f64)],
            BLACK.stroke_width(2),
        ))
        .map_err(|e| err(&e))?
        .label("1.0 = parity")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 12, y)], BLACK.stroke_width(2)));
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}
