//! Decoded events to Perfetto's trace format (a stream of `TracePacket`s,
//! `protos/perfetto/trace/trace_packet.proto`), which ui.perfetto.dev
//! opens as it is.
//!
//! Tracks (`TrackDescriptor`, each with a `uuid`): one process track with
//! three children that group the rest: `Ps` (a track per P: slices
//! `M3` while M3 holds it, and inside them a slice per poll, named after
//! the task), `Ms` (a track per thread that did anything: `spinning`,
//! `parked`, `block_in_place`, and polls without a P), and `tasks` (a
//! track per task, `task 17 "name"`: `running on P1`, `parked: chan
//! receive`). Events (`TrackEvent`) are slice begins and ends, and instants
//! (`spawn`, `wake`, `steal`, `timers`, `netpoll`, `preempted`,
//! `destroyed`, `wake M`, `pool cycle`, and `stuck poll` on a task's
//! track). A flow (`flow_ids` on the
//! `spawn` or `wake` instant, `terminating_flow_ids` on the poll slice it
//! led to) draws the arrow from a wake-up to the poll.
//!
//! Every packet is on one sequence (`trusted_packet_sequence_id` 1); the
//! first clears its incremental state and the others say they need it,
//! as Perfetto asks of a writer that may be cut short. The converter
//! keeps what it opened: it never ends a slice it did not begin (a
//! flight-recorder snapshot starts in the middle of things), so a poll
//! that began before the snapshot's first event simply does not appear.
//!
//! # Where things are
//!
//! - `events.rs`: what each event does to the tracks (the converter's
//!   state machine).
//! - `tracks.rs`: the track tree, and the packets that declare and fill it.

mod events;
mod tracks;

use super::clock::ToNs;
use super::compact::Ev;
use super::proto::Buf;
use super::{OUT_FINISHED, OUT_PREEMPTED, OUT_YIELD};
use crate::sched::task::meta::Reason;
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::rc::Rc;

/// A hasher for the converter's integer keys (task ids, thread numbers,
/// track uuids): one multiply, where SipHash costs tens of nanoseconds
/// per event.
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (v ^ (v >> 29)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

type Map<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;
type Set<K> = HashSet<K, BuildHasherDefault<IdHasher>>;

#[derive(Default)]
struct Thread {
    /// `M3`: its slices' name on a P track.
    name: Option<Rc<str>>,
    /// The task this thread polls and the track its slice is open on
    /// (`None`: between a `block_in_place` handoff and the next track).
    poll: Option<(u64, Option<u64>)>,
    spinning: bool,
    parked: bool,
    bip: bool,
}

#[derive(Default)]
struct Task {
    label: Option<Rc<str>>,
    /// A slice is open on the task's track.
    open: bool,
    running: bool,
    flow: Option<u64>,
}

/// Turns time-ordered events into packets, keeping what is open between
/// calls (a streaming session converts in rounds).
pub(crate) struct Converter {
    /// Ps with a buffer of their own (`e.src` below it is a P).
    procs: usize,
    /// Ps known so far: the per-P tables grow as P ids show up (a
    /// runtime grown by `set_procs` has more Ps than buffers).
    ps: usize,
    /// The process id and name, for the process track.
    pid: u64,
    process: String,
    /// Thread names by trace thread number, from the raw trace.
    thread_names: Map<u64, String>,
    started: bool,
    declared: Set<u64>,
    depth: Map<u64, u32>,
    holder: Vec<Option<u64>>,
    p_poll: Vec<Option<u64>>,
    threads: Map<u64, Thread>,
    tasks: Map<u64, Task>,
    next_flow: u64,
    /// The timestamp of the last event converted.
    last_ts: u64,
    out: Buf,
    /// Names made once: `running on P1` and `steal from P1` by P, and
    /// each poll outcome by code.
    running_on: Vec<Rc<str>>,
    steal_from: Vec<Rc<str>>,
    outcomes: Vec<Rc<str>>,
}

impl Converter {
    /// `procs`: Ps with a buffer; `pid` and `process` name the process.
    pub(crate) fn new(procs: usize, pid: u64, process: String) -> Converter {
        let ps = procs.max(1);
        Converter {
            procs,
            ps,
            pid,
            process,
            thread_names: Map::default(),
            started: false,
            declared: Set::default(),
            depth: Map::default(),
            holder: vec![None; ps],
            p_poll: vec![None; ps],
            threads: Map::default(),
            tasks: Map::default(),
            next_flow: 1,
            last_ts: 0,
            out: Buf::default(),
            running_on: (0..ps).map(|p| format!("running on P{p}").into()).collect(),
            steal_from: (0..ps).map(|p| format!("steal from P{p}").into()).collect(),
            outcomes: (0..=OUT_FINISHED)
                .map(|code| match code {
                    OUT_YIELD => "yield".into(),
                    OUT_PREEMPTED => "preempted".into(),
                    OUT_FINISHED => "finished".into(),
                    r => format!("parked: {}", Reason::from_u8(r as u8)).into(),
                })
                .collect(),
        }
    }

    /// Thread `tid` is called `name` (its M track's title).
    pub(crate) fn thread_name(&mut self, tid: u64, name: String) {
        self.thread_names.insert(tid, name);
    }

    /// P `p` as an index into the per-P tables, grown to hold it (a P id
    /// past any runtime's limit, from a damaged file, is folded in).
    pub(super) fn p_index(&mut self, p: u64) -> usize {
        let p = (p % 4096) as usize;
        while self.ps <= p {
            let q = self.ps;
            self.holder.push(None);
            self.p_poll.push(None);
            self.running_on.push(format!("running on P{q}").into());
            self.steal_from.push(format!("steal from P{q}").into());
            self.ps += 1;
        }
        p
    }

    /// Converts `evs` (in time order) and returns the bytes to write
    /// (the buffer is reused by the next call).
    pub(crate) fn convert(&mut self, evs: &[Ev], to_ns: &ToNs) -> &[u8] {
        self.out.bytes.clear();
        if !self.started {
            self.header();
        }
        for e in evs {
            // Never back in time: an event that missed its round (its
            // writer was preempted past the lag) is written at the time
            // of the last one written, so slices stay well nested.
            let ts = to_ns.ns(e.ts).max(self.last_ts);
            self.last_ts = ts;
            self.one(e, ts);
        }
        &self.out.bytes
    }
}
