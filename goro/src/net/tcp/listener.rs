//! [`TcpListener`]: a socket accepting connections (Go's
//! `net.TCPListener`).
//!
//! The listen backlog is widened to the system's maximum after mio binds:
//! mio listens with std's 128, and a burst of a few hundred connects then
//! overflows the queue, so the kernel drops SYNs and each of those clients
//! retries a second later. Go asks for `somaxconn` for the same reason.
//! An accept error such as `EMFILE` leaves the listener usable (the
//! connection waits in the backlog), as in Go, so a server can back off
//! and accept again.
//!
//! Inside a `goro::sim` bubble, binding makes a listener of the simulated
//! network instead (`net/sim/listener.rs`), and what it accepts are
//! simulated streams; every method matches on which it is.

use super::TcpStream;
use crate::net::io::PollIo;
use crate::net::resolve;
use crate::net::scheduled_io::Direction;
use crate::net::sim::listener::SimListener;
use crate::net::sim::Network;
use std::fmt;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::task::{Context, Poll};
use std::time::Instant;

/// A TCP socket listening for connections (Go's `net.TCPListener`).
///
/// ```
/// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
/// let l = goro::net::TcpListener::bind("127.0.0.1:0").await?;
/// let addr = l.local_addr()?;
/// let client = goro::spawn(async move { goro::net::TcpStream::connect(addr).await });
/// let (server_side, peer) = l.accept().await?;
/// assert_eq!(peer, client.await.unwrap()?.local_addr()?);
/// # drop(server_side);
/// # Ok::<(), std::io::Error>(())
/// # }).unwrap();
/// ```
pub struct TcpListener {
    io: Io,
}

/// A real listening socket on the poller, or a simulated one.
enum Io {
    Real(PollIo<mio::net::TcpListener>),
    Sim(SimListener),
}

impl TcpListener {
    /// Binds to the first of `addr`'s addresses that works (port 0 picks a
    /// free port), with `SO_REUSEADDR` set and the system's largest accept
    /// backlog (`somaxconn`, as Go does). A host name is resolved on the
    /// calling thread (blocking); pass an address in async code.
    ///
    /// Fails outside a goro runtime. Inside a `goro::sim` bubble it binds
    /// in the bubble's simulated network: any IP may be bound there, an
    /// address in use is `AddrInUse` (as on Linux), port 0 an ephemeral
    /// port from 49152.
    ///
    /// ```
    /// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
    /// let l = goro::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// assert_ne!(l.local_addr().unwrap().port(), 0);
    /// # });
    /// ```
    pub async fn bind(addr: impl ToSocketAddrs) -> io::Result<TcpListener> {
        let mut last = None;
        let sim = Network::current();
        for a in resolve(addr)? {
            let io = match &sim {
                None => mio::net::TcpListener::bind(a)
                    .and_then(widen_backlog)
                    .and_then(PollIo::new)
                    .map(Io::Real),
                Some(net) => net.bind_tcp(a).map(Io::Sim),
            };
            match io {
                Ok(io) => return Ok(TcpListener { io }),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(crate::net::no_addresses))
    }

    /// Waits for a connection; returns it and the peer's address. An error
    /// such as `EMFILE` (too many open files) is returned as is and the
    /// listener stays usable: the connection waits in the backlog for the
    /// next call. Fails with `TimedOut` past the deadline
    /// ([`TcpListener::set_deadline`]).
    ///
    /// ```
    /// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
    /// let l = goro::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// let addr = l.local_addr().unwrap();
    /// goro::spawn(async move { goro::net::TcpStream::connect(addr).await.unwrap() });
    /// let (_stream, _peer) = l.accept().await.unwrap();
    /// # });
    /// ```
    pub async fn accept(&self) -> io::Result<(TcpStream, SocketAddr)> {
        std::future::poll_fn(|cx| self.poll_accept(cx)).await
    }

    /// The poll form of [`TcpListener::accept`], for adapters.
    ///
    /// ```
    /// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
    /// let l = goro::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// let addr = l.local_addr().unwrap();
    /// goro::spawn(async move { goro::net::TcpStream::connect(addr).await.unwrap() });
    /// let (_s, _peer) = std::future::poll_fn(|cx| l.poll_accept(cx)).await.unwrap();
    /// # });
    /// ```
    pub fn poll_accept(&self, cx: &mut Context<'_>) -> Poll<io::Result<(TcpStream, SocketAddr)>> {
        let io = match &self.io {
            Io::Real(io) => io,
            Io::Sim(l) => {
                return l
                    .poll_accept(cx)
                    .map_ok(|(s, peer)| (TcpStream::from_sim(s), peer))
            }
        };
        match io.poll_io(cx, Direction::Read, |l| l.accept()) {
            Poll::Ready(Ok((s, peer))) => Poll::Ready(TcpStream::new(s).map(|s| (s, peer))),
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    }

    /// The address the listener is bound to.
    ///
    /// ```
    /// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
    /// let l = goro::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// assert!(l.local_addr().unwrap().ip().is_loopback());
    /// # });
    /// ```
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        match &self.io {
            Io::Real(io) => io.get().local_addr(),
            Io::Sim(l) => Ok(l.local_addr()),
        }
    }

    /// Sets the deadline for [`TcpListener::accept`] (Go's `SetDeadline`):
    /// past it, pending and future accepts fail with `TimedOut`; `None`
    /// clears it. A later deadline makes the listener usable again.
    ///
    /// ```
    /// use std::time::Instant;
    /// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
    /// let l = goro::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// l.set_deadline(Some(Instant::now()));
    /// assert_eq!(l.accept().await.unwrap_err().kind(), std::io::ErrorKind::TimedOut);
    /// # });
    /// ```
    pub fn set_deadline(&self, deadline: Option<Instant>) {
        match &self.io {
            Io::Real(io) => io.set_deadline(Direction::Read, deadline),
            Io::Sim(l) => l.set_deadline(deadline),
        }
    }
}

/// The accept backlog: the system's maximum, as Go uses
/// (`/proc/sys/net/core/somaxconn`, else 4096). mio listens with std's 128,
/// which makes a burst of a few hundred connects lose SYNs and retry a
/// second later.
fn backlog() -> i32 {
    static BACKLOG: std::sync::OnceLock<i32> = std::sync::OnceLock::new();
    *BACKLOG.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/net/core/somaxconn")
            .ok()
            .and_then(|s| s.trim().parse::<i32>().ok())
            .filter(|&n| n > 0)
            .unwrap_or(4096)
            .min(65535)
    })
}

/// Listens again with the full backlog (Linux updates it in place).
fn widen_backlog(l: mio::net::TcpListener) -> io::Result<mio::net::TcpListener> {
    use std::os::fd::AsRawFd;
    // SAFETY: `listen` on a descriptor we own; it reads no memory of ours.
    if unsafe { libc::listen(l.as_raw_fd(), backlog()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(l)
}

impl fmt::Debug for TcpListener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TcpListener")
            .field("local_addr", &self.local_addr().ok())
            .finish()
    }
}

impl std::os::fd::AsRawFd for TcpListener {
    /// The socket's file descriptor (for socket options goro does not
    /// wrap). Reading or writing it directly bypasses the poller. A
    /// simulated listener (in a `goro::sim` bubble) has none: -1.
    ///
    /// ```
    /// use std::os::fd::AsRawFd;
    /// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
    /// # let s = goro::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// assert!(s.as_raw_fd() >= 0);
    /// # });
    /// ```
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        match &self.io {
            Io::Real(io) => io.get().as_raw_fd(),
            Io::Sim(_) => -1,
        }
    }
}
