//! A [`TcpStream`]'s read and write halves: borrowed ([`TcpStream::split`])
//! and owned ([`TcpStream::into_split`]), as tokio has them.
//!
//! A stream's operations take `&self`, so one task can read it while
//! another writes it without any halves; the halves are for code that wants
//! each direction as its own value: a reader and a writer task that each
//! own their side, or a function that may only read. They are thin: a
//! borrowed half is a `&TcpStream`, an owned half an `Arc<TcpStream>`, and
//! each half has its own direction's deadline (Go's `SetReadDeadline` on the
//! read half, `SetWriteDeadline` on the write half), so a read that times
//! out leaves the writer alone.
//!
//! Dropping an [`OwnedWriteHalf`] shuts the write side down (the peer reads
//! end of file), as tokio's does; the socket is closed when both owned
//! halves are gone. [`OwnedReadHalf::reunite`] puts the stream back
//! together.

use crate::net::TcpStream;
use std::fmt;
use std::io;
use std::net::{Shutdown, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

/// The read half of a borrowed [`TcpStream::split`].
#[derive(Debug, Clone, Copy)]
pub struct ReadHalf<'a> {
    stream: &'a TcpStream,
}

/// The write half of a borrowed [`TcpStream::split`].
#[derive(Debug, Clone, Copy)]
pub struct WriteHalf<'a> {
    stream: &'a TcpStream,
}

/// The read half of [`TcpStream::into_split`]; `Send`, `'static`.
#[derive(Debug)]
pub struct OwnedReadHalf {
    stream: Arc<TcpStream>,
}

/// The write half of [`TcpStream::into_split`]; `Send`, `'static`.
/// Dropping it shuts the write side down (the peer reads end of file).
#[derive(Debug)]
pub struct OwnedWriteHalf {
    stream: Arc<TcpStream>,
    /// Whether dropping shuts the write side down (not when reunited).
    shutdown_on_drop: bool,
}

/// The halves given to [`OwnedReadHalf::reunite`] came from different
/// streams; here they are back.
#[derive(Debug)]
pub struct ReuniteError(pub OwnedReadHalf, pub OwnedWriteHalf);

impl fmt::Display for ReuniteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("tried to reunite halves that are not from the same socket")
    }
}

impl std::error::Error for ReuniteError {}

impl TcpStream {
    /// Borrowed read and write halves, for two tasks in one scope or for
    /// code that takes one direction only. The stream's own `&self`
    /// methods work as well; this is the shape tokio code expects.
    ///
    /// ```
    /// # goro::Runtime::builder().procs(2).build().unwrap().block_on(async {
    /// let l = goro::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let c = goro::net::TcpStream::connect(l.local_addr()?).await?;
    /// let (s, _) = l.accept().await?;
    /// let (r, w) = s.split();
    /// c.write_all(b"ping").await?;
    /// let mut buf = [0; 4];
    /// r.read_exact(&mut buf).await?;
    /// w.write_all(&buf).await?; // echo
    /// c.read_exact(&mut buf).await?;
    /// assert_eq!(&buf, b"ping");
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn split(&self) -> (ReadHalf<'_>, WriteHalf<'_>) {
        (ReadHalf { stream: self }, WriteHalf { stream: self })
    }

    /// Owned read and write halves, to move into two tasks. Dropping the
    /// write half shuts the write side down; the socket closes when both
    /// are dropped; [`OwnedReadHalf::reunite`] gives the stream back.
    ///
    /// ```
    /// # goro::Runtime::builder().procs(2).build().unwrap().block_on(async {
    /// let l = goro::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let c = goro::net::TcpStream::connect(l.local_addr()?).await?;
    /// let (s, _) = l.accept().await?;
    /// let (r, w) = s.into_split();
    /// let writer = goro::spawn(async move {
    ///     w.write_all(b"from the writer task").await
    ///     // `w` is dropped here: the peer reads end of file
    /// });
    /// let mut got = Vec::new();
    /// let mut buf = [0; 64];
    /// loop {
    ///     match c.read(&mut buf).await? {
    ///         0 => break,
    ///         n => got.extend_from_slice(&buf[..n]),
    ///     }
    /// }
    /// writer.await.unwrap()?;
    /// assert_eq!(got, b"from the writer task");
    /// # drop(r);
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn into_split(self) -> (OwnedReadHalf, OwnedWriteHalf) {
        let stream = Arc::new(self);
        (
            OwnedReadHalf {
                stream: stream.clone(),
            },
            OwnedWriteHalf {
                stream,
                shutdown_on_drop: true,
            },
        )
    }
}

/// The read side's methods, shared by both read halves.
macro_rules! read_methods {
    () => {
        /// [`TcpStream::read`] on this half's stream.
        pub async fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
            self.stream.read(buf).await
        }

        /// [`TcpStream::read_exact`] on this half's stream.
        pub async fn read_exact(&self, buf: &mut [u8]) -> io::Result<usize> {
            self.stream.read_exact(buf).await
        }

        /// [`TcpStream::poll_read`] on this half's stream.
        pub fn poll_read(&self, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
            self.stream.poll_read(cx, buf)
        }

        /// Sets the stream's read deadline ([`TcpStream::set_read_deadline`],
        /// Go's `SetReadDeadline`); the write half's is not touched.
        pub fn set_read_deadline(&self, deadline: Option<Instant>) {
            self.stream.set_read_deadline(deadline)
        }

        /// The remote address.
        pub fn peer_addr(&self) -> io::Result<SocketAddr> {
            self.stream.peer_addr()
        }

        /// The local address.
        pub fn local_addr(&self) -> io::Result<SocketAddr> {
            self.stream.local_addr()
        }
    };
}

/// The write side's methods, shared by both write halves.
macro_rules! write_methods {
    () => {
        /// [`TcpStream::write`] on this half's stream.
        pub async fn write(&self, buf: &[u8]) -> io::Result<usize> {
            self.stream.write(buf).await
        }

        /// [`TcpStream::write_all`] on this half's stream.
        pub async fn write_all(&self, buf: &[u8]) -> io::Result<()> {
            self.stream.write_all(buf).await
        }

        /// [`TcpStream::poll_write`] on this half's stream.
        pub fn poll_write(&self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
            self.stream.poll_write(cx, buf)
        }

        /// Sets the stream's write deadline
        /// ([`TcpStream::set_write_deadline`], Go's `SetWriteDeadline`);
        /// the read half's is not touched.
        pub fn set_write_deadline(&self, deadline: Option<Instant>) {
            self.stream.set_write_deadline(deadline)
        }

        /// Shuts the write side down: the peer reads end of file.
        pub fn shutdown(&self) -> io::Result<()> {
            self.stream.shutdown(Shutdown::Write)
        }

        /// The remote address.
        pub fn peer_addr(&self) -> io::Result<SocketAddr> {
            self.stream.peer_addr()
        }

        /// The local address.
        pub fn local_addr(&self) -> io::Result<SocketAddr> {
            self.stream.local_addr()
        }
    };
}

impl ReadHalf<'_> {
    read_methods!();
}

impl WriteHalf<'_> {
    write_methods!();
}

impl OwnedReadHalf {
    read_methods!();

    /// Puts the stream back together from its two owned halves; fails
    /// (giving them back) if they are from different streams.
    ///
    /// ```
    /// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
    /// let l = goro::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let c = goro::net::TcpStream::connect(l.local_addr()?).await?;
    /// let (r, w) = c.into_split();
    /// let c = r.reunite(w).expect("halves of one stream");
    /// c.write_all(b"whole again").await?;
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn reunite(self, mut other: OwnedWriteHalf) -> Result<TcpStream, ReuniteError> {
        if !Arc::ptr_eq(&self.stream, &other.stream) {
            return Err(ReuniteError(self, other));
        }
        other.shutdown_on_drop = false;
        drop(other);
        Ok(Arc::try_unwrap(self.stream)
            .unwrap_or_else(|_| unreachable!("only the two halves hold the stream")))
    }
}

impl OwnedWriteHalf {
    write_methods!();

    /// [`OwnedReadHalf::reunite`], from this side.
    pub fn reunite(self, other: OwnedReadHalf) -> Result<TcpStream, ReuniteError> {
        other.reunite(self)
    }
}

impl Drop for OwnedWriteHalf {
    fn drop(&mut self) {
        if self.shutdown_on_drop {
            // As tokio: the peer sees end of file once the writer is gone.
            // The socket may already be reset; nothing to report then.
            let _ = self.stream.shutdown(Shutdown::Write);
        }
    }
}

impl futures_io::AsyncRead for ReadHalf<'_> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        self.stream.poll_read(cx, buf)
    }
}

impl futures_io::AsyncRead for OwnedReadHalf {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        self.stream.poll_read(cx, buf)
    }
}

impl futures_io::AsyncWrite for WriteHalf<'_> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.stream.poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_close(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.stream.shutdown(Shutdown::Write))
    }
}

impl futures_io::AsyncWrite for OwnedWriteHalf {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.stream.poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_close(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.stream.shutdown(Shutdown::Write))
    }
}

/// The stream under each half, for the trait impls of `tokio_io.rs`.
#[cfg(feature = "tokio-io")]
macro_rules! stream_of {
    ($($ty:ty),*) => {$(
        impl $ty {
            pub(super) fn stream(&self) -> &TcpStream {
                &self.stream
            }
        }
    )*};
}
#[cfg(feature = "tokio-io")]
stream_of!(ReadHalf<'_>, WriteHalf<'_>, OwnedReadHalf, OwnedWriteHalf);
