//! The simulated network: what `goro::net`'s sockets are inside a
//! `goro::sim` bubble.
//!
//! # Why a network of its own
//!
//! A bubble runs its tasks on one thread in virtual time, and moves the
//! clock only when every task is durably blocked: waiting on something
//! only the bubble's own code can end. A real socket breaks both: the
//! kernel is a second party whose timing no seed decides, and a task
//! parked on epoll waits for something no bubble task will do (nobody
//! even polls the epoll in a bubble). Go's `testing/synctest` has the same
//! problem and leaves it to the test (`net.Pipe`, "we cannot use a
//! loopback network connection"). goro owns its socket types, so inside a
//! bubble they switch to an in-memory network instead, with the same
//! public API: hyper, goro-http and axum run on it unchanged.
//!
//! # The design
//!
//! One [`Network`] per bubble, made on the first socket and dropped with
//! the bubble (the scheduler keeps it in the bubble's `NetSlot`, and
//! knows nothing else of it). It holds the address table (TCP listeners,
//! UDP sockets), hands out ephemeral ports from 49152 (Linux's and IANA's
//! range), and holds one [`link::Link`] per pair of IPs with its rules
//! (latency, loss, partition, hold; `goro::sim::net` sets them).
//!
//! - A TCP connection is two pipes (`pipe.rs`), one per direction, of
//!   bounded capacity; a write is a segment with a delivery time, read
//!   once due. Connecting waits one latency (and for a closed link to
//!   open), then queues the server's end on the listener's backlog
//!   (`listener.rs`) and returns the client's (`stream.rs`): there is no
//!   handshake to lose.
//! - A UDP socket is a queue of datagrams with delivery times (`udp.rs`).
//! - Every wait (read, write to a full pipe, accept, receive) parks the
//!   task with a waker that only another bubble task (a write, a close, a
//!   rule change) or a goro timer wakes (`side.rs`): durably blocked, so
//!   the bubble's clock can jump to the next delivery, and a task that
//!   reads a socket nobody will write is a deadlock the bubble reports as
//!   "net read", as it would for a channel.
//! - Every random choice (a lossy link's drops) comes from the bubble's
//!   seed ([`draw`]); the tables are ordered maps: one seed, one run.
//!
//! The public types dispatch once per call: `TcpStream`, `TcpListener`
//! and `UdpSocket` each hold an enum of the real socket and the simulated
//! one, chosen at construction (bind, connect, accept) by whether the
//! calling thread drives a bubble ([`Network::current`]). The real path
//! pays that one branch at construction and one `match` per operation.
//!
//! Addresses: any IP may be bound (a test names its hosts by binding
//! them); a client's end is at the loopback address of the target's
//! family with an ephemeral port, so link rules between "the clients" and
//! a server name `127.0.0.1` and the server's IP.
//! A client's port is not reserved for the connection's life: the
//! ephemeral counter goes round robin (skipping bound ports), so two live
//! connections share one only after 16384 more connects.
//!
//! # Rejected
//!
//! - A task per link or per connection that delivers segments when due:
//!   delivery would be runnable work the bubble schedules, steps in every
//!   schedule hash, and a task that must end for the bubble to end; a
//!   reader that sleeps until the first due segment does the same.
//! - Running the real poller in a bubble (loopback sockets): the kernel's
//!   timing is outside the seed, and a task waiting on epoll is not
//!   durably blocked, so virtual time could not move past it.
//! - A `HashMap` for the tables: its iteration order would be a choice
//!   outside the seed.

pub(crate) mod link;
pub(crate) mod listener;
pub(crate) mod pipe;
mod side;
pub(crate) mod stream;
pub(crate) mod udp;

use crate::loom::Unpoison;
use crate::sched::context::with_current_sched;
use crate::sched::sim::NetSlot;
use link::Link;
use listener::{Backlog, SimListener};
use std::collections::BTreeMap;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use stream::SimStream;
use udp::{Inbox, SimUdp};

/// The first ephemeral port.
const EPHEMERAL_FIRST: u16 = 49152;

/// A bubble's simulated network.
pub(crate) struct Network {
    st: Mutex<State>,
}

struct State {
    listeners: BTreeMap<SocketAddr, Arc<Backlog>>,
    udp: BTreeMap<SocketAddr, Arc<Inbox>>,
    /// Keyed by the pair in order (smaller IP first).
    links: BTreeMap<(IpAddr, IpAddr), Arc<Link>>,
    next_port: u16,
}

impl Network {
    fn new() -> Network {
        Network {
            st: Mutex::new(State {
                listeners: BTreeMap::new(),
                udp: BTreeMap::new(),
                links: BTreeMap::new(),
                next_port: EPHEMERAL_FIRST,
            }),
        }
    }

    /// The network of the bubble the calling thread drives, made on first
    /// use; `None` outside a bubble (the real network).
    pub(crate) fn current() -> Option<Arc<Network>> {
        let slot = with_current_sched(|s| {
            s.sim()
                .map(|b| b.net(|| Arc::new(Network::new()) as NetSlot))
        })
        .flatten()?;
        Some(
            slot.downcast::<Network>()
                .unwrap_or_else(|_| unreachable!("a bubble's net slot holds its Network")),
        )
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.st.lock().unpoison()
    }

    /// The rules between `a` and `b` (made open, with no latency, on first
    /// use).
    pub(crate) fn link(&self, a: IpAddr, b: IpAddr) -> Arc<Link> {
        let key = if a <= b { (a, b) } else { (b, a) };
        self.lock()
            .links
            .entry(key)
            .or_insert_with(|| Arc::new(Link::new()))
            .clone()
    }

    /// Binds a TCP listener to `addr` (port 0: an ephemeral port).
    pub(crate) fn bind_tcp(self: &Arc<Self>, addr: SocketAddr) -> io::Result<SimListener> {
        let mut st = self.lock();
        let addr = claim(&mut st, addr, |st, a| in_use(&st.listeners, a))?;
        let backlog = Arc::new(Backlog::new(addr));
        st.listeners.insert(addr, backlog.clone());
        drop(st);
        Ok(SimListener::new(self.clone(), backlog))
    }

    pub(crate) fn unbind_tcp(&self, addr: SocketAddr) {
        self.lock().listeners.remove(&addr);
    }

    /// Binds a UDP socket to `addr` (port 0: an ephemeral port).
    pub(crate) fn bind_udp(self: &Arc<Self>, addr: SocketAddr) -> io::Result<SimUdp> {
        let mut st = self.lock();
        let addr = claim(&mut st, addr, |st, a| in_use(&st.udp, a))?;
        let inbox = Arc::new(Inbox::new(addr));
        st.udp.insert(addr, inbox.clone());
        drop(st);
        Ok(SimUdp::new(self.clone(), inbox))
    }

    pub(crate) fn unbind_udp(&self, addr: SocketAddr) {
        self.lock().udp.remove(&addr);
    }

    /// The UDP socket a datagram to `to` reaches, if any.
    pub(crate) fn find_udp(&self, to: SocketAddr) -> Option<Arc<Inbox>> {
        let st = self.lock();
        find(&st.udp, to)
    }

    /// Connects to `to`: one latency for the SYN (and a wait while the
    /// link is partitioned or held), then the server's end goes on the
    /// listener's backlog and the client's end is returned.
    /// `ConnectionRefused` if nothing listens at `to` when the SYN
    /// arrives.
    pub(crate) async fn connect(self: &Arc<Self>, to: SocketAddr) -> io::Result<SimStream> {
        let from_ip = loopback(to);
        let link = self.link(from_ip, to.ip());
        let latency = link.latency();
        if latency > 0 {
            crate::time::sleep(std::time::Duration::from_nanos(latency)).await;
        }
        link::opened(&link).await;
        let (backlog, port) = {
            let mut st = self.lock();
            let Some(backlog) = find(&st.listeners, to) else {
                return Err(io::Error::new(
                    io::ErrorKind::ConnectionRefused,
                    "connection refused (nothing listens there in the simulated network)",
                ));
            };
            let port = ephemeral(&mut st, |st, p| {
                port_taken(&st.listeners, from_ip, p) || port_taken(&st.udp, from_ip, p)
            })?;
            (backlog, port)
        };
        let client = SocketAddr::new(from_ip, port);
        let (mine, theirs) = SimStream::pair(client, to, link);
        match backlog.push(theirs, client) {
            Ok(()) => Ok(mine),
            Err(theirs) => {
                drop(theirs);
                Err(io::ErrorKind::ConnectionRefused.into())
            }
        }
    }
}

/// The loopback address of `addr`'s family.
pub(crate) fn loopback(addr: SocketAddr) -> IpAddr {
    match addr {
        SocketAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
        SocketAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
    }
}

/// The socket at `to`, or a wildcard one of its family on its port.
fn find<T>(table: &BTreeMap<SocketAddr, Arc<T>>, to: SocketAddr) -> Option<Arc<T>> {
    let wildcard = SocketAddr::new(
        match to {
            SocketAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            SocketAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        },
        to.port(),
    );
    table.get(&to).or_else(|| table.get(&wildcard)).cloned()
}

/// Whether binding `a` clashes with a socket of `table`: the same
/// address, or the same port with a wildcard on either side (Linux's rule
/// for listeners, `SO_REUSEADDR` or not).
fn in_use<T>(table: &BTreeMap<SocketAddr, Arc<T>>, a: SocketAddr) -> bool {
    table.keys().any(|b| {
        b.port() == a.port()
            && b.is_ipv4() == a.is_ipv4()
            && (b.ip() == a.ip() || b.ip().is_unspecified() || a.ip().is_unspecified())
    })
}

fn port_taken<T>(table: &BTreeMap<SocketAddr, Arc<T>>, ip: IpAddr, port: u16) -> bool {
    in_use(table, SocketAddr::new(ip, port))
}

/// `addr` if free, with an ephemeral port for port 0; `AddrInUse` if
/// `taken` says so.
fn claim(
    st: &mut State,
    addr: SocketAddr,
    taken: impl Fn(&State, SocketAddr) -> bool,
) -> io::Result<SocketAddr> {
    if addr.port() != 0 {
        if taken(st, addr) {
            return Err(io::Error::new(
                io::ErrorKind::AddrInUse,
                format!("address {addr} already in use (in the simulated network)"),
            ));
        }
        return Ok(addr);
    }
    let port = ephemeral(st, |st, p| taken(st, SocketAddr::new(addr.ip(), p)))?;
    Ok(SocketAddr::new(addr.ip(), port))
}

/// The next ephemeral port (49152 to 65535, round robin) that `taken`
/// does not refuse.
fn ephemeral(st: &mut State, taken: impl Fn(&State, u16) -> bool) -> io::Result<u16> {
    let span = u16::MAX - EPHEMERAL_FIRST + 1;
    for _ in 0..span {
        let p = st.next_port;
        st.next_port = if p == u16::MAX {
            EPHEMERAL_FIRST
        } else {
            p + 1
        };
        if !taken(st, p) {
            return Ok(p);
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AddrNotAvailable,
        "no ephemeral port left in the simulated network",
    ))
}

/// Draws `true` with probability `p` from the bubble's seed (no draw for
/// 0 or 1, so a loss-free link leaves the seed's stream alone).
pub(crate) fn draw(p: f64) -> bool {
    if p <= 0.0 {
        return false;
    }
    if p >= 1.0 {
        return true;
    }
    let r = with_current_sched(|s| s.sim().map(|b| b.random_u64()))
        .flatten()
        .unwrap_or(u64::MAX);
    // 53 bits: every value is exact as an f64, and the draw is uniform.
    ((r >> 11) as f64 / (1u64 << 53) as f64) < p
}
