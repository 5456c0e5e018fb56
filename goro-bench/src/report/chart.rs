//! The SVG chart of `compare` (`--svg FILE`): goro divided by each peer
//! per row, as bars from 1.0 on a log axis with each ratio's range over the
//! runs as an error bar, and axis ticks chosen so that no two labels
//! overlap. Drawn with plotters' SVG backend.

use crate::compare::{Ratio, RowResult};

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
