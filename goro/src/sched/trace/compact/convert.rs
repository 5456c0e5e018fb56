//! A raw stream to Perfetto's format: the one conversion behind
//! `trace_stop`, a flight-recorder snapshot, `goro::trace::to_perfetto`
//! and the `goro-trace` binary.
//!
//! The records are read in order; each source's chunk pieces are decoded
//! with that source's running state, and the events wait in one list
//! until a round mark says that everything before it is in: then the
//! list is sorted by time (a stable sort, so one source's events keep
//! their order) and what is older than the mark goes through the
//! Perfetto converter. Memory is a round's events, not the whole trace.
//! A cut drops every event from its time on. At the end of the input
//! whatever is left is converted, cut off or not.

use super::decode::DecState;
use super::file::{Reader, Record};
use super::Ev;
use crate::sched::trace::clock::ToNs;
use crate::sched::trace::perfetto::Converter;
use std::io::{self, Read, Write};

/// What [`to_perfetto`](crate::trace::to_perfetto) converted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Converted {
    /// Events read from the raw trace and converted.
    pub events: u64,
    /// The input ended in the middle of a record (the program that wrote
    /// it died, or the file was cut): the whole events before the cut
    /// were converted.
    pub cut_off: bool,
}

/// Reads a raw trace from `r` and writes it to `w` in Perfetto's format.
pub(crate) fn to_perfetto(r: impl Read, w: impl Write) -> io::Result<Converted> {
    let mut rd = Reader::new(r);
    let h = rd.header()?;
    let mut out = io::BufWriter::with_capacity(1 << 20, w);
    let mut conv = Converter::new(h.procs, h.pid, h.process.clone());
    let mut states: Vec<DecState> = Vec::new();
    let mut pending: Vec<Ev> = Vec::new();
    let mut to_ns: Option<ToNs> = None;
    let mut cut = u64::MAX;
    let mut done = Converted::default();
    let mut flush = |mark: u64,
                     cut: u64,
                     pending: &mut Vec<Ev>,
                     conv: &mut Converter,
                     to_ns: &mut Option<ToNs>|
     -> io::Result<()> {
        pending.sort_by_key(|e| e.ts);
        let upto = pending.partition_point(|e| e.ts < mark);
        let keep = pending.partition_point(|e| e.ts < cut).min(upto);
        // No second stamp yet (a file cut off in its first 10 ms): the
        // line falls back to a nominal rate (`ToNs::new`).
        let line = *to_ns.get_or_insert_with(|| ToNs::new(h.start, h.start));
        out.write_all(conv.convert(&pending[..keep], &line))?;
        done.events += keep as u64;
        pending.drain(..upto);
        Ok(())
    };
    while let Some(rec) = rd.next()? {
        match rec {
            Record::Thread(tid, name) => conv.thread_name(tid, name),
            Record::Chunk(src, fresh, bytes) => {
                if states.len() <= src {
                    states.resize_with(src + 1, DecState::default);
                }
                let st = &mut states[src];
                if fresh {
                    st.reset();
                }
                st.decode(src, h.tick_shift, &bytes, &mut pending);
            }
            Record::Clock(s) => {
                if to_ns.is_none() {
                    to_ns = Some(ToNs::new(h.start, s));
                }
            }
            Record::Round(mark) => flush(mark, cut, &mut pending, &mut conv, &mut to_ns)?,
            Record::Cut(mark) => cut = cut.min(mark),
        }
    }
    flush(u64::MAX, cut, &mut pending, &mut conv, &mut to_ns)?;
    done.cut_off = rd.cut_off;
    out.flush()?;
    Ok(done)
}
