//! What `run`, `compare` and `ab` print and write: three outputs, each in
//! its own file beside this one, `report/table.rs` (the streamed ratio
//! table and the notes under it, [`Table`]), `report/json_file.rs` (the
//! measurements as JSON, ending with the run's load, [`RunInfo`]) and
//! `report/chart.rs` (the SVG chart of the ratios, [`svg()`]). Here: how
//! a number is written for humans, which all of them share.

mod chart;
mod json_file;
mod table;

pub use chart::svg;
pub use json_file::{json, loadavg, write_json, RunInfo};
pub use table::{notes, Table};

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
