//! A small reader of the Perfetto files goro writes (protobuf `Trace`s of
//! `TrackEvent` packets), for tests that look inside them: the field
//! numbers are Perfetto's (`sched/trace/perfetto/tracks.rs`).
//! `scripts/check-trace.sh` checks the same files with Perfetto's own
//! schema.

/// One protobuf varint at `*i`, moving `*i` past it.
pub fn varint(b: &[u8], i: &mut usize) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let byte = b[*i];
        *i += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return v;
        }
        shift += 7;
        assert!(shift < 64, "a varint longer than 10 bytes");
    }
}

/// The fields of one message: (number, varint value or length-delimited bytes).
pub fn fields(b: &[u8]) -> Vec<(u64, Result<u64, &[u8]>)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let key = varint(b, &mut i);
        match key & 7 {
            0 => out.push((key >> 3, Ok(varint(b, &mut i)))),
            1 => {
                out.push((
                    key >> 3,
                    Ok(u64::from_le_bytes(b[i..i + 8].try_into().unwrap())),
                ));
                i += 8;
            }
            2 => {
                let n = varint(b, &mut i) as usize;
                out.push((key >> 3, Err(&b[i..i + n])));
                i += n;
            }
            w => panic!("wire type {w} in a goro trace"),
        }
    }
    out
}

/// A slice on a track: its name, its `task` annotation, and its begin
/// and end in nanoseconds (`None`: never ended in the file).
#[derive(Debug, Clone)]
pub struct Slice {
    pub track: u64,
    pub name: String,
    pub task: Option<u64>,
    pub begin: u64,
    pub end: Option<u64>,
}

/// Every slice of a trace, matching each end to the innermost open
/// begin of its track.
pub fn slices(b: &[u8]) -> Vec<Slice> {
    let mut out: Vec<Slice> = Vec::new();
    let mut open: std::collections::HashMap<u64, Vec<usize>> = Default::default();
    for (num, v) in fields(b) {
        let Err(pkt) = v else { continue };
        if num != 1 {
            continue;
        }
        let mut ts = 0;
        let mut te = None;
        for (f, v) in fields(pkt) {
            match (f, v) {
                (8, Ok(t)) => ts = t,
                (11, Err(e)) => te = Some(e),
                _ => {}
            }
        }
        let Some(te) = te else { continue };
        let (mut ty, mut track, mut name, mut task) = (0, 0, String::new(), None);
        for (g, v) in fields(te) {
            match (g, v) {
                (9, Ok(t)) => ty = t,
                (11, Ok(t)) => track = t,
                (23, Err(n)) => name = String::from_utf8_lossy(n).into(),
                (4, Err(a)) => {
                    let (mut k, mut u) = (String::new(), None);
                    for (h, v) in fields(a) {
                        match (h, v) {
                            (10, Err(n)) => k = String::from_utf8_lossy(n).into(),
                            (3, Ok(x)) => u = Some(x),
                            _ => {}
                        }
                    }
                    if k == "task" {
                        task = u;
                    }
                }
                _ => {}
            }
        }
        match ty {
            1 => {
                open.entry(track).or_default().push(out.len());
                out.push(Slice {
                    track,
                    name,
                    task,
                    begin: ts,
                    end: None,
                });
            }
            2 => {
                if let Some(i) = open.get_mut(&track).and_then(Vec::pop) {
                    out[i].end = Some(ts);
                }
            }
            _ => {}
        }
    }
    out
}
