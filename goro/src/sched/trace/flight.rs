//! The flight recorder: the last stretch of a runtime's trace, kept as
//! compact chunks in bounded memory and converted to Perfetto's format
//! only when a snapshot is taken (the bound and the window are in the
//! module docs of `sched/trace/`).
//!
//! A snapshot writes what the chunks hold as a raw trace in memory (each
//! chunk decodes on its own, so dropping old ones loses nothing else) and
//! runs it through the same converter as a file, `compact::to_perfetto`.

use super::buf::Chunk;
use super::clock::{Stamp, ToNs};
use super::compact::file;
use super::session::{begin, busy, calibrate, end, Session};
use super::Trace;
use crate::sched::Sched;
use std::io::{self, Write};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// Default byte bound of a flight recorder.
pub const DEFAULT_FLIGHT_BYTES: usize = 64 << 20;

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
    flight_begin(&sched.trace, window, max_bytes)?;
    Ok(FlightRecorder {
        sched: sched.clone(),
        window,
        max_bytes,
    })
}

/// Starts a flight recorder session on `t` (checked bounds; busy if any
/// session runs).
pub(crate) fn flight_begin(t: &Trace, window: Duration, max_bytes: usize) -> io::Result<()> {
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
    let mut session = t.session.lock().unwrap_or_else(|e| e.into_inner());
    if session.is_some() {
        return Err(busy());
    }
    let start = Stamp::now();
    let calib = calibrate(start);
    let to_ns = ToNs::new(start, calib);
    let ticks = to_ns.ticks_for(window.as_nanos().min(u64::MAX as u128) as u64);
    begin(t, Some((max_bytes, ticks)));
    *session = Some(Session::Flight { start, calib });
    Ok(())
}

impl FlightRecorder {
    /// Writes the recorded stretch (at least the last `window` of events,
    /// unless they outgrew the byte bound) to `w` in Perfetto's format.
    /// Recording goes on meanwhile.
    pub fn snapshot(&self, mut w: impl Write) -> io::Result<()> {
        let raw = raw_snapshot(&self.sched.trace)?;
        super::compact::to_perfetto(&raw[..], &mut w)?;
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
        flight_stop(&self.sched.trace);
    }
}

/// Ends a flight recorder session, if one runs, and frees its chunks.
pub(crate) fn flight_stop(t: &Trace) {
    let mut session = t.session.lock().unwrap_or_else(|e| e.into_inner());
    if matches!(*session, Some(Session::Flight { .. })) {
        *session = None;
        end(t);
        t.buf.reset(t.gen.load(Ordering::Relaxed));
    }
}

/// What a flight recorder session holds now, in the raw form (as
/// `GORO_TRACE_RAW` writes it): a copy of its chunks' bytes, no
/// conversion.
pub(crate) fn raw_snapshot(t: &Trace) -> io::Result<Vec<u8>> {
    let (start, calib) = match &*t.session.lock().unwrap_or_else(|e| e.into_inner()) {
        Some(Session::Flight { start, calib }) => (*start, *calib),
        _ => return Err(io::Error::other("goro: the flight recorder was stopped")),
    };
    let to_ns = ToNs::new(start, calib);
    // A consistent cut: the sources are read one after another while
    // their owners go on appending, so everything from a moment before
    // the first read on is left out (else one P's late events would be
    // in and another's not). A millisecond covers a writer between its
    // clock read and its append.
    let mark = super::clock::ticks().saturating_sub(to_ns.ticks_for(1_000_000));
    let chunks: Vec<Arc<Chunk>> = {
        let l = t.buf.lists.lock().unwrap_or_else(|e| e.into_inner());
        l.full
            .iter()
            .chain(l.current.iter().flatten())
            .cloned()
            .collect()
    };
    let mut raw = Vec::new();
    file::header(&mut raw, t.procs(), start);
    file::clock(&mut raw, calib);
    for (tid, name) in super::THREAD_NAMES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .enumerate()
    {
        if !name.is_empty() {
            file::thread(&mut raw, tid as u64, name);
        }
    }
    // Full chunks in the order they filled, then each source's current
    // one: one source's chunks stay in order.
    for c in &chunks {
        file::chunk(&mut raw, c.src, true, c.published(0));
    }
    file::mark(&mut raw, file::R_CUT, mark);
    Ok(raw)
}
