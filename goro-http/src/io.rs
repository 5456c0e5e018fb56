//! hyper's IO traits over a stream written against tokio's (the TLS stream
//! of tokio-rustls): hyper-util's `TokioIo`, which lives behind its `tokio`
//! feature and would compile tokio's runtime in with it.

use hyper::rt::{Read, ReadBufCursor, Write};
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite};

/// A tokio-io stream as hyper's IO.
#[derive(Debug)]
pub(crate) struct Compat<T>(pub(crate) T);

impl<T: AsyncRead + Unpin> Read for Compat<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        // SAFETY: `as_mut` asks that no initialized byte be de-initialized:
        // the slice goes to tokio's `ReadBuf`, which only ever initializes.
        let n = unsafe {
            let mut tbuf = tokio::io::ReadBuf::uninit(buf.as_mut());
            std::task::ready!(Pin::new(&mut self.0).poll_read(cx, &mut tbuf))?;
            tbuf.filled().len()
        };
        // SAFETY: the read filled (initialized) the first `n` bytes.
        unsafe { buf.advance(n) };
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncWrite + Unpin> Write for Compat<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write_vectored(cx, bufs)
    }
}

/// The most bytes [`Coalesce`] copies into one write.
const COALESCE_MAX: usize = 16 << 10;

/// Gathers a vectored write into one `write` of the stream below, which
/// has no vectored write of its own (goro's `GoroIo`): tokio-rustls hands
/// its TLS records over as a vectored write, and each record would
/// otherwise be a `send(2)` of its own, and a wakeup of the peer. The
/// slices that fit in 16 KiB are copied (into a buffer kept across writes)
/// and written at once; a first slice larger than that is written as it
/// is.
#[derive(Debug)]
pub(crate) struct Coalesce<T> {
    io: T,
    buf: Vec<u8>,
}

impl<T> Coalesce<T> {
    pub(crate) fn new(io: T) -> Coalesce<T> {
        Coalesce {
            io,
            buf: Vec::new(),
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Coalesce<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Coalesce<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let mut bufs = bufs.iter().filter(|b| !b.is_empty()).peekable();
        let Some(first) = bufs.next() else {
            return Poll::Ready(Ok(0));
        };
        if bufs.peek().is_none() || first.len() >= COALESCE_MAX {
            return Pin::new(&mut self.io).poll_write(cx, first);
        }
        let this = &mut *self;
        this.buf.clear();
        this.buf.extend_from_slice(first);
        for b in bufs {
            if this.buf.len() + b.len() > COALESCE_MAX {
                break;
            }
            this.buf.extend_from_slice(b);
        }
        Pin::new(&mut this.io).poll_write(cx, &this.buf)
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::task::Waker;

    /// Records each write; takes at most `max` bytes of one.
    struct Sink {
        writes: Vec<Vec<u8>>,
        max: usize,
    }

    impl AsyncWrite for Sink {
        fn poll_write(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            let n = buf.len().min(self.max);
            self.writes.push(buf[..n].to_vec());
            Poll::Ready(Ok(n))
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    fn write_vectored(c: &mut Coalesce<Sink>, bufs: &[&[u8]]) -> usize {
        let slices: Vec<_> = bufs.iter().map(|b| io::IoSlice::new(b)).collect();
        let mut cx = Context::from_waker(Waker::noop());
        match Pin::new(c).poll_write_vectored(&mut cx, &slices) {
            Poll::Ready(r) => r.unwrap(),
            Poll::Pending => unreachable!(),
        }
    }

    #[test]
    fn records_go_out_in_one_write() {
        let mut c = Coalesce::new(Sink {
            writes: Vec::new(),
            max: usize::MAX,
        });
        assert!(c.is_write_vectored());
        assert_eq!(write_vectored(&mut c, &[b"abc", b"", b"de", b"f"]), 6);
        assert_eq!(c.io.writes, [b"abcdef".to_vec()]);
        // Past 16 KiB, the rest waits for the next write.
        let big = vec![b'x'; COALESCE_MAX - 2];
        assert_eq!(write_vectored(&mut c, &[b"ab", &big, b"cd"]), COALESCE_MAX);
        // A first slice of 16 KiB or more goes as it is.
        let huge = vec![b'y'; COALESCE_MAX + 1];
        assert_eq!(write_vectored(&mut c, &[&huge, b"z"]), COALESCE_MAX + 1);
        // A short write is reported as such.
        c.io.max = 4;
        assert_eq!(write_vectored(&mut c, &[b"abc", b"def"]), 4);
        assert_eq!(c.io.writes.last().unwrap(), b"abcd");
        assert_eq!(write_vectored(&mut c, &[]), 0);
    }
}
