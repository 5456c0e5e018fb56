//! tokio-bound clients (reqwest, sqlx, redis, ...) inside goro handlers:
//! a tokio context entered around each poll (feature `tokio-compat`).
//!
//! goro runs handlers on its own Ps; a crate written against tokio's
//! runtime panics there (`there is no reactor running, must be called from
//! the context of a Tokio 1.x runtime`) the first time it opens a socket,
//! sets a timer or spawns a task. This module lends it one: smol's
//! [`async-compat`](https://docs.rs/async-compat) keeps a tokio
//! current-thread runtime (io and time drivers) on one side thread,
//! `async-compat/tokio-1`, and enters its context around every poll of a
//! wrapped future, and around its drop. The future itself still runs on
//! goro: only tokio's reactor, its timers and whatever the client spawns
//! with `tokio::spawn` (hyper's connection tasks under reqwest, sqlx's pool
//! maintenance) run on the side thread.
//!
//! * [`TokioCompatLayer`]: a tower layer; every request's future (and its
//!   response body) runs in the context. Put it on the routes that need it
//!   (`Router::route_layer`), so the others pay nothing.
//! * [`compat`]: one future in the context (a handler's body, a spawned
//!   goro task).
//! * [`handle`]: the side runtime's handle, for `Handle::enter` or
//!   `spawn` by hand.
//!
//! ```no_run
//! use axum::{routing::get, Router};
//! use goro_http::compat::TokioCompatLayer;
//!
//! // reqwest needs tokio's reactor: its route runs in the compat context.
//! let client = reqwest::Client::new();
//! let tokio_bound: Router = Router::new()
//!     .route("/proxy", get(move || async move {
//!         client.get("http://127.0.0.1:8080/").send().await.unwrap().text().await.unwrap()
//!     }))
//!     .route_layer(TokioCompatLayer::new());
//! // `/` needs nothing of tokio, and gets nothing of it.
//! let app: Router = Router::new()
//!     .route("/", get(|| async { "Hello, World!" }))
//!     .merge(tokio_bound);
//! # drop(app);
//! ```
//!
//! # What it costs
//!
//! One more thread (idle unless tokio has work), and a hop per wakeup: a
//! socket a tokio client waits on becomes ready on the side thread's
//! epoll, which wakes the goro task through its waker (a push onto a goro
//! P's queue, and an unpark if that P sleeps). Work the client spawns
//! with `tokio::spawn` runs on that one side thread, not on goro's Ps.
//! `bench/results/2026-11-26-http-compat-cost-quiet.txt` measures it (see
//! the README).
//!
//! Crates that need only tokio's io *traits* (tokio-rustls, h2, hyper
//! through `goro::net::hyper`) need none of this: they run on goro's own
//! poller directly.

use http::{Request, Response};
use http_body::{Body, Frame, SizeHint};
use std::future::Future;
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{Context, Poll, Waker};

pub use async_compat::Compat;

/// Runs `fut` in the tokio context: every poll (and its drop) enters the
/// side runtime's context, so tokio-bound clients work inside it.
///
/// ```no_run
/// # goro::Runtime::builder().build().unwrap().block_on(async {
/// let body = goro_http::compat::compat(async {
///     reqwest::get("http://127.0.0.1:8080/").await?.text().await
/// })
/// .await?;
/// # Ok::<(), reqwest::Error>(()) }).unwrap();
/// ```
pub fn compat<F: Future>(fut: F) -> Compat<F> {
    Compat::new(fut)
}

/// The side tokio runtime's handle (started on first use): the one the
/// compat context enters. `handle().spawn(f)` runs `f` on the side thread;
/// `let _g = handle_ref().enter();` makes tokio's constructors work in a
/// block of synchronous code.
///
/// ```
/// let h = goro_http::compat::handle();
/// let _g = h.enter();
/// // tokio's timers can be made here, on a thread tokio does not own.
/// drop(tokio::time::sleep(std::time::Duration::from_millis(1)));
/// ```
pub fn handle() -> tokio::runtime::Handle {
    handle_ref().clone()
}

fn handle_ref() -> &'static tokio::runtime::Handle {
    static HANDLE: OnceLock<tokio::runtime::Handle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        // async-compat keeps its runtime private; a future run in its
        // context reads the handle out, ready at its first poll.
        let mut f = std::pin::pin!(Compat::new(async { tokio::runtime::Handle::current() }));
        match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(h) => h,
            Poll::Pending => unreachable!("an async block with no await is ready"),
        }
    })
}

/// A tower layer that runs a service's request futures, and polls its
/// response bodies, in the tokio context (see the [module docs](self)).
///
/// ```
/// use axum::{routing::get, Router};
/// let app: Router = Router::new()
///     .route("/sleepy", get(|| async {
///         // A tokio timer: panics on goro without the layer.
///         tokio::time::sleep(std::time::Duration::from_millis(1)).await;
///         "slept"
///     }))
///     .route_layer(goro_http::compat::TokioCompatLayer::new());
/// # drop(app);
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct TokioCompatLayer {
    _priv: (),
}

impl TokioCompatLayer {
    /// The layer.
    pub fn new() -> TokioCompatLayer {
        TokioCompatLayer { _priv: () }
    }
}

impl<S> tower_layer::Layer<S> for TokioCompatLayer {
    type Service = TokioCompat<S>;

    fn layer(&self, inner: S) -> TokioCompat<S> {
        TokioCompat { inner }
    }
}

/// The service of [`TokioCompatLayer`].
#[derive(Clone, Debug)]
pub struct TokioCompat<S> {
    inner: S,
}

impl<S, ReqB, ResB> tower_service::Service<Request<ReqB>> for TokioCompat<S>
where
    S: tower_service::Service<Request<ReqB>, Response = Response<ResB>>,
{
    type Response = Response<CompatBody<ResB>>;
    type Error = S::Error;
    type Future = CompatFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        let _g = handle_ref().enter();
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<ReqB>) -> CompatFuture<S::Future> {
        let _g = handle_ref().enter();
        CompatFuture {
            inner: Compat::new(self.inner.call(req)),
        }
    }
}

pin_project_lite::pin_project! {
    /// [`TokioCompat`]'s future: the inner one in the tokio context.
    pub struct CompatFuture<F> {
        #[pin]
        inner: Compat<F>,
    }
}

impl<F, B, E> Future for CompatFuture<F>
where
    F: Future<Output = Result<Response<B>, E>>,
{
    type Output = Result<Response<CompatBody<B>>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.project()
            .inner
            .poll(cx)
            .map(|r| r.map(|resp| resp.map(|inner| CompatBody { inner })))
    }
}

pin_project_lite::pin_project! {
    /// A response body polled in the tokio context (a body streamed from a
    /// tokio-bound source: a reqwest response, a sqlx row stream).
    pub struct CompatBody<B> {
        #[pin]
        inner: B,
    }
}

impl<B: Body> Body for CompatBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        let _g = handle_ref().enter();
        self.project().inner.poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
