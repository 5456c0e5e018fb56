//! The simulated side of a [`crate::net::UdpSocket`]: an address in the
//! network's table and a queue of datagrams, each with its delivery time.
//!
//! A send looks the target up (the exact address, else a wildcard socket
//! on its port) and, unless the link drops it (a partition, or the loss
//! drawn from the bubble's seed), queues the datagram at the target with
//! its delivery time; a target nobody has bound swallows it silently, as
//! real UDP does. A send never waits. A receive takes the first datagram
//! due, in delivery order (ties in sending order), over a link that is not
//! held; datagrams due over a partitioned link are dropped when they come
//! up. Like a pipe's reader (`pipe.rs`), a receiver with nothing due parks
//! with its timer set to the next delivery.
//!
//! A socket bound to a wildcard address sends from the loopback address of
//! its family; the queue holds at most [`CAPACITY`] bytes and drops what
//! arrives beyond (a full receive buffer). A connected socket sends to its
//! peer and receives only from it.

use super::link::Link;
use super::side::Side;
use super::Network;
use crate::loom::Unpoison;
use crate::sched::task::meta::Reason;
use crate::sched::timer::clock;
use crate::sched::timer::NEVER;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

/// The most bytes of datagrams a socket holds before it drops new ones.
pub(crate) const CAPACITY: usize = 256 << 10;

/// A simulated UDP socket.
pub(crate) struct SimUdp {
    net: Arc<Network>,
    shared: Arc<Inbox>,
}

/// What the network's table holds of a UDP socket: where datagrams go.
pub(crate) struct Inbox {
    addr: SocketAddr,
    st: Mutex<InboxState>,
}

struct Datagram {
    due: u64,
    seq: u64,
    from: SocketAddr,
    data: Vec<u8>,
    link: Arc<Link>,
}

#[derive(Default)]
struct InboxState {
    /// In delivery order: by `due`, then `seq`.
    queue: Vec<Datagram>,
    bytes: usize,
    seq: u64,
    peer: Option<SocketAddr>,
    recv: Side,
    send: Side,
}

impl Inbox {
    pub(crate) fn new(addr: SocketAddr) -> Inbox {
        Inbox {
            addr,
            st: Mutex::new(InboxState::default()),
        }
    }

    /// Queues a datagram from `from`, due at `due`, over `link`.
    fn deliver(&self, from: SocketAddr, data: &[u8], due: u64, link: Arc<Link>) {
        let mut st = self.st.lock().unpoison();
        if st.bytes + data.len() > CAPACITY {
            return; // the receive buffer is full: dropped
        }
        st.seq += 1;
        let seq = st.seq;
        let at = st.queue.partition_point(|d| (d.due, d.seq) <= (due, seq));
        st.queue.insert(
            at,
            Datagram {
                due,
                seq,
                from,
                data: data.to_vec(),
                link,
            },
        );
        st.bytes += data.len();
        st.recv.wake();
    }
}

impl SimUdp {
    pub(crate) fn new(net: Arc<Network>, shared: Arc<Inbox>) -> SimUdp {
        SimUdp { net, shared }
    }

    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.shared.addr
    }

    pub(crate) fn connect(&self, peer: SocketAddr) {
        self.shared.st.lock().unpoison().peer = Some(peer);
    }

    pub(crate) fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.shared.st.lock().unpoison().peer.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotConnected,
                "the UDP socket is not connected",
            )
        })
    }

    /// One poll of a send of `buf` to `to` (the connected peer if `None`).
    pub(crate) fn poll_send_to(
        &self,
        cx: &mut Context<'_>,
        buf: &[u8],
        to: Option<SocketAddr>,
    ) -> Poll<io::Result<usize>> {
        if crate::sched::task::coop::poll_proceed(cx).is_pending() {
            return Poll::Pending;
        }
        let to = {
            let st = self.shared.st.lock().unpoison();
            if st.send.expired() {
                return Poll::Ready(Err(crate::net::scheduled_io::deadline_exceeded()));
            }
            match to.or(st.peer) {
                Some(to) => to,
                None => return Poll::Ready(Err(io::ErrorKind::NotConnected.into())),
            }
        };
        let from = source(self.shared.addr);
        let Some(target) = self.net.find_udp(to) else {
            return Poll::Ready(Ok(buf.len())); // nobody there: lost, as UDP
        };
        let link = self.net.link(from.ip(), to.ip());
        if link.partitioned() || super::draw(link.loss()) {
            return Poll::Ready(Ok(buf.len()));
        }
        let due = clock::now().saturating_add(link.latency());
        target.deliver(from, buf, due, link);
        Poll::Ready(Ok(buf.len()))
    }

    /// One poll of a receive into `buf` (truncating a longer datagram).
    pub(crate) fn poll_recv_from(
        &self,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<(usize, SocketAddr)>> {
        if crate::sched::task::coop::poll_proceed(cx).is_pending() {
            return Poll::Pending;
        }
        let mut guard = self.shared.st.lock().unpoison();
        let st = &mut *guard;
        loop {
            if st.recv.expired() {
                st.recv.done();
                return Poll::Ready(Err(crate::net::scheduled_io::deadline_exceeded()));
            }
            let now = clock::now();
            let mut next = NEVER;
            let mut i = 0;
            while i < st.queue.len() {
                let d = &st.queue[i];
                if d.due > now {
                    next = d.due;
                    break; // the queue is in delivery order
                }
                if !d.link.partitioned() && d.link.held() && d.link.wait_open(cx.waker()) {
                    i += 1; // kept until released; the release wakes this task
                    continue;
                }
                let d = st.queue.remove(i);
                st.bytes -= d.data.len();
                if d.link.partitioned() || st.peer.is_some_and(|p| p != d.from) {
                    continue; // dropped on the way, or not from the peer
                }
                let n = d.data.len().min(buf.len());
                buf[..n].copy_from_slice(&d.data[..n]);
                st.recv.done();
                return Poll::Ready(Ok((n, d.from)));
            }
            if st.recv.park(cx, next, Reason::NetRead) {
                return Poll::Pending;
            }
        }
    }

    pub(crate) fn set_read_deadline(&self, d: Option<Instant>) {
        self.shared.st.lock().unpoison().recv.set_deadline(d);
    }

    pub(crate) fn set_write_deadline(&self, d: Option<Instant>) {
        self.shared.st.lock().unpoison().send.set_deadline(d);
    }
}

/// The address a socket bound to `local` sends from: a wildcard IP is
/// its family's loopback.
fn source(local: SocketAddr) -> SocketAddr {
    if local.ip().is_unspecified() {
        SocketAddr::new(super::loopback(local), local.port())
    } else {
        local
    }
}

impl Drop for SimUdp {
    fn drop(&mut self) {
        self.net.unbind_udp(self.shared.addr);
    }
}
