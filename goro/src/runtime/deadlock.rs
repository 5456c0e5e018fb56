//! The deadlock report: "all goroutines are asleep", as far as goro can
//! tell.
//!
//! Go's runtime knows every thread that could wake a goroutine, so when the
//! last M goes idle with no timer and no network poller it can say
//! `fatal error: all goroutines are asleep - deadlock!` and be right. goro
//! cannot be sure: a `Waker` is a value, and a thread outside goro (a
//! `std::thread` holding a `Sender`, a foreign library's reactor) may hold
//! one and wake a task at any moment. So goro reports a *likely* deadlock,
//! after a grace period, and only where the evidence is strong:
//!
//! * every P is idle and the global queue is empty, continuously for the
//!   grace period (the monitor, which sleeps while everything is idle,
//!   sleeps at most that long while a check is armed);
//! * a `block_on` caller is parked, and none is polling (without one,
//!   nothing is waiting for a result, and a runtime that serves sockets or
//!   works for outside threads is simply idle);
//! * no timer is armed, no socket is registered, and the blocking pool is
//!   running nothing (each of those could wake a task);
//! * every task, and the `block_on` future, is parked on something only
//!   another task can end: a channel, a `select!`, a lock, a wait group, a
//!   join. A task parked in a future goro does not know (it names no reason)
//!   may have its own waker source, so it silences the report.
//!
//! Then the report says so in one line, with what could still wake the
//! tasks, followed by the task dump. [`Deadlock::Report`] prints it to
//! stderr once per idle period and changes nothing else; [`Deadlock::Fail`]
//! makes `block_on` panic with it, which is what `#[goro::test]` uses (a
//! deadlocked test fails in a second with the dump instead of hanging until
//! the harness's timeout); [`Deadlock::Exit`] prints it and ends the
//! process with status 2, as Go does, which is what `#[goro::main]` uses
//! (with a grace of half a second). Off for a runtime built by hand.
//!
//! The check costs nothing while tasks run: it lives in the monitor's idle
//! branch, and with the report off the monitor sleeps exactly as it would
//! without the check (no wakeups while idle).

use crate::loom::Unpoison;
use crate::runtime::dump::Dump;
use crate::sched::task::meta::{human, State, TaskId};
use crate::sched::Sched;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// What goro does about a likely deadlock (module docs of
/// `runtime::deadlock`; `Builder::deadlock`, `GORO_DEADLOCK`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Deadlock {
    /// No check (the default of a runtime built by hand).
    #[default]
    Off,
    /// Print the report and the task dump to stderr, once per idle period.
    Report,
    /// Make the `block_on` caller panic with the report (`#[goro::test]`).
    Fail,
    /// Print the report and the task dump to stderr and end the process
    /// with exit status 2, as Go's "all goroutines are asleep" fatal error
    /// does (`#[goro::main]`).
    Exit,
}

impl Deadlock {
    /// Parses `GORO_DEADLOCK`'s value.
    pub(crate) fn parse(v: &str) -> Result<Deadlock, String> {
        match v.trim() {
            "off" | "0" => Ok(Deadlock::Off),
            "report" | "1" => Ok(Deadlock::Report),
            "fail" => Ok(Deadlock::Fail),
            "exit" => Ok(Deadlock::Exit),
            _ => Err(format!(
                "GORO_DEADLOCK='{v}' is invalid: accepted off, report, fail or exit"
            )),
        }
    }
}

/// Default grace period: how long everything must stay parked.
pub const DEFAULT_DEADLOCK_GRACE: Duration = Duration::from_secs(1);

/// Per-runtime state of the check.
pub(crate) struct Detector {
    mode: AtomicU8,
    grace_ns: AtomicU64,
    /// How many reports `Fail` has made, and the last one, which it hands
    /// to the `block_on` callers that were waiting when it was made.
    failure: Mutex<(u64, Option<String>)>,
    /// Threads in `block_on`, to wake with a failure.
    callers: Mutex<Vec<std::thread::Thread>>,
    /// The id of the task `Runtime::run` waits for (0: none), which the
    /// report names as the main task rather than as the caller's join.
    main: AtomicU64,
}

impl Detector {
    pub(crate) fn new() -> Detector {
        Detector {
            mode: AtomicU8::new(Deadlock::Off as u8),
            grace_ns: AtomicU64::new(DEFAULT_DEADLOCK_GRACE.as_nanos() as u64),
            failure: Mutex::new((0, None)),
            callers: Mutex::new(Vec::new()),
            main: AtomicU64::new(0),
        }
    }

    /// `Runtime::run` waits for task `id` (`None`: it has returned).
    pub(crate) fn set_main(&self, id: Option<TaskId>) {
        self.main
            .store(id.map_or(0, TaskId::as_u64), Ordering::Relaxed);
    }

    pub(crate) fn configure(&self, mode: Deadlock, grace: Duration) {
        // Relaxed: set before the monitor thread starts (its spawn orders it).
        self.mode.store(mode as u8, Ordering::Relaxed);
        self.grace_ns.store(
            grace.as_nanos().min(u64::MAX as u128) as u64,
            Ordering::Relaxed,
        );
    }

    fn mode(&self) -> Deadlock {
        match self.mode.load(Ordering::Relaxed) {
            1 => Deadlock::Report,
            2 => Deadlock::Fail,
            3 => Deadlock::Exit,
            _ => Deadlock::Off,
        }
    }

    /// The grace period, if the check is on.
    pub(crate) fn grace(&self) -> Option<Duration> {
        match self.mode() {
            Deadlock::Off => None,
            _ => Some(Duration::from_nanos(self.grace_ns.load(Ordering::Relaxed))),
        }
    }

    pub(crate) fn enter_block_on(&self) {
        self.callers.lock().unpoison().push(std::thread::current());
    }

    pub(crate) fn leave_block_on(&self) {
        let me = std::thread::current().id();
        let mut callers = self.callers.lock().unpoison();
        if let Some(i) = callers.iter().position(|t| t.id() == me) {
            callers.swap_remove(i);
        }
    }

    /// How many reports the check has made so far: a `block_on` caller
    /// notes it on entry and fails only with a later one
    /// ([`Detector::failure_after`]), not with a report about an earlier
    /// wait.
    pub(crate) fn reports(&self) -> u64 {
        self.failure.lock().unpoison().0
    }

    /// The report `block_on` must fail with, if the check made one after
    /// the caller's [`Detector::reports`] was `seen`.
    pub(crate) fn failure_after(&self, seen: u64) -> Option<String> {
        match &*self.failure.lock().unpoison() {
            (n, Some(report)) if *n > seen => Some(report.clone()),
            _ => None,
        }
    }
}

/// Runs the check after `idle_for` of continuous idleness (the monitor
/// runs it once per idle period).
pub(crate) fn check(det: &Detector, sched: &Sched, idle_for: Duration) {
    let main = det.main.load(Ordering::Relaxed);
    let Some(line) = likely_deadlock(sched, main, idle_for) else {
        return;
    };
    let report = format!("{line}\n{}", Dump::take(sched));
    let why = || crate::sched::trace::auto::Why {
        tag: "deadlock",
        line: format!("deadlock report: {line}"),
    };
    match det.mode() {
        Deadlock::Off => {}
        Deadlock::Report => {
            eprintln!("{report}");
            crate::sched::trace::auto::trigger(sched, why);
        }
        Deadlock::Exit => {
            crate::sched::trace::auto::before_exit(why);
            eprintln!(
                "fatal error: all tasks are asleep - deadlock!\n{report}\n\
                 goro: exiting with status 2 (Deadlock::Exit, the default of #[goro::main]). \
                 If a thread outside goro was about to wake a task, run its work with \
                 goro::spawn_blocking, or turn the check off: #[goro::main(deadlock = false)] \
                 or GORO_DEADLOCK=off."
            );
            std::process::exit(2);
        }
        Deadlock::Fail => {
            crate::sched::trace::auto::trigger(sched, why);
            {
                let mut f = det.failure.lock().unpoison();
                *f = (f.0 + 1, Some(report));
            }
            for t in det.callers.lock().unpoison().iter() {
                t.unpark();
            }
        }
    }
}

/// The one-line verdict, or `None` when something could still wake a task.
/// `main` is the id of the main task (`Runtime::run`), 0 if none: the
/// verdict then names what it waits on, not the caller's join of it.
fn likely_deadlock(sched: &Sched, main: u64, idle_for: Duration) -> Option<String> {
    // Everything is idle (re-checked: the monitor read it before sleeping).
    if !sched.all_idle() {
        return None;
    }
    let (polling, parked) = sched.block_on_callers();
    if parked == 0 || polling > 0 {
        return None;
    }
    if !sched.no_outside_wakers() {
        return None;
    }
    let block_on_reason = sched.block_on_reason();
    if !block_on_reason.needs_a_task() {
        return None;
    }
    let mut tasks = 0usize;
    let mut all_parked_on_tasks = true;
    let mut main_reason = None;
    sched.tasks().for_each(|m| {
        tasks += 1;
        match m.get().0 {
            State::Parked(r, _) if r.needs_a_task() => {
                if m.id.as_u64() == main {
                    main_reason = Some(r);
                }
            }
            _ => all_parked_on_tasks = false,
        }
    });
    if !all_parked_on_tasks {
        return None;
    }
    let waiter = match main_reason {
        Some(r) => {
            tasks -= 1;
            format!("the main task ({r}) and all {tasks} other")
        }
        None => format!("the block_on caller ({block_on_reason}) and all {tasks}"),
    };
    Some(format!(
        "goro: likely deadlock: {waiter} tasks have \
         been parked for {} on channels, selects, locks, wait groups or joins, with no timer armed, \
         no socket registered and no blocking call running; only a waker held outside goro \
         (another thread) could still wake them",
        human(idle_for)
    ))
}
