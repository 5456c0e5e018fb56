//! The compact recording format: what a P's buffer holds while the
//! program runs, and what `GORO_TRACE_RAW` writes to its file. Perfetto's
//! format is made from it only when the trace is read (`convert.rs`): at
//! `trace_stop`, at a flight-recorder snapshot, or by `goro-trace`.
//!
//! # Events
//!
//! An event is a kind byte and a few varints (LEB128, as protobuf's):
//!
//! ```text
//! kind byte   bits 0-4: the kind (`trace::kind`), bit 5: a thread number
//!             follows, bit 6: the task is a blocking-pool call (CREATE)
//! ts delta    varint: time since the buffer's previous event, in units
//!             of 2^TICK_SHIFT clock ticks (the first event of a chunk
//!             counts from 0, so a chunk decodes on its own)
//! thread      varint, only when it differs from the chunk's previous
//!             event's (a P's events come from its holder: once per hold)
//! arguments   per kind (`ARGS`): task ids as a zigzag delta from the
//!             chunk's previous task id (a ring's neighbours, a spawn's
//!             child, are a byte apart), other numbers as they are
//! ```
//!
//! A spawn (CREATE) adds the parent (as the child's id minus it, 0 for
//! none), the spawn site and the name, each as an index into strings the
//! chunk defines before first use (`DEF_SITE`, `DEF_NAME`: index, then
//! the bytes). Strings are interned per chunk, not per session: a flight
//! recorder drops old chunks, and each one left must still say what its
//! indices mean.
//!
//! A hand-off (a wake, a poll end, a poll start) is 11 bytes on
//! goro-bench's ring and ping_pong rows, and a spawn_chain step 16
//! (`bench/results/2026-11-28-trace-compact.txt`), where the four-word
//! form before it was 96 and Perfetto's seven packets ~350.
//!
//! # The file
//!
//! `MAGIC` and `VERSION`, then the header (the tick shift, the Ps with a
//! buffer, the start's ticks and nanoseconds, the process id and name),
//! then records, each a type byte and varints (`file.rs`): a thread's
//! name, a piece of a chunk (its source, whether it starts the chunk, its
//! bytes), a clock stamp (a later ticks/nanoseconds pair, for the line
//! between them), a round mark (events before it are all in), a cut
//! (events from it on are dropped: a snapshot's consistent end). The
//! streaming writer thread only copies published chunk bytes into
//! records, so a program that dies leaves a file whose whole records
//! (and the whole events of a last, cut-off one) still convert.
//!
//! # Where things are
//!
//! - `encode.rs`: one event into bytes, with the chunk's running state
//!   (the hot side: no allocation unless a chunk meets a new string).
//! - `decode.rs`: a chunk's bytes back into events.
//! - `file.rs`: the header and the records.
//! - `convert.rs`: a raw stream to Perfetto, merging the sources in time
//!   order round by round.

mod convert;
mod decode;
mod encode;
pub(crate) mod file;

pub(crate) use convert::to_perfetto;
pub use convert::Converted;
pub(crate) use decode::Ev;
pub(crate) use encode::{Create, EncState, Event, MAX_EVENT};

/// Decodes one chunk's bytes (tests of the recording side).
#[cfg(test)]
pub(crate) fn decode_chunk(b: &[u8], out: &mut Vec<Ev>) {
    decode::DecState::default().decode(0, TICK_SHIFT, b, out);
}

/// Ticks per timestamp unit, as a shift: 16 ticks (about 6 ns at a
/// 2.5 GHz TSC; 16 ns where the clock is in nanoseconds). Go divides its
/// `cputicks` by 64 for the same reason: a hop's deltas fit one byte.
pub(crate) const TICK_SHIFT: u32 = 4;

/// The kind byte's flag: a thread number follows the delta.
pub(crate) const HAS_TID: u8 = 1 << 5;
/// The kind byte's flag: a CREATE of a blocking-pool task.
pub(crate) const BLOCKING: u8 = 1 << 6;
/// The kind bits of the kind byte.
pub(crate) const KIND_MASK: u8 = 0x1f;

/// Defines a spawn site (index, line, file), ahead of a CREATE.
pub(crate) const DEF_SITE: u8 = 30;
/// Defines a task name (index, bytes), ahead of a CREATE.
pub(crate) const DEF_NAME: u8 = 31;

/// How an argument is written.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Arg {
    /// Not written (decodes as 0).
    None,
    /// A varint.
    Plain,
    /// A task id: a zigzag delta from the chunk's previous task id.
    Task,
}

/// The two arguments of each kind, as the hooks in `trace/mod.rs` fill
/// them (`a`, `b`). CREATE's parent, site and name follow its `a`.
#[inline(always)]
pub(crate) fn args(k: u8) -> [Arg; 2] {
    use super::kind::*;
    use Arg::{None as N, Plain as P, Task as T};
    match k {
        PROC_START | PROC_STOP | M_WAKE | BIP_BEGIN | BIP_END | TIMERS | NETPOLL => [P, N],
        STEAL => [P, P],
        CREATE | POLL_START | DESTROY | PREEMPT => [T, N],
        POLL_END => [T, P],
        UNBLOCK => [T, T],
        // The stuck poll's task, and its P and time so far packed.
        STUCK => [T, P],
        _ => [N, N],
    }
}

fn zigzag(d: i64) -> u64 {
    ((d << 1) ^ (d >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    (v >> 1) as i64 ^ -((v & 1) as i64)
}

#[cfg(test)]
mod tests;
