//! The bubble's simulated network: the rules of its links.
//!
//! Inside a bubble, `goro::net`'s sockets are sockets of an in-memory
//! network that runs in the bubble's virtual time. Each unordered pair of
//! IP addresses is a link, open and instant until a rule says otherwise;
//! these functions set the rules of a link of the current bubble's
//! network. A rule applies to traffic already on the wire too (a hold
//! keeps it, a release lets it through).
//!
//! | rule | TCP | UDP |
//! |---|---|---|
//! | [`set_latency`] | each write is readable that much later; a connect takes that long | each datagram arrives that much later |
//! | [`set_loss`] | each write is late by 200 ms (a retransmission) with that probability; no byte is lost | each datagram is dropped with that probability |
//! | [`partition`] / [`heal`] | traffic and new connects wait until healed | datagrams are dropped |
//! | [`hold`] / [`release`] | traffic and new connects wait until released, then go on in order | datagrams are kept until released, then delivered in order |
//!
//! Every random draw (which datagram a lossy link drops) comes from the
//! bubble's seed: the same seed drops the same datagrams.
//!
//! Addresses: a test names its hosts by binding their IPs (any IP may be
//! bound in a bubble); a TCP client's end is at `127.0.0.1` (`::1` for an
//! IPv6 target) with an ephemeral port, so the rules between clients and
//! a server at `10.0.0.1` are those of the pair (`127.0.0.1`, `10.0.0.1`).
//!
//! ```
//! use std::net::{IpAddr, Ipv4Addr};
//! use std::time::Duration;
//! let r = goro::sim::Builder::new().seed(1).run(async {
//!     let server = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
//!     let client = IpAddr::V4(Ipv4Addr::LOCALHOST);
//!     goro::sim::net::set_latency(client, server, Duration::from_millis(50));
//!     let l = goro::net::TcpListener::bind((server, 80)).await.unwrap();
//!     goro::spawn(async move {
//!         let (s, _) = l.accept().await.unwrap();
//!         let mut buf = [0; 4];
//!         s.read_exact(&mut buf).await.unwrap();
//!         s.write_all(&buf).await.unwrap();
//!     });
//!     let c = goro::net::TcpStream::connect((server, 80)).await.unwrap();
//!     let t0 = goro::time::now();
//!     c.write_all(b"ping").await.unwrap();
//!     let mut buf = [0; 4];
//!     c.read_exact(&mut buf).await.unwrap();
//!     goro::time::now() - t0 // one round trip
//! });
//! assert_eq!(r.unwrap(), Duration::from_millis(100));
//! ```
//!
//! Each function panics outside a bubble, naming itself.

use crate::net::sim::link::Link;
use crate::net::sim::Network;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

/// The link between `a` and `b` in the current bubble's network.
fn link(what: &str, a: IpAddr, b: IpAddr) -> Arc<Link> {
    let net = Network::current().unwrap_or_else(|| {
        panic!(
            "goro::sim::net::{what} called outside a sim bubble: call it from a task inside \
             goro::sim::Builder::run"
        )
    });
    net.link(a, b)
}

/// Sets the one-way latency between `a` and `b` (both ways; default
/// zero).
///
/// ```
/// use std::time::Duration;
/// goro::sim::Builder::new().seed(1).run(async {
///     let (a, b) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
///     goro::sim::net::set_latency(a, b, Duration::from_millis(20));
/// }).unwrap();
/// ```
///
/// # Panics
/// Outside a bubble; for a latency of more than a year (accepted: up to
/// 365 days).
pub fn set_latency(a: IpAddr, b: IpAddr, d: Duration) {
    const YEAR: Duration = Duration::from_secs(365 * 24 * 3600);
    assert!(
        d <= YEAR,
        "goro::sim::net::set_latency({a}, {b}, {d:?}): accepted a latency up to 365 days"
    );
    link("set_latency", a, b).set_latency(d);
}

/// Sets the loss probability between `a` and `b` (both ways; default 0):
/// a UDP datagram is dropped with probability `p`, a TCP write is late by
/// a retransmission timeout (200 ms) with probability `p`.
///
/// ```
/// goro::sim::Builder::new().seed(1).run(async {
///     let (a, b) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
///     goro::sim::net::set_loss(a, b, 0.25);
/// }).unwrap();
/// ```
///
/// # Panics
/// Outside a bubble; for `p` not in `0.0..=1.0` (or NaN).
pub fn set_loss(a: IpAddr, b: IpAddr, p: f64) {
    assert!(
        (0.0..=1.0).contains(&p),
        "goro::sim::net::set_loss({a}, {b}, {p}): p is a probability: accepted 0.0 to 1.0"
    );
    link("set_loss", a, b).set_loss(p);
}

/// Cuts `a` off from `b` (both ways) until [`heal`]: UDP datagrams are
/// dropped, TCP bytes and new connects wait.
///
/// ```
/// goro::sim::Builder::new().seed(1).run(async {
///     let (a, b) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
///     goro::sim::net::partition(a, b);
///     goro::sim::net::heal(a, b);
/// }).unwrap();
/// ```
///
/// # Panics
/// Outside a bubble.
pub fn partition(a: IpAddr, b: IpAddr) {
    link("partition", a, b).set_partitioned(true);
}

/// Ends a [`partition`] between `a` and `b`: waiting TCP traffic and
/// connects go on.
///
/// ```
/// goro::sim::Builder::new().seed(1).run(async {
///     let ip = "10.0.0.1".parse().unwrap();
///     goro::sim::net::heal(ip, ip); // not partitioned: nothing to do
/// }).unwrap();
/// ```
///
/// # Panics
/// Outside a bubble.
pub fn heal(a: IpAddr, b: IpAddr) {
    link("heal", a, b).set_partitioned(false);
}

/// Keeps all traffic between `a` and `b` (both ways, TCP and UDP, and new
/// connects) on the wire until [`release`].
///
/// ```
/// goro::sim::Builder::new().seed(1).run(async {
///     let (a, b) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
///     goro::sim::net::hold(a, b);
///     goro::sim::net::release(a, b);
/// }).unwrap();
/// ```
///
/// # Panics
/// Outside a bubble.
pub fn hold(a: IpAddr, b: IpAddr) {
    link("hold", a, b).set_held(true);
}

/// Ends a [`hold`] between `a` and `b`: what it kept is delivered, in
/// order.
///
/// ```
/// goro::sim::Builder::new().seed(1).run(async {
///     let ip = "10.0.0.1".parse().unwrap();
///     goro::sim::net::release(ip, ip); // not held: nothing to do
/// }).unwrap();
/// ```
///
/// # Panics
/// Outside a bubble.
pub fn release(a: IpAddr, b: IpAddr) {
    link("release", a, b).set_held(false);
}
