//! The progress line of a command that measures rows: a bar of the planned
//! runs (warm-ups included) with an ETA on stderr, and the one-line
//! messages printed above it, so that the table streamed on stdout and the
//! notes on stderr never tear the bar. Hidden when stderr is not a
//! terminal.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// The progress bar and the one-line messages printed around it.
pub struct Ui {
    pb: ProgressBar,
}

impl Ui {
    /// A bar of `total` steps (planned runs, warm-ups included) on stderr
    /// (hidden when stderr is not a terminal), with an ETA: the mean time
    /// per run so far times the runs still planned.
    pub fn new(total: u64) -> Ui {
        let pb = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        pb.set_style(
            ProgressStyle::with_template(
                "{elapsed_precise} [{bar:30}] {pos}/{len} runs, ETA {planned_eta}  {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .with_key("planned_eta", planned_eta)
            .progress_chars("=> "),
        );
        Ui { pb }
    }
    /// One line on stderr (above the bar).
    pub fn note(&self, msg: &str) {
        self.pb.suspend(|| eprintln!("{msg}"));
    }
    /// One line on stdout (above the bar).
    pub fn out(&self, msg: &str) {
        self.pb.suspend(|| println!("{msg}"));
    }
    /// What is running now.
    pub fn status(&self, msg: String) {
        self.pb.set_message(msg);
    }
    /// One step done.
    pub fn step(&self) {
        self.pb.inc(1);
    }
    /// Removes the bar.
    pub fn finish(&self) {
        self.pb.finish_and_clear();
    }
}

/// The bar's ETA: elapsed ÷ runs done × runs left (indicatif's own `{eta}`
/// follows the last few steps, which jump between a 5 ms and a 1 s run).
fn planned_eta(state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write) {
    let (pos, len) = (state.pos(), state.len().unwrap_or(0));
    let _ = if pos == 0 {
        write!(w, "?")
    } else {
        let left = state.elapsed().as_secs_f64() / pos as f64 * len.saturating_sub(pos) as f64;
        let s = left.round() as u64;
        write!(w, "{}:{:02}", s / 60, s % 60)
    };
}
