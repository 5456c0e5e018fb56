//! Helpers shared by the integration tests, which include them with
//! `mod support;` (a directory, so Cargo does not build it as a test crate
//! of its own). This file holds the deadlines and thread probes every group
//! uses; each submodule holds one group's helpers: [`chan`], [`net`],
//! [`pool`], [`sync`], [`faults`], [`perfetto`] and, under loom, `loom_exec`.
// Every test crate compiles all of this and uses a part of it.
#![allow(dead_code)]

use std::future::Future;
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub mod chan;
pub mod faults;
#[cfg(loom)]
pub mod loom_exec;
pub mod net;
pub mod perfetto;
pub mod pool;
pub mod sync;

/// How long an async test waits for anything before it fails ([`deadline`]).
pub const DEADLINE: Duration = Duration::from_secs(10);

/// `fut`'s output, inside a goro task; fails the test with `what` if it
/// takes longer than [`DEADLINE`].
pub async fn deadline<F: Future>(what: &str, fut: F) -> F::Output {
    match goro::time::timeout(DEADLINE, fut).await {
        Ok(v) => v,
        Err(_) => panic!("{what} did not finish within {DEADLINE:?} (deadlock or lost wake-up?)"),
    }
}

/// Runs `f` on a fresh thread and fails the test with `what` if it has not
/// finished within `limit` (a hung scheduler must fail, not hang CI).
pub fn within<T: Send + 'static>(
    limit: Duration,
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    let h = std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(limit) {
        Ok(v) => {
            h.join().expect("test thread");
            v
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => match h.join() {
            Err(p) => std::panic::resume_unwind(p),
            Ok(()) => unreachable!("sender dropped without sending"),
        },
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("timed out after {limit:?}: {what}"),
    }
}

/// Spins (yielding the thread) until `cond` holds, failing with `what` after `limit`.
pub fn wait_until(limit: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !cond() {
        assert!(
            Instant::now() < deadline,
            "condition not reached within {limit:?}: {what}"
        );
        std::thread::yield_now();
    }
}

/// What a runtime's threads have been doing, for idleness checks: (parks,
/// unparks, timer-sleeper wakes, netpolls, task polls, context switches of
/// the threads `tids`).
pub fn activity(rt: &goro::Runtime, tids: &[u32]) -> (u64, u64, u64, u64, u64, u64) {
    let s = rt.stats();
    let switches: u64 = tids
        .iter()
        .filter_map(|&t| thread_state(t))
        .map(|s| s.1)
        .sum();
    (
        s.parks,
        s.unparks,
        s.timer_sleeper_wakes,
        s.netpolls,
        s.tasks_polled,
        switches,
    )
}

/// Waits until `snapshot` returns the same value at both ends of a 50 ms
/// window (the threads it watches have stopped waking), failing with
/// `what` after `limit`; returns that value.
pub fn wait_until_quiet<T: PartialEq>(
    limit: Duration,
    what: &str,
    mut snapshot: impl FnMut() -> T,
) -> T {
    let mut prev = snapshot();
    wait_until(limit, what, || {
        std::thread::sleep(Duration::from_millis(50));
        let now = snapshot();
        let quiet = now == prev;
        prev = now;
        quiet
    });
    prev
}

/// The ids of this process's threads whose name starts with `prefix`.
pub fn threads_named(prefix: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .flatten()
    {
        let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
        if comm.trim_end().starts_with(prefix) {
            out.push(e.file_name().to_string_lossy().parse().unwrap());
        }
    }
    out
}

/// A thread's (state letter, voluntary + involuntary context switches).
pub fn thread_state(tid: u32) -> Option<(char, u64)> {
    let status = std::fs::read_to_string(format!("/proc/self/task/{tid}/status")).ok()?;
    let mut state = '?';
    let mut switches = 0;
    for line in status.lines() {
        if let Some(v) = line.strip_prefix("State:") {
            state = v.trim().chars().next().unwrap_or('?');
        } else if let Some(v) = line.strip_prefix("voluntary_ctxt_switches:") {
            switches += v.trim().parse::<u64>().unwrap_or(0);
        } else if let Some(v) = line.strip_prefix("nonvoluntary_ctxt_switches:") {
            switches += v.trim().parse::<u64>().unwrap_or(0);
        }
    }
    Some((state, switches))
}

/// CPU time (user + system) of the whole process.
pub fn process_cpu() -> Duration {
    // SAFETY: `rusage` is plain integers, for which all-zero bytes are valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes into the struct we pass; RUSAGE_SELF is valid.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    assert_eq!(rc, 0, "getrusage failed");
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Asserts that `rt`'s threads `tids` make no wakeup and the process uses
/// under 20 ms of CPU over a 2 s window, once all `procs` Ps are idle and
/// every thread has gone to sleep (`while` names the condition in the
/// failure message).
pub fn assert_idle_window(rt: &goro::Runtime, tids: &[u32], procs: usize, while_: &str) {
    let idle = format!("idleprocs={procs}");
    wait_until(
        Duration::from_secs(10),
        "every runtime thread asleep",
        || {
            rt.schedtrace().contains(&idle)
                && tids
                    .iter()
                    .all(|&t| thread_state(t).map(|s| s.0) == Some('S'))
        },
    );
    // Let the monitor finish its last round and go to its idle sleep:
    // wait until switch counts are stable across a 50 ms window.
    let before: Vec<u64> = wait_until_quiet(
        Duration::from_secs(10),
        "runtime threads stop waking",
        || tids.iter().map(|&t| thread_state(t).unwrap().1).collect(),
    );
    let cpu0 = process_cpu();
    std::thread::sleep(Duration::from_secs(2));
    let cpu = process_cpu() - cpu0;
    let after: Vec<u64> = tids.iter().map(|&t| thread_state(t).unwrap().1).collect();
    let wakeups: u64 = after.iter().zip(&before).map(|(a, b)| a - b).sum();
    assert_eq!(
        wakeups, 0,
        "runtime threads woke {wakeups} times in 2 s while {while_}"
    );
    assert!(
        cpu < Duration::from_millis(20),
        "idle runtime used {cpu:?} of CPU in 2 s"
    );
}
