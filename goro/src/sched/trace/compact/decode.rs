//! A chunk's bytes back into events ([`Ev`]), the first step of every
//! conversion: the mirror of `encode.rs`, with the same running state
//! kept per source between the pieces of one chunk.
//!
//! Decoding is kept apart from the recording side so that the hot side
//! stays a few stores: all interpretation happens here, away from the
//! scheduler. An event cut off at the end of the bytes (a file written
//! by a program that died) is dropped; so is everything after a kind
//! byte this version does not know (nothing more of that piece can be
//! read in step).

use super::{args, unzigzag, Arg, BLOCKING, DEF_NAME, DEF_SITE, HAS_TID, KIND_MASK};
use crate::sched::trace::kind;
use std::rc::Rc;

/// One event, decoded.
#[derive(Clone, Debug)]
pub(crate) struct Ev {
    /// Clock ticks (the raw form's units shifted back by the header's
    /// tick shift).
    pub(crate) ts: u64,
    pub(crate) src: usize,
    pub(crate) kind: u8,
    pub(crate) tid: u64,
    pub(crate) a: u64,
    /// The second argument; for CREATE, the parent (0: none) with the
    /// blocking flag in bit 56.
    pub(crate) b: u64,
    /// CREATE: `file:line`.
    pub(crate) site: Option<Rc<str>>,
    /// CREATE: the task's name.
    pub(crate) name: Option<Rc<str>>,
}

/// A source's running state across the pieces of its current chunk.
#[derive(Default)]
pub(crate) struct DecState {
    prev: u64,
    last_id: u64,
    last_tid: u64,
    strings: Vec<Option<Rc<str>>>,
}

/// Reads one varint from `b` at `*i`; `None` if the bytes end first.
pub(crate) fn varint(b: &[u8], i: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let byte = *b.get(*i)?;
        *i += 1;
        if shift < 64 {
            v |= u64::from(byte & 0x7f) << shift;
        }
        if byte < 0x80 {
            return Some(v);
        }
        shift += 7;
    }
}

fn string(b: &[u8], i: &mut usize) -> Option<Rc<str>> {
    let n = varint(b, i)? as usize;
    let s = b.get(*i..i.checked_add(n)?)?;
    *i += n;
    Some(String::from_utf8_lossy(s).into())
}

impl DecState {
    /// Starts over, for a fresh chunk.
    pub(crate) fn reset(&mut self) {
        *self = DecState::default();
    }

    fn define(&mut self, idx: u64, s: Rc<str>) {
        let idx = idx.min(1 << 20) as usize;
        if self.strings.len() <= idx {
            self.strings.resize(idx + 1, None);
        }
        self.strings[idx] = Some(s);
    }

    fn lookup(&self, idx: u64) -> Option<Rc<str>> {
        self.strings.get(idx as usize).cloned().flatten()
    }

    /// Decodes the events of `b` (from `src`, timestamps in units of
    /// `2^shift` ticks) into `out`; returns how many bytes were whole
    /// events.
    pub(crate) fn decode(&mut self, src: usize, shift: u32, b: &[u8], out: &mut Vec<Ev>) -> usize {
        let mut i = 0;
        loop {
            let at = i;
            let saved = (self.prev, self.last_id, self.last_tid);
            match self.one(src, shift, b, &mut i, out) {
                Some(()) => {}
                None => {
                    (self.prev, self.last_id, self.last_tid) = saved;
                    return at;
                }
            }
        }
    }

    /// One event or definition; `None` at the end of the bytes, in the
    /// middle of an event, or at a kind byte that makes no sense.
    fn one(
        &mut self,
        src: usize,
        shift: u32,
        b: &[u8],
        i: &mut usize,
        out: &mut Vec<Ev>,
    ) -> Option<()> {
        let byte = *b.get(*i)?;
        *i += 1;
        match byte {
            DEF_SITE => {
                let idx = varint(b, i)?;
                let line = varint(b, i)?;
                let file = string(b, i)?;
                self.define(idx, format!("{file}:{line}").into());
                return Some(());
            }
            DEF_NAME => {
                let idx = varint(b, i)?;
                let name = string(b, i)?;
                self.define(idx, name);
                return Some(());
            }
            _ => {}
        }
        let k = byte & KIND_MASK;
        if k == 0 || k > kind::STUCK {
            return None;
        }
        self.prev = self.prev.wrapping_add(varint(b, i)?);
        if byte & HAS_TID != 0 {
            self.last_tid = varint(b, i)?;
        }
        let mut vals = [0u64; 2];
        for (v, how) in vals.iter_mut().zip(args(k)) {
            match how {
                Arg::None => {}
                Arg::Plain => *v = varint(b, i)?,
                Arg::Task => {
                    *v = self.last_id.wrapping_add(unzigzag(varint(b, i)?) as u64);
                    self.last_id = *v;
                }
            }
        }
        let mut ev = Ev {
            ts: self.prev << shift,
            src,
            kind: k,
            tid: self.last_tid,
            a: vals[0],
            b: vals[1],
            site: None,
            name: None,
        };
        if k == kind::CREATE {
            let back = varint(b, i)?;
            let site = varint(b, i)?;
            let name = varint(b, i)?;
            let parent = if back == 0 {
                0
            } else {
                ev.a.wrapping_sub(back)
            };
            let blocking = u64::from(byte & BLOCKING != 0);
            ev.b = (parent & ((1 << 56) - 1)) | blocking << 56;
            ev.site = self.lookup(site);
            ev.name = name.checked_sub(1).and_then(|n| self.lookup(n));
        }
        out.push(ev);
        Some(())
    }
}
