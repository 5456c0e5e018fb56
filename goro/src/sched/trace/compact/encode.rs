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

/// The event being written, straight into the chunk's free space.
///
/// Writes are unchecked: an event and the definitions before it take at
/// most [`MAX_EVENT`] bytes (kind and flags 1, at most seven varints of
/// at most 10, a site's definition at most 24 + [`MAX_FILE`], a name's at
/// most 12 + [`MAX_NAME`]: 443 in all), so `n` never reaches the end of `b`.
/// The bounds check per byte was a tenth of an event's cost.
struct W<'a> {
    b: &'a mut [u8; MAX_EVENT],
    n: usize,
}

const _: () = assert!(1 + 7 * 10 + (24 + MAX_FILE) + (12 + MAX_NAME) <= MAX_EVENT);

impl W<'_> {
    #[inline(always)]
    fn byte(&mut self, v: u8) {
        debug_assert!(self.n < MAX_EVENT);
        // SAFETY: `n < MAX_EVENT` (the type's docs: an event's bytes are
        // bounded, and only `byte` and `bytes` move `n`).
        unsafe { *self.b.get_unchecked_mut(self.n) = v };
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
    #[inline(never)]
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
        let mut k = ev.kind;
        if ev.tid != self.last_tid {
            k |= HAS_TID;
        }
        if ev.create.is_some_and(|c| c.blocking) {
            k |= BLOCKING;
        }
        w.byte(k);
        self.delta(ticks, &mut w);
        if ev.tid != self.last_tid {
            w.varint(ev.tid);
            self.last_tid = ev.tid;
        }
        self.args(ev.kind, ev.a, ev.b, &mut w);
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

    /// Encodes an event that defines nothing and comes from the chunk's
    /// previous event's thread (`tid == last_tid`, no `create`): what a
    /// P's events are but for the first after a hand-off. The hot path:
    /// kept in registers, no call.
    #[inline(always)]
    pub(crate) fn encode_plain(
        &mut self,
        ticks: u64,
        kind: u8,
        a: u64,
        b: u64,
        out: &mut [u8; MAX_EVENT],
    ) -> usize {
        let mut w = W { b: out, n: 0 };
        w.byte(kind);
        self.delta(ticks, &mut w);
        self.args(kind, a, b, &mut w);
        w.n
    }

    /// Whether an event from thread `tid` without definitions may take
    /// [`EncState::encode_plain`].
    #[inline(always)]
    pub(crate) fn plain(&self, tid: u64) -> bool {
        tid == self.last_tid
    }

    /// The time since the previous event, in units.
    #[inline(always)]
    fn delta(&mut self, ticks: u64, w: &mut W<'_>) {
        let units = ticks >> TICK_SHIFT;
        // A clock read that comes out behind the chunk's previous one
        // (another core's counter, a migrated thread) is written at the
        // previous time: deltas stay unsigned.
        let delta = units.saturating_sub(self.prev);
        self.prev += delta;
        w.varint(delta);
    }

    /// The kind's two arguments, as `ARGS` says.
    #[inline(always)]
    fn args(&mut self, kind: u8, a: u64, b: u64, w: &mut W<'_>) {
        let spec = args(kind);
        for (v, how) in [(a, spec[0]), (b, spec[1])] {
            match how {
                Arg::None => {}
                Arg::Plain => w.varint(v),
                Arg::Task => {
                    w.varint(zigzag(v.wrapping_sub(self.last_id) as i64));
                    self.last_id = v;
                }
            }
        }
    }

    /// Writes the definitions a spawn needs; returns its site's and
    /// name's indices plus one (0: no name). A site the chunk knows is
    /// one compare; the rest is out of line.
    #[inline(always)]
    fn define(&mut self, c: &Create<'_>, w: &mut W<'_>) -> (u64, u64) {
        let addr = c.site as *const Location<'static> as usize;
        let slot = (addr >> 3) % SITES;
        let site = if self.sites[slot].0 == addr {
            self.sites[slot].1
        } else {
            self.define_site(c.site, slot, w)
        };
        let name = match c.name {
            None => 0,
            Some(n) => self.name_index(n, w),
        };
        (u64::from(site), name)
    }

    #[cold]
    fn define_site(&mut self, site: &'static Location<'static>, slot: usize, w: &mut W<'_>) -> u32 {
        let addr = site as *const Location<'static> as usize;
        let i = self.next_str;
        self.next_str += 1;
        self.sites[slot] = (addr, i);
        let file = site.file().as_bytes();
        w.byte(DEF_SITE);
        w.varint(u64::from(i));
        w.varint(u64::from(site.line()));
        w.bytes(&file[..file.len().min(MAX_FILE)]);
        i
    }

    /// A task name's index plus one, defined first if the chunk does not
    /// know it.
    #[inline(never)]
    fn name_index(&mut self, n: &str, w: &mut W<'_>) -> u64 {
        let n = &n.as_bytes()[..n.len().min(MAX_NAME)];
        if let Some(&(_, i)) = self.names.iter().find(|(s, _)| &s[..] == n) {
            return u64::from(i) + 1;
        }
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
