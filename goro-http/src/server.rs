//! The server: configuration ([`Builder`]), the accept loop
//! ([`Server::serve`]), one goro task per connection, and shutdown
//! ([`Server::shutdown`], [`Server::close`]).

use crate::io::{Coalesce, Compat};
use goro::chan::{self, Receiver, Sender};
use goro::context::{Cancel, Context, ContextError};
use goro::net::hyper::{GoroExecutor, GoroIo, GoroTimer};
use goro::net::{TcpListener, TcpStream};
use http::{Request, Response};
use hyper::body::Incoming;
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulConnection;
use hyper_util::service::{TowerToHyperService, TowerToHyperServiceFuture};
use std::error::Error as StdError;
use std::fmt;
use std::future::{poll_fn, Future};
use std::io;
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, Instant};

type BoxError = Box<dyn StdError + Send + Sync>;

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
    read_header_timeout: Option<Duration>,
    read_timeout: Option<Duration>,
    write_timeout: Option<Duration>,
    idle_timeout: Option<Duration>,
    max_header_bytes: usize,
    max_concurrent_streams: u32,
    max_pending_accept_reset_streams: usize,
    max_local_error_reset_streams: usize,
    h2_keep_alive: Option<(Duration, Duration)>,
    tls: Option<Arc<rustls::ServerConfig>>,
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
    /// ([`GoroIo::write_timeout`]): once a burst of writes has had to wait
    /// for a peer that does not read, it must finish within `t`, else the
    /// connection is closed. Applies under TLS too. Default: none.
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
    fn handshake_timeout(&self) -> Option<Duration> {
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

/// An HTTP/1.1 and HTTP/2 server for a tower `Service` (an axum `Router`),
/// on goro: Go's `http.Server`. Cheap to clone; clones are the same server
/// (serve with one, shut down with another).
///
/// ```
/// # goro::Runtime::builder().procs(2).build().unwrap().block_on(async {
/// use goro::context::Context;
/// use std::time::Duration;
/// let app = axum::Router::new().route("/", axum::routing::get(|| async { "Hello, World!" }));
/// let server = goro_http::Server::builder().build();
/// let listener = goro::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
/// let serving = goro::spawn({
///     let server = server.clone();
///     async move { server.serve(listener, app).await }
/// });
/// // ... later, Go's `srv.Shutdown(ctx)`:
/// let (ctx, _) = Context::with_timeout(&Context::background(), Duration::from_secs(5));
/// server.shutdown(&ctx).await.unwrap();
/// serving.await.unwrap().unwrap();
/// # });
/// ```
#[derive(Clone)]
pub struct Server {
    inner: Arc<Inner>,
}

struct Inner {
    cfg: Builder,
    /// Detects HTTP/1 or HTTP/2 (prior knowledge) in clear text.
    auto: auto::Builder<GoroExecutor>,
    /// After ALPN.
    h1: auto::Builder<GoroExecutor>,
    h2: auto::Builder<GoroExecutor>,
    tls: Option<tokio_rustls::TlsAcceptor>,
    /// Done on shutdown: accept loops return, connections shut down
    /// gracefully.
    stop: Context,
    stop_cancel: Cancel,
    /// Done when shutdown's context is (or on `close`): connections close.
    kill: Context,
    kill_cancel: Cancel,
    /// Every accept loop and connection task holds a clone of this sender;
    /// `alive_rx` is closed once shutdown has dropped this one and all
    /// of them are gone (Go's `WaitGroup`, as a channel).
    alive: Mutex<Option<Sender<()>>>,
    alive_rx: Receiver<()>,
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Server")
            .field("config", &self.inner.cfg)
            .field("stopped", &self.inner.stop.err().is_some())
            .finish()
    }
}

impl Server {
    /// A [`Builder`] with Go's defaults.
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// Accepts connections on `listener` and serves each, as its own goro
    /// task, with a clone of `service`, until [`Server::shutdown`] or
    /// [`Server::close`]; then returns `Ok(())` (Go returns
    /// `ErrServerClosed`). Accept errors that run out a resource (`EMFILE`)
    /// are retried with Go's back-off (`accept_with_backoff`, logged to
    /// stderr); other accept errors are returned. Serving after shutdown
    /// returns `Ok(())` at once, closing `listener`.
    ///
    /// Must run inside a goro runtime.
    pub async fn serve<S, B>(&self, listener: TcpListener, service: S) -> io::Result<()>
    where
        S: tower_service::Service<Request<Incoming>, Response = Response<B>>
            + Clone
            + Send
            + 'static,
        S::Future: Send + 'static,
        S::Error: Into<BoxError>,
        B: http_body::Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<BoxError>,
    {
        let Some(alive) = self.inner.alive.lock().unwrap().clone() else {
            // Shut down already: Go returns `ErrServerClosed` here too, the
            // same as after a shutdown during `Serve` (so a serve task
            // spawned just before a shutdown needs no special case).
            return Ok(());
        };
        let stopped = self.inner.stop.done();
        loop {
            let accept = listener.accept_with_backoff(|e, delay| {
                eprintln!("goro_http: accept error: {e}; retrying in {delay:?}");
            });
            // The stop first (`biased;`): with connections arriving back to
            // back the accept is always ready, and a shutdown must be seen
            // at once. A pending accept is dropped when the stop wins.
            let accepted = goro::select! {
                biased;
                // Stop accepting; the listener closes as it drops.
                recv(stopped) -> _ => return Ok(()),
                await(accept) -> res => res,
            };
            let (stream, _peer) = accepted?;
            let conn = Conn {
                server: self.inner.clone(),
                service: service.clone(),
                _alive: alive.clone(),
            };
            drop(goro::spawn(conn.run(stream)));
        }
    }

    /// Go's `Server.Shutdown(ctx)`: stops every accept loop (closing their
    /// listeners), shuts each connection down gracefully (idle HTTP/1
    /// connections close at once, busy ones after their response; HTTP/2
    /// connections send GOAWAY and finish their open streams), and waits
    /// for them. If `ctx` is done first, the connections left are closed
    /// and its error is returned.
    ///
    /// Handlers of HTTP/2 streams run as their own tasks; one that outlives
    /// its closed connection runs on to its end, its response discarded.
    pub async fn shutdown(&self, ctx: &Context) -> Result<(), ContextError> {
        self.inner.stop_cancel.cancel();
        drop(self.inner.alive.lock().unwrap().take());
        goro::select! {
            biased;
            recv(self.inner.alive_rx) -> _ => Ok(()),
            recv(ctx.done()) -> _ => {
                self.inner.kill_cancel.cancel();
                let _ = self.inner.alive_rx.recv().await;
                Err(ctx.err().unwrap_or(ContextError::Canceled))
            }
        }
    }

    /// Go's `Server.Close`: stops accepting and closes every connection
    /// now, in-flight requests or not, and waits until they are closed.
    pub async fn close(&self) {
        self.inner.stop_cancel.cancel();
        self.inner.kill_cancel.cancel();
        drop(self.inner.alive.lock().unwrap().take());
        let _ = self.inner.alive_rx.recv().await;
    }
}

/// One connection's task.
struct Conn<S> {
    server: Arc<Inner>,
    service: S,
    _alive: Sender<()>,
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
    async fn run(self, stream: TcpStream) {
        let server = &*self.server;
        let cfg = &server.cfg;
        let _ = stream.set_nodelay(true);
        let stream = Arc::new(stream);
        // Go's ReadHeaderTimeout for the connection's start: the TLS
        // handshake, protocol detection and the first request's head. The
        // first request clears it (`ConnService::call`).
        if let Some(t) = cfg.read_header_timeout {
            stream.set_read_deadline(Some(Instant::now() + t));
        }
        let state = Arc::new(ConnState {
            stream: stream.clone(),
            head_deadline: AtomicBool::new(cfg.read_header_timeout.is_some()),
            read_timeout: cfg.read_timeout,
            track_idle: cfg.idle_timeout.is_some(),
            born: Instant::now(),
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
                let now = Instant::now();
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

/// What a connection's service shares with its task.
struct ConnState {
    stream: Arc<TcpStream>,
    /// The read-header deadline set at accept is still armed.
    head_deadline: AtomicBool,
    /// Go's `ReadTimeout` (HTTP/1 requests).
    read_timeout: Option<Duration>,
    track_idle: bool,
    born: Instant,
    /// Requests in flight (with `track_idle`).
    active: AtomicUsize,
    /// When the last request finished, in ns since `born`.
    last_done_ns: AtomicU64,
}

impl ConnState {
    /// Since when the connection has had no request in flight; `None` while
    /// one is.
    fn idle_since(&self) -> Option<Instant> {
        if self.active.load(Ordering::Acquire) > 0 {
            return None;
        }
        Some(self.born + Duration::from_nanos(self.last_done_ns.load(Ordering::Acquire)))
    }
}

/// Marks a request done when dropped (its service future finished or was
/// dropped).
struct Active(Arc<ConnState>);

impl Drop for Active {
    fn drop(&mut self) {
        let ns = u64::try_from(self.0.born.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.0.last_done_ns.fetch_max(ns, Ordering::AcqRel);
        self.0.active.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The tower service as hyper's, one per connection: clears the
/// connection's start deadline at its first request, arms `read_timeout`
/// for an HTTP/1 request until its response is ready, and counts requests
/// in flight (until their response body has been sent) for the idle
/// timeout. The request itself goes through hyper-util's
/// `TowerToHyperService` (a clone of the service per request, `poll_ready`
/// then `call`, in a named future: no allocation).
struct ConnService<S> {
    inner: TowerToHyperService<S>,
    state: Arc<ConnState>,
}

impl<S, B> hyper::service::Service<Request<Incoming>> for ConnService<S>
where
    S: tower_service::Service<Request<Incoming>, Response = Response<B>> + Clone,
{
    type Response = Response<TrackedBody<B>>;
    type Error = S::Error;
    type Future = Tracked<TowerToHyperServiceFuture<S, Request<Incoming>>>;

    fn call(&self, req: Request<Incoming>) -> Self::Future {
        let state = &self.state;
        let read_deadline = state
            .read_timeout
            .filter(|_| req.version() != http::Version::HTTP_2);
        if let Some(t) = read_deadline {
            // HTTP/1: one request at a time owns the socket's reads.
            state.head_deadline.store(false, Ordering::Relaxed);
            state.stream.set_read_deadline(Some(Instant::now() + t));
        } else if state.head_deadline.load(Ordering::Relaxed)
            && state.head_deadline.swap(false, Ordering::Relaxed)
        {
            state.stream.set_read_deadline(None);
        }
        let active = state.track_idle.then(|| {
            state.active.fetch_add(1, Ordering::AcqRel);
            Active(state.clone())
        });
        Tracked {
            fut: self.inner.call(req),
            active,
            read_deadline: read_deadline.map(|_| state.clone()),
        }
    }
}

pin_project_lite::pin_project! {
    /// A request's future, counted in flight until its response body ends
    /// (or it is dropped); it lifts the request's read deadline when the
    /// response is ready.
    struct Tracked<F> {
        #[pin]
        fut: F,
        active: Option<Active>,
        read_deadline: Option<Arc<ConnState>>,
    }
}

impl<F, B, E> Future for Tracked<F>
where
    F: Future<Output = Result<Response<B>, E>>,
{
    type Output = Result<Response<TrackedBody<B>>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let out = std::task::ready!(this.fut.poll(cx));
        if let Some(state) = this.read_deadline.take() {
            state.stream.set_read_deadline(None);
        }
        // A response still streaming its body is not idle: the count goes
        // down when the body ends (an error drops `active` here).
        let active = this.active.take();
        Poll::Ready(out.map(|resp| resp.map(|inner| TrackedBody { inner, active })))
    }
}

pin_project_lite::pin_project! {
    /// A response body that keeps its request counted in flight until it
    /// has been sent (or dropped).
    struct TrackedBody<B> {
        #[pin]
        inner: B,
        active: Option<Active>,
    }
}

impl<B: http_body::Body> http_body::Body for TrackedBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Option<Result<http_body::Frame<B::Data>, B::Error>>> {
        let this = self.project();
        let frame = std::task::ready!(this.inner.poll_frame(cx));
        if frame.is_none() {
            this.active.take();
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}
