//! The simulated side of a [`crate::net::TcpListener`]: an address in the
//! network's table and a backlog of connections.
//!
//! A connect that reaches the listener's address (`mod.rs`,
//! [`Network::connect`]) makes both ends of the connection at once and
//! puts the server's end here; `accept` takes the oldest. The backlog has
//! no limit (a real one drops SYNs past `somaxconn`; a test that needs
//! that would say so). Dropping the listener frees its address and resets
//! every connection still queued, as closing a listening socket does on
//! Linux: their clients' reads and writes fail with `ConnectionReset`.

use super::side::Side;
use super::stream::SimStream;
use super::Network;
use crate::loom::Unpoison;
use crate::sched::task::meta::Reason;
use crate::sched::timer::NEVER;
use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

/// A simulated listening socket.
pub(crate) struct SimListener {
    net: Arc<Network>,
    shared: Arc<Backlog>,
}

/// What the network's table holds of a listener: where connects go.
pub(crate) struct Backlog {
    addr: SocketAddr,
    st: Mutex<BacklogState>,
}

#[derive(Default)]
struct BacklogState {
    queue: VecDeque<(SimStream, SocketAddr)>,
    accept: Side,
    /// The listener is gone: a connect arriving now is refused.
    closed: bool,
}

impl Backlog {
    pub(crate) fn new(addr: SocketAddr) -> Backlog {
        Backlog {
            addr,
            st: Mutex::new(BacklogState::default()),
        }
    }

    /// Queues the server's end of a new connection from `peer`; gives it
    /// back if the listener has closed meanwhile.
    pub(crate) fn push(&self, s: SimStream, peer: SocketAddr) -> Result<(), SimStream> {
        let mut st = self.st.lock().unpoison();
        if st.closed {
            return Err(s);
        }
        st.queue.push_back((s, peer));
        st.accept.wake();
        Ok(())
    }
}

impl SimListener {
    pub(crate) fn new(net: Arc<Network>, shared: Arc<Backlog>) -> SimListener {
        SimListener { net, shared }
    }

    pub(crate) fn poll_accept(
        &self,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<(SimStream, SocketAddr)>> {
        if crate::sched::task::coop::poll_proceed(cx).is_pending() {
            return Poll::Pending;
        }
        let mut st = self.shared.st.lock().unpoison();
        loop {
            if st.accept.expired() {
                st.accept.done();
                return Poll::Ready(Err(crate::net::scheduled_io::deadline_exceeded()));
            }
            if let Some(conn) = st.queue.pop_front() {
                st.accept.done();
                return Poll::Ready(Ok(conn));
            }
            if st.accept.park(cx, NEVER, Reason::NetRead) {
                return Poll::Pending;
            }
        }
    }

    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.shared.addr
    }

    pub(crate) fn set_deadline(&self, d: Option<Instant>) {
        self.shared.st.lock().unpoison().accept.set_deadline(d);
    }
}

impl Drop for SimListener {
    fn drop(&mut self) {
        self.net.unbind_tcp(self.shared.addr);
        let queued = {
            let mut st = self.shared.st.lock().unpoison();
            st.closed = true;
            st.accept.done();
            std::mem::take(&mut st.queue)
        };
        for (s, _) in queued {
            s.reset();
        }
    }
}
