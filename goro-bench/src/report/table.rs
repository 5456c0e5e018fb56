//! The streamed ratio table of `run` and `compare`: a header, then a line
//! per row as it is measured (each implementation's ns/op and spread, goro
//! divided by each peer, the CPU ns/op) with a line per extra the workload
//! shows; and the notes under it (empty columns grouped by reason, then
//! failures).

use super::{extra_value, num};
use crate::harness::Measurement;
use crate::registry::Workload;

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
