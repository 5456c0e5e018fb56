//! tokio's `AsyncRead`/`AsyncWrite` on goro's TCP streams (feature
//! `tokio-io`).
//!
//! Much of the async ecosystem is written against tokio's io traits rather
//! than `futures-io`'s: tokio-rustls, h2, hyper-util's `TokioIo`. The traits
//! themselves need no tokio runtime (the `tokio` crate compiles its `io`
//! traits with every feature off), so goro implements them on
//! [`TcpStream`] (owned and borrowed) and on its split halves, each a thin
//! call into the stream's poll methods: a read that must wait parks the
//! task on goro's poller, exactly as [`TcpStream::read`] does. Nothing here
//! starts, enters or needs a tokio runtime, and the goro crate depends on
//! `tokio` only with this feature on.
//!
//! Reads go straight into the caller's uninitialized `ReadBuf` through
//! `recv(2)` (`TcpStream::poll_read_uninit`), as tokio's own `TcpStream`
//! does, so adapters above (hyper-util's `TokioIo` hands out uninitialized
//! buffers) pay no zeroing. Flushing does nothing (goro buffers nothing);
//! shutting down shuts the write side (the peer reads end of file).
//!
//! Deadlines ([`TcpStream::set_read_deadline`] and friends) apply through
//! these traits as through every other path: past one, the poll fails with
//! `TimedOut`.
//!
//! # Rejected
//!
//! - A wrapper type (`Compat<TcpStream>`, as tokio-util does for
//!   `futures-io`): every user would wrap and unwrap, and the stream's
//!   methods (deadlines, addresses) would sit one `get_ref` away; the
//!   traits on the stream itself cost nothing when unused.

use super::split::{OwnedReadHalf, OwnedWriteHalf, ReadHalf, WriteHalf};
use super::TcpStream;
use std::io;
use std::net::Shutdown;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Reads from `s` into the unfilled part of `buf`, without zeroing it.
fn poll_read_buf(
    s: &TcpStream,
    cx: &mut Context<'_>,
    buf: &mut ReadBuf<'_>,
) -> Poll<io::Result<()>> {
    // SAFETY: `unfilled_mut` asks that no initialized byte be
    // de-initialized: the slice is only written, by recv(2) with real bytes
    // (`poll_read_uninit`), and no byte of it is read here.
    let dst = unsafe { buf.unfilled_mut() };
    let n = std::task::ready!(s.poll_read_uninit(cx, dst))?;
    // SAFETY: recv(2) initialized the first `n` bytes of the unfilled part.
    unsafe { buf.assume_init(n) };
    buf.advance(n);
    Poll::Ready(Ok(()))
}

/// tokio's io traits for a type that reaches a `TcpStream` through
/// `$get(self)`.
macro_rules! tokio_io {
    (read $ty:ty, $s:ident => $get:expr) => {
        impl AsyncRead for $ty {
            fn poll_read(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                buf: &mut ReadBuf<'_>,
            ) -> Poll<io::Result<()>> {
                let $s = &*self;
                poll_read_buf($get, cx, buf)
            }
        }
    };
    (write $ty:ty, $s:ident => $get:expr) => {
        impl AsyncWrite for $ty {
            fn poll_write(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                buf: &[u8],
            ) -> Poll<io::Result<usize>> {
                let $s = &*self;
                TcpStream::poll_write($get, cx, buf)
            }

            fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                Poll::Ready(Ok(())) // nothing is buffered here
            }

            fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                let $s = &*self;
                Poll::Ready(TcpStream::shutdown($get, Shutdown::Write))
            }
        }
    };
}

tokio_io!(read TcpStream, s => s);
tokio_io!(write TcpStream, s => s);
tokio_io!(read &TcpStream, s => s);
tokio_io!(write &TcpStream, s => s);
tokio_io!(read ReadHalf<'_>, s => s.stream());
tokio_io!(read OwnedReadHalf, s => s.stream());
tokio_io!(write WriteHalf<'_>, s => s.stream());
tokio_io!(write OwnedWriteHalf, s => s.stream());
