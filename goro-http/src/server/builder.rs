//! A server's configuration ([`Builder`]): Go's `http.Server` fields,
//! HTTP/2's limits and TLS, each with its default, and [`Builder::build`],
//! which turns them into hyper's connection builders and a [`Server`].

use super::{Inner, Server};
use goro::chan;
use goro::context::Context;
use goro::net::hyper::{GoroExecutor, GoroTimer};
use hyper_util::server::conn::auto;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Go's `http.Server` defaults where hyper's differ: 1 MiB of request
/// head (`DefaultMaxHeaderBytes`), 250 concurrent HTTP/2 streams
/// (`x/net/http2`'s `defaultMaxStreams`).
const DEFAULT_MAX_HEADER_BYTES: usize = 1 << 20;
const DEFAULT_MAX_CONCURRENT_STREAMS: u32 = 250;
/// hyper's floor for its HTTP/1 read buffer (it panics below it).
const MIN_H1_BUF: usize = 8192;

/// Configures a [`Server`]: Go's `http.Server` fields, HTTP/2's limits and
/// TLS. Every limit has a default; see each method.
///
/// ```
/// use std::time::Duration;
/// let server = goro_http::Server::builder()
///     .read_header_timeout(Duration::from_secs(5))
///     .write_timeout(Duration::from_secs(10))
///     .idle_timeout(Duration::from_secs(60))
///     .max_header_bytes(64 << 10)
///     .max_concurrent_streams(100)
///     .build();
/// # drop(server);
/// ```
#[derive(Clone, Debug)]
pub struct Builder {
    pub(super) read_header_timeout: Option<Duration>,
    pub(super) read_timeout: Option<Duration>,
    pub(super) write_timeout: Option<Duration>,
    pub(super) idle_timeout: Option<Duration>,
    pub(super) max_header_bytes: usize,
    pub(super) max_concurrent_streams: u32,
    pub(super) max_pending_accept_reset_streams: usize,
    pub(super) max_local_error_reset_streams: usize,
    pub(super) h2_keep_alive: Option<(Duration, Duration)>,
    pub(super) tls: Option<Arc<rustls::ServerConfig>>,
}

impl Default for Builder {
    fn default() -> Builder {
        Builder {
            read_header_timeout: None,
            read_timeout: None,
            write_timeout: None,
            idle_timeout: None,
            max_header_bytes: DEFAULT_MAX_HEADER_BYTES,
            max_concurrent_streams: DEFAULT_MAX_CONCURRENT_STREAMS,
            // hyper's defaults (h2's guard against CVE-2023-44487).
            max_pending_accept_reset_streams: 20,
            max_local_error_reset_streams: 1024,
            h2_keep_alive: None,
            tls: None,
        }
    }
}

impl Builder {
    /// Go's `ReadHeaderTimeout`: how long a connection has, from accept,
    /// to finish its TLS handshake and send its first request's head, and,
    /// on HTTP/1, each later request's head from the moment the server
    /// waits for it (hyper's `header_read_timeout`). A slow-loris client is
    /// cut when it runs out. Default: none (as Go), which also turns off
    /// hyper's own 30 s default: a server facing the internet should set
    /// this (and `idle_timeout`), or a slow client holds its connection for
    /// as long as it likes.
    ///
    /// The TLS handshake, as Go's, has the shortest of `read_header_timeout`,
    /// `read_timeout` and `write_timeout` that are set, as a whole: a
    /// client that connects and sends nothing, or half a ClientHello, or
    /// stops reading the server's flight, is cut when it runs out.
    ///
    /// HTTP/1 note: hyper starts this timer when it begins waiting for the
    /// next request, so an idle keep-alive connection is also closed after
    /// it (Go uses `IdleTimeout` for that wait).
    pub fn read_header_timeout(mut self, t: Duration) -> Builder {
        self.read_header_timeout = Some(t);
        self
    }

    /// Go's `ReadTimeout`, for HTTP/1: from the moment a request's head
    /// has arrived until its handler has answered, the connection's reads
    /// (the request body's) have `t`; a client that sends its body too
    /// slowly is cut (the handler's body read fails, the connection
    /// closes). The deadline is lifted when the handler's response is
    /// ready, so neither a slow handler nor a long download is cut by it
    /// (`write_timeout` bounds the latter). To keep a slow handler's
    /// connection, hyper is put in half-close mode, where it does not read
    /// while a handler runs: a client that hangs up mid-request is noticed
    /// when its response is written, not before. The head itself is `read_header_timeout`'s (Go's
    /// `ReadTimeout` covers head and body; set both). HTTP/2 requests share
    /// their connection, so a per-socket deadline cannot be theirs; bound
    /// a stream's body in its handler there. Also bounds the TLS handshake
    /// (see [`Builder::read_header_timeout`]). Default: none.
    ///
    /// ```
    /// let server = goro_http::Server::builder()
    ///     .read_header_timeout(std::time::Duration::from_secs(5))
    ///     .read_timeout(std::time::Duration::from_secs(30))
    ///     .build();
    /// # drop(server);
    /// ```
    pub fn read_timeout(mut self, t: Duration) -> Builder {
        self.read_timeout = Some(t);
        self
    }

    /// Go's `WriteTimeout`, as goro's hyper adapter has it
    /// ([`GoroIo::write_timeout`](goro::net::hyper::GoroIo::write_timeout)):
    /// once a burst of writes has had to wait for a peer that does not
    /// read, it must finish within `t`, else the connection is closed.
    /// Applies under TLS too. Default: none.
    pub fn write_timeout(mut self, t: Duration) -> Builder {
        self.write_timeout = Some(t);
        self
    }

    /// Go's `IdleTimeout`: a connection with no request in flight for `t`
    /// is shut down gracefully (HTTP/1: closed; HTTP/2: GOAWAY, then
    /// closed). Checked when its timer fires, so a connection may live up
    /// to `t` past its last request's end (at most `2t` after it went
    /// idle). Default: none.
    pub fn idle_timeout(mut self, t: Duration) -> Builder {
        self.idle_timeout = Some(t);
        self
    }

    /// Go's `MaxHeaderBytes`: the largest request head accepted. HTTP/1
    /// answers a larger one with `431 Request Header Fields Too Large`
    /// (hyper's read buffer limit, which cannot go below 8 KiB); HTTP/2
    /// advertises it as `SETTINGS_MAX_HEADER_LIST_SIZE`. Default: 1 MiB,
    /// as Go.
    pub fn max_header_bytes(mut self, n: usize) -> Builder {
        self.max_header_bytes = n;
        self
    }

    /// HTTP/2's `SETTINGS_MAX_CONCURRENT_STREAMS`. Default: 250, as Go.
    pub fn max_concurrent_streams(mut self, n: u32) -> Builder {
        self.max_concurrent_streams = n;
        self
    }

    /// The rapid-reset guard (CVE-2023-44487), part one: streams a client
    /// may open and reset before the server has accepted them; past it the
    /// connection is closed with `ENHANCE_YOUR_CALM`. Default: 20
    /// (hyper's).
    pub fn max_pending_accept_reset_streams(mut self, n: usize) -> Builder {
        self.max_pending_accept_reset_streams = n;
        self
    }

    /// The rapid-reset guard, part two: streams the server itself may
    /// reset because the client broke the protocol, per connection, before
    /// it closes the connection. Default: 1024 (hyper's).
    pub fn max_local_error_reset_streams(mut self, n: usize) -> Builder {
        self.max_local_error_reset_streams = n;
        self
    }

    /// HTTP/2 keep-alive: a PING every `interval`; a connection whose peer
    /// does not answer within `timeout` is closed. Default: off.
    pub fn http2_keep_alive(mut self, interval: Duration, timeout: Duration) -> Builder {
        self.h2_keep_alive = Some((interval, timeout));
        self
    }

    /// Serves over TLS with `config` (see [`crate::tls`] to make one from
    /// PEM files). The protocol is ALPN's choice: `h2` gets HTTP/2,
    /// anything else (or none) HTTP/1.1.
    pub fn tls(mut self, config: Arc<rustls::ServerConfig>) -> Builder {
        self.tls = Some(config);
        self
    }

    /// Go's `tlsHandshakeTimeout`: the shortest of the read-header, read
    /// and write timeouts that are set.
    pub(super) fn handshake_timeout(&self) -> Option<Duration> {
        [
            self.read_header_timeout,
            self.read_timeout,
            self.write_timeout,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// The server. Needs no runtime; [`Server::serve`] does.
    pub fn build(self) -> Server {
        let mut auto = auto::Builder::new(GoroExecutor);
        auto.http1()
            .timer(GoroTimer)
            .header_read_timeout(self.read_header_timeout)
            // With a read timeout, hyper must not read while a handler
            // runs (it would, to notice a client's EOF, and the deadline
            // would cut a slow handler's connection): half-close mode.
            .half_close(self.read_timeout.is_some())
            .max_buf_size(self.max_header_bytes.max(MIN_H1_BUF));
        let h2_header_list = u32::try_from(self.max_header_bytes).unwrap_or(u32::MAX);
        auto.http2()
            .timer(GoroTimer)
            .max_concurrent_streams(self.max_concurrent_streams)
            .max_pending_accept_reset_streams(self.max_pending_accept_reset_streams)
            .max_local_error_reset_streams(self.max_local_error_reset_streams)
            .max_header_list_size(h2_header_list)
            .keep_alive_interval(self.h2_keep_alive.map(|(i, _)| i));
        if let Some((_, t)) = self.h2_keep_alive {
            auto.http2().keep_alive_timeout(t);
        }
        let (stop, stop_cancel) = Context::with_cancel(&Context::background());
        let (kill, kill_cancel) = Context::with_cancel(&Context::background());
        let (alive_tx, alive_rx) = chan::bounded(0);
        Server {
            inner: Arc::new(Inner {
                h1: auto.clone().http1_only(),
                h2: auto.clone().http2_only(),
                auto,
                tls: self.tls.clone().map(tokio_rustls::TlsAcceptor::from),
                cfg: self,
                stop,
                stop_cancel,
                kill,
                kill_cancel,
                alive: Mutex::new(Some(alive_tx)),
                alive_rx,
            }),
        }
    }
}
