//! The raw file: a versioned header, then records (`compact/mod.rs`
//! lists them). Writing appends to a `Vec<u8>`; reading goes through any
//! `Read`, a record at a time, and tells a clean end from a cut-off one.

use super::decode::varint;
use super::TICK_SHIFT;
use crate::sched::trace::clock::Stamp;
use std::io::{self, Read};

/// The file's first bytes.
pub(crate) const MAGIC: &[u8; 7] = b"GOROTRC";
/// The format's version, the byte after the magic.
pub(crate) const VERSION: u8 = 1;

/// Record types.
pub(crate) const R_THREAD: u8 = 1;
pub(crate) const R_CHUNK: u8 = 2;
pub(crate) const R_CLOCK: u8 = 3;
pub(crate) const R_ROUND: u8 = 4;
pub(crate) const R_CUT: u8 = 5;

/// What the header says.
pub(crate) struct Header {
    pub(crate) tick_shift: u32,
    pub(crate) procs: usize,
    pub(crate) start: Stamp,
    pub(crate) pid: u64,
    pub(crate) process: String,
}

fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// The magic, the version and the header of this process's trace.
pub(crate) fn header(out: &mut Vec<u8>, procs: usize, start: Stamp) {
    let exe = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "goro".into());
    out.extend_from_slice(MAGIC);
    out.push(VERSION);
    put(out, u64::from(TICK_SHIFT));
    put(out, procs as u64);
    put(out, start.ticks);
    put(out, start.ns);
    put(out, u64::from(std::process::id()));
    put_bytes(out, exe.as_bytes());
}

/// Thread `tid` is called `name`.
pub(crate) fn thread(out: &mut Vec<u8>, tid: u64, name: &str) {
    out.push(R_THREAD);
    put(out, tid);
    put_bytes(out, name.as_bytes());
}

/// A piece of a chunk of `src` (`fresh`: its first bytes).
pub(crate) fn chunk(out: &mut Vec<u8>, src: usize, fresh: bool, bytes: &[u8]) {
    out.push(R_CHUNK);
    put(out, src as u64);
    out.push(u8::from(fresh));
    put_bytes(out, bytes);
}

/// A second stamp for the ticks-to-nanoseconds line.
pub(crate) fn clock(out: &mut Vec<u8>, s: Stamp) {
    out.push(R_CLOCK);
    put(out, s.ticks);
    put(out, s.ns);
}

/// A round mark (`R_ROUND`) or a cut (`R_CUT`) at `ticks`.
pub(crate) fn mark(out: &mut Vec<u8>, ty: u8, ticks: u64) {
    out.push(ty);
    put(out, ticks);
}

/// One record, read.
pub(crate) enum Record {
    Thread(u64, String),
    /// (source, fresh, bytes): fewer bytes than the record said if the
    /// input ended first (`Reader::cut_off`).
    Chunk(usize, bool, Vec<u8>),
    Clock(Stamp),
    Round(u64),
    Cut(u64),
}

/// Reads a raw file record by record.
pub(crate) struct Reader<R> {
    r: io::BufReader<R>,
    /// The input ended in the middle of a record.
    pub(crate) cut_off: bool,
}

fn bad(what: impl std::fmt::Display) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "{what}; accepted: a goro raw trace (written by GORO_TRACE_RAW), starting with \
             \"{}\" and version {VERSION}",
            String::from_utf8_lossy(MAGIC)
        ),
    )
}

impl<R: Read> Reader<R> {
    pub(crate) fn new(r: R) -> Reader<R> {
        Reader {
            r: io::BufReader::with_capacity(1 << 16, r),
            cut_off: false,
        }
    }

    /// Up to `n` bytes; fewer only at the end of the input.
    fn take(&mut self, n: usize) -> io::Result<Vec<u8>> {
        let mut v = Vec::with_capacity(n.min(1 << 20));
        (&mut self.r).take(n as u64).read_to_end(&mut v)?;
        Ok(v)
    }

    fn byte(&mut self) -> io::Result<Option<u8>> {
        let b = self.take(1)?;
        Ok(b.first().copied())
    }

    /// A varint; `None` if the input ends first.
    fn varint(&mut self) -> io::Result<Option<u64>> {
        let mut b = Vec::with_capacity(10);
        loop {
            match self.byte()? {
                None => return Ok(None),
                Some(x) => {
                    b.push(x);
                    if x < 0x80 || b.len() == 10 {
                        break;
                    }
                }
            }
        }
        Ok(varint(&b, &mut 0))
    }

    fn bytes(&mut self) -> io::Result<Option<(Vec<u8>, bool)>> {
        let Some(n) = self.varint()? else {
            return Ok(None);
        };
        let v = self.take(usize::try_from(n).unwrap_or(usize::MAX))?;
        let cut = (v.len() as u64) < n;
        Ok(Some((v, cut)))
    }

    /// Reads and checks the magic, the version and the header.
    pub(crate) fn header(&mut self) -> io::Result<Header> {
        let m = self.take(MAGIC.len() + 1)?;
        if m.len() < MAGIC.len() || &m[..MAGIC.len()] != MAGIC {
            return Err(bad(if m.is_empty() {
                "the input is empty".to_string()
            } else {
                format!(
                    "not a goro raw trace: it starts with {:?}",
                    String::from_utf8_lossy(&m[..m.len().min(MAGIC.len())])
                )
            }));
        }
        match m.get(MAGIC.len()) {
            None => return Err(bad("cut off after the magic")),
            Some(&v) if v != VERSION => {
                return Err(bad(format!(
                    "a goro raw trace of version {v}, which this converter does not read"
                )))
            }
            _ => {}
        }
        let mut f = [0u64; 5];
        for (i, x) in f.iter_mut().enumerate() {
            *x = self
                .varint()?
                .ok_or_else(|| bad(format!("cut off in the header (field {} of 6)", i + 1)))?;
        }
        let process = match self.bytes()? {
            Some((b, false)) => String::from_utf8_lossy(&b).into_owned(),
            _ => return Err(bad("cut off in the header (field 6 of 6)")),
        };
        if f[0] > 32 || f[1] > 1 << 16 {
            return Err(bad(format!(
                "a header out of range (tick shift {}, {} Ps)",
                f[0], f[1]
            )));
        }
        Ok(Header {
            tick_shift: f[0] as u32,
            procs: f[1] as usize,
            start: Stamp {
                ticks: f[2],
                ns: f[3],
            },
            pid: f[4],
            process,
        })
    }

    /// The next record; `None` at the end of the input (`cut_off` says
    /// whether it ended inside a record).
    pub(crate) fn next(&mut self) -> io::Result<Option<Record>> {
        let Some(ty) = self.byte()? else {
            return Ok(None);
        };
        let r = self.body(ty)?;
        if r.is_none() {
            self.cut_off = true;
        }
        Ok(r)
    }

    fn body(&mut self, ty: u8) -> io::Result<Option<Record>> {
        Ok(Some(match ty {
            R_THREAD => {
                let Some(tid) = self.varint()? else {
                    return Ok(None);
                };
                match self.bytes()? {
                    Some((b, false)) => Record::Thread(tid, String::from_utf8_lossy(&b).into()),
                    _ => return Ok(None),
                }
            }
            R_CHUNK => {
                let (Some(src), Some(fresh)) = (self.varint()?, self.byte()?) else {
                    return Ok(None);
                };
                let Some((b, cut)) = self.bytes()? else {
                    return Ok(None);
                };
                if cut {
                    self.cut_off = true;
                }
                Record::Chunk(src.min(1 << 16) as usize, fresh != 0, b)
            }
            R_CLOCK => match (self.varint()?, self.varint()?) {
                (Some(ticks), Some(ns)) => Record::Clock(Stamp { ticks, ns }),
                _ => return Ok(None),
            },
            R_ROUND | R_CUT => match self.varint()? {
                Some(t) if ty == R_ROUND => Record::Round(t),
                Some(t) => Record::Cut(t),
                None => return Ok(None),
            },
            other => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("a record of unknown type {other} in a goro raw trace (version {VERSION}): the file is damaged"),
                ))
            }
        }))
    }
}
