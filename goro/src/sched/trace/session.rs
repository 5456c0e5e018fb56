//! Starting and stopping streaming sessions (`trace_start`, `GORO_TRACE`,
//! `GORO_TRACE_RAW`) and the streaming writer thread (see the module docs
//! of [`crate::trace`]).
//!
//! The writer thread converts nothing while the program runs: each round
//! it copies the bytes each chunk has published since the last round
//! into records of the raw form (`compact/file.rs`), with the names of
//! threads new since then and a round mark, and writes them either to the
//! caller's writer (`GORO_TRACE_RAW`) or to a spill file. A Perfetto
//! session converts the spill when it stops (`Sink::Perfetto`), so the
//! encoder's work (the seven packets of a hop) is paid once, at the end,
//! and not on the cores the program is using.

use super::buf::Chunk;
use super::clock::{Stamp, ToNs};
use super::compact::file;
use super::{Trace, ANY_ON};
use crate::sched::Sched;
use std::io::{self, Read, Seek, Write};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// How often the streaming writer drains the buffers when nothing fills.
const DRAIN_EVERY: Duration = Duration::from_millis(100);

/// How far behind the clock a streaming round's mark stops.
const LAG: Duration = Duration::from_millis(20);

pub(crate) enum Session {
    Stream {
        thread: std::thread::JoinHandle<io::Result<()>>,
    },
    /// A flight recorder: the stamps its ticks-to-nanoseconds line goes
    /// through.
    Flight { start: Stamp, calib: Stamp },
}

/// Where a streaming session's trace goes.
pub(crate) enum Sink {
    /// The raw form, as it is recorded (`GORO_TRACE_RAW`).
    Raw(Box<dyn Write + Send>),
    /// Perfetto's format, converted when the session stops.
    Perfetto(Box<dyn Write + Send>),
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

pub(crate) fn busy() -> io::Error {
    io::Error::new(
        io::ErrorKind::AlreadyExists,
        "goro: a trace or flight recorder is already running on this runtime: stop it first",
    )
}

/// Turns recording on for a new generation.
pub(crate) fn begin(t: &Trace, flight: Option<(usize, u64)>) {
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
pub(crate) fn end(t: &Trace) {
    t.on.store(false, Ordering::SeqCst);
    ANY_ON.fetch_sub(1, Ordering::Relaxed);
}

/// `Runtime::trace_start` (Perfetto) and the environment's sessions.
pub(crate) fn start_stream(sched: &Arc<Sched>, sink: Sink) -> io::Result<()> {
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
        .spawn(move || stream(&s, sink, start));
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

/// A file (or, failing that, memory) that takes the raw form until the
/// session stops.
trait Spill: Read + Write + Seek + Send {}
impl<T: Read + Write + Seek + Send> Spill for T {}

/// An unnamed file in the temporary directory (unlinked at once, so it
/// goes with the process), or memory if none can be made.
fn spill() -> Box<dyn Spill> {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("goro-trace-{}-{n}.raw", std::process::id()));
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path);
    match f {
        Ok(f) => {
            let _ = std::fs::remove_file(&path);
            Box::new(f)
        }
        Err(_) => Box::new(io::Cursor::new(Vec::new())),
    }
}

/// The streaming writer thread: copies in rounds until the session ends,
/// then (for Perfetto) converts.
fn stream(sched: &Sched, sink: Sink, start: Stamp) -> io::Result<()> {
    let t = &sched.trace;
    let (mut out, perfetto): (Box<dyn Spill>, Option<Box<dyn Write + Send>>) = match sink {
        Sink::Raw(w) => (Box::new(WriteOnly(w)), None),
        Sink::Perfetto(w) => (spill(), Some(w)),
    };
    let mut failed: Option<io::Error> = None;
    // One line from ticks to nanoseconds for the whole session, so that
    // rounds agree (`calibrate`).
    let calib = calibrate(start);
    let lag = ToNs::new(start, calib).ticks_for(LAG.as_nanos() as u64);
    let mut head = Vec::new();
    file::header(&mut head, t.procs(), start);
    file::clock(&mut head, calib);
    let mut body = Vec::new();
    let mut named: Vec<bool> = Vec::new();
    loop {
        let over = t.kick.wait(DRAIN_EVERY);
        // The mark: events older than this are all published, but for a
        // writer preempted between its clock read and its append (`LAG`
        // covers that; a later straggler is converted at the time of the
        // last event converted, see `Converter::convert`).
        let mark = super::clock::ticks().saturating_sub(lag);
        let chunks = take_for_stream(t);
        for c in &chunks {
            let from = c.read.load(Ordering::Relaxed);
            let bytes = c.published(from);
            if !bytes.is_empty() {
                file::chunk(&mut body, c.src, from == 0, bytes);
                c.read.store(from + bytes.len(), Ordering::Relaxed);
            }
        }
        {
            let mut l = t.buf.lists.lock().unwrap_or_else(|e| e.into_inner());
            for c in chunks {
                l.recycle(c);
            }
        }
        // Names after the chunks are read, written before them: a thread
        // is named before its first event is appended.
        {
            let names = super::THREAD_NAMES
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            named.resize(names.len(), false);
            for (tid, name) in names.iter().enumerate() {
                if !name.is_empty() && !std::mem::replace(&mut named[tid], true) {
                    file::thread(&mut head, tid as u64, name);
                }
            }
        }
        head.append(&mut body);
        if !over {
            file::mark(&mut head, file::R_ROUND, mark);
        }
        if failed.is_none() {
            // Flushed each round: a program that dies leaves whole rounds.
            if let Err(e) = out.write_all(&head).and_then(|()| out.flush()) {
                failed = Some(e);
            }
        }
        head.clear();
        if over {
            break;
        }
    }
    if let Some(e) = failed {
        return Err(e);
    }
    match perfetto {
        None => Ok(()),
        Some(mut w) => {
            out.seek(io::SeekFrom::Start(0))?;
            super::compact::to_perfetto(&mut out, &mut w)?;
            w.flush()
        }
    }
}

/// A plain writer as a [`Spill`] that is never read back.
struct WriteOnly(Box<dyn Write + Send>);

impl Write for WriteOnly {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.0.write(b)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

impl Read for WriteOnly {
    fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
        Ok(0)
    }
}

impl Seek for WriteOnly {
    fn seek(&mut self, _: io::SeekFrom) -> io::Result<u64> {
        Ok(0)
    }
}

/// A second stamp 10 ms after `start`, for the ticks-to-nanoseconds line
/// (the error of two clock reads spread over it is a few parts per
/// million).
pub(crate) fn calibrate(start: Stamp) -> Stamp {
    std::thread::sleep(
        Duration::from_millis(10).saturating_sub(Duration::from_nanos(
            super::clock::mono_ns().saturating_sub(start.ns),
        )),
    );
    Stamp::now()
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
