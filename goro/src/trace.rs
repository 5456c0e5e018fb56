//! The execution trace: what every P, M and task did, and when, in
//! Perfetto's own format.
//!
//! # What is recorded
//!
//! Go's vocabulary (`runtime/trace`): a P is taken and given back (by
//! which M), an M spins, parks and is woken, a P steals from another, a
//! task is created (with its parent and spawn site), starts a poll, ends
//! it (parked on what, yielded, or finished), is unblocked (by which
//! task) and destroyed; `block_in_place` begins and ends, and a blocking
//! pool thread runs a `spawn_blocking` call; timers fire, the network
//! poller readies tasks, the coop budget preempts a task, the monitor
//! cycles pools. [`Runtime::trace_start`](crate::Runtime::trace_start)
//! records this until `trace_stop` and writes it to a writer in
//! Perfetto's format; `GORO_TRACE=path` does it for the life of each
//! runtime; a [`FlightRecorder`] keeps only the last stretch of it, in
//! bounded memory, and writes it on demand.
//!
//! # The raw form
//!
//! While a trace runs, events are kept in a compact binary form (a few
//! bytes each) and converted to Perfetto's format only when the trace is
//! read: at `trace_stop`, at a snapshot, or later. `GORO_TRACE_RAW=path`
//! writes that form to `path` as the program runs (the cheapest way to
//! trace: nothing is converted while it runs, and a program that dies
//! leaves a file whose whole events still convert); the `goro-trace`
//! binary (`cargo run --release -p goro --bin goro-trace -- in.raw
//! out.pftrace`) and [`to_perfetto`] convert it.
//!
//! # What Perfetto shows
//!
//! One process track with three groups: a track per P (slices "held by
//! M3", and inside them one slice per poll, named after the task), a
//! track per thread (spinning, parked, `block_in_place`, blocking-pool
//! runs), and a track per task (`running on P1`, `parked: chan receive`).
//! An arrow (a flow) goes from each wake-up, and from each spawn, to the
//! poll it led to. Open the file at <https://ui.perfetto.dev>.
//!
//! # The always-on flight recorder
//!
//! `GORO_FLIGHT=dir` (or [`Builder::flight_dir`](crate::Builder::flight_dir))
//! keeps a flight recorder running for the runtime's whole life (the last
//! [`FLIGHT_WINDOW`], within [`FLIGHT_BYTES`]) and writes a snapshot into
//! `dir` by itself when a poll is stuck, when the deadlock report fires,
//! when a task panics, and when the 99th percentile of the scheduling
//! latency (wake to run) over a second reaches a threshold
//! ([`Builder::flight_latency`](crate::Builder::flight_latency),
//! `GORO_FLIGHT_LATENCY`, [`DEFAULT_FLIGHT_LATENCY`]); at most one per
//! [`Builder::flight_interval`](crate::Builder::flight_interval)
//! ([`DEFAULT_FLIGHT_INTERVAL`]), and by hand with
//! [`Runtime::flight_snapshot`](crate::Runtime::flight_snapshot). Each
//! snapshot is a file of the raw form, named after its trigger
//! (`goro-flight-PID-N-SEQ-stuck.raw`), announced by one line on stderr;
//! `goro-trace` converts it.
//!
//! ```no_run
//! // GORO_FLIGHT=/var/tmp/goro-flight ./server, or in code:
//! let rt = goro::Runtime::builder()
//!     .flight_dir("/var/tmp/goro-flight")
//!     .flight_latency(Some(std::time::Duration::from_millis(50)))
//!     .build()
//!     .unwrap();
//! # drop(rt);
//! ```
//!
//! A flight recorder (this one or a [`FlightRecorder`]) records a little
//! less than a trace, to cost less: a spawn or a preemption inside a poll
//! takes the poll's start as its time instead of reading the clock, and
//! a task destroyed by its own last poll shows as finished, without a
//! separate "destroyed" mark. Polls, wakes, their order and their
//! lengths stay exact; `trace_start` and `GORO_TRACE` stamp and keep
//! every event.
//!
//! The recorder itself lives with the scheduler whose events it records
//! (`sched/trace/`, whose header explains its design); this module is its
//! public face.

pub use crate::sched::trace::{
    to_perfetto, Converted, FlightRecorder, DEFAULT_FLIGHT_BYTES, DEFAULT_FLIGHT_INTERVAL,
    DEFAULT_FLIGHT_LATENCY, FLIGHT_BYTES, FLIGHT_WINDOW,
};
