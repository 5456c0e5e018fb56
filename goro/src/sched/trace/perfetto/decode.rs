//! Raw trace words back into events ([`Ev`]), the first step of every
//! conversion.
//!
//! The recording side writes each event as four words (timestamp; kind,
//! extra-word count and thread; two arguments), plus extra words for a
//! task's spawn site and name, with plain stores into a P's chunk
//! (`trace/buf.rs`). Decoding is kept apart from the writer so that the hot
//! side stays a few stores: all interpretation happens here, away from the
//! scheduler. A record cut off at the end of a chunk is dropped.

use crate::sched::trace::kind;

/// One raw event, decoded.
#[derive(Clone, Debug)]
pub(crate) struct Ev {
    pub(crate) ts: u64,
    pub(super) src: usize,
    pub(super) kind: u8,
    pub(super) tid: u64,
    pub(super) a: u64,
    pub(super) b: u64,
    pub(super) loc: u64,
    pub(super) name: Option<Box<str>>,
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
