//! The compact form against its decoder: events round-trip, a hop stays
//! within its byte budget, and damaged input is named.

use super::file::{self, Reader, Record};
use super::{Create, EncState, Ev, Event, MAX_EVENT};
use crate::sched::trace::clock::Stamp;
use crate::sched::trace::kind;

fn enc(st: &mut EncState, ticks: u64, ev: &Event<'_>, out: &mut Vec<u8>) {
    let mut b = [0u8; MAX_EVENT];
    let n = st.encode(ticks, ev, &mut b);
    out.extend_from_slice(&b[..n]);
}

fn ev(kind: u8, tid: u64, a: u64, b: u64) -> Event<'static> {
    Event {
        kind,
        tid,
        a,
        b,
        create: None,
    }
}

fn decode(bytes: &[u8]) -> Vec<Ev> {
    let mut out = Vec::new();
    super::decode::DecState::default().decode(0, super::TICK_SHIFT, bytes, &mut out);
    out
}

#[test]
fn events_round_trip_through_the_compact_form() {
    let site = std::panic::Location::caller();
    let c = Create {
        parent: 7,
        blocking: true,
        site,
        name: Some("worker"),
    };
    let mut st = EncState::default();
    let mut b = Vec::new();
    let t0 = 1u64 << 40;
    enc(&mut st, t0, &ev(kind::PROC_START, 3, 1, 0), &mut b);
    let spawn = Event {
        create: Some(&c),
        ..ev(kind::CREATE, 3, 9, 0)
    };
    enc(&mut st, t0 + 160, &spawn, &mut b);
    enc(&mut st, t0 + 320, &ev(kind::UNBLOCK, 3, 4, 9), &mut b);
    enc(&mut st, t0 + 480, &ev(kind::POLL_END, 3, 9, 34), &mut b);
    enc(&mut st, t0 + 100, &ev(kind::STEAL, 5, 0, 2), &mut b);
    let evs = decode(&b);
    assert_eq!(evs.len(), 5, "{evs:?}");
    assert_eq!(
        (evs[0].kind, evs[0].tid, evs[0].a),
        (kind::PROC_START, 3, 1)
    );
    assert_eq!(evs[0].ts, t0);
    let s = &evs[1];
    assert_eq!((s.kind, s.a, s.b), (kind::CREATE, 9, 7 | 1 << 56));
    assert_eq!(s.ts, t0 + 160);
    assert_eq!(s.name.as_deref(), Some("worker"));
    assert_eq!(
        s.site.as_deref(),
        Some(format!("{}:{}", site.file(), site.line()).as_str())
    );
    assert_eq!((evs[2].a, evs[2].b), (4, 9), "a wake and its waker");
    assert_eq!((evs[3].a, evs[3].b), (9, 34));
    assert_eq!(
        (evs[4].ts, evs[4].tid, evs[4].b),
        (t0 + 480, 5, 2),
        "a clock read behind the previous one is written at the previous time"
    );
}

#[test]
fn a_hop_takes_at_most_24_bytes() {
    // A ring's hop on one P: the sender wakes its neighbour, parks, and
    // the neighbour's poll starts, ~100 ns apart.
    let mut st = EncState::default();
    let mut b = Vec::new();
    enc(&mut st, 1 << 40, &ev(kind::POLL_START, 2, 50, 0), &mut b);
    let before = b.len();
    let mut t = 1u64 << 40;
    for i in 0..1000u64 {
        let (me, next) = (50 + i % 100, 50 + (i + 1) % 100);
        t += 250;
        enc(&mut st, t, &ev(kind::UNBLOCK, 2, next, me), &mut b);
        t += 250;
        enc(&mut st, t, &ev(kind::POLL_END, 2, me, 1), &mut b);
        t += 250;
        enc(&mut st, t, &ev(kind::POLL_START, 2, next, 0), &mut b);
    }
    let per_hop = (b.len() - before) as f64 / 1000.0;
    assert!(per_hop <= 24.0, "{per_hop} bytes per hop");
    assert_eq!(decode(&b).len(), 3001);
}

#[test]
fn an_event_cut_off_is_dropped_and_the_whole_ones_kept() {
    let mut st = EncState::default();
    let mut b = Vec::new();
    enc(
        &mut st,
        1 << 40,
        &ev(kind::POLL_START, 2, 1 << 40, 0),
        &mut b,
    );
    let whole = b.len();
    enc(&mut st, 2 << 40, &ev(kind::POLL_END, 2, 1 << 40, 1), &mut b);
    for cut in whole..b.len() {
        assert_eq!(decode(&b[..cut]).len(), 1, "cut at {cut}");
    }
}

fn raw_trace() -> Vec<u8> {
    let mut st = EncState::default();
    let mut events = Vec::new();
    enc(
        &mut st,
        1 << 20,
        &ev(kind::PROC_START, 1, 0, 0),
        &mut events,
    );
    enc(
        &mut st,
        2 << 20,
        &ev(kind::POLL_START, 1, 5, 0),
        &mut events,
    );
    enc(&mut st, 3 << 20, &ev(kind::POLL_END, 1, 5, 34), &mut events);
    let start = Stamp { ticks: 0, ns: 0 };
    let mut raw = Vec::new();
    file::header(&mut raw, 1, start);
    file::clock(
        &mut raw,
        Stamp {
            ticks: 1 << 30,
            ns: 1 << 29,
        },
    );
    file::thread(&mut raw, 1, "goro-0");
    file::chunk(&mut raw, 0, true, &events);
    raw
}

#[test]
fn a_raw_trace_converts_and_a_cut_one_converts_what_is_whole() {
    let raw = raw_trace();
    let mut out = Vec::new();
    let done = super::to_perfetto(&raw[..], &mut out).unwrap();
    assert_eq!((done.events, done.cut_off), (3, false));
    assert!(out.len() > 100);
    let mut out = Vec::new();
    let done = super::to_perfetto(&raw[..raw.len() - 2], &mut out).unwrap();
    assert!(done.cut_off, "the last record was cut");
    assert_eq!(done.events, 2, "the whole events of the cut record");
}

#[test]
fn a_bad_or_truncated_header_is_an_error_naming_the_accepted_form() {
    let raw = raw_trace();
    for (input, says) in [
        (&b""[..], "empty"),
        (&b"PK\x03\x04 not a trace"[..], "not a goro raw trace"),
        (&raw[..7], "cut off after the magic"),
        (&raw[..10], "cut off in the header"),
    ] {
        let e = super::to_perfetto(input, Vec::new()).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidData);
        let msg = e.to_string();
        assert!(msg.contains(says), "{msg}");
        assert!(
            msg.contains("GORO_TRACE_RAW") && msg.contains("GOROTRC"),
            "{msg}"
        );
    }
    let mut v2 = raw.clone();
    v2[7] = 2;
    let e = super::to_perfetto(&v2[..], Vec::new()).unwrap_err();
    assert!(e.to_string().contains("version 2"), "{e}");
    // The records read back as written.
    let mut r = Reader::new(&raw[..]);
    r.header().unwrap();
    assert!(matches!(r.next().unwrap(), Some(Record::Clock(_))));
    assert!(matches!(r.next().unwrap(), Some(Record::Thread(1, _))));
    assert!(matches!(r.next().unwrap(), Some(Record::Chunk(0, true, _))));
    assert!(r.next().unwrap().is_none() && !r.cut_off);
}

#[test]
fn the_plain_path_writes_what_the_general_one_writes() {
    // Every kind without definitions, from the chunk's current thread:
    // `encode_plain` must give the bytes (and leave the state) that
    // `encode` gives, since a chunk mixes both.
    let mut general = EncState::default();
    let mut plain = EncState::default();
    let (mut g, mut p) = (Vec::new(), Vec::new());
    let t0 = 1u64 << 40;
    enc(&mut general, t0, &ev(kind::PROC_START, 3, 1, 0), &mut g);
    enc(&mut plain, t0, &ev(kind::PROC_START, 3, 1, 0), &mut p);
    let mut t = t0;
    for (i, k) in (1..=kind::STUCK).enumerate() {
        t += 16 * (1 + (i as u64 * 977) % 5000);
        let (a, b) = (1000 + i as u64 * 131, (i as u64 * 7919) % 3000);
        enc(&mut general, t, &ev(k, 3, a, b), &mut g);
        assert!(plain.plain(3));
        let mut buf = [0u8; MAX_EVENT];
        let n = plain.encode_plain(t, k, a, b, &mut buf);
        p.extend_from_slice(&buf[..n]);
        assert_eq!(g, p, "kind {k}");
    }
    assert!(!plain.plain(4), "another thread takes the general path");
}
