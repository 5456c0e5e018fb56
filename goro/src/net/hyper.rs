//! hyper 1.x on goro (feature `hyper`): an executor, an IO adapter and a
//! timer, the three things hyper asks of a runtime.
//!
//! hyper owns no runtime. Its connection types are futures that read and
//! write through `hyper::rt::Read`/`Write`, sleep through a
//! `hyper::rt::Timer`, and (HTTP/2 and hyper-util's pools) spawn background
//! work through a `hyper::rt::Executor`. With these three,
//! `hyper::server::conn::http1` and `hyper::client::conn::http1` run on goro
//! unchanged, each connection one goro task:
//!
//! * [`GoroExecutor`] spawns with [`crate::spawn`] and detaches.
//! * [`GoroIo`] drives a [`TcpStream`] (owned, borrowed or in an `Arc`)
//!   through its poll methods, so a connection waits on goro's poller, and
//!   adds one thing a server wants from Go's `http.Server`: a write timeout
//!   that cuts a peer that stops reading ([`GoroIo::write_timeout`]).
//! * [`GoroTimer`] hands out [`crate::time::Sleep`]s, which sit on goro's
//!   per-P timer heaps (seed 001), and resets them in place: a server with
//!   `header_read_timeout` resets one timer per request, and a reset to a
//!   later time only moves the deadline of the armed timer (`timer.rs`).
//!
//! Read timeouts need nothing here: hyper's `header_read_timeout` (driven by
//! [`GoroTimer`]) bounds the wait for each request head, from the moment
//! the connection starts waiting for it, so it also closes a keep-alive
//! connection that stays idle; the stream's own deadlines
//! ([`TcpStream::set_read_deadline`]) are there for anything else.
//!
//! This feature enables hyper's HTTP/1 only: hyper's `http2` feature
//! brings `h2`, which is written against tokio's IO traits. hyper itself
//! depends on tokio's runtime-free `sync` module; no tokio runtime is
//! involved. HTTP/2 and TLS run on these same three pieces in the
//! `goro-http` crate, which enables hyper's `http2` itself and reaches
//! tokio's IO traits through goro's `tokio-io` feature (with it,
//! [`GoroIo`] implements them too, so tokio-rustls can sit on it).
//!
//! ```
//! # goro::Runtime::builder().procs(2).build().unwrap().block_on(async {
//! use goro::net::hyper::{GoroIo, GoroTimer};
//! use hyper::{body::Incoming, service::service_fn, Request, Response};
//! use std::convert::Infallible;
//! use std::time::Duration;
//!
//! let l = goro::net::TcpListener::bind("127.0.0.1:0").await?;
//! let addr = l.local_addr()?;
//! goro::spawn(async move {
//!     let (stream, _) = l.accept().await.unwrap();
//!     let hello = service_fn(|_req: Request<Incoming>| async {
//!         Ok::<_, Infallible>(Response::new(String::from("Hello, World!")))
//!     });
//!     let _ = hyper::server::conn::http1::Builder::new()
//!         .timer(GoroTimer)
//!         .header_read_timeout(Duration::from_secs(5))
//!         .serve_connection(GoroIo::new(stream), hello)
//!         .await;
//! });
//! // A raw client, to keep the example short.
//! let c = goro::net::TcpStream::connect(addr).await?;
//! c.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").await?;
//! let mut resp = Vec::new();
//! let mut buf = [0; 512];
//! loop {
//!     match c.read(&mut buf).await? {
//!         0 => break,
//!         n => resp.extend_from_slice(&buf[..n]),
//!     }
//! }
//! assert!(resp.ends_with(b"Hello, World!"));
//! # Ok::<(), std::io::Error>(())
//! # }).unwrap();
//! ```
//!
//! # Rejected
//!
//! - Zeroing hyper's read buffer before each read
//!   (`ReadBufCursor::initialize_unfilled`) to read through the safe
//!   `&mut [u8]` of [`TcpStream::poll_read`]: hyper hands out a fresh,
//!   wholly uninitialized cursor for every read, so this clears 8 KiB or
//!   more each time, twice per keep-alive request: in goro-bench's
//!   `http_hello` the largest user-space item after hyper itself
//!   (BENCH_RESULTS.md, "`http_hello` with hyper on goro"), a cost that
//!   tokio's `TcpStream` does not pay (it reads with `recv(2)` into the
//!   uninitialized buffer). [`GoroIo`] does what tokio does, through a
//!   crate-internal raw read path (`TcpStream::poll_read_uninit`).
//! - A write deadline set before every write (Go's `WriteTimeout` is one
//!   deadline per response): that arms and stops a timer per response even
//!   when no write ever waits. [`GoroIo`] arms the stream's write deadline
//!   only when a write has to wait, so the fast path costs nothing.
//! - Wrapping the timer's sleeps in a type of this module: `time::Sleep` is
//!   already `Send + Sync + Unpin`, so it is hyper's `Sleep` directly, and
//!   [`GoroTimer`]'s `reset` finds it again by downcasting.
//! - A goro runtime handle inside [`GoroExecutor`]: hyper calls `execute`
//!   from the connection's own task, which already runs on goro, so
//!   [`crate::spawn`] finds the runtime and the executor stays a unit type.

use crate::net::TcpStream;
use ::hyper::rt::{Executor, Read, ReadBufCursor, Sleep, Timer, Write};
use std::borrow::Borrow;
use std::fmt;
use std::future::Future;
use std::io;
use std::net::Shutdown;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// hyper's executor on goro: each future becomes a detached goro task
/// (hyper's `Executor`, used by HTTP/2 connections and hyper-util's client
/// pools; HTTP/1 connections need none).
///
/// `execute` panics outside a goro runtime, as [`crate::spawn`] does;
/// hyper calls it from the connection's task.
///
/// ```
/// use hyper::rt::Executor;
/// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
/// let (tx, rx) = goro::chan::bounded(1);
/// goro::net::hyper::GoroExecutor.execute(async move { tx.send(7).await.unwrap() });
/// assert_eq!(rx.recv().await, Ok(7));
/// # });
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct GoroExecutor;

impl<F> Executor<F> for GoroExecutor
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn execute(&self, fut: F) {
        drop(crate::spawn(fut)); // dropping the handle detaches the task
    }
}

/// hyper's timer on goro: sleeps are [`crate::time::Sleep`]s on the
/// per-P timer heaps; `reset` moves an armed sleep instead of making a new
/// one. Give it to hyper's builders with `.timer(GoroTimer)`; it is what
/// `header_read_timeout` and keep-alive timeouts run on.
///
/// Its sleeps must be made inside a goro runtime (hyper makes them from the
/// connection's task).
///
/// ```
/// use hyper::rt::Timer;
/// use std::time::{Duration, Instant};
/// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
/// let t0 = Instant::now();
/// let mut s = goro::net::hyper::GoroTimer.sleep(Duration::from_secs(3600));
/// goro::net::hyper::GoroTimer.reset(&mut s, t0 + Duration::from_millis(2));
/// s.await;
/// assert!(t0.elapsed() >= Duration::from_millis(2));
/// # });
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct GoroTimer;

impl Sleep for crate::time::Sleep {}

impl Timer for GoroTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Sleep>> {
        Box::pin(crate::time::sleep(duration))
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn Sleep>> {
        Box::pin(crate::time::sleep_until(deadline))
    }

    fn reset(&self, sleep: &mut Pin<Box<dyn Sleep>>, new_deadline: Instant) {
        match sleep.as_mut().downcast_mut_pin::<crate::time::Sleep>() {
            Some(s) => s.get_mut().reset(new_deadline),
            // Another timer's sleep: replace it, as hyper's default does.
            None => *sleep = self.sleep_until(new_deadline),
        }
    }
}

/// A goro [`TcpStream`] as hyper's IO (`hyper::rt::Read` and `Write`), so
/// hyper's HTTP/1 server and client connections run on goro.
///
/// `T` is the stream itself, a reference to it, or an `Arc` of it: anything
/// that [`Borrow`]s a `TcpStream`. Keeping an `Arc` lets the service reach
/// the socket (its deadlines, its peer address) while hyper owns the IO.
///
/// ```
/// use goro::net::hyper::GoroIo;
/// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
/// let l = goro::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
/// let c = goro::net::TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
/// let io = GoroIo::new(std::sync::Arc::new(c));
/// assert_eq!(io.get_ref().peer_addr().unwrap(), l.local_addr().unwrap());
/// # });
/// ```
pub struct GoroIo<T> {
    stream: T,
    /// The write timeout ([`GoroIo::write_timeout`]), if any.
    write_timeout: Option<Duration>,
    /// Whether the current burst of writes has armed the stream's write
    /// deadline (it has had to wait).
    write_deadline_armed: bool,
}

impl<T> GoroIo<T> {
    /// Wraps `stream` for hyper.
    ///
    /// ```
    /// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
    /// # let l = goro::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// let c = goro::net::TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
    /// let io = goro::net::hyper::GoroIo::new(c);
    /// # drop(io);
    /// # });
    /// ```
    pub fn new(stream: T) -> GoroIo<T> {
        GoroIo {
            stream,
            write_timeout: None,
            write_deadline_armed: false,
        }
    }

    /// Cuts a peer that stops reading: once a burst of writes (the writes
    /// up to hyper's next flush: a response, or a chunk of a streamed body)
    /// has had to wait for the socket, it must finish within `timeout`,
    /// else its writes fail with `TimedOut` and hyper closes the
    /// connection. A stalled writer is thus cut `timeout` after it stalled.
    ///
    /// The stream's write deadline ([`TcpStream::set_write_deadline`]) is
    /// set only when a write waits and cleared at the end of that burst, so
    /// writes that never wait cost nothing extra, and the adapter owns the
    /// write deadline: do not set it yourself as well.
    ///
    /// ```
    /// use std::time::Duration;
    /// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
    /// # let l = goro::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// let c = goro::net::TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
    /// let io = goro::net::hyper::GoroIo::new(c).write_timeout(Duration::from_secs(5));
    /// # drop(io);
    /// # });
    /// ```
    pub fn write_timeout(mut self, timeout: Duration) -> GoroIo<T> {
        self.write_timeout = Some(timeout);
        self
    }

    /// The wrapped stream.
    ///
    /// ```
    /// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
    /// # let l = goro::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// let c = goro::net::TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
    /// let io = goro::net::hyper::GoroIo::new(c);
    /// assert!(io.get_ref().local_addr().is_ok());
    /// # });
    /// ```
    pub fn get_ref(&self) -> &T {
        &self.stream
    }

    /// Unwraps the stream.
    ///
    /// ```
    /// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
    /// # let l = goro::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// let c = goro::net::TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
    /// let c: goro::net::TcpStream = goro::net::hyper::GoroIo::new(c).into_inner();
    /// # drop(c);
    /// # });
    /// ```
    pub fn into_inner(self) -> T {
        self.stream
    }
}

impl<T: Borrow<TcpStream>> GoroIo<T> {
    /// The end of a burst of writes: the write deadline, if armed, goes.
    fn end_write_burst(&mut self) {
        if self.write_deadline_armed {
            self.write_deadline_armed = false;
            self.stream.borrow().set_write_deadline(None);
        }
    }
}

impl<T: Borrow<TcpStream> + Unpin> Read for GoroIo<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        // Read straight into hyper's uninitialized buffer, as tokio's
        // `TcpStream` does for hyper-util: hyper makes a fresh `ReadBuf`
        // with nothing initialized for every read, so zeroing it first
        // (`initialize_unfilled`) would clear 8 KiB or more per read, two
        // reads per keep-alive request (module docs, "Rejected").
        // SAFETY: `as_mut` asks that no initialized byte be
        // de-initialized: the slice is only written, by recv(2) with real
        // bytes (`poll_read_uninit`), and no byte of it is read here.
        let dst = unsafe { buf.as_mut() };
        let n = std::task::ready!(self.stream.borrow().poll_read_uninit(cx, dst))?;
        // SAFETY: the read initialized the first `n <= dst.len()` bytes of
        // the unfilled part (recv(2) returned `n`).
        unsafe { buf.advance(n) };
        Poll::Ready(Ok(()))
    }
}

impl<T: Borrow<TcpStream> + Unpin> Write for GoroIo<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let r = this.stream.borrow().poll_write(cx, buf);
        if r.is_pending() && !this.write_deadline_armed {
            if let Some(t) = this.write_timeout {
                // The burst has to wait: from now on it has `t` to finish.
                // A deadline set after the waker was registered still wakes
                // it (`deadline.rs`). goro's clock, not `Instant::now()`:
                // in a `goro::sim` bubble the two differ.
                this.write_deadline_armed = true;
                this.stream
                    .borrow()
                    .set_write_deadline(Some(crate::time::now() + t));
            }
        }
        r
    }

    fn poll_flush(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Nothing is buffered here; hyper flushes at the end of each burst.
        self.end_write_burst();
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.end_write_burst();
        Poll::Ready(self.stream.borrow().shutdown(Shutdown::Write))
    }
}

/// tokio's io traits on [`GoroIo`] (features `hyper` and `tokio-io`), so a
/// layer written against them (tokio-rustls) can sit on it and keep its
/// write timeout: `TlsStream<GoroIo<TcpStream>>`.
#[cfg(feature = "tokio-io")]
impl<T: Borrow<TcpStream> + Unpin> tokio::io::AsyncRead for GoroIo<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        tokio::io::AsyncRead::poll_read(Pin::new(&mut self.stream.borrow()), cx, buf)
    }
}

#[cfg(feature = "tokio-io")]
impl<T: Borrow<TcpStream> + Unpin> tokio::io::AsyncWrite for GoroIo<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Write::poll_write(self, cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Write::poll_flush(self, cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Write::poll_shutdown(self, cx)
    }
}

impl<T: Borrow<TcpStream>> fmt::Debug for GoroIo<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GoroIo")
            .field("stream", self.stream.borrow())
            .field("write_timeout", &self.write_timeout)
            .finish()
    }
}
