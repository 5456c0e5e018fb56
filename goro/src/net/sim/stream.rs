//! The simulated side of a [`crate::net::TcpStream`]: two pipes, one per
//! direction, and the connection's addresses.
//!
//! Each end of a connection owns the pipe it writes (`tx`) and the pipe
//! it reads (`rx`); its peer holds the same two, the other way round.
//! Dropping an end closes its writing (the peer reads end of file after
//! the bytes already written) and its reading (the peer's writes fail),
//! as closing a socket does. `TCP_NODELAY` is stored and returned: the
//! simulation has no Nagle delay to switch off.

use super::link::Link;
use super::pipe::Pipe;
use std::io;
use std::net::{Shutdown, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

/// One end of a simulated TCP connection.
pub(crate) struct SimStream {
    local: SocketAddr,
    peer: SocketAddr,
    /// What the peer writes, this end reads.
    rx: Arc<Pipe>,
    /// What this end writes, the peer reads.
    tx: Arc<Pipe>,
    nodelay: AtomicBool,
}

impl SimStream {
    /// The two ends of a new connection from `client` to `server` over
    /// `link`: (the client's end, the server's end).
    pub(crate) fn pair(
        client: SocketAddr,
        server: SocketAddr,
        link: Arc<Link>,
    ) -> (SimStream, SimStream) {
        let up = Arc::new(Pipe::new(link.clone()));
        let down = Arc::new(Pipe::new(link));
        let end = |local, peer, rx, tx| SimStream {
            local,
            peer,
            rx,
            tx,
            nodelay: AtomicBool::new(false),
        };
        (
            end(client, server, down.clone(), up.clone()),
            end(server, client, up, down),
        )
    }

    pub(crate) fn poll_read(
        &self,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let len = buf.len();
        self.rx.poll_read(cx, len, &mut |at, bytes| {
            buf[at..at + bytes.len()].copy_from_slice(bytes)
        })
    }

    /// A read into memory that need not be initialized; only the bytes
    /// returned are written.
    #[cfg(any(feature = "hyper", feature = "tokio-io"))]
    pub(crate) fn poll_read_uninit(
        &self,
        cx: &mut Context<'_>,
        buf: &mut [std::mem::MaybeUninit<u8>],
    ) -> Poll<io::Result<usize>> {
        let len = buf.len();
        self.rx.poll_read(cx, len, &mut |at, bytes| {
            for (d, s) in buf[at..at + bytes.len()].iter_mut().zip(bytes) {
                d.write(*s);
            }
        })
    }

    pub(crate) fn poll_write(&self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.tx.poll_write(cx, buf)
    }

    pub(crate) fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        if matches!(how, Shutdown::Read | Shutdown::Both) {
            self.rx.shut_read();
        }
        if matches!(how, Shutdown::Write | Shutdown::Both) {
            self.tx.close_write();
        }
        Ok(())
    }

    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.local
    }

    pub(crate) fn peer_addr(&self) -> SocketAddr {
        self.peer
    }

    pub(crate) fn set_nodelay(&self, on: bool) {
        // Relaxed: a flag read back by its setter's side, guarding nothing.
        self.nodelay.store(on, Ordering::Relaxed);
    }

    pub(crate) fn nodelay(&self) -> bool {
        self.nodelay.load(Ordering::Relaxed)
    }

    pub(crate) fn set_read_deadline(&self, d: Option<Instant>) {
        self.rx.set_read_deadline(d);
    }

    pub(crate) fn set_write_deadline(&self, d: Option<Instant>) {
        self.tx.set_write_deadline(d);
    }

    /// Resets the connection (a listener dropped with it in its backlog):
    /// the peer's reads and writes fail with `ConnectionReset`.
    pub(crate) fn reset(self) {
        self.rx.reset();
        self.tx.reset();
    }
}

impl Drop for SimStream {
    fn drop(&mut self) {
        self.tx.close_write();
        self.rx.close_read();
    }
}
