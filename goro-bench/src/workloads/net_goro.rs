//! goro's column of the net group (`net.rs` has the shapes, the load and
//! the tokio column; `bench/go/net.go` the Go servers).
//!
//! Written against goro::net's API (DESIGN §6): `TcpListener::bind(addr)
//! .await`, `listener.accept().await -> (TcpStream, SocketAddr)`,
//! `stream.read(&mut buf).await`, `stream.write_all(&buf).await`,
//! `stream.set_read_deadline(Some(t))` / `set_write_deadline(Some(t))`
//! (Go's absolute deadlines: once set they apply to every later call).
//!
//! `http_hello` here is goro's example-server path: a small hand-written
//! HTTP/1.1 keep-alive responder (below), not hyper. The hyper path (goro's
//! `hyper` feature adapting executor, io and timer to hyper 1.x, serving
//! the same `hello` as the tokio column) will be added beside it as its own
//! row when that adapter exists. The responder writes a fixed response
//! (`Content-Type: text/plain`, `Content-Length: 13`, no `Date`; Go and
//! hyper also write a `Date` header) and keeps Go's per-request deadlines.

use super::net::{
    bind_failed, echo_spec, finish, http_spec, AcceptError, DEADLINE, LOOPBACK, READ_BUF,
};
use crate::netload::{self, Spec, STALL};
use crate::registry::{Ctx, RunOut};
use crate::rt::{Goro, Latch, Rt};
use goro::net::{TcpListener, TcpStream};
use std::future::Future;
use std::time::Instant;

/// Binds, serves exactly `conns` connections with `serve` (one task each),
/// drives the load from the blocking pool, and waits (at most 5 s) for the
/// connection tasks to see the client's close. The same steps as the tokio
/// column's `serve_and_drive`.
async fn serve_and_drive<F, Fut>(workload: &'static str, spec: Spec, serve: F) -> RunOut
where
    F: Fn(TcpStream) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let l = TcpListener::bind(LOOPBACK)
        .await
        .unwrap_or_else(|e| panic!("{}", bind_failed(workload, "goro", e)));
    let addr = l
        .local_addr()
        .unwrap_or_else(|e| panic!("{workload}: local_addr: {e}"));
    let conns = spec.conns;
    let closed = Latch::new(conns);
    let accept_err = AcceptError::default();
    let (c, ae) = (closed.clone(), accept_err.clone());
    let acceptor = goro::spawn(async move {
        for left in (1..=conns).rev() {
            let s = match l.accept().await {
                Ok((s, _)) => s,
                Err(e) => {
                    // The client fails on its side; release the waiter.
                    *ae.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                    for _ in 0..left {
                        c.count_down();
                    }
                    return;
                }
            };
            let _ = s.set_nodelay(true);
            let (c, fut) = (c.clone(), serve(s));
            Goro::spawn(async move {
                fut.await;
                c.count_down();
            });
        }
    });
    let out = Goro::run_blocking(move || netload::run(addr, &spec, None)).await;
    if out.is_err() {
        acceptor.abort();
    }
    let closed = goro::time::timeout(STALL, closed.wait())
        .await
        .map_err(|_| ());
    finish(workload, "goro", out, &accept_err, closed)
}

/// tcp_echo on goro: see `net::echo_spec`. Server: one task per
/// connection, `read` into a 1 KiB buffer, `write_all` what was read, until
/// the client closes.
pub async fn tcp_echo(ctx: Ctx) -> RunOut {
    serve_and_drive("tcp_echo", echo_spec(&ctx), |s| async move {
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

/// http_hello on goro: see `net::http_spec`; the server is [`hello_conn`].
pub async fn http_hello(ctx: Ctx) -> RunOut {
    serve_and_drive("http_hello", http_spec(&ctx), hello_conn).await
}

/// The one response the example server gives.
const RESPONSE: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n\r\nHello, World!";
/// What it answers a request it does not serve (then it closes).
const BAD_REQUEST: &[u8] =
    b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

/// Where the head in `buf` ends (just past `\r\n\r\n`), looking from `from`.
fn head_end(buf: &[u8], from: usize) -> Option<usize> {
    let from = from.saturating_sub(3);
    buf[from..]
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|p| from + p + 4)
}

/// Whether a request head is one this server answers: a `GET` with no body
/// (no `Content-Length` other than 0, no `Transfer-Encoding`).
fn servable(head: &[u8]) -> bool {
    if !head.starts_with(b"GET ") {
        return false;
    }
    let Ok(text) = std::str::from_utf8(head) else {
        return false;
    };
    text.split("\r\n").skip(1).all(|l| {
        let (k, v) = l.split_once(':').unwrap_or((l, ""));
        let k = k.trim();
        !(k.eq_ignore_ascii_case("transfer-encoding")
            || (k.eq_ignore_ascii_case("content-length") && v.trim() != "0"))
    })
}

/// One keep-alive connection of the example HTTP/1.1 server, with Go's
/// net/http deadlines (ReadTimeout = WriteTimeout = 5 s): when it starts
/// waiting for a request (time t0), the read deadline is t0 + 5 s, so the
/// idle wait and the head must fit in it; once the head is in, the write
/// deadline is t0 + 5 s for the response. A head is read up to
/// `\r\n\r\n` into a 1 KiB buffer (a longer one, a non-GET, a request with
/// a body: 400 and close); the answer is [`RESPONSE`]; bytes after the
/// head (a pipelined request) are kept for the next round. Ends when the
/// client closes, on any error, or at a missed deadline (`TimedOut`).
async fn hello_conn(s: TcpStream) {
    let mut buf = [0u8; READ_BUF];
    let mut len = 0;
    loop {
        let t0 = Instant::now();
        s.set_read_deadline(Some(t0 + DEADLINE));
        let mut seen = 0;
        let end = loop {
            if let Some(end) = head_end(&buf[..len], seen) {
                break end;
            }
            seen = len;
            if len == buf.len() {
                let _ = s.write_all(BAD_REQUEST).await;
                return;
            }
            match s.read(&mut buf[len..]).await {
                Ok(0) | Err(_) => return,
                Ok(n) => len += n,
            }
        };
        s.set_write_deadline(Some(t0 + DEADLINE));
        if !servable(&buf[..end]) {
            let _ = s.write_all(BAD_REQUEST).await;
            return;
        }
        if s.write_all(RESPONSE).await.is_err() {
            return;
        }
        buf.copy_within(end..len, 0);
        len -= end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_are_found_across_reads() {
        let req = netload::HTTP_REQUEST;
        assert_eq!(head_end(req, 0), Some(req.len()));
        assert_eq!(head_end(&req[..req.len() - 1], 0), None);
        assert_eq!(head_end(req, req.len() - 2), Some(req.len()));
        assert!(servable(req));
        assert!(!servable(b"POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\n"));
        assert!(crate::netload::complete(crate::netload::Proto::Http, RESPONSE) == Ok(true));
    }
}
