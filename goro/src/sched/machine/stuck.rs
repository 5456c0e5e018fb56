//! The stuck-poll report: when one poll of a task has run past a threshold
//! (`Builder::stuck_poll`, `GORO_STUCK`; 20 ms under `#[goro::test]`),
//! the monitor says so once, on stderr, with the native stack of the
//! thread running it:
//!
//! ```text
//! goro: stuck poll: task 17 "worker" spawned at src/main.rs:12:5, on P 1, running for 26ms
//!    0: clock_nanosleep at ./time/../sysdeps/unix/sysv/linux/clock_nanosleep.c:48
//!    1: std::thread::sleep at .../library/std/src/thread/mod.rs:...
//!    2: my_crate::worker::{{closure}} at src/main.rs:14
//!    ...
//! ```
//!
//! A future that blocks its thread (a `std::thread::sleep`, a
//! `std::sync::Mutex`, a CPU loop that never reaches a safe point) stalls
//! its P and everything queued behind it; the retake (`sysmon.rs`) lets
//! thieves drain the P, but only the stack says which line is to blame.
//! Go's scheduler can preempt such a goroutine; goro can only name it.
//!
//! # How a poll is told apart from the next one
//!
//! The hot path pays one relaxed store per poll: `Machine::execute`
//! writes the task's id into its P's `poll_task` before it polls, beside
//! the store of `tasks_polled` (a counter of `Stats`) it made already,
//! also before every poll. The pair (`poll_task`, `tasks_polled`) names
//! one poll: while the monitor sees the same pair round after round, the
//! same poll, or the scheduler loop right after it, holds the P. The
//! monitor remembers when it first saw each P's pair (a [`Seen`]); once
//! that is `threshold` ago it looks the task up.
//!
//! The task table is the one place from which an id leads to a record
//! that is sure to be alive (the task leaves the table before its record
//! is freed; `sched/task/table.rs`); a look-up scans it, once per stuck
//! poll, never per round. The record's state decides: `Running(Some(p))`
//! on this very P means the poll is still under way (a finished poll
//! leaves the task parked, runnable or gone, and a new one would have
//! moved `tasks_polled`); anything else means the M has been in its own
//! loop since (running timers, say), and nothing is reported.
//!
//! Its cost, counted in instructions, is in `BENCH_RESULTS.md` ("The
//! stuck-poll report's cost on the hot path").
//!
//! Rejected: storing the id again as 0 when the poll returns (a second
//! store per poll, for what the record already says); reading the clock
//! at each poll's start for an exact "running for" (about 20 ns per poll,
//! as much as a whole hand-off: `sched/machine/mod.rs`); a pointer to the
//! record in the P (the monitor could not know it is still alive).
//!
//! # Timing
//!
//! "Running for" counts from the monitor's first sight of the pair, so it
//! is never more than the truth and at most one monitor round less. While
//! any P is busy the monitor sleeps at most a quarter of the threshold
//! (`max_sleep`), so a stuck poll is reported between 1 and 1.5 times the
//! threshold after it began, plus the time to take the stack (tens of µs)
//! and, the first time in a process, to read the debug information for
//! the names (can be a second in a large debug binary). On a machine with
//! more runnable threads than cores, add the kernel's delays: the monitor
//! waits for a core, and the signal is handled only when the stuck thread
//! next runs, which a CPU-bound one may wait 10 ms or more for (measured
//! in RELIABILITY.md, "Stuck-poll report"). When every P is
//! idle the monitor sleeps as before: an idle runtime still makes no
//! wakeups, and the first busy round starts every P's watch afresh.
//!
//! # What is reported, and what is not
//!
//! Each report bumps `Stats::stuck_polls` and, while tracing, drops a
//! "stuck poll" instant on the task's track (`sched/trace/`). The stack is
//! taken by `stack.rs` (signal, unwind in the handler, names afterwards,
//! on this thread); if it cannot be taken, the first line still goes out,
//! followed by why. If the poll returned while its stack was being taken,
//! the report says so instead of printing a stack that may be the
//! scheduler's.
//!
//! Not watched: the `block_on` future (it is not polled on a P); a poll
//! that went into `block_in_place` (it gave its P away on purpose:
//! `blocking.rs` clears the P's `poll_task` as it hands the P off); a
//! poll on a P that `set_procs` removed while it ran. A report keeps the
//! monitor from its other work (the retake, the network poll) while the
//! stack is taken (tens of µs; at most 200 ms when no answer comes) and
//! named (about a millisecond; a second the first time in a process).

use crate::sched::machine::stack;
use crate::sched::processor::Processor;
use crate::sched::task::meta::{human, State};
use crate::sched::Sched;
use crate::stats::bump_shared;
use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Where a report goes instead of stderr (a test's hook,
/// `Builder::stuck_poll_sink`).
pub(crate) type Sink = Arc<dyn Fn(&str) + Send + Sync>;

/// Most frame lines in one report.
const MAX_LINES: usize = 64;

/// What the monitor last saw of one P's poll.
#[derive(Clone, Copy)]
struct Seen {
    task: u64,
    polls: u64,
    since: Instant,
    /// Looked up (reported or found not running): not again.
    done: bool,
}

/// The monitor's stuck-poll state: the threshold, where reports go, and
/// what it last saw of each P.
pub(crate) struct StuckWatch {
    threshold: Duration,
    sink: Option<Sink>,
    seen: Vec<Option<Seen>>,
    /// Reports being written (frames named off the monitor's thread),
    /// joined when the monitor stops so that none is lost at exit.
    writing: Vec<std::thread::JoinHandle<()>>,
}

impl Drop for StuckWatch {
    fn drop(&mut self) {
        for w in self.writing.drain(..) {
            let _ = w.join();
        }
    }
}

impl StuckWatch {
    /// A watch reporting polls longer than `threshold` (`None`: off).
    pub(crate) fn new(threshold: Option<Duration>, sink: Option<Sink>) -> Option<StuckWatch> {
        let threshold = threshold?;
        // Installed now, so the first report does not pay for it; a
        // failure is said in each report instead of the stack.
        let _ = stack::install();
        Some(StuckWatch {
            threshold,
            sink,
            seen: Vec::new(),
            writing: Vec::new(),
        })
    }

    /// The longest the monitor may sleep while a P is busy. The builder
    /// accepts thresholds of 100 µs or more, so this stays above the
    /// monitor's own floor of 20 µs.
    pub(crate) fn max_sleep(&self) -> Duration {
        self.threshold / 4
    }

    /// Forgets every observation (the monitor slept through an idle
    /// period: they say nothing about the polls running now).
    pub(crate) fn forget(&mut self) {
        self.seen.clear();
    }

    /// One monitor round: reports each poll that has run past the
    /// threshold since the monitor first saw it, once.
    pub(crate) fn check(&mut self, sched: &Sched) {
        let now = Instant::now();
        let procs = sched.procs();
        if self.seen.len() < procs {
            self.seen.resize(procs, None);
        }
        for (i, p) in sched.ps.iter().take(procs).enumerate() {
            // Relaxed: progress hints written by the P's owner; a stale
            // pair only delays a report by a round (module docs).
            let task = p.poll_task.load(Ordering::Relaxed);
            let polls = p.counters.tasks_polled.load(Ordering::Relaxed);
            if sched.idle.is_idle(i) || task == 0 {
                self.seen[i] = None;
                continue;
            }
            let seen = match &mut self.seen[i] {
                Some(s) if s.task == task && s.polls == polls => s,
                other => {
                    *other = Some(Seen {
                        task,
                        polls,
                        since: now,
                        done: false,
                    });
                    continue;
                }
            };
            if seen.done || now.saturating_duration_since(seen.since) < self.threshold {
                continue;
            }
            seen.done = true;
            let seen = *seen;
            self.report(sched, i, p, seen);
        }
    }

    /// Looks up the task of `seen` on P `pid` and, if its poll is still
    /// running, reports it.
    fn report(&mut self, sched: &Sched, pid: usize, p: &Processor, seen: Seen) {
        let mut found = None;
        sched.tasks().for_each(|m| {
            if m.id.0 == seen.task {
                found = Some((m.name().map(str::to_owned), m.location, m.get().0));
            }
        });
        let Some((name, location, state)) = found else {
            return;
        };
        if state != State::Running(Some(pid)) {
            return;
        }
        // Relaxed: stored by this P's owner at its acquire; the M holding
        // the P in the poll above stored it before that poll began.
        let thread = p.m_thread.load(Ordering::Relaxed);
        let frames = stack::capture(thread);
        let running = seen.since.elapsed();
        // Relaxed: as in `check`; a pair that moved means the poll ended.
        let same = p.poll_task.load(Ordering::Relaxed) == seen.task
            && p.counters.tasks_polled.load(Ordering::Relaxed) == seen.polls;
        bump_shared(&sched.counters.stuck_polls, 1);
        crate::sched::trace::stuck_poll(sched, seen.task, pid, running);
        crate::sched::trace::auto::trigger(sched, || crate::sched::trace::auto::Why {
            tag: "stuck",
            line: match &name {
                Some(n) => format!("stuck poll: task {} {n:?} on P {pid}", seen.task),
                None => format!("stuck poll: task {} on P {pid}", seen.task),
            },
        });
        let mut text = format!("goro: stuck poll: task {}", seen.task);
        if let Some(n) = name {
            let _ = write!(text, " {n:?}");
        }
        let _ = writeln!(
            text,
            " spawned at {location}, on P {pid}, running for {}",
            human(running)
        );
        let frames = match frames {
            Ok(f) if same => Some(f),
            Ok(_) => {
                text.push_str("  (the poll returned while its stack was being taken)\n");
                None
            }
            Err(e) => {
                let _ = writeln!(text, "  (stack unavailable: {e})");
                None
            }
        };
        // Naming the frames reads the binary's debug information (up to
        // a second and a half, the first time, in a debug build): on a
        // thread of its own, so that the monitor goes on retaking Ps and
        // watching for deadlocks meanwhile.
        let sink = self.sink.clone();
        let write = move || {
            if let Some(f) = frames {
                text.push_str(&stack::symbolize(&f, MAX_LINES));
            }
            match sink {
                Some(sink) => sink(&text),
                None => eprint!("{text}"),
            }
        };
        self.writing.retain(|w| !w.is_finished());
        match std::thread::Builder::new()
            .name("goro-stuck-report".into())
            .spawn(write)
        {
            Ok(w) => self.writing.push(w),
            Err(e) => eprintln!("goro: stuck poll: could not start the reporting thread ({e})"),
        }
    }
}
