//! The track tree and the packets that fill it: Perfetto's protobuf
//! field numbers, one `TrackDescriptor` per track (declared the first time
//! something happens on it), and the `TrackEvent`s (slice begin, slice end,
//! instant) written on them.
//!
//! Track uuids are fixed by what a track stands for (the process, the
//! three groups, `P_BASE + p`, `M_BASE + thread`, `TASK_BASE + task id`),
//! so a track needs no table of its own and a later round of a streaming
//! session finds the same track again. Each track counts the slices open
//! on it, and an end with none open is dropped rather than written: a
//! flight-recorder snapshot starts in the middle of things, so its first
//! ends may have no begin.

use super::{Converter, Ev};
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

impl Converter {
    pub(super) fn header(&mut self) {
        self.started = true;
        let name = format!("{} (goro)", self.process);
        let o = &mut self.out;
        let pkt = o.begin(TRACE_PACKET);
        let td = o.begin(P_TRACK_DESC);
        o.uint(TD_UUID, PROCESS);
        let pd = o.begin(TD_PROCESS);
        o.uint(PD_PID, self.pid);
        o.str(PD_NAME, &name);
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

    pub(super) fn p_track(&mut self, p: usize) -> u64 {
        let uuid = P_BASE + p as u64;
        if !self.declared.contains(&uuid) {
            self.descriptor(uuid, &format!("P{p}"), GROUP_P, p as u64, None);
        }
        uuid
    }

    pub(super) fn m_track(&mut self, tid: u64) -> u64 {
        let uuid = M_BASE + tid;
        if !self.declared.contains(&uuid) {
            let name = self.thread_names.get(&tid).cloned().unwrap_or_default();
            self.descriptor(uuid, &format!("M{tid} {name}"), GROUP_M, tid, None);
        }
        uuid
    }

    /// The task's name on its track and its poll slices, made once.
    pub(super) fn label(&mut self, id: u64) -> Rc<str> {
        self.tasks
            .entry(id)
            .or_default()
            .label
            .get_or_insert_with(|| format!("task {id}").into())
            .clone()
    }

    /// `M3`, made once per thread.
    pub(super) fn m_name(&mut self, tid: u64) -> Rc<str> {
        self.threads
            .entry(tid)
            .or_default()
            .name
            .get_or_insert_with(|| format!("M{tid}").into())
            .clone()
    }

    pub(super) fn task_track(&mut self, id: u64) -> u64 {
        let uuid = TASK_BASE + id;
        if !self.declared.contains(&uuid) {
            let label = self.label(id);
            self.descriptor(uuid, &label, GROUP_TASKS, 0, None);
        }
        uuid
    }

    /// The track of an event's source: its P, or its thread.
    pub(super) fn src_track(&mut self, e: &Ev) -> u64 {
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

    pub(super) fn begin(
        &mut self,
        ts: u64,
        track: u64,
        name: &str,
        annots: &[(&str, Annot)],
        term: Option<u64>,
    ) {
        self.track_event(ts, SLICE_BEGIN, track, Some(name), annots, None, term);
    }

    pub(super) fn end(&mut self, ts: u64, track: u64, annots: &[(&str, Annot)]) {
        self.track_event(ts, SLICE_END, track, None, annots, None, None);
    }

    pub(super) fn instant(
        &mut self,
        ts: u64,
        track: u64,
        name: &str,
        annots: &[(&str, Annot)],
        flow: Option<u64>,
    ) {
        self.track_event(ts, INSTANT, track, Some(name), annots, flow, None);
    }
}

/// An annotation's value.
pub(super) enum Annot<'a> {
    U(u64),
    S(&'a str),
}
