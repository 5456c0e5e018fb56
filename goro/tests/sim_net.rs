//! `goro::net` inside a `goro::sim` bubble: the simulated network.
//!
//! Every run is a bubble on the test's thread, so a wait that never ends
//! is not a hang: the bubble reports it as a deadlock (or runs out of
//! steps), and each `run` is unwrapped with a message saying what was
//! expected. Times are virtual and exact.

use goro::net::{TcpListener, TcpStream, UdpSocket};
use goro::sim::{Builder, Error};
use std::io::ErrorKind;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

const CLIENT: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
const SERVER: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Accepts `n` connections on `l`, echoing each one's bytes back until
/// its client closes it.
fn spawn_echo_server(l: TcpListener, n: usize) {
    goro::spawn(async move {
        for _ in 0..n {
            let (s, _) = l.accept().await.unwrap();
            goro::spawn(async move {
                let mut buf = [0; 1024];
                loop {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => {
                            if s.write_all(&buf[..n]).await.is_err() {
                                return;
                            }
                        }
                    }
                }
            });
        }
    });
}

#[test]
fn tcp_echo_round_trips_in_a_bubble() {
    let got = Builder::new()
        .seed(1)
        .procs(2)
        .run(async {
            let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = l.local_addr().unwrap();
            assert!(addr.port() >= 49152, "an ephemeral port, got {addr}");
            let server = goro::spawn(async move {
                let (s, peer) = l.accept().await.unwrap();
                let mut buf = [0; 5];
                s.read_exact(&mut buf).await.unwrap();
                s.write_all(&buf).await.unwrap();
                peer
            });
            let c = TcpStream::connect(addr).await.unwrap();
            assert_eq!(c.peer_addr().unwrap(), addr);
            c.write_all(b"hello").await.unwrap();
            let mut buf = [0; 5];
            c.read_exact(&mut buf).await.unwrap();
            assert_eq!(server.await.unwrap(), c.local_addr().unwrap());
            buf
        })
        .expect("the echo exchange ends without deadlock");
    assert_eq!(&got, b"hello");
}

#[test]
fn connect_to_an_address_nobody_listens_on_is_refused() {
    let e = Builder::new()
        .seed(2)
        .run(async { TcpStream::connect("10.9.9.9:80").await.unwrap_err() })
        .expect("a refused connect returns");
    assert_eq!(e.kind(), ErrorKind::ConnectionRefused, "{e}");
}

#[test]
fn binding_an_address_in_use_fails_and_frees_on_drop() {
    Builder::new()
        .seed(3)
        .run(async {
            let l = TcpListener::bind("10.0.0.1:80").await.unwrap();
            let e = TcpListener::bind("10.0.0.1:80").await.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::AddrInUse, "{e}");
            let e = TcpListener::bind("0.0.0.0:80").await.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::AddrInUse, "a wildcard clashes: {e}");
            let u = UdpSocket::bind("10.0.0.1:80").await.unwrap(); // UDP's own ports
            let e = UdpSocket::bind("10.0.0.1:80").await.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::AddrInUse, "{e}");
            drop((l, u));
            TcpListener::bind("10.0.0.1:80")
                .await
                .expect("free again after drop");
        })
        .expect("binds return");
}

#[test]
fn the_peer_reads_eof_after_the_bytes_written_before_drop() {
    let got = Builder::new()
        .seed(4)
        .run(async {
            let l = TcpListener::bind("127.0.0.1:7000").await.unwrap();
            let c = TcpStream::connect("127.0.0.1:7000").await.unwrap();
            let (s, _) = l.accept().await.unwrap();
            c.write_all(b"last words").await.unwrap();
            drop(c);
            let mut got = Vec::new();
            let mut buf = [0; 4];
            loop {
                match s.read(&mut buf).await.unwrap() {
                    0 => return got,
                    n => got.extend_from_slice(&buf[..n]),
                }
            }
        })
        .expect("the reader sees end of file");
    assert_eq!(got, b"last words");
}

#[test]
fn writing_to_a_stream_whose_peer_is_gone_is_a_broken_pipe() {
    let e = Builder::new()
        .seed(5)
        .run(async {
            let l = TcpListener::bind("127.0.0.1:7000").await.unwrap();
            let c = TcpStream::connect("127.0.0.1:7000").await.unwrap();
            drop(l.accept().await.unwrap());
            c.write_all(b"anyone?").await.unwrap_err()
        })
        .expect("the write fails");
    assert_eq!(e.kind(), ErrorKind::BrokenPipe, "{e}");
}

#[test]
fn a_dropped_listener_resets_the_connections_it_had_not_accepted() {
    let e = Builder::new()
        .seed(6)
        .run(async {
            let l = TcpListener::bind("127.0.0.1:7000").await.unwrap();
            let c = TcpStream::connect("127.0.0.1:7000").await.unwrap();
            drop(l);
            c.read(&mut [0; 4]).await.unwrap_err()
        })
        .expect("the read fails");
    assert_eq!(e.kind(), ErrorKind::ConnectionReset, "{e}");
}

#[test]
fn a_read_deadline_fires_at_its_exact_virtual_instant() {
    let (kind, waited, again) = Builder::new()
        .seed(7)
        .run(async {
            let l = TcpListener::bind("127.0.0.1:7000").await.unwrap();
            let c = TcpStream::connect("127.0.0.1:7000").await.unwrap();
            let (s, _) = l.accept().await.unwrap();
            let t0 = goro::time::now();
            c.set_read_deadline(Some(t0 + ms(250)));
            let e = c.read(&mut [0; 4]).await.unwrap_err();
            let waited = goro::time::now() - t0;
            // Past it, a read fails at once; moved later, the socket works.
            let again = c.read(&mut [0; 4]).await.unwrap_err().kind();
            assert_eq!(goro::time::now() - t0, waited, "the second failure waited");
            c.set_read_deadline(Some(goro::time::now() + ms(100)));
            s.write_all(b"ok").await.unwrap();
            assert_eq!(c.read(&mut [0; 4]).await.unwrap(), 2);
            (e.kind(), waited, again)
        })
        .expect("the deadline ends the read");
    assert_eq!((kind, again), (ErrorKind::TimedOut, ErrorKind::TimedOut));
    assert_eq!(waited, ms(250));
}

#[test]
fn a_50ms_link_makes_a_request_and_response_take_100ms() {
    let (connect, exchange) = Builder::new()
        .seed(8)
        .procs(2)
        .run(async {
            goro::sim::net::set_latency(CLIENT, SERVER, ms(50));
            spawn_echo_server(TcpListener::bind((SERVER, 80)).await.unwrap(), 1);
            let t0 = goro::time::now();
            let c = TcpStream::connect((SERVER, 80)).await.unwrap();
            let connect = goro::time::now() - t0;
            let t1 = goro::time::now();
            c.write_all(b"request").await.unwrap();
            let mut buf = [0; 7];
            c.read_exact(&mut buf).await.unwrap();
            (connect, goro::time::now() - t1)
        })
        .expect("the exchange ends");
    assert_eq!(connect, ms(50), "a connect takes one latency");
    assert_eq!(exchange, ms(100), "a request and its response take two");
}

#[test]
fn a_partition_stops_traffic_and_connects_until_healed() {
    let (connected_at, read_at) = Builder::new()
        .seed(9)
        .procs(2)
        .run(async {
            let l = TcpListener::bind((SERVER, 80)).await.unwrap();
            let c = TcpStream::connect((SERVER, 80)).await.unwrap();
            let (s, _) = l.accept().await.unwrap();
            let t0 = goro::time::now();
            goro::sim::net::partition(CLIENT, SERVER);
            c.write_all(b"x").await.unwrap(); // buffered, not delivered
            let cut = goro::time::timeout(ms(1000), s.read(&mut [0; 1])).await;
            assert!(cut.is_err(), "a byte crossed a partition: {cut:?}");
            let late = goro::spawn(async move {
                let c2 = TcpStream::connect((SERVER, 80)).await.unwrap();
                (goro::time::now(), c2)
            });
            goro::time::sleep(ms(1000)).await;
            goro::sim::net::heal(CLIENT, SERVER);
            let mut b = [0; 1];
            assert_eq!(s.read(&mut b).await.unwrap(), 1);
            let read_at = goro::time::now() - t0;
            let (at, _c2) = late.await.unwrap();
            let (_s2, _) = l.accept().await.unwrap();
            (at - t0, read_at)
        })
        .expect("healing ends every wait");
    assert_eq!(read_at, ms(2000), "the byte arrives when the link heals");
    assert_eq!(
        connected_at,
        ms(2000),
        "the connect completes when the link heals"
    );
}

#[test]
fn a_hold_keeps_traffic_until_released_then_delivers_it_in_order() {
    let (tcp, udp, at) = Builder::new()
        .seed(10)
        .procs(2)
        .run(async {
            let l = TcpListener::bind((SERVER, 80)).await.unwrap();
            let c = TcpStream::connect((SERVER, 80)).await.unwrap();
            let (s, _) = l.accept().await.unwrap();
            let ua = UdpSocket::bind((CLIENT, 5000)).await.unwrap();
            let ub = UdpSocket::bind((SERVER, 5000)).await.unwrap();
            let t0 = goro::time::now();
            goro::sim::net::hold(CLIENT, SERVER);
            for m in [&b"one "[..], b"two ", b"three"] {
                c.write_all(m).await.unwrap();
                ua.send_to(m, (SERVER, 5000)).await.unwrap();
            }
            goro::spawn(async {
                goro::time::sleep(ms(300)).await;
                goro::sim::net::release(CLIENT, SERVER);
            });
            let mut tcp = vec![0; 13];
            s.read_exact(&mut tcp).await.unwrap();
            let at = goro::time::now() - t0;
            let mut udp = Vec::new();
            for _ in 0..3 {
                let mut b = [0; 8];
                let (n, from) = ub.recv_from(&mut b).await.unwrap();
                assert_eq!(from, SocketAddr::new(CLIENT, 5000));
                udp.push(String::from_utf8(b[..n].to_vec()).unwrap());
            }
            (String::from_utf8(tcp).unwrap(), udp, at)
        })
        .expect("the release ends every wait");
    assert_eq!(tcp, "one two three");
    assert_eq!(udp, ["one ", "two ", "three"]);
    assert_eq!(at, ms(300), "nothing is delivered before the release");
}

/// Sends 100 numbered datagrams over a link losing 30% and returns the
/// numbers that arrived.
fn lossy_udp_run(seed: u64) -> Vec<u8> {
    Builder::new()
        .seed(seed)
        .procs(2)
        .run(async {
            goro::sim::net::set_loss(CLIENT, SERVER, 0.3);
            goro::sim::net::set_latency(CLIENT, SERVER, ms(5));
            let rx = UdpSocket::bind((SERVER, 53)).await.unwrap();
            let tx = UdpSocket::bind((CLIENT, 0)).await.unwrap();
            for i in 0..100u8 {
                tx.send_to(&[i], (SERVER, 53)).await.unwrap();
            }
            rx.set_read_deadline(Some(goro::time::now() + ms(50)));
            let mut got = Vec::new();
            let mut b = [0; 1];
            loop {
                match rx.recv_from(&mut b).await {
                    Ok(_) => got.push(b[0]),
                    Err(e) if e.kind() == ErrorKind::TimedOut => return got,
                    Err(e) => panic!("recv_from: {e}"),
                }
            }
        })
        .expect("the receiver's deadline ends the run")
}

#[test]
fn a_lossy_link_drops_some_datagrams_and_the_seed_decides_which() {
    let first = lossy_udp_run(11);
    assert!(
        (1..100).contains(&first.len()),
        "30% loss delivered {} of 100 datagrams",
        first.len()
    );
    assert!(
        first.windows(2).all(|w| w[0] < w[1]),
        "out of order: {first:?}"
    );
    assert_eq!(
        lossy_udp_run(11),
        first,
        "the same seed dropped other datagrams"
    );
}

#[test]
fn udp_to_an_address_nobody_bound_is_dropped_silently() {
    Builder::new()
        .seed(12)
        .run(async {
            let s = UdpSocket::bind("127.0.0.1:0").await.unwrap();
            assert_eq!(s.send_to(b"void", "10.1.2.3:9").await.unwrap(), 4);
            s.connect(s.local_addr().unwrap()).await.unwrap();
            s.send(b"me").await.unwrap();
            assert_eq!(s.recv(&mut [0; 4]).await.unwrap(), 2);
        })
        .expect("sends never wait");
}

#[test]
fn a_writer_waits_while_the_pipe_is_full() {
    let total = Builder::new()
        .seed(13)
        .procs(2)
        .run(async {
            let l = TcpListener::bind("127.0.0.1:7000").await.unwrap();
            let c = TcpStream::connect("127.0.0.1:7000").await.unwrap();
            let (s, _) = l.accept().await.unwrap();
            c.set_write_deadline(Some(goro::time::now() + ms(10)));
            let block = vec![7u8; 64 << 10];
            let mut sent = 0;
            let e = loop {
                match c.write(&block).await {
                    Ok(n) => sent += n,
                    Err(e) => break e,
                }
            };
            assert_eq!(e.kind(), ErrorKind::TimedOut, "{e}");
            c.set_write_deadline(None);
            let reader = goro::spawn(async move {
                let mut buf = vec![0; 8192];
                let mut n = 0;
                while n < sent + block.len() {
                    n += s.read(&mut buf).await.unwrap();
                }
                n
            });
            c.write_all(&vec![7u8; 64 << 10]).await.unwrap();
            (sent, reader.await.unwrap())
        })
        .expect("the reader drains the pipe");
    assert_eq!(total.0, 256 << 10, "the pipe holds 256 KiB");
    assert_eq!(total.1, (256 + 64) << 10);
}

/// An echo workload: 4 clients, 5 messages each, through one server.
async fn echo_workload() {
    let l = TcpListener::bind("127.0.0.1:8000").await.unwrap();
    spawn_echo_server(l, 4);
    let clients: Vec<_> = (0..4u8)
        .map(|i| {
            goro::spawn(async move {
                let c = TcpStream::connect("127.0.0.1:8000").await.unwrap();
                for j in 0..5u8 {
                    c.write_all(&[i, j]).await.unwrap();
                    let mut b = [0; 2];
                    c.read_exact(&mut b).await.unwrap();
                    assert_eq!(b, [i, j]);
                }
            })
        })
        .collect();
    for c in clients {
        c.await.unwrap();
    }
}

#[test]
fn the_same_seed_gives_the_same_schedule_in_20_runs() {
    let hash = |seed| {
        let (r, report) = Builder::new()
            .seed(seed)
            .procs(4)
            .run_report(echo_workload());
        r.unwrap_or_else(|e| panic!("the echo workload failed: {e}"));
        report.schedule_hash()
    };
    let first = hash(14);
    for run in 1..20 {
        assert_eq!(hash(14), first, "run {run} took another schedule");
    }
}

#[test]
fn a_task_reading_a_socket_nobody_writes_is_a_net_read_deadlock() {
    let r = Builder::new().seed(15).run(async {
        let l = TcpListener::bind("127.0.0.1:7000").await.unwrap();
        let c = TcpStream::connect("127.0.0.1:7000").await.unwrap();
        let (_s, _) = l.accept().await.unwrap();
        c.read(&mut [0; 4]).await
    });
    match r {
        Err(Error::Deadlock(d)) => {
            let msg = d.to_string();
            assert!(
                msg.contains("net read"),
                "the report names no net read: {msg}"
            );
        }
        other => panic!("expected a deadlock, got {other:?}"),
    }
}

#[test]
fn owned_halves_work_in_a_bubble_and_the_write_half_ends_with_eof() {
    let got = Builder::new()
        .seed(16)
        .procs(2)
        .run(async {
            let l = TcpListener::bind("127.0.0.1:7000").await.unwrap();
            let c = TcpStream::connect("127.0.0.1:7000").await.unwrap();
            let (s, _) = l.accept().await.unwrap();
            let (r, w) = s.into_split();
            let writer = goro::spawn(async move {
                w.write_all(b"from the writer task").await.unwrap();
                // `w` is dropped here: the peer reads end of file
            });
            let mut got = Vec::new();
            let mut buf = [0; 8];
            loop {
                match c.read(&mut buf).await.unwrap() {
                    0 => break,
                    n => got.extend_from_slice(&buf[..n]),
                }
            }
            writer.await.unwrap();
            drop(r);
            got
        })
        .expect("the reader sees the writer's bytes, then end of file");
    assert_eq!(got, b"from the writer task");
}
