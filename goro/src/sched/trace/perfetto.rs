//! Raw events to Perfetto's trace format (a stream of `TracePacket`s,
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
//! `destroyed`, `wake M`, `pool cycle`). A flow (`flow_ids` on the
//! `spawn` or `wake` instant, `terminating_flow_ids` on the poll slice it
//! led to) draws the arrow from a wake-up to the poll.
//!
//! Every packet is on one sequence (`trusted_packet_sequence_id` 1); the
//! first clears its incremental state and the others say they need it,
//! as Perfetto asks of a writer that may be cut short. The converter
//! keeps what it opened: it never ends a slice it did not begin (a
//! flight-recorder snapshot starts in the middle of things), so a poll
//! that began before the snapshot's first event simply does not appear.

use super::clock::ToNs;
use super::kind;
use super::proto::Buf;
use super::{OUT_FINISHED, OUT_PREEMPTED, OUT_YIELD};
use crate::sched::task_meta::Reason;
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::rc::Rc;

// Field numbers, from Perfetto's protos.
const TRACE_PACKET: u32 = 1; // Trace.packet
const P_TIMESTAMP: u32 = 8;
const P_SEQ_ID: u32 = 10;
const P_TRACK_EVENT: u32 = 11;
const P_SEQ_FLAGS: u32 = 13;
const P_TRACK_DESC: u32 = 60;
const P_FIRST_ON_SEQ: u32 = 87;
const TD_UUID: u32 = 1;
const TD_NAME: u32 = 2;
const TD_PROCESS: u32 = 3;
const TD_PARENT: u32 = 5;
const TD_CHILD_ORDER: u32 = 11;
const TD_RANK: u32 = 12;
const PD_PID: u32 = 1;
const PD_NAME: u32 = 6;
const TE_ANNOT: u32 = 4;
const TE_TYPE: u32 = 9;
const TE_TRACK: u32 = 11;
const TE_NAME: u32 = 23;
const TE_FLOW: u32 = 47;
const TE_TERM_FLOW: u32 = 48;
const DA_UINT: u32 = 3;
const DA_STRING: u32 = 6;
const DA_NAME: u32 = 10;
const SLICE_BEGIN: u64 = 1;
const SLICE_END: u64 = 2;
const INSTANT: u64 = 3;
const SEQ_CLEARED: u64 = 1;
const SEQ_NEEDS: u64 = 2;
const ORDER_CHRONOLOGICAL: u64 = 2;
const ORDER_EXPLICIT: u64 = 3;

const PROCESS: u64 = 1;
const GROUP_P: u64 = 2;
const GROUP_M: u64 = 3;
const GROUP_TASKS: u64 = 4;
const P_BASE: u64 = 0x100;
const M_BASE: u64 = 0x1_0000;
const TASK_BASE: u64 = 1 << 32;

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

/// One raw event, decoded.
#[derive(Clone, Debug)]
pub(crate) struct Ev {
    pub(crate) ts: u64,
    src: usize,
    kind: u8,
    tid: u64,
    a: u64,
    b: u64,
    loc: u64,
    name: Option<Box<str>>,
}

/// Decodes the words of a chunk from `src` into `out`.
pub(crate) fn parse(src: usize, words: &[u64], out: &mut Vec<Ev>) {
    let mut i = 0;
    while i + 4 <= words.len() {
        let hdr = words[i + 1];
        let extra = ((hdr >> 8) & 0xff) as usize;
        if i + 4 + extra > words.len() {
            break;
        }
        let mut ev = Ev {
            ts: words[i],
            src,
            kind: hdr as u8,
            tid: hdr >> 16,
            a: words[i + 2],
            b: words[i + 3],
            loc: 0,
            name: None,
        };
        if ev.kind == kind::CREATE && extra > 0 {
            ev.loc = words[i + 4];
            let len = ((ev.b >> 57) & 0x7f) as usize;
            let bytes: Vec<u8> = words[i + 5..i + 4 + extra]
                .iter()
                .flat_map(|w| w.to_le_bytes())
                .take(len)
                .collect();
            if len > 0 {
                ev.name = Some(String::from_utf8_lossy(&bytes).into());
            }
        }
        out.push(ev);
        i += 4 + extra;
    }
}

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
    /// Ps the runtime has made (P ids in events are below it).
    ps: usize,
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
    /// `procs`: Ps with a buffer; `ps`: every P made so far (at least
    /// `procs`; more after `set_procs` grew the runtime).
    pub(crate) fn new(procs: usize, ps: usize) -> Converter {
        let ps = ps.max(procs).max(1);
        Converter {
            procs,
            ps,
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

    fn header(&mut self) {
        self.started = true;
        let exe = std::env::current_exe()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "goro".into());
        let o = &mut self.out;
        let pkt = o.begin(TRACE_PACKET);
        let td = o.begin(P_TRACK_DESC);
        o.uint(TD_UUID, PROCESS);
        let pd = o.begin(TD_PROCESS);
        o.uint(PD_PID, u64::from(std::process::id()));
        o.str(PD_NAME, &format!("{exe} (goro)"));
        o.end(pd);
        o.uint(TD_CHILD_ORDER, ORDER_EXPLICIT);
        o.end(td);
        o.uint(P_SEQ_FLAGS, SEQ_CLEARED);
        o.uint(P_FIRST_ON_SEQ, 1);
        o.uint(P_SEQ_ID, 1);
        o.end(pkt);
        for (uuid, name, rank, order) in [
            (GROUP_P, "Ps", 0, ORDER_EXPLICIT),
            (GROUP_M, "Ms (threads)", 1, ORDER_EXPLICIT),
            (GROUP_TASKS, "tasks", 2, ORDER_CHRONOLOGICAL),
        ] {
            self.descriptor(uuid, name, PROCESS, rank, Some(order));
        }
    }

    fn descriptor(&mut self, uuid: u64, name: &str, parent: u64, rank: u64, order: Option<u64>) {
        self.declared.insert(uuid);
        let o = &mut self.out;
        let pkt = o.begin(TRACE_PACKET);
        let td = o.begin(P_TRACK_DESC);
        o.uint(TD_UUID, uuid);
        o.str(TD_NAME, name);
        o.uint(TD_PARENT, parent);
        o.uint(TD_RANK, rank);
        if let Some(order) = order {
            o.uint(TD_CHILD_ORDER, order);
        }
        o.end(td);
        o.uint(P_SEQ_ID, 1);
        o.end(pkt);
    }

    fn p_track(&mut self, p: usize) -> u64 {
        let uuid = P_BASE + p as u64;
        if !self.declared.contains(&uuid) {
            self.descriptor(uuid, &format!("P{p}"), GROUP_P, p as u64, None);
        }
        uuid
    }

    fn m_track(&mut self, tid: u64) -> u64 {
        let uuid = M_BASE + tid;
        if !self.declared.contains(&uuid) {
            let name = super::THREAD_NAMES
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(tid as usize)
                .cloned()
                .unwrap_or_default();
            self.descriptor(uuid, &format!("M{tid} {name}"), GROUP_M, tid, None);
        }
        uuid
    }

    /// The task's name on its track and its poll slices, made once.
    fn label(&mut self, id: u64) -> Rc<str> {
        self.tasks
            .entry(id)
            .or_default()
            .label
            .get_or_insert_with(|| format!("task {id}").into())
            .clone()
    }

    /// `M3`, made once per thread.
    fn m_name(&mut self, tid: u64) -> Rc<str> {
        self.threads
            .entry(tid)
            .or_default()
            .name
            .get_or_insert_with(|| format!("M{tid}").into())
            .clone()
    }

    fn task_track(&mut self, id: u64) -> u64 {
        let uuid = TASK_BASE + id;
        if !self.declared.contains(&uuid) {
            let label = self.label(id);
            self.descriptor(uuid, &label, GROUP_TASKS, 0, None);
        }
        uuid
    }

    /// The track of an event's source: its P, or its thread.
    fn src_track(&mut self, e: &Ev) -> u64 {
        if e.src < self.procs {
            self.p_track(e.src)
        } else {
            self.m_track(e.tid)
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn track_event(
        &mut self,
        ts: u64,
        ty: u64,
        track: u64,
        name: Option<&str>,
        annots: &[(&str, Annot)],
        flow: Option<u64>,
        term: Option<u64>,
    ) {
        match ty {
            SLICE_BEGIN => *self.depth.entry(track).or_default() += 1,
            SLICE_END => match self.depth.get_mut(&track) {
                Some(d) if *d > 0 => *d -= 1,
                _ => return, // never opened here: a cut-off beginning
            },
            _ => {}
        }
        let o = &mut self.out;
        let pkt = o.begin(TRACE_PACKET);
        o.uint(P_TIMESTAMP, ts);
        let te = o.begin(P_TRACK_EVENT);
        o.uint(TE_TYPE, ty);
        o.uint(TE_TRACK, track);
        if let Some(n) = name {
            o.str(TE_NAME, n);
        }
        for (k, v) in annots {
            let da = o.begin(TE_ANNOT);
            o.str(DA_NAME, k);
            match v {
                Annot::U(u) => o.uint(DA_UINT, *u),
                Annot::S(s) => o.str(DA_STRING, s),
            }
            o.end(da);
        }
        if let Some(f) = flow {
            o.fixed64(TE_FLOW, f);
        }
        if let Some(f) = term {
            o.fixed64(TE_TERM_FLOW, f);
        }
        o.end(te);
        o.uint(P_SEQ_FLAGS, SEQ_NEEDS);
        o.uint(P_SEQ_ID, 1);
        o.end(pkt);
    }

    fn begin(
        &mut self,
        ts: u64,
        track: u64,
        name: &str,
        annots: &[(&str, Annot)],
        term: Option<u64>,
    ) {
        self.track_event(ts, SLICE_BEGIN, track, Some(name), annots, None, term);
    }

    fn end(&mut self, ts: u64, track: u64, annots: &[(&str, Annot)]) {
        self.track_event(ts, SLICE_END, track, None, annots, None, None);
    }

    fn instant(
        &mut self,
        ts: u64,
        track: u64,
        name: &str,
        annots: &[(&str, Annot)],
        flow: Option<u64>,
    ) {
        self.track_event(ts, INSTANT, track, Some(name), annots, flow, None);
    }

    /// Ends the open slice on task `id`'s track, if any.
    fn end_task_slice(&mut self, ts: u64, id: u64) {
        let open = self.tasks.get(&id).is_some_and(|t| t.open);
        if open {
            let tr = self.task_track(id);
            self.end(ts, tr, &[]);
            let t = self.tasks.entry(id).or_default();
            t.open = false;
            t.running = false;
        }
    }

    /// M `tid` holds P `p` from `ts`; a poll it is in the middle of (back
    /// from `block_in_place`) goes on there.
    fn take_p(&mut self, ts: u64, p: usize, tid: u64) {
        let tr = self.p_track(p);
        if self.holder[p].is_some() {
            self.end(ts, tr, &[]);
        }
        self.holder[p] = Some(tid);
        let m = self.m_name(tid);
        self.begin(ts, tr, &m, &[], None);
        let polling = self.threads.get(&tid).and_then(|t| t.poll);
        if let Some((id, None)) = polling {
            let name = format!("{} (after block_in_place)", self.label(id));
            let annots = [("task", Annot::U(id)), ("cont", Annot::U(1))];
            self.begin(ts, tr, &name, &annots, None);
            self.p_poll[p] = Some(id);
            self.threads.entry(tid).or_default().poll = Some((id, Some(tr)));
        }
    }

    /// P `p` is given up at `ts`.
    fn drop_p(&mut self, ts: u64, p: usize, tid: u64) {
        let tr = self.p_track(p);
        if self.p_poll[p].take().is_some() {
            self.end(ts, tr, &[("outcome", Annot::S("P handed off"))]);
            if let Some(t) = self.threads.get_mut(&tid) {
                if let Some((_, track)) = &mut t.poll {
                    *track = None;
                }
            }
        }
        if self.threads.get(&tid).is_some_and(|t| t.spinning) {
            let m = self.m_track(tid);
            self.end(ts, m, &[]);
            self.threads.entry(tid).or_default().spinning = false;
        }
        if self.holder[p].take().is_some() {
            self.end(ts, tr, &[]);
        }
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

    fn one(&mut self, e: &Ev, ts: u64) {
        let on_p = (e.src < self.procs).then_some(e.src);
        match e.kind {
            kind::PROC_START => self.take_p(ts, e.a as usize % self.ps, e.tid),
            kind::PROC_STOP => self.drop_p(ts, e.a as usize % self.ps, e.tid),
            kind::SPIN_START => {
                let m = self.m_track(e.tid);
                let t = self.threads.entry(e.tid).or_default();
                if !t.spinning {
                    t.spinning = true;
                    self.begin(ts, m, "spinning", &[], None);
                }
            }
            kind::SPIN_STOP => {
                let t = self.threads.entry(e.tid).or_default();
                if std::mem::take(&mut t.spinning) {
                    let m = self.m_track(e.tid);
                    self.end(ts, m, &[]);
                }
            }
            kind::STEAL => {
                let tr = self.src_track(e);
                let name = self.steal_from[e.a as usize % self.ps].clone();
                let annots = [("victim", Annot::U(e.a)), ("n", Annot::U(e.b))];
                self.instant(ts, tr, &name, &annots, None);
            }
            kind::M_PARK => {
                let m = self.m_track(e.tid);
                self.threads.entry(e.tid).or_default().parked = true;
                self.begin(ts, m, "parked", &[], None);
            }
            kind::M_UNPARK
                if std::mem::take(&mut self.threads.entry(e.tid).or_default().parked) =>
            {
                let m = self.m_track(e.tid);
                self.end(ts, m, &[]);
            }
            kind::M_WAKE => {
                let tr = self.src_track(e);
                self.instant(ts, tr, "wake M", &[("p", Annot::U(e.a))], None);
            }
            kind::CREATE => {
                let id = e.a;
                let blocking = (e.b >> 56) & 1;
                let parent = e.b & ((1 << 56) - 1);
                let label: Rc<str> = match &e.name {
                    Some(n) => format!("task {id} \"{n}\"").into(),
                    None => format!("task {id}").into(),
                };
                let flow = self.next_flow;
                self.next_flow += 1;
                let t = self.tasks.entry(id).or_default();
                t.label = Some(label);
                t.flow = Some(flow);
                self.task_track(id);
                let location = if e.loc != 0 {
                    // SAFETY: the word is a `&'static Location` that
                    // `create_slow` stored; statics live forever.
                    let loc = unsafe { &*(e.loc as *const std::panic::Location<'static>) };
                    format!("{}:{}", loc.file(), loc.line())
                } else {
                    String::new()
                };
                let annots = [
                    ("task", Annot::U(id)),
                    ("parent", Annot::U(parent)),
                    ("blocking", Annot::U(blocking)),
                    ("location", Annot::S(&location)),
                ];
                let tr = self.src_track(e);
                self.instant(ts, tr, "spawn", &annots, Some(flow));
            }
            kind::POLL_START => {
                let id = e.a;
                let tr = self.src_track(e);
                let term = self.tasks.get_mut(&id).and_then(|t| t.flow.take());
                let label = self.label(id);
                self.begin(ts, tr, &label, &[("task", Annot::U(id))], term);
                if let Some(p) = on_p {
                    self.p_poll[p] = Some(id);
                }
                self.threads.entry(e.tid).or_default().poll = Some((id, Some(tr)));
                self.end_task_slice(ts, id);
                let tt = self.task_track(id);
                match on_p {
                    Some(p) => {
                        let what = self.running_on[p].clone();
                        self.begin(ts, tt, &what, &[], None);
                    }
                    None => self.begin(ts, tt, "running (no P)", &[], None),
                }
                let t = self.tasks.entry(id).or_default();
                t.open = true;
                t.running = true;
            }
            kind::POLL_END => {
                let id = e.a;
                let outcome = self.outcomes[e.b.min(OUT_FINISHED) as usize].clone();
                let polling = self.threads.get_mut(&e.tid).and_then(|t| t.poll.take());
                if let Some((pid, Some(track))) = polling {
                    if pid == id {
                        self.end(ts, track, &[("outcome", Annot::S(&outcome))]);
                        if let Some(p) = on_p {
                            if self.p_poll[p] == Some(id) {
                                self.p_poll[p] = None;
                            }
                        }
                    }
                }
                if self.tasks.get(&id).is_some_and(|t| t.running) {
                    self.end_task_slice(ts, id);
                    if e.b < 32 {
                        let tt = self.task_track(id);
                        self.begin(ts, tt, &outcome, &[], None);
                        self.tasks.entry(id).or_default().open = true;
                    }
                }
            }
            kind::UNBLOCK => {
                let id = e.a;
                let flow = self.next_flow;
                self.next_flow += 1;
                let tr = self.src_track(e);
                let annots = [("task", Annot::U(id)), ("by", Annot::U(e.b))];
                self.instant(ts, tr, "wake", &annots, Some(flow));
                let running = self.tasks.get(&id).is_some_and(|t| t.running);
                if !running {
                    self.end_task_slice(ts, id);
                }
                self.tasks.entry(id).or_default().flow = Some(flow);
            }
            kind::DESTROY => {
                let id = e.a;
                self.end_task_slice(ts, id);
                let tt = self.task_track(id);
                self.instant(ts, tt, "destroyed", &[("task", Annot::U(id))], None);
                self.tasks.remove(&id);
            }
            kind::BIP_BEGIN => {
                let p = e.a as usize % self.ps;
                self.drop_p(ts, p, e.tid);
                let m = self.m_track(e.tid);
                self.threads.entry(e.tid).or_default().bip = true;
                self.begin(ts, m, "block_in_place", &[("p", Annot::U(e.a))], None);
            }
            kind::BIP_END => {
                if std::mem::take(&mut self.threads.entry(e.tid).or_default().bip) {
                    let m = self.m_track(e.tid);
                    self.end(ts, m, &[]);
                }
                match e.a {
                    0 => {
                        // No P to go back to: the poll ends on the thread.
                        let polling = self.threads.get(&e.tid).and_then(|t| t.poll);
                        if let Some((id, None)) = polling {
                            let m = self.m_track(e.tid);
                            let name = format!("{} (no P)", self.label(id));
                            let annots = [("task", Annot::U(id)), ("cont", Annot::U(1))];
                            self.begin(ts, m, &name, &annots, None);
                            self.threads.entry(e.tid).or_default().poll = Some((id, Some(m)));
                        }
                    }
                    p1 => self.take_p(ts, (p1 - 1) as usize % self.ps, e.tid),
                }
            }
            kind::TIMERS => {
                let tr = self.src_track(e);
                self.instant(ts, tr, "timers", &[("n", Annot::U(e.a))], None);
            }
            kind::NETPOLL => {
                let tr = self.src_track(e);
                self.instant(ts, tr, "netpoll", &[("n", Annot::U(e.a))], None);
            }
            kind::POOL_CYCLE => {
                let tr = self.src_track(e);
                self.instant(ts, tr, "pool cycle", &[], None);
            }
            kind::PREEMPT => {
                let tr = self.src_track(e);
                self.instant(ts, tr, "preempted", &[("task", Annot::U(e.a))], None);
            }
            _ => {}
        }
    }
}

enum Annot<'a> {
    U(u64),
    S(&'a str),
}
