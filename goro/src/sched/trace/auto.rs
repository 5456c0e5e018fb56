//! The always-on flight recorder (`GORO_FLIGHT=dir`,
//! `Builder::flight_dir`): a flight recorder that runs for the runtime's
//! whole life and writes a snapshot by itself when something goes wrong,
//! where Go's `FlightRecorder` waits for the program to call `WriteTo`.
//!
//! # Triggers
//!
//! * a stuck poll, as it is reported (`machine/stuck.rs`; with the
//!   recorder on, the watch is armed at 20 ms unless `stuck_poll` or
//!   `GORO_STUCK` says otherwise);
//! * the deadlock report (`runtime/deadlock.rs`);
//! * a task's panic (`task/mod.rs`);
//! * scheduling latency: once per window (1 s) the monitor adds up the
//!   sampled wake-to-run histograms (`processor/sampling.rs`) and
//!   triggers when the window's 99th percentile is at or above a
//!   threshold (`Builder::flight_latency`, `GORO_FLIGHT_LATENCY`; 100 ms
//!   by default). The histograms are the metrics' own, so the check adds
//!   nothing to the hot path;
//! * by hand, [`Runtime::flight_snapshot`](crate::Runtime::flight_snapshot).
//!
//! # A thread, a delay, and the raw form
//!
//! A trigger records its reason and wakes this runtime's recorder thread
//! (`goro-flight`); nothing else. Triggers fire on the monitor, in a
//! panicking task's poll, in the deadlock check: none of them should
//! write files. The thread waits [`AFTER`] before it takes the snapshot,
//! so that the snapshot holds what came right after the incident: a stuck
//! poll is reported while it still runs, and a snapshot taken at once
//! would show its slice without its end.
//!
//! The snapshot is the raw form (what `GORO_TRACE_RAW` writes): a copy of
//! the chunks' bytes, milliseconds even for a full window, so the file is
//! on disk well within a second of the incident. Converting to Perfetto's
//! format costs 3-6 µs per hop (`BENCH_RESULTS.md`), seconds for a busy
//! window, on cores the program may need right then; `goro-trace FILE
//! out.pftrace` (or [`crate::trace::to_perfetto`]) converts it later, as
//! `go tool trace` reads what Go's recorder writes. A snapshot taken on
//! the way to `exit` (the deadlock report's `Deadlock::Exit`, an unjoined
//! panic's `UnjoinedPanic::Exit`) is written at once, on the exiting
//! thread, without the delay: nothing would come after it.
//!
//! # Rate limit
//!
//! At most one snapshot per kind of trigger per interval
//! (`Builder::flight_interval`, 10 s by default): a failure that repeats
//! (a panicking handler, a poll stuck on every request) fills no disk,
//! and one kind does not hide another (a panic hook that prints a
//! backtrace in a debug build is itself a stuck poll; the panic still
//! gets its snapshot). A trigger that comes while a snapshot waits out
//! its delay is folded into it. Either way it is counted, and the next
//! snapshot's line on stderr says how many there were. Manual snapshots
//! are not limited.
//!
//! # Files
//!
//! `DIR/goro-flight-PID-N-SEQ-WHY.raw`: the process, the runtime's number
//! in the process (0 for the first built), the snapshot's number for
//! this runtime, and what triggered it (`stuck`, `deadlock`, `panic`,
//! `latency`, `manual`). Each is written under a `.part` name and renamed
//! when complete, so a file with the final name is whole. One line on
//! stderr names each:
//!
//! ```text
//! goro: flight recorder: stuck poll: task 17 "worker" on P 1: wrote /tmp/fr/goro-flight-4242-0-1-stuck.raw (goro-trace converts it)
//! ```

use super::flight::{flight_begin, flight_stop, raw_snapshot};
use crate::sched::processor::sampling::BUCKETS;
use crate::sched::Sched;
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::{Duration, Instant};

/// How long after a trigger the snapshot is taken.
pub(crate) const AFTER: Duration = Duration::from_millis(100);

/// The window the always-on recorder keeps.
pub const FLIGHT_WINDOW: Duration = Duration::from_secs(2);

/// The always-on recorder's byte bound (about 3 million compact events).
pub const FLIGHT_BYTES: usize = 16 << 20;

/// Default least time between two triggered snapshots.
pub const DEFAULT_FLIGHT_INTERVAL: Duration = Duration::from_secs(10);

/// Default wake-to-run p99 that triggers a snapshot.
pub const DEFAULT_FLIGHT_LATENCY: Duration = Duration::from_millis(100);

/// The window over which the latency trigger takes its percentile.
const LATENCY_WINDOW: Duration = Duration::from_secs(1);

/// Fewer sampled wakes than this in a window: no verdict (one slow wake
/// of ten is not a 99th percentile).
const LATENCY_MIN_SAMPLES: u64 = 20;

/// The runtime number of the next one built with the recorder on.
static RUNTIMES: AtomicUsize = AtomicUsize::new(0);

/// Runtimes whose recorder is on, for the snapshots taken on the way to
/// `exit` (which may happen on a thread of no runtime).
static LIVE: Mutex<Vec<Weak<Sched>>> = Mutex::new(Vec::new());

/// The recorder's settings (from the `Builder`, or the environment).
#[derive(Clone, Debug)]
pub(crate) struct Config {
    pub(crate) dir: PathBuf,
    pub(crate) latency: Option<Duration>,
    pub(crate) interval: Duration,
}

/// What triggered a snapshot: the tag in its file's name and a line
/// saying what happened.
pub(crate) struct Why {
    pub(crate) tag: &'static str,
    pub(crate) line: String,
}

/// A runtime's always-on recorder (a field of `Trace`).
#[derive(Default)]
pub(crate) struct Auto {
    /// The recorder runs: the one check a trigger makes when it is off.
    on: AtomicBool,
    state: Mutex<State>,
    cv: Condvar,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

#[derive(Default)]
struct State {
    cfg: Option<Config>,
    /// The runtime's number among those built with the recorder on.
    runtime: usize,
    /// A trigger accepted and not yet written.
    pending: Option<Why>,
    /// When the last trigger of each kind (tag) was accepted: the rate
    /// limit.
    last: Vec<(&'static str, Instant)>,
    /// Triggers passed over since the last snapshot.
    passed_over: u64,
    /// Snapshots written (the next file's number).
    seq: u64,
    stopped: bool,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Starts the recorder of `sched` (at build): the session, and the
/// thread that writes the snapshots.
pub(crate) fn start(sched: &Arc<Sched>, cfg: Config) -> io::Result<()> {
    std::fs::create_dir_all(&cfg.dir).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!(
                "goro: flight recorder directory {}: cannot create it: {e}",
                cfg.dir.display()
            ),
        )
    })?;
    let t = &sched.trace;
    flight_begin(t, FLIGHT_WINDOW, FLIGHT_BYTES)?;
    {
        let mut st = lock(&t.auto.state);
        *st = State {
            cfg: Some(cfg),
            runtime: RUNTIMES.fetch_add(1, Ordering::Relaxed),
            ..State::default()
        };
    }
    let s = sched.clone();
    let thread = std::thread::Builder::new()
        .name(format!("{}-flight", sched.thread_name))
        .spawn(move || writer(&s));
    match thread {
        Ok(h) => *lock(&t.auto.thread) = Some(h),
        Err(e) => {
            flight_stop(t);
            return Err(e);
        }
    }
    t.auto.on.store(true, Ordering::Relaxed);
    let mut live = lock(&LIVE);
    live.retain(|w| w.strong_count() > 0);
    live.push(Arc::downgrade(sched));
    Ok(())
}

/// Stops the recorder (the runtime drops): a pending snapshot is still
/// written, then the thread exits and the session ends.
pub(crate) fn stop(sched: &Sched) {
    let a = &sched.trace.auto;
    if !a.on.swap(false, Ordering::Relaxed) {
        return;
    }
    lock(&a.state).stopped = true;
    a.cv.notify_all();
    if let Some(h) = lock(&a.thread).take() {
        let _ = h.join();
    }
    flight_stop(&sched.trace);
    lock(&LIVE).retain(|w| w.strong_count() > 0 && !std::ptr::eq(w.as_ptr(), sched));
}

/// Whether `sched`'s recorder runs (the check before building a `Why`).
#[inline]
pub(crate) fn on(sched: &Sched) -> bool {
    // Relaxed: a trigger that misses the start by a moment is lost like
    // an event recorded before it.
    sched.trace.auto.on.load(Ordering::Relaxed)
}

/// A trigger: unless one was accepted within the interval, wakes the
/// recorder thread to write a snapshot [`AFTER`] from now.
pub(crate) fn trigger(sched: &Sched, why: impl FnOnce() -> Why) {
    if !on(sched) {
        return;
    }
    let a = &sched.trace.auto;
    let mut st = lock(&a.state);
    let Some(interval) = st.cfg.as_ref().map(|c| c.interval) else {
        return;
    };
    let now = Instant::now();
    if st.pending.is_some() {
        // Within the delay: the pending snapshot will hold it too.
        st.passed_over += 1;
        return;
    }
    let why = why();
    match st.last.iter_mut().find(|(tag, _)| *tag == why.tag) {
        Some((_, at)) if now.duration_since(*at) < interval => {
            st.passed_over += 1;
            return;
        }
        Some((_, at)) => *at = now,
        None => st.last.push((why.tag, now)),
    }
    st.pending = Some(why);
    drop(st);
    a.cv.notify_all();
}

/// A trigger on the way to `exit`: writes the snapshot of every runtime
/// whose recorder runs, now, on this thread (no delay, no rate limit).
pub(crate) fn before_exit(why: impl Fn() -> Why) {
    let live: Vec<Arc<Sched>> = lock(&LIVE).iter().filter_map(Weak::upgrade).collect();
    for s in live {
        if on(&s) {
            write_reported(&s, why());
        }
    }
}

/// Writes a snapshot now and returns its path (`Runtime::flight_snapshot`).
pub(crate) fn manual(sched: &Sched) -> io::Result<PathBuf> {
    if !on(sched) {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            "goro: flight_snapshot: no flight recorder runs on this runtime: turn it on \
             with Builder::flight_dir(dir) or GORO_FLIGHT=dir",
        ));
    }
    write(
        sched,
        &Why {
            tag: "manual",
            line: "snapshot by hand".into(),
        },
    )
}

/// The recorder thread: waits for a trigger, then [`AFTER`], then writes.
fn writer(sched: &Sched) {
    let a = &sched.trace.auto;
    loop {
        let (why, passed_over) = {
            let mut st = lock(&a.state);
            while st.pending.is_none() && !st.stopped {
                st = a.cv.wait(st).unwrap_or_else(|e| e.into_inner());
            }
            let Some(why) = st.pending.take() else {
                return; // stopped with nothing pending
            };
            // Whatever comes within the delay folds into this snapshot.
            let deadline = Instant::now() + AFTER;
            while !st.stopped {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                st =
                    a.cv.wait_timeout(st, left)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
            }
            (why, std::mem::take(&mut st.passed_over))
        };
        let why = if passed_over == 0 {
            why
        } else {
            Why {
                tag: why.tag,
                line: format!(
                    "{} ({passed_over} other trigger(s) since the last snapshot: within its \
                     kind's interval, or folded into this one)",
                    why.line
                ),
            }
        };
        write_reported(sched, why);
    }
}

/// Writes a snapshot and says so on stderr (or why it failed).
fn write_reported(sched: &Sched, why: Why) {
    match write(sched, &why) {
        Ok(path) => eprintln!(
            "goro: flight recorder: {}: wrote {} (goro-trace converts it)",
            why.line,
            path.display()
        ),
        Err(e) => eprintln!("goro: flight recorder: {}: no snapshot: {e}", why.line),
    }
}

/// Takes a snapshot and writes it into the directory, under a `.part`
/// name renamed when whole.
fn write(sched: &Sched, why: &Why) -> io::Result<PathBuf> {
    let a = &sched.trace.auto;
    let (dir, name) = {
        let mut st = lock(&a.state);
        let Some(cfg) = &st.cfg else {
            return Err(io::Error::other("goro: the flight recorder was stopped"));
        };
        let dir = cfg.dir.clone();
        let name = format!(
            "goro-flight-{}-{}-{}-{}.raw",
            std::process::id(),
            st.runtime,
            st.seq,
            why.tag
        );
        st.seq += 1;
        (dir, name)
    };
    let raw = raw_snapshot(&sched.trace)?;
    let path = dir.join(name);
    let part = path.with_extension("raw.part");
    std::fs::write(&part, &raw)
        .and_then(|()| std::fs::rename(&part, &path))
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    Ok(path)
}

/// The monitor's latency trigger: the sampled wake-to-run histograms,
/// read once per [`LATENCY_WINDOW`].
pub(crate) struct LatencyWatch {
    threshold: Duration,
    prev: [u64; BUCKETS],
    next: Instant,
}

impl LatencyWatch {
    /// A watch if `sched`'s recorder runs with a latency threshold.
    pub(crate) fn new(sched: &Sched) -> Option<LatencyWatch> {
        let threshold = lock(&sched.trace.auto.state).cfg.as_ref()?.latency?;
        Some(LatencyWatch {
            threshold,
            prev: totals(sched),
            next: Instant::now() + LATENCY_WINDOW,
        })
    }

    /// A busy monitor round: once per window, the window's p99.
    pub(crate) fn check(&mut self, sched: &Sched) {
        let now = Instant::now();
        if now < self.next {
            return;
        }
        self.next = now + LATENCY_WINDOW;
        let cur = totals(sched);
        let mut window = [0u64; BUCKETS];
        for (w, (c, p)) in window.iter_mut().zip(cur.iter().zip(&self.prev)) {
            *w = c.saturating_sub(*p);
        }
        self.prev = cur;
        if let Some(low) = p99_low(&window) {
            if Duration::from_nanos(low) >= self.threshold {
                let n: u64 = window.iter().sum();
                trigger(sched, || Why {
                    tag: "latency",
                    line: format!(
                        "scheduling latency: p99 wake-to-run of {} sampled wakes in the last \
                         {LATENCY_WINDOW:?} is {} or more (threshold {:?})",
                        n,
                        crate::sched::task::meta::human(Duration::from_nanos(low)),
                        self.threshold
                    ),
                });
            }
        }
    }

    /// Forgets the window (the monitor slept through an idle period).
    pub(crate) fn forget(&mut self, sched: &Sched) {
        self.prev = totals(sched);
        self.next = Instant::now() + LATENCY_WINDOW;
    }
}

/// Every P's wake-to-run counts, added up.
fn totals(sched: &Sched) -> [u64; BUCKETS] {
    let mut c = [0u64; BUCKETS];
    for p in sched.ps.iter() {
        p.metrics.wake_to_run.add_to(&mut c);
    }
    c
}

/// The low edge of the bucket holding the 99th percentile, in ns; `None`
/// with too few samples.
fn p99_low(window: &[u64; BUCKETS]) -> Option<u64> {
    let n: u64 = window.iter().sum();
    if n < LATENCY_MIN_SAMPLES {
        return None;
    }
    let rank = n - n / 100; // the smallest count reaching 99%
    let mut seen = 0;
    for (k, c) in window.iter().enumerate() {
        seen += c;
        if seen >= rank {
            return Some(if k == 0 { 0 } else { 1 << k });
        }
    }
    None
}

/// The directory of `GORO_FLIGHT`, if set and not empty.
pub(crate) fn dir_from_env() -> Option<PathBuf> {
    std::env::var_os("GORO_FLIGHT")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn p99_takes_the_bucket_that_reaches_99_percent() {
        let mut w = [0u64; BUCKETS];
        w[10] = 99; // [1024, 2048) ns
        w[27] = 1; // [2^27, 2^28) ns, ~134 ms
        assert_eq!(p99_low(&w), Some(1 << 10));
        w[27] = 2;
        assert_eq!(p99_low(&w), Some(1 << 27));
        let few = {
            let mut f = [0u64; BUCKETS];
            f[30] = LATENCY_MIN_SAMPLES - 1;
            f
        };
        assert_eq!(p99_low(&few), None);
    }

    #[test]
    fn a_file_name_says_what_triggered_it() {
        let p = Path::new("/d").join("goro-flight-1-0-0-stuck.raw");
        assert_eq!(
            p.with_extension("raw.part").file_name().unwrap(),
            "goro-flight-1-0-0-stuck.raw.part"
        );
    }
}
