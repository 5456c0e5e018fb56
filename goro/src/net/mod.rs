//! Networking: TCP and UDP sockets on the runtime's poller (Go's `net`
//! package and netpoller).
//!
//! A task that reads a socket with no data does not block its thread: the
//! socket is non-blocking, the task parks, and the poller wakes it when the
//! socket becomes readable. There is no poller thread. As in Go, the
//! scheduler's threads poll the runtime's one epoll themselves: without
//! blocking when they run out of queued work, and one of them blocking in
//! it, until the earliest timer, when every thread is idle (`poller.rs`).
//! An idle runtime with open connections therefore makes no wakeups; a
//! runtime that never opens a socket never creates the epoll.
//!
//! Deadlines are Go's: [`TcpStream::set_read_deadline`] and friends take an
//! absolute time that applies to every operation until it is changed; past
//! it, operations fail with [`std::io::ErrorKind::TimedOut`], and moving it
//! into the future makes the socket usable again (`deadline.rs`).
//!
//! A server's accept loop rides out descriptor exhaustion (`EMFILE`) with
//! Go's `net/http` back-off: [`TcpListener::accept_with_backoff`]
//! (`accept_retry.rs`). With the cargo feature `hyper`, the `hyper` submodule
//! adapts executor, IO and timer to hyper 1.x, so hyper's HTTP/1 server
//! and client connections run as goro tasks (`examples/http_hello.rs`).
//! With the feature `tokio-io`, [`TcpStream`] and its halves also
//! implement tokio's `AsyncRead` and `AsyncWrite` (from the `tokio` crate
//! with no runtime feature), so code written against those traits
//! (tokio-rustls, h2, hyper-util's `TokioIo`) runs on goro's poller; no
//! tokio runtime is started or needed (`tokio_io.rs`).
//!
//! Sockets must be created inside a runtime (in a task, or in
//! `Runtime::block_on`); creating one elsewhere is an error. A socket
//! belongs to the poller of the runtime that created it: it may be used
//! from any thread, but only that runtime's threads deliver its readiness,
//! so once that runtime is dropped, operations that have to wait never
//! finish (dropping the socket is still fine).
//!
//! Inside a `goro::sim` bubble the same types run over a simulated network
//! instead (`sim/`): in memory, in the bubble's virtual time, with link
//! rules a test sets (`goro::sim::net`: latency, loss, partitions, holds),
//! so a server and its clients (hyper's, goro-http's) run unchanged and
//! deterministically. Which one a socket is, is chosen when it is made
//! (bind, connect, accept).
//!
//! # Rejected
//!
//! - Resolving host names on the blocking pool (tokio's `lookup_host`):
//!   addresses given as `SocketAddr` or IP literals, the common case for
//!   servers and tests, need no lookup, and a pool round trip per connect
//!   would cost them a thread hand-off. A name is looked up on the calling
//!   thread (documented on each method); wrap it in
//!   [`crate::spawn_blocking`] where that matters.
//!
//! ```
//! # goro::Runtime::builder().procs(2).build().unwrap().block_on(async {
//! use goro::net::{TcpListener, TcpStream};
//! let l = TcpListener::bind("127.0.0.1:0").await?;
//! let addr = l.local_addr()?;
//! goro::spawn(async move {
//!     loop {
//!         let (s, _) = l.accept().await.unwrap();
//!         goro::spawn(async move {
//!             let mut buf = [0; 1024];
//!             loop {
//!                 match s.read(&mut buf).await {
//!                     Ok(0) | Err(_) => return,
//!                     Ok(n) => {
//!                         if s.write_all(&buf[..n]).await.is_err() {
//!                             return;
//!                         }
//!                     }
//!                 }
//!             }
//!         });
//!     }
//! });
//! let c = TcpStream::connect(addr).await?;
//! c.write_all(b"echo").await?;
//! let mut buf = [0; 4];
//! let mut n = 0;
//! while n < 4 {
//!     n += c.read(&mut buf[n..]).await?;
//! }
//! assert_eq!(&buf, b"echo");
//! # Ok::<(), std::io::Error>(())
//! # }).unwrap();
//! ```

mod accept_retry;
mod deadline;
#[cfg(feature = "hyper")]
#[cfg_attr(docsrs, doc(cfg(feature = "hyper")))]
pub mod hyper;
mod io;
pub(crate) mod poller;
pub(crate) mod scheduled_io;
pub(crate) mod sim;
mod split;
mod tcp;
#[cfg(feature = "tokio-io")]
mod tokio_io;
mod udp;

pub use split::{OwnedReadHalf, OwnedWriteHalf, ReadHalf, ReuniteError, WriteHalf};
pub use tcp::{TcpListener, TcpStream};
pub use udp::UdpSocket;

use std::net::{SocketAddr, ToSocketAddrs};

/// `addr`'s addresses (a host name is looked up on the calling thread).
fn resolve(addr: impl ToSocketAddrs) -> std::io::Result<Vec<SocketAddr>> {
    Ok(addr.to_socket_addrs()?.collect())
}

fn no_addresses() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        "could not resolve to any address",
    )
}
