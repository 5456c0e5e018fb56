//! One event into the compact form (`compact/mod.rs` gives the layout),
//! by the thread that records it, against the running state of the
//! chunk it goes to: the previous timestamp, task id and thread, and the
//! strings the chunk has defined.
//!
//! This is the recording side's hot path: a hop's three events each cost
//! a few shifts and stores into a stack buffer, which the caller copies
//! into the chunk. Only a spawn may allocate, and only the first time a
//! chunk meets a task name (spawn sites are keyed by their `&'static`
//! address, names by their bytes).

use super::{args, zigzag, Arg, BLOCKING, DEF_NAME, DEF_SITE, HAS_TID, TICK_SHIFT};
use std::panic::Location;

/// The most bytes one event takes, its string definitions included.
pub(crate) const MAX_EVENT: usize = 512;

/// The longest spawn-site file path and task name kept, in bytes.
const MAX_FILE: usize = 256;
const MAX_NAME: usize = 80;

/// Spawn sites and names a chunk remembers (older ones are defined again
/// under a new index when they come back).
const SITES: usize = 32;
const NAMES: usize = 16;

/// What a spawn adds to its event.
pub(crate) struct Create<'a> {
    pub(crate) parent: u64,
    pub(crate) blocking: bool,
    pub(crate) site: &'static Location<'static>,
    pub(crate) name: Option<&'a str>,
}

/// One event as a hook gives it.
pub(crate) struct Event<'a> {
    pub(crate) kind: u8,
    pub(crate) tid: u64,
    pub(crate) a: u64,
    pub(crate) b: u64,
    pub(crate) create: Option<&'a Create<'a>>,
}

/// A chunk's running state, kept by its one writer and reset when the
/// writer takes a fresh chunk (a chunk decodes on its own).
pub(crate) struct EncState {
    prev: u64,
    last_id: u64,
    /// The previous event's thread, `u64::MAX` before the first.
    last_tid: u64,
    next_str: u32,
    /// Spawn sites by address: (address, index); address 0 is empty.
    sites: [(usize, u32); SITES],
    /// Task names defined in this chunk: (name, index).
    names: Vec<(Box<[u8]>, u32)>,
}

impl Default for EncState {
    fn default() -> EncState {
        EncState {
            prev: 0,
            last_id: 0,
            last_tid: u64::MAX,
            next_str: 0,
            sites: [(0, 0); SITES],
            names: Vec::new(),
        }
    }
}

/// A stack buffer being filled.
struct W<'a> {
    b: &'a mut [u8; MAX_EVENT],
    n: usize,
}

impl W<'_> {
    #[inline(always)]
    fn byte(&mut self, v: u8) {
        self.b[self.n] = v;
        self.n += 1;
    }

    #[inline(always)]
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.byte(v as u8 | 0x80);
            v >>= 7;
        }
        self.byte(v as u8);
    }

    fn bytes(&mut self, s: &[u8]) {
        self.varint(s.len() as u64);
        self.b[self.n..self.n + s.len()].copy_from_slice(s);
        self.n += s.len();
    }
}

impl EncState {
    /// Starts over, for a fresh chunk.
    pub(crate) fn reset(&mut self) {
        self.prev = 0;
        self.last_id = 0;
        self.last_tid = u64::MAX;
        self.next_str = 0;
        self.sites = [(0, 0); SITES];
        self.names.clear();
    }

    /// Encodes `ev`, read at `ticks`, into `out`; returns its length.
    /// The state moves on: the caller must append exactly these bytes,
    /// or reset the state (a fresh chunk) and encode again.
    #[inline]
    pub(crate) fn encode(
        &mut self,
        ticks: u64,
        ev: &Event<'_>,
        out: &mut [u8; MAX_EVENT],
    ) -> usize {
        let mut w = W { b: out, n: 0 };
        let (site, name) = match ev.create {
            Some(c) => self.define(c, &mut w),
            None => (0, 0),
        };
        let units = ticks >> TICK_SHIFT;
        // A clock read that comes out behind the chunk's previous one
        // (another core's counter, a migrated thread) is written at the
        // previous time: deltas stay unsigned.
        let delta = units.saturating_sub(self.prev);
        self.prev += delta;
        let mut k = ev.kind;
        if ev.tid != self.last_tid {
            k |= HAS_TID;
        }
        if ev.create.is_some_and(|c| c.blocking) {
            k |= BLOCKING;
        }
        w.byte(k);
        w.varint(delta);
        if ev.tid != self.last_tid {
            w.varint(ev.tid);
            self.last_tid = ev.tid;
        }
        let spec = args(ev.kind);
        for (v, how) in [(ev.a, spec[0]), (ev.b, spec[1])] {
            match how {
                Arg::None => {}
                Arg::Plain => w.varint(v),
                Arg::Task => {
                    w.varint(zigzag(v.wrapping_sub(self.last_id) as i64));
                    self.last_id = v;
                }
            }
        }
        if let Some(c) = ev.create {
            w.varint(if c.parent == 0 {
                0
            } else {
                ev.a.wrapping_sub(c.parent)
            });
            w.varint(site);
            w.varint(name);
        }
        w.n
    }

    /// Writes the definitions a spawn needs; returns its site's and
    /// name's indices plus one (0: no name).
    #[cold]
    fn define(&mut self, c: &Create<'_>, w: &mut W<'_>) -> (u64, u64) {
        let addr = c.site as *const Location<'static> as usize;
        let slot = (addr >> 3) % SITES;
        let site = if self.sites[slot].0 == addr {
            self.sites[slot].1
        } else {
            let i = self.next_str;
            self.next_str += 1;
            self.sites[slot] = (addr, i);
            let file = c.site.file().as_bytes();
            w.byte(DEF_SITE);
            w.varint(u64::from(i));
            w.varint(u64::from(c.site.line()));
            w.bytes(&file[..file.len().min(MAX_FILE)]);
            i
        };
        let name = match c.name {
            None => 0,
            Some(n) => {
                let n = &n.as_bytes()[..n.len().min(MAX_NAME)];
                let known = self.names.iter().find(|(s, _)| &s[..] == n);
                match known {
                    Some(&(_, i)) => u64::from(i) + 1,
                    None => {
                        let i = self.next_str;
                        self.next_str += 1;
                        if self.names.len() == NAMES {
                            self.names.remove(0);
                        }
                        self.names.push((n.into(), i));
                        w.byte(DEF_NAME);
                        w.varint(u64::from(i));
                        w.bytes(n);
                        u64::from(i) + 1
                    }
                }
            }
        };
        (u64::from(site), name)
    }
}
