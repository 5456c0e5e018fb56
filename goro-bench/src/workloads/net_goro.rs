//! goro's column of the net group (`net.rs` has the shapes, the load and
//! the tokio column; `bench/go/net.go` the Go servers).
//!
//! Written against the API of goro::net (goro/src/net): `TcpListener::bind(addr)
//! .await`, `listener.accept().await -> (TcpStream, SocketAddr)`,
//! `stream.read(&mut buf).await`, `stream.write_all(&buf).await`,
//! `stream.set_read_deadline(Some(t))` / `set_write_deadline(Some(t))`
//! (Go's absolute deadlines: once set they apply to every later call).
//!
//! `http_hello` here is hyper 1.x on goro (the `hyper` feature:
//! `goro::net::hyper`'s `GoroIo` and `GoroTimer`), built exactly as the
//! tokio column builds hyper on tokio and serving the same `net::hello`,
//! so the row compares hyper-on-goro, hyper-on-tokio and net/http. It is
//! also how `examples/http_hello.rs` serves.
//!
//! Rejected: keeping the hand-written HTTP/1.1 responder this column used
//! before the adapter existed. It skipped hyper's parsing and headers, so
//! its row compared a runtime with a parser; what it showed of the runtime
//! alone (read, write, deadlines) `tcp_echo` shows without a protocol.

use super::net::{
    bind_failed, echo_spec, finish, hello, http_spec, AcceptError, DEADLINE, LOOPBACK, READ_BUF,
};
use crate::netload::{self, Spec, STALL};
use crate::registry::{Ctx, RunOut};
use crate::rt::{Goro, Latch, Rt};
use goro::net::hyper::{GoroIo, GoroTimer};
use goro::net::{TcpListener, TcpStream};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use std::future::Future;

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

/// http_hello on goro: see `net::http_spec`. Server: hyper 1.x's HTTP/1.1
/// connection (keep-alive, hyper's default) per accepted connection, one
/// goro task each (`goro::spawn` in `serve_and_drive`), on `GoroIo` and
/// `GoroTimer`: `header_read_timeout` 5 s (the read deadline of each
/// request's head), `goro::time::timeout` 5 s around each request's
/// handling (as the tokio column has `tokio::time::timeout`; it arms no
/// timer when the handler is ready at once), and `GoroIo::write_timeout`
/// 5 s (the write deadline, armed only if a response's writes wait).
pub async fn http_hello(ctx: Ctx) -> RunOut {
    serve_and_drive("http_hello", http_spec(&ctx), |s| async move {
        let svc = service_fn(|req| goro::time::timeout(DEADLINE, hello(req)));
        let _ = http1::Builder::new()
            .timer(GoroTimer)
            .header_read_timeout(DEADLINE)
            .serve_connection(GoroIo::new(s).write_timeout(DEADLINE), svc)
            .await;
    })
    .await
}
