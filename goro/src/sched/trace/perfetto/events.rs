//! What each kind of event means on the tracks: the converter's state
//! machine, one event at a time (`Converter::one`).
//!
//! Events arrive in time order, merged from every buffer, and each one
//! opens or closes slices or drops an instant, depending on what the
//! converter knows is open: which M holds each P, which task each thread
//! polls, what each task's track shows, which wake-up a poll's flow arrow
//! starts from. Knowing that is what lets it keep the slices well nested
//! when the events are not: a poll that moves to another P through
//! `block_in_place` is ended on the first and continued on the second, a
//! P handed off in the middle of a poll ends that poll's slice, and an end
//! for a slice it never began is dropped.

use super::tracks::Annot;
use super::{Converter, Ev};
use crate::sched::trace::{kind, OUT_FINISHED};
use std::rc::Rc;

impl Converter {
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

    pub(super) fn one(&mut self, e: &Ev, ts: u64) {
        let on_p = (e.src < self.procs).then_some(e.src);
        match e.kind {
            kind::PROC_START => {
                let p = self.p_index(e.a);
                self.take_p(ts, p, e.tid);
            }
            kind::PROC_STOP => {
                let p = self.p_index(e.a);
                self.drop_p(ts, p, e.tid);
            }
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
                let victim = self.p_index(e.a);
                let name = self.steal_from[victim].clone();
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
                let location = e.site.clone().unwrap_or_else(|| "".into());
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
                let p = self.p_index(e.a);
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
                    p1 => {
                        let p = self.p_index(p1 - 1);
                        self.take_p(ts, p, e.tid);
                    }
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
            kind::STUCK => {
                // From the monitor: on the task's own track, inside its
                // "running on P" slice.
                let tt = self.task_track(e.a);
                let annots = [
                    ("task", Annot::U(e.a)),
                    ("p", Annot::U(e.b & 0xffff)),
                    ("running_ns", Annot::U(e.b >> 16)),
                ];
                self.instant(ts, tt, "stuck poll", &annots, None);
            }
            kind::PREEMPT => {
                let tr = self.src_track(e);
                self.instant(ts, tr, "preempted", &[("task", Annot::U(e.a))], None);
            }
            _ => {}
        }
    }
}
