//! One connection's task ([`Conn`]): sets the connection's start deadline
//! (`read_header_timeout`), does the TLS handshake under its timeout and
//! picks the protocol (ALPN, or detection in clear text), then drives the
//! connection to its end ([`drive`]): gracefully on shutdown or when idle
//! for `idle_timeout`, at once when the server is closed.

use super::tracking::{ConnService, ConnState};
use super::{BoxError, Inner};
use crate::io::{Coalesce, Compat};
use goro::chan::Sender;
use goro::net::hyper::GoroIo;
use goro::net::TcpStream;
use http::{Request, Response};
use hyper::body::Incoming;
use hyper_util::server::graceful::GracefulConnection;
use hyper_util::service::TowerToHyperService;
use std::future::{poll_fn, Future};
use std::io;
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::Arc;
use std::task::Poll;

/// One connection's task.
pub(super) struct Conn<S> {
    pub(super) server: Arc<Inner>,
    pub(super) service: S,
    pub(super) _alive: Sender<()>,
}

impl<S, B> Conn<S>
where
    S: tower_service::Service<Request<Incoming>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    pub(super) async fn run(self, stream: TcpStream) {
        let server = &*self.server;
        let cfg = &server.cfg;
        let _ = stream.set_nodelay(true);
        let stream = Arc::new(stream);
        // Go's ReadHeaderTimeout for the connection's start: the TLS
        // handshake, protocol detection and the first request's head. The
        // first request clears it (`ConnService::call`).
        if let Some(t) = cfg.read_header_timeout {
            stream.set_read_deadline(Some(goro::time::now() + t));
        }
        let state = Arc::new(ConnState {
            stream: stream.clone(),
            head_deadline: AtomicBool::new(cfg.read_header_timeout.is_some()),
            read_timeout: cfg.read_timeout,
            track_idle: cfg.idle_timeout.is_some(),
            born: goro::time::now(),
            active: AtomicUsize::new(0),
            last_done_ns: AtomicU64::new(0),
        });
        let service = ConnService {
            inner: TowerToHyperService::new(self.service),
            state: state.clone(),
        };
        let mut io = GoroIo::new(stream);
        if let Some(t) = cfg.write_timeout {
            io = io.write_timeout(t);
        }
        match &server.tls {
            None => {
                let conn = server.auto.serve_connection_with_upgrades(io, service);
                drive(server, conn, &state).await;
            }
            Some(acceptor) => {
                // Go bounds the whole handshake (a client may also stall
                // it by not reading): the read deadline above covers only
                // reads, and only with `read_header_timeout`.
                // One send per flush, not one per TLS record (`Coalesce`).
                let handshake = acceptor.accept(Coalesce::new(io));
                let limit = cfg.handshake_timeout();
                let handshake = async {
                    match limit {
                        Some(t) => goro::time::timeout(t, handshake)
                            .await
                            .unwrap_or_else(|_| Err(io::ErrorKind::TimedOut.into())),
                        None => handshake.await,
                    }
                };
                let tls = goro::select! {
                    biased;
                    await(handshake) -> res => res.ok(),
                    recv(server.stop.done()) -> _ => None,
                };
                let Some(tls) = tls else {
                    // A failed or timed-out handshake, or shutdown.
                    let _ = state.stream.shutdown(std::net::Shutdown::Both);
                    return;
                };
                let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
                let builder = if h2 { &server.h2 } else { &server.h1 };
                let conn = builder.serve_connection_with_upgrades(Compat(tls), service);
                drive(server, conn, &state).await;
            }
        }
        // The connection is over (ended, or dropped by `close`): close the
        // socket now, not when the last HTTP/2 handler task that still
        // holds `state` ends.
        let _ = state.stream.shutdown(std::net::Shutdown::Both);
    }
}

/// Runs a connection to its end, shutting it down gracefully on server
/// shutdown or idleness, and dropping it when the server is killed.
async fn drive<C: GracefulConnection>(server: &Inner, conn: C, state: &ConnState) {
    let mut conn = pin!(conn);
    let mut stop = pin!(server.stop.done().recv());
    let mut kill = pin!(server.kill.done().recv());
    let idle = server.cfg.idle_timeout;
    let mut idle_timer = idle.map(goro::time::sleep);
    let mut draining = false;
    poll_fn(|cx| {
        if kill.as_mut().poll(cx).is_ready() {
            return Poll::Ready(()); // dropping the connection closes it
        }
        if !draining && stop.as_mut().poll(cx).is_ready() {
            draining = true;
            conn.as_mut().graceful_shutdown();
        }
        if let (false, Some(timer), Some(idle)) = (draining, idle_timer.as_mut(), idle) {
            while Pin::new(&mut *timer).poll(cx).is_ready() {
                let now = goro::time::now();
                match state.idle_since() {
                    Some(since) if since + idle <= now => {
                        draining = true;
                        conn.as_mut().graceful_shutdown();
                        break;
                    }
                    Some(since) => timer.reset(since + idle),
                    None => timer.reset(now + idle), // busy: look again later
                }
            }
        }
        conn.as_mut().poll(cx).map(|_| ())
    })
    .await
}
