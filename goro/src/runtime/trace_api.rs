//! The trace's entry points on [`Runtime`] (the machinery is in
//! [`crate::trace`]).

use super::Runtime;
use crate::sched::trace::{FlightRecorder, DEFAULT_FLIGHT_BYTES};
use std::io::{self, Write};
use std::time::Duration;

impl Runtime {
    /// Starts recording an execution trace of this runtime into `w`, in
    /// Perfetto's format (open the file at <https://ui.perfetto.dev>),
    /// until [`Runtime::trace_stop`]. A thread of the runtime writes it,
    /// in rounds; see [`crate::trace`] for what is recorded and what it
    /// costs. Fails if a trace or a flight recorder already runs here.
    ///
    /// ```
    /// let rt = goro::Runtime::builder().procs(2).build().unwrap();
    /// let file = std::env::temp_dir().join("goro-doc-trace.pftrace");
    /// rt.trace_start(std::fs::File::create(&file).unwrap()).unwrap();
    /// rt.block_on(async { goro::spawn(async { 1 }).await.unwrap() });
    /// rt.trace_stop().unwrap();
    /// assert!(std::fs::metadata(&file).unwrap().len() > 0);
    /// # std::fs::remove_file(file).unwrap();
    /// ```
    pub fn trace_start(&self, w: impl Write + Send + 'static) -> io::Result<()> {
        crate::sched::trace::start_stream(
            &self.sched,
            crate::sched::trace::Sink::Perfetto(Box::new(w)),
        )
    }

    /// Stops the trace that [`Runtime::trace_start`] began, writes what
    /// is left and flushes the writer; returns the writer's first error,
    /// if any (after which nothing more was written). Fails if no trace
    /// runs.
    pub fn trace_stop(&self) -> io::Result<()> {
        crate::sched::trace::stop_stream(&self.sched)
    }

    /// Starts a flight recorder: the trace of at least the last `window`
    /// is kept in memory, within [`DEFAULT_FLIGHT_BYTES`] (64 MiB) plus
    /// a 64 KiB buffer per P, and written by [`FlightRecorder::snapshot`].
    /// Go 1.25's `runtime/trace.FlightRecorder`. Fails for a zero window,
    /// or if a trace or flight recorder already runs here.
    pub fn flight_recorder(&self, window: Duration) -> io::Result<FlightRecorder> {
        crate::sched::trace::flight_start(&self.sched, window, DEFAULT_FLIGHT_BYTES)
    }

    /// [`Runtime::flight_recorder`] with a byte bound of `max_bytes`
    /// (at least 64 KiB): when the window's events outgrow it, the oldest
    /// go first and the snapshot covers less than the window.
    pub fn flight_recorder_with_limit(
        &self,
        window: Duration,
        max_bytes: usize,
    ) -> io::Result<FlightRecorder> {
        crate::sched::trace::flight_start(&self.sched, window, max_bytes)
    }

    /// Writes a snapshot of the always-on flight recorder
    /// ([`Builder::flight_dir`](crate::Builder::flight_dir), `GORO_FLIGHT`)
    /// into its directory now, in the raw form, and returns the file's
    /// path (`goro-trace` converts it). Not rate-limited. Fails if the
    /// recorder is off.
    ///
    /// ```
    /// let dir = std::env::temp_dir().join(format!("goro-doc-flight-{}", std::process::id()));
    /// let rt = goro::Runtime::builder().flight_dir(&dir).build().unwrap();
    /// rt.block_on(async { goro::spawn(async { 1 }).await.unwrap() });
    /// let raw = rt.flight_snapshot().unwrap();
    /// let mut perfetto = Vec::new();
    /// goro::trace::to_perfetto(std::fs::File::open(&raw).unwrap(), &mut perfetto).unwrap();
    /// assert!(!perfetto.is_empty());
    /// # drop(rt);
    /// # std::fs::remove_dir_all(dir).unwrap();
    /// ```
    pub fn flight_snapshot(&self) -> io::Result<std::path::PathBuf> {
        crate::sched::trace::auto::manual(&self.sched)
    }
}
