//! Starting and stopping sessions: the streaming writer thread,
//! `GORO_TRACE`, and the flight recorder (see the module docs of
//! [`crate::trace`]).

use super::buf::Chunk;
use super::clock::{Stamp, ToNs};
use super::perfetto::{parse, Converter, Ev};
use super::{Trace, ANY_ON};
use crate::sched::Sched;
use std::io::{self, Write};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// How often the streaming writer drains the buffers when nothing fills.
const DRAIN_EVERY: Duration = Duration::from_millis(100);

/// How far behind the clock a streaming round stops.
const LAG: Duration = Duration::from_millis(20);

/// Default byte bound of a flight recorder.
pub const DEFAULT_FLIGHT_BYTES: usize = 64 << 20;

pub(crate) enum Session {
    Stream {
        thread: std::thread::JoinHandle<io::Result<()>>,
    },
    Flight {
        to_ns: ToNs,
    },
}

/// Wakes the streaming writer (a buffer list grew, or the session ends).
#[derive(Default)]
pub(crate) struct Kick {
    state: Mutex<KickState>,
    cv: Condvar,
}

/// What the writer has been told since it last looked.
#[derive(Default)]
struct KickState {
    /// A buffer list grew.
    kicked: bool,
    /// The session ends.
    stopped: bool,
}

impl Kick {
    pub(crate) fn kick(&self) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).kicked = true;
        self.cv.notify_one();
    }

    fn stop(&self) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).stopped = true;
        self.cv.notify_one();
    }

    /// Waits for a kick or `d`; returns whether the session is over.
    fn wait(&self, d: Duration) -> bool {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if !st.kicked && !st.stopped {
            st = self
                .cv
                .wait_timeout(st, d)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        st.kicked = false;
        st.stopped
    }

    fn reset(&self) {
        *self.state.lock().unwrap_or_else(|e| e.into_inner()) = KickState::default();
    }
}

fn busy() -> io::Error {
    io::Error::new(
        io::ErrorKind::AlreadyExists,
        "goro: a trace or flight recorder is already running on this runtime: stop it first",
    )
}

/// Turns recording on for a new generation.
fn begin(t: &Trace, flight: Option<(usize, u64)>) {
    let gen = t.gen.load(Ordering::Relaxed) + 1;
    t.gen.store(gen, Ordering::Relaxed);
    t.buf.reset(gen);
    let (bytes, window) = flight.unwrap_or((0, 0));
    t.flight_max_bytes.store(bytes, Ordering::Relaxed);
    t.flight_window_ticks.store(window, Ordering::Relaxed);
    ANY_ON.fetch_add(1, Ordering::Relaxed);
    t.on.store(true, Ordering::SeqCst);
}

/// Turns recording off.
fn end(t: &Trace) {
    t.on.store(false, Ordering::SeqCst);
    ANY_ON.fetch_sub(1, Ordering::Relaxed);
}

/// `Runtime::trace_start`.
pub(crate) fn start_stream(sched: &Arc<Sched>, w: Box<dyn Write + Send>) -> io::Result<()> {
    let t = &sched.trace;
    let mut session = t.session.lock().unwrap_or_else(|e| e.into_inner());
    if session.is_some() {
        return Err(busy());
    }
    t.kick.reset();
    let start = Stamp::now();
    begin(t, None);
    let s = sched.clone();
    let thread = std::thread::Builder::new()
        .name(format!("{}-trace", sched.thread_name))
        .spawn(move || stream(&s, w, start));
    match thread {
        Ok(thread) => {
            *session = Some(Session::Stream { thread });
            Ok(())
        }
        Err(e) => {
            end(t);
            Err(e)
        }
    }
}

/// `Runtime::trace_stop`: the last drain, then the writer's verdict.
pub(crate) fn stop_stream(sched: &Sched) -> io::Result<()> {
    let t = &sched.trace;
    let session = t.session.lock().unwrap_or_else(|e| e.into_inner()).take();
    match session {
        Some(Session::Stream { thread }) => {
            end(t);
            t.kick.stop();
            thread
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("goro: the trace writer panicked")))
        }
        other => {
            *t.session.lock().unwrap_or_else(|e| e.into_inner()) = other;
            Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "goro: trace_stop without a running trace_start",
            ))
        }
    }
}

/// The streaming writer thread: drains in rounds until the session ends.
fn stream(sched: &Sched, w: Box<dyn Write + Send>, start: Stamp) -> io::Result<()> {
    let t = &sched.trace;
    let mut out = io::BufWriter::with_capacity(1 << 20, w);
    let mut conv = Converter::new(sched.trace.procs(), sched.ps.allocated());
    // Events taken and not yet written (those at or past the watermark
    // wait here for the next round), reused round after round.
    let mut evs: Vec<Ev> = Vec::new();
    let mut failed: Option<io::Error> = None;
    // One line from ticks to nanoseconds for the whole session, so that
    // rounds agree (`calibrate`).
    let to_ns = calibrate(start);
    let lag = to_ns.ticks_for(LAG.as_nanos() as u64);
    loop {
        let over = t.kick.wait(DRAIN_EVERY);
        // The watermark: events older than this are all published, but
        // for a writer preempted between its clock read and its append
        // (`LAG` covers that; a later straggler is written at the time
        // of the last event written, see `Converter::convert`).
        let mark = if over {
            u64::MAX
        } else {
            super::clock::ticks().saturating_sub(lag)
        };
        let chunks = take_for_stream(t);
        for c in &chunks {
            let from = c.read.load(Ordering::Relaxed);
            let words = c.published(from);
            c.read.store(from + words.len(), Ordering::Relaxed);
            parse(c.src, &words, &mut evs);
        }
        {
            let mut l = t.buf.lists.lock().unwrap_or_else(|e| e.into_inner());
            for c in chunks {
                l.recycle(c);
            }
        }
        evs.sort_by_key(|e| e.ts);
        let cut = evs.partition_point(|e| e.ts < mark);
        if failed.is_none() {
            let bytes = conv.convert(&evs[..cut], &to_ns);
            if let Err(e) = out.write_all(bytes) {
                failed = Some(e);
            }
        }
        evs.drain(..cut);
        if over {
            break;
        }
    }
    match failed {
        Some(e) => Err(e),
        None => out.flush(),
    }
}

/// Ticks to nanoseconds over a 10 ms stretch from `start` (the error of
/// two clock reads spread over it is a few parts per million).
fn calibrate(start: Stamp) -> ToNs {
    std::thread::sleep(
        Duration::from_millis(10).saturating_sub(Duration::from_nanos(
            super::clock::mono_ns().saturating_sub(start.ns),
        )),
    );
    ToNs::new(start, Stamp::now())
}

/// The chunks a streaming round reads: the full ones (taken) and each
/// source's current one (shared).
fn take_for_stream(t: &Trace) -> Vec<Arc<Chunk>> {
    let mut l = t.buf.lists.lock().unwrap_or_else(|e| e.into_inner());
    let mut v: Vec<Arc<Chunk>> = l.full.drain(..).collect();
    l.full_bytes = 0;
    v.extend(l.current.iter().flatten().cloned());
    v
}

/// Which file `GORO_TRACE` names for the n-th runtime of the process:
/// the path itself for the first, `path.n` after (unless it is a device
/// or a pipe, which every runtime writes to).
static ENV_RUNTIMES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Paths of runtimes traced through `GORO_TRACE`, for the stats file
/// written when each stops.
pub(crate) struct EnvTrace {
    pub(crate) path: std::path::PathBuf,
    /// Whether it is a regular file (a stats file goes beside it).
    regular: bool,
}

/// `GORO_TRACE=path`: start streaming to `path` now (at build).
pub(crate) fn from_env(sched: &Arc<Sched>) -> io::Result<()> {
    let path = match std::env::var_os("GORO_TRACE") {
        Some(p) if !p.is_empty() => std::path::PathBuf::from(p),
        _ => return Ok(()),
    };
    // A device or a pipe (`/dev/null`) takes every runtime's trace; a
    // regular file only the first one's.
    let regular = std::fs::metadata(&path).map_or(true, |m| m.file_type().is_file());
    // Counted once the file is made: a runtime that failed to build
    // takes no number. (Two runtimes built at the same moment may race
    // for one; `File::create` then truncates, as any reuse would.)
    let n = ENV_RUNTIMES.load(Ordering::Relaxed);
    let path = if n == 0 || !regular {
        path
    } else {
        let mut s = path.into_os_string();
        s.push(format!(".{n}"));
        s.into()
    };
    let f = std::fs::File::create(&path).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("GORO_TRACE={}: cannot create the file: {e}", path.display()),
        )
    })?;
    ENV_RUNTIMES.fetch_add(1, Ordering::Relaxed);
    start_stream(sched, Box::new(f))?;
    *sched.trace.env.lock().unwrap_or_else(|e| e.into_inner()) = Some(EnvTrace { path, regular });
    Ok(())
}

/// At the end of `Runtime::drop`: stops a `trace_start` session left
/// running, and a `GORO_TRACE` session (every
/// thread of the runtime has exited, so the trace is complete) and writes
/// the runtime's counters beside it, `path.stats.json`, for checking the
/// trace against them (`scripts/check-trace.py`).
pub(crate) fn runtime_dropped(sched: &Sched, stats: crate::Stats) {
    let env = sched
        .trace
        .env
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take();
    let Some(env) = env else {
        // A `trace_start` never stopped: stop it now, so that its writer
        // is flushed and its thread (which holds the runtime) exits.
        let streaming = matches!(
            *sched
                .trace
                .session
                .lock()
                .unwrap_or_else(|e| e.into_inner()),
            Some(Session::Stream { .. })
        );
        if streaming {
            if let Err(e) = stop_stream(sched) {
                eprintln!("goro: the trace started by trace_start failed: {e}");
            }
        }
        return;
    };
    if let Err(e) = stop_stream(sched) {
        eprintln!("goro: GORO_TRACE={}: {e}", env.path.display());
        return;
    }
    if !env.regular {
        return;
    }
    let mut p = env.path.into_os_string();
    p.push(".stats.json");
    if let Err(e) = std::fs::write(&p, stats_json(&stats)) {
        eprintln!(
            "goro: cannot write {}: {e}",
            std::path::Path::new(&p).display()
        );
    }
}

/// `Stats` as one JSON object, from its `Debug` form (`Stats { a: 1, .. }`).
fn stats_json(s: &crate::Stats) -> String {
    let dbg = format!("{s:?}");
    let inner = dbg
        .trim_start_matches("Stats")
        .trim()
        .trim_start_matches('{')
        .trim_end_matches('}');
    let fields: Vec<String> = inner
        .split(',')
        .filter_map(|kv| {
            let (k, v) = kv.split_once(':')?;
            Some(format!("\"{}\": {}", k.trim(), v.trim()))
        })
        .collect();
    format!("{{{}}}\n", fields.join(", "))
}

/// Keeps the last stretch of a runtime's trace in bounded memory and
/// writes it on demand (Go 1.25's `runtime/trace.FlightRecorder`).
///
/// Made by [`Runtime::flight_recorder`](crate::Runtime::flight_recorder);
/// recording stops when it is dropped. See the module docs of
/// [`crate::trace`] for the bound and what a snapshot holds.
///
/// ```
/// use std::time::Duration;
/// let rt = goro::Runtime::builder().procs(2).build().unwrap();
/// let fr = rt.flight_recorder(Duration::from_secs(2)).unwrap();
/// rt.block_on(async { goro::spawn(async { 1 }).await.unwrap() });
/// let mut out = Vec::new();
/// fr.snapshot(&mut out).unwrap(); // Perfetto's format: open it in ui.perfetto.dev
/// assert!(!out.is_empty());
/// ```
pub struct FlightRecorder {
    sched: Arc<Sched>,
    window: Duration,
    max_bytes: usize,
}

impl std::fmt::Debug for FlightRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlightRecorder")
            .field("window", &self.window)
            .field("max_bytes", &self.max_bytes)
            .finish()
    }
}

pub(crate) fn flight_start(
    sched: &Arc<Sched>,
    window: Duration,
    max_bytes: usize,
) -> io::Result<FlightRecorder> {
    if window.is_zero() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "goro: flight_recorder(0ns): accepted a window greater than zero",
        ));
    }
    if max_bytes < super::buf::CHUNK_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "goro: flight recorder max_bytes({max_bytes}) is too small: accepted {} or more",
                super::buf::CHUNK_BYTES
            ),
        ));
    }
    let t = &sched.trace;
    let mut session = t.session.lock().unwrap_or_else(|e| e.into_inner());
    if session.is_some() {
        return Err(busy());
    }
    let to_ns = calibrate(Stamp::now());
    let ticks = to_ns.ticks_for(window.as_nanos().min(u64::MAX as u128) as u64);
    begin(t, Some((max_bytes, ticks)));
    *session = Some(Session::Flight { to_ns });
    Ok(FlightRecorder {
        sched: sched.clone(),
        window,
        max_bytes,
    })
}

impl FlightRecorder {
    /// Writes the recorded stretch (at least the last `window` of events,
    /// unless they outgrew the byte bound) to `w` in Perfetto's format.
    /// Recording goes on meanwhile.
    pub fn snapshot(&self, mut w: impl Write) -> io::Result<()> {
        let t = &self.sched.trace;
        let to_ns = match &*t.session.lock().unwrap_or_else(|e| e.into_inner()) {
            Some(Session::Flight { to_ns }) => *to_ns,
            _ => return Err(io::Error::other("goro: the flight recorder was stopped")),
        };
        // A consistent cut: the sources are read one after another while
        // their owners go on appending, so everything from a moment
        // before the first read on is left out (else one P's late
        // events would be in and another's not). A millisecond covers
        // a writer between its clock read and its append.
        let mark = super::clock::ticks().saturating_sub(to_ns.ticks_for(1_000_000));
        let chunks: Vec<Arc<Chunk>> = {
            let l = t.buf.lists.lock().unwrap_or_else(|e| e.into_inner());
            l.full
                .iter()
                .chain(l.current.iter().flatten())
                .cloned()
                .collect()
        };
        let mut evs = Vec::new();
        for c in &chunks {
            parse(c.src, &c.published(0), &mut evs);
        }
        evs.sort_by_key(|e| e.ts);
        evs.truncate(evs.partition_point(|e| e.ts < mark));
        let mut conv = Converter::new(self.sched.trace.procs(), self.sched.ps.allocated());
        let bytes = conv.convert(&evs, &to_ns);
        w.write_all(bytes)?;
        w.flush()
    }

    /// Bytes of events held now: at most `max_bytes` plus one 64 KiB
    /// buffer per P and one for events without a P.
    pub fn buffered_bytes(&self) -> usize {
        let l = self
            .sched
            .trace
            .buf
            .lists
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        l.full_bytes + l.current.iter().flatten().count() * super::buf::CHUNK_BYTES
    }

    /// The bound on [`FlightRecorder::buffered_bytes`]: `max_bytes` plus
    /// a buffer per P and one more.
    pub fn bound_bytes(&self) -> usize {
        self.max_bytes + (self.sched.trace.procs() + 1) * super::buf::CHUNK_BYTES
    }

    /// The window this recorder keeps.
    pub fn window(&self) -> Duration {
        self.window
    }
}

impl Drop for FlightRecorder {
    fn drop(&mut self) {
        let t = &self.sched.trace;
        let mut session = t.session.lock().unwrap_or_else(|e| e.into_inner());
        if matches!(*session, Some(Session::Flight { .. })) {
            *session = None;
            end(t);
            t.buf.reset(t.gen.load(Ordering::Relaxed));
        }
    }
}
