//! [`TcpStream`]: a TCP connection (Go's `net.TCPConn`).
//!
//! Every operation takes `&self` and goes through the stream's `PollIo`
//! (`net/io.rs`), which tries the non-blocking call and, if the socket is not
//! ready, parks the task on the poller until it is. Reads and writes have
//! their own readiness and their own deadline, so a task reading a stream
//! and another writing it never wait on each other. The poll forms
//! (`poll_read`, `poll_write`, and the crate's `poll_read_uninit` for hyper
//! and tokio's io traits) are what the adapters build on.
//!
//! Inside a `goro::sim` bubble a stream is an end of a simulated
//! connection instead (`net/sim/stream.rs`): connect and accept choose,
//! and every method matches on which it is, the real path paying that one
//! `match`.

use crate::net::io::PollIo;
use crate::net::resolve;
use crate::net::scheduled_io::Direction;
use crate::net::sim::stream::SimStream;
use crate::net::sim::Network;
use std::fmt;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, ToSocketAddrs};
use std::task::{Context, Poll};
use std::time::Instant;

/// A TCP connection (Go's `net.TCPConn`).
///
/// ```
/// # goro::Runtime::builder().procs(2).build().unwrap().block_on(async {
/// let l = goro::net::TcpListener::bind("127.0.0.1:0").await?;
/// let addr = l.local_addr()?;
/// goro::spawn(async move {
///     let (s, _) = l.accept().await.unwrap();
///     let mut buf = [0; 5];
///     let n = s.read(&mut buf).await.unwrap();
///     s.write_all(&buf[..n]).await.unwrap(); // echo
/// });
/// let s = goro::net::TcpStream::connect(addr).await?;
/// s.write_all(b"hello").await?;
/// let mut buf = [0; 5];
/// let mut got = 0;
/// while got < 5 {
///     got += s.read(&mut buf[got..]).await?;
/// }
/// assert_eq!(&buf, b"hello");
/// # Ok::<(), std::io::Error>(())
/// # }).unwrap();
/// ```
pub struct TcpStream {
    io: Io,
}

/// A real socket on the poller, or an end of a simulated connection.
enum Io {
    Real(PollIo<mio::net::TcpStream>),
    Sim(SimStream),
}

impl TcpStream {
    pub(super) fn new(s: mio::net::TcpStream) -> io::Result<TcpStream> {
        Ok(TcpStream {
            io: Io::Real(PollIo::new(s)?),
        })
    }

    pub(super) fn from_sim(s: SimStream) -> TcpStream {
        TcpStream { io: Io::Sim(s) }
    }

    /// Connects to the first of `addr`'s addresses that accepts. A host
    /// name is resolved on the calling thread (blocking). Bound the wait
    /// with [`crate::time::timeout`].
    ///
    /// Inside a `goro::sim` bubble it connects over the bubble's simulated
    /// network: after the link's latency, to a listener bound there (its
    /// exact address, or a wildcard on its port), from the loopback
    /// address with an ephemeral port; `ConnectionRefused` if none is.
    ///
    /// ```
    /// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
    /// let l = goro::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// let s = goro::net::TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
    /// assert_eq!(s.peer_addr().unwrap(), l.local_addr().unwrap());
    /// # });
    /// ```
    pub async fn connect(addr: impl ToSocketAddrs) -> io::Result<TcpStream> {
        let mut last = None;
        let sim = Network::current();
        for a in resolve(addr)? {
            let attempt = match &sim {
                None => TcpStream::connect_one(a).await,
                Some(net) => net.connect(a).await.map(TcpStream::from_sim),
            };
            match attempt {
                Ok(s) => return Ok(s),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(crate::net::no_addresses))
    }

    async fn connect_one(addr: SocketAddr) -> io::Result<TcpStream> {
        let io = PollIo::new(mio::net::TcpStream::connect(addr)?)?;
        // Writable means the handshake finished, one way or the other.
        io.io(Direction::Write, |s| {
            if let Some(e) = s.take_error()? {
                return Err(e);
            }
            match s.peer_addr() {
                Ok(_) => Ok(()),
                Err(e) if e.kind() == io::ErrorKind::NotConnected => {
                    Err(io::ErrorKind::WouldBlock.into())
                }
                Err(e) => Err(e),
            }
        })
        .await?;
        Ok(TcpStream { io: Io::Real(io) })
    }

    /// Reads into `buf`; returns how many bytes, `0` once the peer has shut
    /// down its side (or for an empty `buf`). A reset connection is an
    /// error (`ConnectionReset`); past the read deadline, `TimedOut`.
    ///
    /// ```
    /// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
    /// let l = goro::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// let c = goro::net::TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
    /// let (s, _) = l.accept().await.unwrap();
    /// c.write_all(b"hi").await.unwrap();
    /// c.shutdown(std::net::Shutdown::Write).unwrap();
    /// let mut buf = [0; 8];
    /// let mut n = 0;
    /// loop {
    ///     match s.read(&mut buf[n..]).await.unwrap() {
    ///         0 => break,
    ///         k => n += k,
    ///     }
    /// }
    /// assert_eq!(&buf[..n], b"hi");
    /// # });
    /// ```
    pub async fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        let len = buf.len();
        match &self.io {
            Io::Real(io) => {
                io.stream_io(Direction::Read, len, |mut s| s.read(buf))
                    .await
            }
            Io::Sim(s) => std::future::poll_fn(|cx| s.poll_read(cx, buf)).await,
        }
    }

    /// Reads exactly `buf.len()` bytes, waiting as needed; returns
    /// `buf.len()` (as tokio's `read_exact`; Go's `io.ReadFull`). A peer
    /// that shuts down first is `UnexpectedEof` (the bytes read so far are
    /// in `buf`); past the read deadline, `TimedOut`.
    ///
    /// ```
    /// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
    /// let l = goro::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// let c = goro::net::TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
    /// let (s, _) = l.accept().await.unwrap();
    /// c.write_all(b"hello").await.unwrap();
    /// let mut buf = [0; 5];
    /// assert_eq!(s.read_exact(&mut buf).await.unwrap(), 5);
    /// assert_eq!(&buf, b"hello");
    /// c.shutdown(std::net::Shutdown::Write).unwrap();
    /// let e = s.read_exact(&mut buf).await.unwrap_err();
    /// assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof);
    /// # });
    /// ```
    pub async fn read_exact(&self, buf: &mut [u8]) -> io::Result<usize> {
        let mut got = 0;
        while got < buf.len() {
            match self.read(&mut buf[got..]).await? {
                0 => return Err(io::ErrorKind::UnexpectedEof.into()),
                n => got += n,
            }
        }
        Ok(got)
    }

    /// Writes some of `buf`; returns how many bytes. Past the write
    /// deadline, `TimedOut`; to a reset or shut-down peer, an error.
    ///
    /// ```
    /// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
    /// let l = goro::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// let c = goro::net::TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
    /// assert_eq!(c.write(b"abc").await.unwrap(), 3);
    /// # });
    /// ```
    pub async fn write(&self, buf: &[u8]) -> io::Result<usize> {
        let len = buf.len();
        match &self.io {
            Io::Real(io) => {
                io.stream_io(Direction::Write, len, |mut s| s.write(buf))
                    .await
            }
            Io::Sim(s) => std::future::poll_fn(|cx| s.poll_write(cx, buf)).await,
        }
    }

    /// Writes all of `buf`, waiting as needed.
    ///
    /// ```
    /// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
    /// let l = goro::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// let c = goro::net::TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
    /// c.write_all(&[7; 1000]).await.unwrap();
    /// # });
    /// ```
    pub async fn write_all(&self, mut buf: &[u8]) -> io::Result<()> {
        while !buf.is_empty() {
            match self.write(buf).await? {
                0 => return Err(io::ErrorKind::WriteZero.into()),
                n => buf = &buf[n..],
            }
        }
        Ok(())
    }

    /// The poll form of [`TcpStream::read`], for adapters.
    ///
    /// ```
    /// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
    /// # let l = goro::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// # let c = goro::net::TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
    /// # c.write_all(b"x").await.unwrap();
    /// let (s, _) = l.accept().await.unwrap();
    /// let mut buf = [0; 1];
    /// let n = std::future::poll_fn(|cx| s.poll_read(cx, &mut buf)).await.unwrap();
    /// assert_eq!(n, 1);
    /// # });
    /// ```
    pub fn poll_read(&self, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        let len = buf.len();
        match &self.io {
            Io::Real(io) => io.poll_stream(cx, Direction::Read, len, |mut s| s.read(buf)),
            Io::Sim(s) => s.poll_read(cx, buf),
        }
    }

    /// [`TcpStream::poll_read`] into memory that need not be initialized
    /// (hyper's read buffer, `net/hyper.rs`): `recv(2)` only writes the
    /// bytes it returns, so the caller need not zero the buffer first.
    /// Returns how many bytes of `buf` are now initialized (from its start).
    /// Also tokio's `ReadBuf` (`net/tokio_io.rs`).
    #[cfg(any(feature = "hyper", feature = "tokio-io"))]
    pub(crate) fn poll_read_uninit(
        &self,
        cx: &mut Context<'_>,
        buf: &mut [std::mem::MaybeUninit<u8>],
    ) -> Poll<io::Result<usize>> {
        use std::os::fd::AsRawFd;
        let len = buf.len();
        let io = match &self.io {
            Io::Real(io) => io,
            Io::Sim(s) => return s.poll_read_uninit(cx, buf),
        };
        io.poll_stream(cx, Direction::Read, len, |s| {
            // SAFETY: `buf` is valid for writes of `buf.len()` bytes for
            // the duration of the call (a live exclusive borrow), and
            // recv(2) writes at most that many bytes into it and never
            // reads it; the fd is the stream's own open socket.
            let n = unsafe {
                libc::recv(
                    s.as_raw_fd(),
                    buf.as_mut_ptr().cast::<libc::c_void>(),
                    buf.len(),
                    0,
                )
            };
            if n < 0 {
                Err(io::Error::last_os_error())
            } else {
                Ok(n as usize)
            }
        })
    }

    /// The poll form of [`TcpStream::write`], for adapters.
    ///
    /// ```
    /// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
    /// # let l = goro::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// let c = goro::net::TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
    /// let n = std::future::poll_fn(|cx| c.poll_write(cx, b"x")).await.unwrap();
    /// assert_eq!(n, 1);
    /// # });
    /// ```
    pub fn poll_write(&self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let len = buf.len();
        match &self.io {
            Io::Real(io) => io.poll_stream(cx, Direction::Write, len, |mut s| s.write(buf)),
            Io::Sim(s) => s.poll_write(cx, buf),
        }
    }

    /// Shuts down the read side, the write side (the peer reads `Ok(0)`)
    /// or both.
    ///
    /// ```
    /// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
    /// let l = goro::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// let c = goro::net::TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
    /// let (s, _) = l.accept().await.unwrap();
    /// c.shutdown(std::net::Shutdown::Write).unwrap();
    /// assert_eq!(s.read(&mut [0; 4]).await.unwrap(), 0);
    /// # });
    /// ```
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        match &self.io {
            Io::Real(io) => io.get().shutdown(how),
            Io::Sim(s) => s.shutdown(how),
        }
    }

    /// The remote address.
    ///
    /// ```
    /// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
    /// let l = goro::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// let c = goro::net::TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
    /// assert_eq!(c.peer_addr().unwrap(), l.local_addr().unwrap());
    /// # });
    /// ```
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        match &self.io {
            Io::Real(io) => io.get().peer_addr(),
            Io::Sim(s) => Ok(s.peer_addr()),
        }
    }

    /// The local address.
    ///
    /// ```
    /// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
    /// let l = goro::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// let c = goro::net::TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
    /// let (_s, peer) = l.accept().await.unwrap();
    /// assert_eq!(c.local_addr().unwrap(), peer);
    /// # });
    /// ```
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        match &self.io {
            Io::Real(io) => io.get().local_addr(),
            Io::Sim(s) => Ok(s.local_addr()),
        }
    }

    /// Sets `TCP_NODELAY` (disables Nagle's algorithm; Go's default is on).
    ///
    /// ```
    /// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
    /// let l = goro::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// let c = goro::net::TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
    /// c.set_nodelay(true).unwrap();
    /// assert!(c.nodelay().unwrap());
    /// # });
    /// ```
    pub fn set_nodelay(&self, on: bool) -> io::Result<()> {
        match &self.io {
            Io::Real(io) => io.get().set_nodelay(on),
            Io::Sim(s) => {
                s.set_nodelay(on);
                Ok(())
            }
        }
    }

    /// Whether `TCP_NODELAY` is set.
    ///
    /// ```
    /// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
    /// # let l = goro::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// let c = goro::net::TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
    /// c.set_nodelay(false).unwrap();
    /// assert!(!c.nodelay().unwrap());
    /// # });
    /// ```
    pub fn nodelay(&self) -> io::Result<bool> {
        match &self.io {
            Io::Real(io) => io.get().nodelay(),
            Io::Sim(s) => Ok(s.nodelay()),
        }
    }

    /// Sets the read deadline (Go's `SetReadDeadline`): past it, pending and
    /// future reads fail with `TimedOut` until it is moved into the future
    /// or cleared (`None`).
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
    /// let l = goro::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// let c = goro::net::TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
    /// c.set_read_deadline(Some(Instant::now() + Duration::from_millis(5)));
    /// let e = c.read(&mut [0; 4]).await.unwrap_err(); // the peer is silent
    /// assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
    /// c.set_read_deadline(None); // usable again
    /// # });
    /// ```
    pub fn set_read_deadline(&self, deadline: Option<Instant>) {
        match &self.io {
            Io::Real(io) => io.set_deadline(Direction::Read, deadline),
            Io::Sim(s) => s.set_read_deadline(deadline),
        }
    }

    /// Sets the write deadline (Go's `SetWriteDeadline`), as
    /// [`TcpStream::set_read_deadline`] does for reads.
    ///
    /// ```
    /// use std::time::Instant;
    /// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
    /// let l = goro::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// let c = goro::net::TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
    /// c.set_write_deadline(Some(Instant::now()));
    /// assert_eq!(c.write(b"x").await.unwrap_err().kind(), std::io::ErrorKind::TimedOut);
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
    /// use std::time::{Duration, Instant};
    /// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
    /// let l = goro::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// let c = goro::net::TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
    /// c.set_deadline(Some(Instant::now() + Duration::from_secs(30)));
    /// c.write_all(b"in time").await.unwrap();
    /// # });
    /// ```
    pub fn set_deadline(&self, deadline: Option<Instant>) {
        self.set_read_deadline(deadline);
        self.set_write_deadline(deadline);
    }
}

impl fmt::Debug for TcpStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TcpStream")
            .field("local_addr", &self.local_addr().ok())
            .field("peer_addr", &self.peer_addr().ok())
            .finish()
    }
}

impl std::os::fd::AsRawFd for TcpStream {
    /// The socket's file descriptor (for socket options goro does not
    /// wrap). Reading or writing it directly bypasses the poller.
    ///
    /// A simulated stream (inside a `goro::sim` bubble) has no descriptor:
    /// -1, which every system call refuses with `EBADF`, so code that sets
    /// an option through it sees an error rather than a panic.
    ///
    /// ```
    /// use std::os::fd::AsRawFd;
    /// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
    /// # let l = goro::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// # let s = goro::net::TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
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
