//! The server ([`Server`]): its accept loop ([`Server::serve`], one goro
//! task per connection) and its shutdown ([`Server::shutdown`],
//! [`Server::close`]), which stops the accept loops and waits for every
//! connection task. Beside it: `server/builder.rs` (the configuration,
//! [`Builder`], and building a server from it), `server/conn.rs` (one
//! connection's task: TLS, protocol, and its graceful or forced end) and
//! `server/tracking.rs` (the requests in flight, the idle timeout and the
//! read deadlines a connection's service arms and lifts).

mod builder;
mod conn;
mod tracking;

pub use builder::Builder;

use conn::Conn;
use goro::chan::{Receiver, Sender};
use goro::context::{Cancel, Context, ContextError};
use goro::net::hyper::GoroExecutor;
use goro::net::TcpListener;
use http::{Request, Response};
use hyper::body::Incoming;
use hyper_util::server::conn::auto;
use std::error::Error as StdError;
use std::fmt;
use std::io;
use std::sync::{Arc, Mutex};

type BoxError = Box<dyn StdError + Send + Sync>;

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
