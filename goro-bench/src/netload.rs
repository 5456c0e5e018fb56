//! The load generator of the net group: one client, written once, that
//! drives every server (goro's, tokio's and the Go twin's), so that in a
//! net row only the server differs.
//!
//! # How it works
//!
//! [`run`] starts [`THREADS`] client threads (plain std threads, named
//! `gb-netload-N`) and splits the spec's connections between them. Each
//! thread, before the clock:
//!
//! 1. connects its connections to the server (blocking `connect` with a
//!    5 s timeout, `TCP_NODELAY` on),
//! 2. *primes* each one with one full request/response in blocking mode
//!    (5 s timeouts), so that every connection has been accepted, its
//!    server-side handler is running and the server's answer has been
//!    checked once before anything is measured,
//! 3. switches them to non-blocking, registers them with its own epoll
//!    (mio, edge-triggered), says "ready" and waits for "go".
//!
//! The coordinator (the caller's thread) waits for every thread's "ready"
//! (30 s at most), opens the measured region ([`Meter`], plus the server
//! process's CPU when the server runs in another process), says "go", and
//! closes the region when the last thread reports. Measured, each thread
//! runs a closed loop over its connections: every connection has exactly
//! one request in flight; when its response is complete the latency (from
//! just before the request's `write` to the read that completed the
//! response) goes into the shared [`Histogram`] and the next request is
//! written at once. A connection stops after `per_conn` requests, or
//! sooner when the run's time limit has passed (the request in flight
//! still completes; `time_limited` = 1 then says so). A thread that sees no
//! event for [`STALL`] while requests are in flight fails the run. After
//! the region every connection is closed, which ends the server's
//! per-connection handlers.
//!
//! Responses are checked, not just counted: the echo must be the 64 bytes
//! sent; the HTTP response must be `200`, carry a `Content-Length` (no
//! chunked bodies), and its body must be `Hello, World!`. Bytes beyond one
//! response fail the run (one request in flight means one response).
//!
//! CPU: the run's `cpu_ns` is the whole process's (client threads included,
//! as for every other workload: the client is part of the work on 2 cores),
//! plus the server process's when it is a separate one (the Go twin). Each
//! client thread also reads its own CPU clock, so the extras can say how
//! much of it was the server's: `server_cpu_ns_per_op` = (all CPU − the
//! client threads' CPU) / ops.

use crate::registry::{Measured, Meter, RunOut};
use crate::rt::Histogram;
use mio::net::TcpStream as MioStream;
use mio::{Events, Interest, Poll, Token};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Client threads (wrk's default): each owns half of the connections and
/// one epoll. Fixed, not `procs`: the client is the same in every row.
pub const THREADS: usize = 2;
/// A thread that sees no progress for this long fails the run; also the
/// connect and priming timeouts.
pub const STALL: Duration = Duration::from_secs(5);
/// Longest the coordinator waits for the threads to connect and prime.
const READY_WAIT: Duration = Duration::from_secs(30);

/// One echo message (the 64 bytes of `tcp_echo`).
pub const ECHO_MSG: [u8; 64] =
    *b"goro-bench tcp_echo: 64 bytes, sent and read back in one piece.\n";
/// `http_hello`'s request: the smallest keep-alive GET HTTP/1.1 allows
/// (a `Host` header is required; keep-alive is the 1.1 default).
pub const HTTP_REQUEST: &[u8] = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
/// The body every `http_hello` server answers with.
pub const HELLO: &[u8] = b"Hello, World!";
/// Read buffer per connection (a response never comes near it).
const BUF: usize = 4096;

/// What is spoken on the connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proto {
    /// 64-byte messages, echoed back.
    Echo,
    /// `GET /` over HTTP/1.1 keep-alive, answered `Hello, World!`.
    Http,
}

/// One run's load.
#[derive(Clone, Debug)]
pub struct Spec {
    /// The protocol.
    pub proto: Proto,
    /// Connections, all open for the whole run.
    pub conns: usize,
    /// Requests per connection in the measured region.
    pub per_conn: u64,
    /// No request is started after this much time (the run's time bound).
    pub limit: Duration,
}

/// CPU counters of another process (the Go server), read at the edges of
/// the measured region.
#[derive(Clone, Copy, Debug, Default)]
pub struct Cpu {
    /// User+sys CPU nanoseconds.
    pub cpu_ns: u64,
    /// Voluntary context switches.
    pub nvcsw: i64,
    /// Involuntary context switches.
    pub nivcsw: i64,
}

/// Reads a separate server process's CPU counters.
pub type CpuProbe<'a> = &'a dyn Fn() -> Result<Cpu, String>;

/// What one client thread reports at the end.
struct ThreadOut {
    done: u64,
    cpu_ns: u64,
    time_limited: bool,
}

/// Runs `spec` against the server at `addr` and returns the measured
/// region's numbers (see the module docs). `server`: the server process's
/// CPU probe when it is not this process. Blocks the calling thread (call
/// it from a runtime's blocking pool).
pub fn run(addr: SocketAddr, spec: &Spec, server: Option<CpuProbe>) -> Result<RunOut, String> {
    if spec.conns == 0 || spec.per_conn == 0 {
        return Err(format!(
            "netload: conns ({}) and per_conn ({}) must be >= 1",
            spec.conns, spec.per_conn
        ));
    }
    let hist = Arc::new(Histogram::default());
    let threads = THREADS.min(spec.conns);
    let (ready_tx, ready_rx) = mpsc::channel::<Result<(), String>>();
    let (out_tx, out_rx) = mpsc::channel::<Result<ThreadOut, String>>();
    let mut gos = Vec::new();
    let mut handles = Vec::new();
    for t in 0..threads {
        let n = spec.conns / threads + usize::from(t < spec.conns % threads);
        let (go_tx, go_rx) = mpsc::channel::<Instant>();
        gos.push(go_tx);
        let (spec, hist, ready_tx, out_tx) =
            (spec.clone(), hist.clone(), ready_tx.clone(), out_tx.clone());
        let h = std::thread::Builder::new()
            .name(format!("gb-netload-{t}"))
            .spawn(move || {
                let conns = match open(addr, &spec, n) {
                    Ok(c) => c,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let _ = ready_tx.send(Ok(()));
                // The coordinator says go (with the time the run started),
                // or hangs up when another thread failed.
                let Ok(t0) = go_rx.recv_timeout(READY_WAIT + STALL) else {
                    return;
                };
                // The connections are closed after the report, outside
                // the measured region (the coordinator joins this thread
                // before it returns, so they are closed by then).
                let mut cs = Vec::new();
                let r = drive(conns, &mut cs, &spec, &hist, t0);
                let _ = out_tx.send(r);
                drop(cs);
            })
            .map_err(|e| format!("netload: cannot start a client thread: {e}"))?;
        handles.push(h);
    }
    drop((ready_tx, out_tx));
    let join = |handles: Vec<std::thread::JoinHandle<()>>| {
        for h in handles {
            let _ = h.join();
        }
    };

    // Every thread connected and primed, or the first error.
    let until = Instant::now() + READY_WAIT;
    for _ in 0..threads {
        let left = until.saturating_duration_since(Instant::now());
        match ready_rx.recv_timeout(left) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                drop(gos);
                join(handles);
                return Err(e);
            }
            Err(_) => {
                drop(gos);
                return Err(format!(
                    "netload: the client threads did not connect within {}s",
                    READY_WAIT.as_secs()
                ));
            }
        }
    }

    let s0 = server.map(|p| p()).transpose()?;
    let m = Meter::start();
    let t0 = Instant::now();
    for g in &gos {
        let _ = g.send(t0);
    }
    let mut outs = Vec::new();
    let mut err = None;
    let until = t0 + spec.limit + 2 * STALL;
    for _ in 0..threads {
        let left = until.saturating_duration_since(Instant::now());
        match out_rx.recv_timeout(left) {
            Ok(Ok(o)) => outs.push(o),
            Ok(Err(e)) => {
                err.get_or_insert(e);
            }
            Err(_) => {
                err.get_or_insert(format!(
                    "netload: a client thread did not finish within {}s",
                    until.duration_since(t0).as_secs()
                ));
                break;
            }
        }
    }
    let meas = m.stop();
    let s1 = server.map(|p| p()).transpose()?;
    if let Some(e) = err {
        return Err(e);
    }
    join(handles);

    let ops: u64 = outs.iter().map(|o| o.done).sum();
    let client_cpu: u64 = outs.iter().map(|o| o.cpu_ns).sum();
    let meas = match (s0, s1) {
        (Some(a), Some(b)) => Measured {
            cpu_ns: meas.cpu_ns + b.cpu_ns.saturating_sub(a.cpu_ns),
            nvcsw: meas.nvcsw + (b.nvcsw - a.nvcsw),
            nivcsw: meas.nivcsw + (b.nivcsw - a.nivcsw),
            ..meas
        },
        _ => meas,
    };
    let secs = meas.wall_ns as f64 / 1e9;
    let per_op = |x: u64| x as f64 / ops.max(1) as f64;
    Ok(RunOut::new(ops, meas)
        .extra("conns", spec.conns as f64)
        .extra("req_per_s", ops as f64 / secs.max(1e-9))
        .extra("p50_ns", hist.quantile(0.5))
        .extra("p99_ns", hist.quantile(0.99))
        .extra("p999_ns", hist.quantile(0.999))
        .extra("client_cpu_ns_per_op", per_op(client_cpu))
        .extra(
            "server_cpu_ns_per_op",
            per_op(meas.cpu_ns.saturating_sub(client_cpu)),
        )
        .extra(
            "time_limited",
            if outs.iter().any(|o| o.time_limited) {
                1.0
            } else {
                0.0
            },
        ))
}

/// CPU time of the calling thread.
fn thread_cpu_ns() -> u64 {
    // SAFETY: clock_gettime writes one timespec we own; the clock id is a
    // constant the kernel always supports, so the call cannot fail.
    let ts = unsafe {
        let mut ts: libc::timespec = std::mem::zeroed();
        libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts);
        ts
    };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The request bytes of `proto`.
fn request(proto: Proto) -> &'static [u8] {
    match proto {
        Proto::Echo => &ECHO_MSG,
        Proto::Http => HTTP_REQUEST,
    }
}

/// Whether `buf` holds one complete, correct response: `Ok(true)` when
/// complete, `Ok(false)` when more bytes are needed, `Err` when it is wrong.
pub fn complete(proto: Proto, buf: &[u8]) -> Result<bool, String> {
    match proto {
        Proto::Echo => {
            if buf.len() < ECHO_MSG.len() {
                Ok(false)
            } else if buf == ECHO_MSG {
                Ok(true)
            } else {
                Err(format!(
                    "the echo of a 64-byte message came back as {} different bytes",
                    buf.len()
                ))
            }
        }
        Proto::Http => http_complete(buf),
    }
}

fn http_complete(buf: &[u8]) -> Result<bool, String> {
    let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
        if buf.len() > BUF / 2 {
            return Err("an HTTP response head longer than 2 KiB".into());
        }
        return Ok(false);
    };
    let head = std::str::from_utf8(&buf[..end])
        .map_err(|_| "an HTTP response head that is not UTF-8".to_string())?;
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap_or("");
    if !status.starts_with("HTTP/1.1 200 ") {
        return Err(format!("the server answered {status:?}, not HTTP/1.1 200"));
    }
    let mut len = None;
    for l in lines {
        let (k, v) = l.split_once(':').unwrap_or((l, ""));
        let (k, v) = (k.trim(), v.trim());
        if k.eq_ignore_ascii_case("content-length") {
            len = v.parse::<usize>().ok();
        } else if k.eq_ignore_ascii_case("transfer-encoding") {
            return Err(format!(
                "a {v} response body; the generator reads only Content-Length bodies"
            ));
        } else if k.eq_ignore_ascii_case("connection") && v.eq_ignore_ascii_case("close") {
            return Err("the server closes the keep-alive connection (Connection: close)".into());
        }
    }
    let len = len.ok_or("an HTTP response without Content-Length")?;
    let body = end + 4;
    match buf.len().cmp(&(body + len)) {
        std::cmp::Ordering::Less => Ok(false),
        std::cmp::Ordering::Greater => {
            Err("bytes after the response to the only request in flight".into())
        }
        std::cmp::Ordering::Equal if &buf[body..] == HELLO => Ok(true),
        std::cmp::Ordering::Equal => Err(format!(
            "the body was {:?}, not \"Hello, World!\"",
            String::from_utf8_lossy(&buf[body..])
        )),
    }
}

/// Connects `n` connections and primes each with one blocking round trip.
fn open(addr: SocketAddr, spec: &Spec, n: usize) -> Result<Vec<MioStream>, String> {
    let req = request(spec.proto);
    let mut out = Vec::with_capacity(n);
    let mut buf = vec![0u8; BUF];
    for i in 0..n {
        let ctx =
            |what: &str, e: io::Error| format!("netload: connection {i} to {addr}: {what}: {e}");
        let mut s = TcpStream::connect_timeout(&addr, STALL).map_err(|e| ctx("connect", e))?;
        s.set_nodelay(true).map_err(|e| ctx("TCP_NODELAY", e))?;
        s.set_read_timeout(Some(STALL))
            .and_then(|()| s.set_write_timeout(Some(STALL)))
            .map_err(|e| ctx("socket timeouts", e))?;
        s.write_all(req).map_err(|e| ctx("first request", e))?;
        let mut len = 0;
        loop {
            let k = s
                .read(&mut buf[len..])
                .map_err(|e| ctx("first response", e))?;
            if k == 0 {
                return Err(format!(
                    "netload: connection {i} to {addr}: the server closed it before the first response"
                ));
            }
            len += k;
            match complete(spec.proto, &buf[..len]) {
                Ok(true) => break,
                Ok(false) if len < BUF => {}
                Ok(false) => {
                    return Err(format!(
                        "netload: connection {i}: response over {BUF} bytes"
                    ))
                }
                Err(e) => return Err(format!("netload: connection {i} to {addr}: {e}")),
            }
        }
        s.set_nonblocking(true)
            .map_err(|e| ctx("non-blocking", e))?;
        out.push(MioStream::from_std(s));
    }
    Ok(out)
}

/// One connection's state in the measured loop.
struct Conn {
    s: MioStream,
    /// Bytes of the current request already written.
    wrote: usize,
    /// Response bytes read so far.
    buf: Box<[u8]>,
    len: usize,
    /// When the current request was started.
    t: Instant,
    /// Requests started.
    sent: u64,
    /// A request is in flight.
    busy: bool,
}

/// The measured closed loop of one thread (see the module docs), over
/// `conns`, which it moves into `cs` (the caller closes them).
fn drive(
    conns: Vec<MioStream>,
    cs: &mut Vec<Conn>,
    spec: &Spec,
    hist: &Histogram,
    t0: Instant,
) -> Result<ThreadOut, String> {
    let cpu0 = thread_cpu_ns();
    let req = request(spec.proto);
    let end = t0 + spec.limit;
    let mut poll = Poll::new().map_err(|e| format!("netload: epoll: {e}"))?;
    cs.reserve(conns.len());
    for (i, mut s) in conns.into_iter().enumerate() {
        poll.registry()
            .register(&mut s, Token(i), Interest::READABLE | Interest::WRITABLE)
            .map_err(|e| format!("netload: epoll register: {e}"))?;
        cs.push(Conn {
            s,
            wrote: 0,
            buf: vec![0u8; BUF].into_boxed_slice(),
            len: 0,
            t: t0,
            sent: 0,
            busy: false,
        });
    }
    let mut done = 0u64;
    let mut busy = 0usize;
    let mut time_limited = false;
    let now = Instant::now();
    for (i, c) in cs.iter_mut().enumerate() {
        start(c, req, now).map_err(|e| format!("netload: connection {i}: write: {e}"))?;
        busy += 1;
    }
    let mut events = Events::with_capacity(256);
    let mut last = Instant::now();
    while busy > 0 {
        match poll.poll(&mut events, Some(STALL)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(format!("netload: epoll wait: {e}")),
        }
        if events.is_empty() {
            if last.elapsed() >= STALL {
                return Err(format!(
                    "netload: no response for {}s with {busy} requests in flight (after {done} answered)",
                    STALL.as_secs()
                ));
            }
            continue;
        }
        for ev in events.iter() {
            let i = ev.token().0;
            let c = &mut cs[i];
            if !c.busy {
                continue;
            }
            if ev.is_writable() && c.wrote < req.len() {
                flush(c, req).map_err(|e| format!("netload: connection {i}: write: {e}"))?;
            }
            if !(ev.is_readable() || ev.is_read_closed() || ev.is_error()) {
                continue;
            }
            // Edge-triggered: read until the socket is empty (a short read
            // empties it) or the response is complete.
            loop {
                let k = match (&c.s).read(&mut c.buf[c.len..]) {
                    Ok(0) => {
                        return Err(format!(
                            "netload: connection {i}: the server closed it after {} requests",
                            c.sent - 1
                        ))
                    }
                    Ok(k) => k,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(format!("netload: connection {i}: read: {e}")),
                };
                let room = c.buf.len() - c.len;
                c.len += k;
                match complete(spec.proto, &c.buf[..c.len]) {
                    Ok(true) => {
                        let now = Instant::now();
                        hist.record(now.duration_since(c.t).as_nanos() as u64);
                        done += 1;
                        last = now;
                        c.busy = false;
                        busy -= 1;
                        if c.sent < spec.per_conn {
                            if now < end {
                                start(c, req, now)
                                    .map_err(|e| format!("netload: connection {i}: write: {e}"))?;
                                busy += 1;
                            } else {
                                time_limited = true;
                            }
                        }
                        break;
                    }
                    Ok(false) if c.len < c.buf.len() => {}
                    Ok(false) => {
                        return Err(format!(
                            "netload: connection {i}: response over {BUF} bytes"
                        ))
                    }
                    Err(e) => return Err(format!("netload: connection {i}: {e}")),
                }
                if k < room {
                    break;
                }
            }
        }
    }
    Ok(ThreadOut {
        done,
        cpu_ns: thread_cpu_ns().saturating_sub(cpu0),
        time_limited,
    })
}

/// Starts the next request on `c`.
fn start(c: &mut Conn, req: &[u8], now: Instant) -> io::Result<()> {
    c.t = now;
    c.sent += 1;
    c.busy = true;
    c.wrote = 0;
    c.len = 0;
    flush(c, req)
}

/// Writes what is left of the request; stops at `WouldBlock` (the
/// writable event continues it).
fn flush(c: &mut Conn, req: &[u8]) -> io::Result<()> {
    while c.wrote < req.len() {
        match (&c.s).write(&req[c.wrote..]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(k) => c.wrote += k,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echo_message_is_64_bytes() {
        assert_eq!(ECHO_MSG.len(), 64);
    }

    #[test]
    fn http_responses_are_checked() {
        let ok = b"HTTP/1.1 200 OK\r\ncontent-length: 13\r\ndate: x\r\n\r\nHello, World!";
        assert_eq!(http_complete(ok), Ok(true));
        assert_eq!(http_complete(&ok[..ok.len() - 1]), Ok(false));
        assert_eq!(http_complete(&ok[..20]), Ok(false));
        let mut two = ok.to_vec();
        two.extend_from_slice(b"H");
        assert!(http_complete(&two).is_err());
        assert!(http_complete(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n").is_err());
        assert!(http_complete(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n").is_err());
        assert!(
            http_complete(b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\nHello, Moon!!").is_err()
        );
    }
}
