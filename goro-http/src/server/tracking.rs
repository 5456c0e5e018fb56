//! What a connection's service tracks per request ([`ConnService`], over
//! [`ConnState`]): it clears the connection's start deadline at the first
//! request, arms `read_timeout` for an HTTP/1 request until its response is
//! ready, and counts the requests in flight until their response body has
//! been sent, so that the connection task knows since when the connection
//! has been idle (`idle_timeout`).

use goro::net::TcpStream;
use http::{Request, Response};
use hyper::body::Incoming;
use hyper_util::service::{TowerToHyperService, TowerToHyperServiceFuture};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, Instant};

/// What a connection's service shares with its task.
pub(super) struct ConnState {
    pub(super) stream: Arc<TcpStream>,
    /// The read-header deadline set at accept is still armed.
    pub(super) head_deadline: AtomicBool,
    /// Go's `ReadTimeout` (HTTP/1 requests).
    pub(super) read_timeout: Option<Duration>,
    pub(super) track_idle: bool,
    pub(super) born: Instant,
    /// Requests in flight (with `track_idle`).
    pub(super) active: AtomicUsize,
    /// When the last request finished, in ns since `born`.
    pub(super) last_done_ns: AtomicU64,
}

impl ConnState {
    /// Since when the connection has had no request in flight; `None` while
    /// one is.
    pub(super) fn idle_since(&self) -> Option<Instant> {
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
pub(super) struct ConnService<S> {
    pub(super) inner: TowerToHyperService<S>,
    pub(super) state: Arc<ConnState>,
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
            state.stream.set_read_deadline(Some(goro::time::now() + t));
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
    pub(super) struct Tracked<F> {
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
    pub(super) struct TrackedBody<B> {
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
