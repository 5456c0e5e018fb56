//! UDP: [`UdpSocket`] on the runtime's poller.
//!
//! The same shape as TCP (`tcp/`): a non-blocking mio socket registered
//! with the poller, `&self` operations, Go's deadlines. A datagram is sent
//! whole or not at all, so there is no `send_all`.
//!
//! Inside a `goro::sim` bubble, binding makes a socket of the simulated
//! network instead (`net/sim/udp.rs`): datagrams then cross the links'
//! latency, loss, partitions and holds; every method matches on which it
//! is.
//!
//! # Rejected
//!
//! - A synchronous `connect` (std's: it sends nothing): it takes
//!   `ToSocketAddrs`, whose host-name lookups block, so it is async as
//!   tokio's is, leaving room to move lookups off the calling thread
//!   without changing the API.

use crate::net::io::PollIo;
use crate::net::resolve;
use crate::net::scheduled_io::Direction;
use crate::net::sim::udp::SimUdp;
use crate::net::sim::Network;
use std::fmt;
use std::future::poll_fn;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Instant;

/// A UDP socket (Go's `net.UDPConn`).
///
/// ```
/// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
/// let a = goro::net::UdpSocket::bind("127.0.0.1:0").await?;
/// let b = goro::net::UdpSocket::bind("127.0.0.1:0").await?;
/// a.send_to(b"ping", b.local_addr()?).await?;
/// let mut buf = [0; 16];
/// let (n, from) = b.recv_from(&mut buf).await?;
/// assert_eq!((&buf[..n], from), (&b"ping"[..], a.local_addr()?));
/// # Ok::<(), std::io::Error>(())
/// # }).unwrap();
/// ```
pub struct UdpSocket {
    io: Io,
}

/// A real socket on the poller, or a simulated one.
enum Io {
    Real(PollIo<mio::net::UdpSocket>),
    Sim(SimUdp),
}

impl UdpSocket {
    /// Binds to the first of `addr`'s addresses that works (port 0 picks a
    /// free port). A host name is resolved on the calling thread. Inside
    /// a `goro::sim` bubble it binds in the simulated network (any IP; an
    /// address in use is `AddrInUse`).
    ///
    /// ```
    /// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
    /// let s = goro::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    /// assert_ne!(s.local_addr().unwrap().port(), 0);
    /// # });
    /// ```
    pub async fn bind(addr: impl ToSocketAddrs) -> io::Result<UdpSocket> {
        let mut last = None;
        let sim = Network::current();
        for a in resolve(addr)? {
            let io = match &sim {
                None => mio::net::UdpSocket::bind(a)
                    .and_then(PollIo::new)
                    .map(Io::Real),
                Some(net) => net.bind_udp(a).map(Io::Sim),
            };
            match io {
                Ok(io) => return Ok(UdpSocket { io }),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(crate::net::no_addresses))
    }

    /// Sets the default peer: [`UdpSocket::send`] goes there and
    /// [`UdpSocket::recv`] accepts datagrams only from there.
    ///
    /// ```
    /// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
    /// let a = goro::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    /// let b = goro::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    /// a.connect(b.local_addr().unwrap()).await.unwrap();
    /// assert_eq!(a.peer_addr().unwrap(), b.local_addr().unwrap());
    /// # });
    /// ```
    pub async fn connect(&self, addr: impl ToSocketAddrs) -> io::Result<()> {
        let mut last = None;
        for a in resolve(addr)? {
            match &self.io {
                Io::Real(io) => match io.get().connect(a) {
                    Ok(()) => return Ok(()),
                    Err(e) => last = Some(e),
                },
                Io::Sim(s) => {
                    s.connect(a);
                    return Ok(());
                }
            }
        }
        Err(last.unwrap_or_else(crate::net::no_addresses))
    }

    /// Sends `buf` as one datagram to `target` (its first address).
    ///
    /// ```
    /// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
    /// let s = goro::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    /// let n = s.send_to(b"hello", s.local_addr().unwrap()).await.unwrap();
    /// assert_eq!(n, 5);
    /// # });
    /// ```
    pub async fn send_to(&self, buf: &[u8], target: impl ToSocketAddrs) -> io::Result<usize> {
        let to = resolve(target)?
            .into_iter()
            .next()
            .ok_or_else(crate::net::no_addresses)?;
        match &self.io {
            Io::Real(io) => io.io(Direction::Write, |s| s.send_to(buf, to)).await,
            Io::Sim(s) => poll_fn(|cx| s.poll_send_to(cx, buf, Some(to))).await,
        }
    }

    /// Receives one datagram into `buf` (truncated if longer); returns its
    /// length and sender.
    ///
    /// ```
    /// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
    /// let s = goro::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    /// s.send_to(b"me", s.local_addr().unwrap()).await.unwrap();
    /// let mut buf = [0; 8];
    /// let (n, from) = s.recv_from(&mut buf).await.unwrap();
    /// assert_eq!((n, from), (2, s.local_addr().unwrap()));
    /// # });
    /// ```
    pub async fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        match &self.io {
            Io::Real(io) => io.io(Direction::Read, |s| s.recv_from(buf)).await,
            Io::Sim(s) => poll_fn(|cx| s.poll_recv_from(cx, buf)).await,
        }
    }

    /// Sends `buf` to the connected peer ([`UdpSocket::connect`]).
    ///
    /// ```
    /// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
    /// let s = goro::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    /// s.connect(s.local_addr().unwrap()).await.unwrap();
    /// s.send(b"x").await.unwrap();
    /// assert_eq!(s.recv(&mut [0; 4]).await.unwrap(), 1);
    /// # });
    /// ```
    pub async fn send(&self, buf: &[u8]) -> io::Result<usize> {
        match &self.io {
            Io::Real(io) => io.io(Direction::Write, |s| s.send(buf)).await,
            Io::Sim(s) => poll_fn(|cx| s.poll_send_to(cx, buf, None)).await,
        }
    }

    /// Receives one datagram from the connected peer.
    ///
    /// ```
    /// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
    /// let s = goro::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    /// s.connect(s.local_addr().unwrap()).await.unwrap();
    /// s.send(b"abc").await.unwrap();
    /// let mut buf = [0; 4];
    /// assert_eq!(s.recv(&mut buf).await.unwrap(), 3);
    /// # });
    /// ```
    pub async fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        match &self.io {
            Io::Real(io) => io.io(Direction::Read, |s| s.recv(buf)).await,
            Io::Sim(s) => poll_fn(|cx| s.poll_recv_from(cx, buf))
                .await
                .map(|(n, _)| n),
        }
    }

    /// The local address.
    ///
    /// ```
    /// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
    /// let s = goro::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    /// assert!(s.local_addr().unwrap().ip().is_loopback());
    /// # });
    /// ```
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        match &self.io {
            Io::Real(io) => io.get().local_addr(),
            Io::Sim(s) => Ok(s.local_addr()),
        }
    }

    /// The connected peer's address (`NotConnected` before
    /// [`UdpSocket::connect`]).
    ///
    /// ```
    /// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
    /// let s = goro::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    /// assert!(s.peer_addr().is_err());
    /// # });
    /// ```
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        match &self.io {
            Io::Real(io) => io.get().peer_addr(),
            Io::Sim(s) => s.peer_addr(),
        }
    }

    /// Sets the receive deadline (Go's `SetReadDeadline`): past it, pending
    /// and future receives fail with `TimedOut` until it is moved or
    /// cleared.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
    /// let s = goro::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    /// s.set_read_deadline(Some(Instant::now() + Duration::from_millis(5)));
    /// let e = s.recv_from(&mut [0; 4]).await.unwrap_err();
    /// assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
    /// # });
    /// ```
    pub fn set_read_deadline(&self, deadline: Option<Instant>) {
        match &self.io {
            Io::Real(io) => io.set_deadline(Direction::Read, deadline),
            Io::Sim(s) => s.set_read_deadline(deadline),
        }
    }

    /// Sets the send deadline (Go's `SetWriteDeadline`).
    ///
    /// ```
    /// use std::time::Instant;
    /// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
    /// let s = goro::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    /// s.set_write_deadline(Some(Instant::now()));
    /// let e = s.send_to(b"x", s.local_addr().unwrap()).await.unwrap_err();
    /// assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
    /// # });
    /// ```
    pub fn set_write_deadline(&self, deadline: Option<Instant>) {
        match &self.io {
            Io::Real(io) => io.set_deadline(Direction::Write, deadline),
            Io::Sim(s) => s.set_write_deadline(deadline),
        }
    }

    /// Sets both deadlines (Go's `SetDeadline`).
    ///
    /// ```
    /// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
    /// let s = goro::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    /// s.set_deadline(None); // no deadlines (the default)
    /// # });
    /// ```
    pub fn set_deadline(&self, deadline: Option<Instant>) {
        self.set_read_deadline(deadline);
        self.set_write_deadline(deadline);
    }
}

impl fmt::Debug for UdpSocket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UdpSocket")
            .field("local_addr", &self.local_addr().ok())
            .finish()
    }
}

impl std::os::fd::AsRawFd for UdpSocket {
    /// The socket's file descriptor (for socket options goro does not
    /// wrap). Reading or writing it directly bypasses the poller. A
    /// simulated socket (in a `goro::sim` bubble) has none: -1.
    ///
    /// ```
    /// use std::os::fd::AsRawFd;
    /// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
    /// # let s = goro::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
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
