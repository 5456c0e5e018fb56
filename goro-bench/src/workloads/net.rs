//! The net group of goro-bench/README.md: a TCP echo server and an HTTP/1.1
//! "hello" server on loopback, each driven by the one load generator in
//! `netload.rs`, so that in a row only the server differs.
//!
//! How each column runs (read `bench/go/net.go` side by side):
//!
//! - goro and tokio: the body (a task of the runtime under test) binds a
//!   listener on `127.0.0.1:0`, spawns its accept loop (exactly `conns`
//!   accepts, one task per connection), runs the load generator on the
//!   runtime's blocking pool against that address, then waits (at most
//!   [`STALL`]) for every connection task to see the client's close. goro's
//!   bodies are in `net_goro.rs`.
//! - go: the Go twin is started once per row as `goro-bench-go -serve
//!   <workload> -procs P` (gobench.rs); it listens on `127.0.0.1:0` and says
//!   where; each run drives it from here with the same generator, and the
//!   run's CPU adds the Go process's (it answers `cpu` on its stdin).
//!
//! The client is [`netload::THREADS`] (2) threads with their own epolls,
//! in this process for every column: on 2 cores it competes with the server
//! for the CPU the same way whichever server it drives, and its CPU is in
//! `cpu ns/op` for every column alike (`server_cpu_ns_per_op` is the rest).
//! Connections are opened and primed with one request each before the
//! clock; then each has one request in flight at a time (closed loop).
//! Extras: `req_per_s`, per-request latency `p50_ns`/`p99_ns`/`p999_ns`,
//! `conns`, `client_cpu_ns_per_op`, `server_cpu_ns_per_op`, and
//! `time_limited` (1 when the run's time bound, 20 s / 5 s quick, cut it
//! short; `ops` is always what was done).
//!
//! Every server sets `TCP_NODELAY` on accepted connections (Go's default).
//!
//! `http_hello` compares HTTP servers as their users would write them:
//! hyper 1.x on goro (`goro::net::hyper`), hyper 1.x on tokio (hyper-util's
//! `TokioIo`/`TokioTimer`), and Go's net/http. The two hyper columns are
//! configured alike, line for line, and serve the same [`hello`]: an
//! `http1` connection per accepted socket (one task each), keep-alive
//! (hyper's default), `header_read_timeout` 5 s on the runtime's timer (the
//! read deadline of each request's head, counted from when the connection
//! starts waiting for it, so it also cuts an idle keep-alive connection),
//! and the handler under the runtime's `timeout` 5 s. goro's column also
//! has `GoroIo::write_timeout` 5 s (Go's `WriteTimeout`: a response whose
//! writes stall on a client that does not read is cut); it arms a timer
//! only when a write has to wait, which a 13-byte answer on loopback never
//! does, and hyper-util's `TokioIo` has nothing like it.

use crate::netload::{self, CpuProbe, Proto, Spec, STALL};
use crate::registry::{body, Ctx, RunOut, Workload};
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Request, Response};
use std::net::SocketAddr;
use std::time::Duration;

/// Where every server listens (an ephemeral port on loopback).
pub const LOOPBACK: &str = "127.0.0.1:0";
/// The servers' read buffer (the Go twin's `netEchoBuf` / `netReadBuf`).
pub const READ_BUF: usize = 1024;
/// The per-request read and write deadline of `http_hello`.
pub const DEADLINE: Duration = Duration::from_secs(5);
/// `tcp_echo`'s connections (normal, quick).
const ECHO_CONNS: (usize, usize) = (100, 100);
/// `tcp_echo`'s messages per run (normal, quick).
const ECHO_OPS: (u64, u64) = (200_000, 20_000);
/// `http_hello`'s keep-alive connections (normal, quick).
const HTTP_CONNS: (usize, usize) = (100, 50);
/// `http_hello`'s requests per run (normal, quick).
const HTTP_OPS: (u64, u64) = (100_000, 10_000);
/// A run's time bound (normal, quick): no request starts after it.
const LIMIT: (Duration, Duration) = (Duration::from_secs(20), Duration::from_secs(5));

const SHOW: &[&str] = &[
    "req_per_s",
    "p50_ns",
    "p99_ns",
    "p999_ns",
    "server_cpu_ns_per_op",
];

/// Registers the net group.
pub fn register(v: &mut Vec<Workload>) {
    let w = |name: &str, op: &str, ops: (u64, u64)| Workload::new(name, "net", op, ops);
    let echo = w(
        "tcp_echo",
        "one 64-byte message echoed (client write, server read + write, client read), 100 connections",
        ECHO_OPS,
    )
    .tokio(Ok(body(tokio_side::tcp_echo)))
    .go_served(drive_echo)
    .show(SHOW);
    let hello = w(
        "http_hello",
        "one HTTP/1.1 keep-alive GET answered \"Hello, World!\", 5 s read/write deadline per request, 100 connections (50 quick)",
        HTTP_OPS,
    )
    .tokio(Ok(body(tokio_side::http_hello)))
    .go_served(drive_http)
    .show(SHOW);
    let echo = echo.goro(Ok(body(super::net_goro::tcp_echo)));
    let hello = hello.goro(Ok(body(super::net_goro::http_hello)));
    v.push(echo);
    v.push(hello);
}

fn pick<T>(ctx: &Ctx, (normal, quick): (T, T)) -> T {
    if ctx.quick {
        quick
    } else {
        normal
    }
}

/// tcp_echo's load.
///
/// C connections (100), each sending M messages of 64 bytes one at a time
/// and reading each echo back whole before the next. One op = one message
/// echoed: client write, server read, server write, client read. M =
/// total/C. Ops: 200,000 normal, 20,000 quick (whole messages per
/// connection); at most 20 s / 5 s.
pub fn echo_spec(ctx: &Ctx) -> Spec {
    let conns = pick(ctx, ECHO_CONNS);
    Spec {
        proto: Proto::Echo,
        conns,
        per_conn: (pick(ctx, ECHO_OPS) / conns as u64).max(1),
        limit: pick(ctx, LIMIT),
    }
}

/// http_hello's load.
///
/// C keep-alive connections (100, quick 50), each sending R requests
/// `GET / HTTP/1.1` one at a time and reading each response (200,
/// Content-Length 13, `Hello, World!`) whole before the next. One op = one
/// request/response. R = total/C. Ops: 100,000 normal, 10,000 quick; at
/// most 20 s / 5 s.
pub fn http_spec(ctx: &Ctx) -> Spec {
    let conns = pick(ctx, HTTP_CONNS);
    Spec {
        proto: Proto::Http,
        conns,
        per_conn: (pick(ctx, HTTP_OPS) / conns as u64).max(1),
        limit: pick(ctx, LIMIT),
    }
}

/// http_hello's response, for both hyper columns: `Hello, World!` with
/// `Content-Type: text/plain` (hyper adds `content-length` from the body
/// and `date`; Go's handler sets the same two headers and net/http adds
/// `Date`).
pub async fn hello(_req: Request<Incoming>) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from_static(netload::HELLO)));
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    r
}

/// One line for a server that cannot listen.
pub fn bind_failed(workload: &str, rt: &str, e: std::io::Error) -> String {
    format!("{workload}: the {rt} server cannot listen on {LOOPBACK}: {e}")
}

/// Where a server's accept loop leaves its error (it then stops accepting,
/// and the client fails in its own words; this says why).
pub type AcceptError = std::sync::Arc<std::sync::Mutex<Option<std::io::Error>>>;

/// The end of a body: the generator's result, then a bounded wait for the
/// server's connection tasks, which end when they see the client's close.
/// A failure panics with one line (the harness reports it).
pub fn finish(
    workload: &str,
    rt: &str,
    out: Result<RunOut, String>,
    accept: &AcceptError,
    closed: Result<(), ()>,
) -> RunOut {
    let out =
        out.unwrap_or_else(
            |e| match accept.lock().unwrap_or_else(|p| p.into_inner()).take() {
                Some(a) => panic!(
                    "{workload}: the {rt} server's accept failed: {a} (the client then: {e})"
                ),
                None => panic!("{workload}: {e}"),
            },
        );
    if closed.is_err() {
        panic!(
            "{workload}: server connections still open {}s after the clients closed them",
            STALL.as_secs()
        );
    }
    out
}

/// The Go column of tcp_echo: the load of [`echo_spec`] against the Go
/// twin's server at `addr`.
fn drive_echo(addr: SocketAddr, ctx: &Ctx, go: Option<CpuProbe>) -> Result<RunOut, String> {
    netload::run(addr, &echo_spec(ctx), go)
}

/// The Go column of http_hello: the load of [`http_spec`] against the Go
/// twin's net/http server at `addr`.
fn drive_http(addr: SocketAddr, ctx: &Ctx, go: Option<CpuProbe>) -> Result<RunOut, String> {
    netload::run(addr, &http_spec(ctx), go)
}

// ---------------------------------------------------------------------------
// tokio
// ---------------------------------------------------------------------------

mod tokio_side {
    use super::*;
    use crate::rt::{Latch, Rt, Tokio};
    use hyper::server::conn::http1;
    use hyper::service::service_fn;
    use hyper_util::rt::{TokioIo, TokioTimer};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    /// Binds, serves exactly `conns` connections with `serve` (one task
    /// each), drives the load, and waits for the connection tasks to end.
    async fn serve_and_drive<F, Fut>(workload: &str, spec: Spec, serve: F) -> RunOut
    where
        F: Fn(TcpStream) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        let l = TcpListener::bind(LOOPBACK)
            .await
            .unwrap_or_else(|e| panic!("{}", bind_failed(workload, "tokio", e)));
        let addr = l
            .local_addr()
            .unwrap_or_else(|e| panic!("{workload}: local_addr: {e}"));
        let conns = spec.conns;
        let closed = Latch::new(conns);
        let accept_err = AcceptError::default();
        let (c, ae) = (closed.clone(), accept_err.clone());
        let acceptor = tokio::spawn(async move {
            for left in (1..=conns).rev() {
                let s = match l.accept().await {
                    Ok((s, _)) => s,
                    Err(e) => {
                        // The client fails on its side (its connection is
                        // never answered); release the waiter here.
                        *ae.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                        for _ in 0..left {
                            c.count_down();
                        }
                        return;
                    }
                };
                let _ = s.set_nodelay(true);
                let (c, fut) = (c.clone(), serve(s));
                tokio::spawn(async move {
                    fut.await;
                    c.count_down();
                });
            }
        });
        let out = Tokio::run_blocking(move || netload::run(addr, &spec, None)).await;
        if out.is_err() {
            acceptor.abort();
        }
        let closed = tokio::time::timeout(STALL, closed.wait())
            .await
            .map_err(|_| ());
        finish(workload, "tokio", out, &accept_err, closed)
    }

    /// tcp_echo on tokio: see [`echo_spec`]. Server: one task per
    /// connection, `read` into a 1 KiB buffer, `write_all` what was read,
    /// until the client closes.
    pub async fn tcp_echo(ctx: Ctx) -> RunOut {
        serve_and_drive("tcp_echo", echo_spec(&ctx), |mut s| async move {
            let mut buf = [0u8; READ_BUF];
            loop {
                match s.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => {
                        if s.write_all(&buf[..n]).await.is_err() {
                            return;
                        }
                    }
                }
            }
        })
        .await
    }

    /// http_hello on tokio: see [`http_spec`]. Server: hyper 1.x's HTTP/1.1
    /// connection (keep-alive) per accepted connection, on hyper-util's
    /// `TokioIo` and `TokioTimer`, with `header_read_timeout` 5 s (the
    /// read deadline of each request's head) and `tokio::time::timeout`
    /// 5 s around each request's handling (hyper has no write timeout:
    /// this bounds producing the response, not the socket write; a
    /// 13-byte answer on loopback never waits for the socket). goro's
    /// column (`net_goro.rs`) is the same builder on goro's adapters.
    pub async fn http_hello(ctx: Ctx) -> RunOut {
        serve_and_drive("http_hello", http_spec(&ctx), |s| async move {
            let svc = service_fn(|req| tokio::time::timeout(DEADLINE, hello(req)));
            let _ = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(DEADLINE)
                .serve_connection(TokioIo::new(s), svc)
                .await;
        })
        .await
    }
}
