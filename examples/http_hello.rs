//! An HTTP/1.1 server on goro: hyper's `http1` connection, one goro task
//! per connection, answering `Hello, World!` to every request.
//!
//! Usage: `cargo run --release -p goro --features hyper --example http_hello -- [--addr HOST:PORT] [--procs N] [--seconds S]`
//! then `curl -i http://127.0.0.1:8080/`.
//!
//! What a Go `http.Server` with `ReadTimeout` and `WriteTimeout` of 5 s
//! does, built from goro's pieces:
//!
//! * Keep-alive: many requests per connection.
//! * Read deadline, 5 s per request head: hyper's `header_read_timeout`,
//!   on goro's timer (`GoroTimer`). Its clock starts when the connection
//!   starts waiting for a request, so a keep-alive connection left idle
//!   between requests is closed 5 s later, and so is a slow-loris client
//!   that trickles its head in.
//! * Write deadline, 5 s: `GoroIo::write_timeout` sets the stream's write
//!   deadline (`TcpStream::set_write_deadline`) when a response's writes
//!   have to wait for the client and clears it when the response is out,
//!   so a client that stops reading is cut 5 s after the writer stalled,
//!   and a response that never waits arms no timer.
//! * Accept errors such as `EMFILE` are logged and ridden out with Go's
//!   back-off (5 ms doubling to 1 s) by `TcpListener::accept_with_backoff`;
//!   the server keeps serving.
//!
//! It prints `listening on HOST:PORT` once it accepts, so a script can
//! start it with `--addr 127.0.0.1:0` and read the port.

#[path = "net_flags.rs"]
mod net_flags;

use bytes::Bytes;
use goro::net::hyper::{GoroIo, GoroTimer};
use goro::net::TcpStream;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use std::convert::Infallible;
use std::time::Duration;

const NAME: &str = "http_hello";
/// The longest wait for a request head, from the moment the connection
/// starts waiting for it (Go's `ReadTimeout`).
const READ_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest a response may stall on a client that does not read (Go's
/// `WriteTimeout`, counted from the stall).
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

async fn hello(_req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    Ok(Response::new(Full::new(Bytes::from_static(
        b"Hello, World!",
    ))))
}

/// Serves one connection until the client leaves or a deadline cuts it.
async fn serve_conn(stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let io = GoroIo::new(stream).write_timeout(WRITE_TIMEOUT);
    // Timeouts and resets end connections routinely; Go's server does not
    // log them either.
    let _ = hyper::server::conn::http1::Builder::new()
        .timer(GoroTimer)
        .header_read_timeout(READ_TIMEOUT)
        .keep_alive(true)
        .serve_connection(io, service_fn(hello))
        .await;
}

fn main() {
    let flags = net_flags::parse(
        NAME,
        "answers `Hello, World!` over HTTP/1.1 (hyper on goro)",
    );
    let rt = net_flags::runtime(NAME, flags.procs);
    rt.block_on(net_flags::serve(
        NAME,
        flags.addr,
        flags.seconds,
        serve_conn,
    ));
}
