//! Go's deadlines on TCP and UDP sockets.

mod common;
#[path = "net_support.rs"]
mod net_support;

use common::within;
use goro::net::{TcpListener, TcpStream, UdpSocket};
use net_support::{pair, read_exact, LIMIT};
use std::future::{poll_fn, Future};
use std::io::ErrorKind;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn rt(procs: usize) -> goro::Runtime {
    goro::Runtime::builder().procs(procs).build().unwrap()
}

#[test]
fn read_deadline_fires_on_a_silent_peer() {
    within(LIMIT, "read deadline on a silent peer", || {
        rt(2).block_on(async {
            let (c, _s) = pair().await;
            let d = Duration::from_millis(50);
            let t0 = Instant::now();
            c.set_read_deadline(Some(t0 + d));
            let e = c.read(&mut [0; 8]).await.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::TimedOut, "got {e:?}");
            assert!(
                t0.elapsed() >= d,
                "failed before the deadline: {:?}",
                t0.elapsed()
            );
            // Still past the deadline: the next read fails at once.
            let e = c.read(&mut [0; 8]).await.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::TimedOut);
        });
    });
}

#[test]
fn read_deadline_does_not_fire_on_a_chatty_peer() {
    within(LIMIT, "read deadline on a chatty peer", || {
        rt(2).block_on(async {
            let (c, s) = pair().await;
            // 50 messages 10 ms apart: half a second, five deadline
            // periods, each read well within its own deadline.
            let writer = goro::spawn(async move {
                for i in 0..50u8 {
                    goro::time::sleep(Duration::from_millis(10)).await;
                    s.write_all(&[i]).await.unwrap();
                }
                s
            });
            for i in 0..50u8 {
                c.set_read_deadline(Some(Instant::now() + Duration::from_millis(300)));
                let mut b = [0u8; 1];
                read_exact(&c, &mut b)
                    .await
                    .expect("chatty peer: no timeout");
                assert_eq!(b[0], i);
            }
            drop(writer.await.unwrap());
        });
    });
}

#[test]
fn write_deadline_fires_on_a_peer_that_stops_reading() {
    within(LIMIT, "write deadline on a full socket", || {
        rt(2).block_on(async {
            let (c, _s) = pair().await; // the server side never reads
            let chunk = vec![0u8; 64 * 1024];
            c.set_write_deadline(Some(Instant::now() + Duration::from_millis(100)));
            let mut written = 0usize;
            let err = loop {
                match c.write(&chunk).await {
                    Ok(n) => written += n,
                    Err(e) => break e,
                }
                assert!(written < 1 << 30, "wrote 1 GiB to a peer that never reads");
            };
            assert_eq!(
                err.kind(),
                ErrorKind::TimedOut,
                "got {err:?} after {written} bytes"
            );
            assert!(written > 0, "the socket buffers took something first");
        });
    });
}

#[test]
fn a_deadline_moved_into_the_future_makes_the_socket_usable_again() {
    within(LIMIT, "moving a deadline", || {
        rt(1).block_on(async {
            let (c, s) = pair().await;
            c.set_read_deadline(Some(Instant::now() + Duration::from_millis(10)));
            assert_eq!(
                c.read(&mut [0; 4]).await.unwrap_err().kind(),
                ErrorKind::TimedOut
            );
            // Data arrives while the deadline is past: reads still fail.
            s.write_all(b"late").await.unwrap();
            assert_eq!(
                c.read(&mut [0; 4]).await.unwrap_err().kind(),
                ErrorKind::TimedOut
            );
            c.set_read_deadline(Some(Instant::now() + Duration::from_secs(30)));
            let mut b = [0; 4];
            read_exact(&c, &mut b).await.expect("usable after the move");
            assert_eq!(&b, b"late");
            c.set_read_deadline(None);
            s.write_all(b"more").await.unwrap();
            read_exact(&c, &mut b)
                .await
                .expect("usable with no deadline");
        });
    });
}

#[test]
fn a_past_deadline_fails_a_waiting_read_at_once() {
    within(LIMIT, "deadline set from another task", || {
        rt(2).block_on(async {
            let (c, _s) = pair().await;
            let c = Arc::new(c);
            let parked = Arc::new(AtomicBool::new(false));
            let reader = {
                let (c, parked) = (c.clone(), parked.clone());
                goro::spawn(async move {
                    let mut buf = [0; 4];
                    let mut read = pin!(c.read(&mut buf));
                    poll_fn(|cx| {
                        let r = read.as_mut().poll(cx);
                        if r.is_pending() {
                            parked.store(true, Ordering::SeqCst);
                        }
                        r
                    })
                    .await
                })
            };
            // Wait until the reader is parked on the socket.
            while !parked.load(Ordering::SeqCst) {
                goro::yield_now().await;
            }
            c.set_read_deadline(Some(Instant::now() - Duration::from_secs(1)));
            let r = reader.await.unwrap();
            assert_eq!(r.unwrap_err().kind(), ErrorKind::TimedOut);
        });
    });
}

#[test]
fn deadline_moved_later_while_waiting_does_not_fire_early() {
    within(LIMIT, "a later deadline replaces an earlier one", || {
        rt(2).block_on(async {
            let (c, s) = pair().await;
            let c = Arc::new(c);
            c.set_read_deadline(Some(Instant::now() + Duration::from_millis(30)));
            c.set_read_deadline(Some(Instant::now() + Duration::from_secs(30)));
            let reader = {
                let c = c.clone();
                goro::spawn(async move {
                    let mut b = [0; 2];
                    read_exact(&c, &mut b).await.map(|_| b)
                })
            };
            goro::time::sleep(Duration::from_millis(100)).await;
            s.write_all(b"ok").await.unwrap();
            assert_eq!(&reader.await.unwrap().expect("no early timeout"), b"ok");
        });
    });
}

#[test]
fn accept_deadline_fires_and_clears() {
    within(LIMIT, "listener deadline", || {
        rt(1).block_on(async {
            let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
            l.set_deadline(Some(Instant::now() + Duration::from_millis(20)));
            assert_eq!(l.accept().await.unwrap_err().kind(), ErrorKind::TimedOut);
            l.set_deadline(None);
            let addr = l.local_addr().unwrap();
            let c = goro::spawn(async move { TcpStream::connect(addr).await.unwrap() });
            l.accept()
                .await
                .expect("accept after clearing the deadline");
            drop(c.await.unwrap());
        });
    });
}

#[test]
fn udp_read_deadline_and_recovery() {
    within(LIMIT, "udp deadline", || {
        rt(1).block_on(async {
            let a = UdpSocket::bind("127.0.0.1:0").await.unwrap();
            let b = UdpSocket::bind("127.0.0.1:0").await.unwrap();
            b.set_read_deadline(Some(Instant::now() + Duration::from_millis(20)));
            assert_eq!(
                b.recv_from(&mut [0; 8]).await.unwrap_err().kind(),
                ErrorKind::TimedOut
            );
            b.set_read_deadline(Some(Instant::now() + Duration::from_secs(30)));
            a.send_to(b"dgram", b.local_addr().unwrap()).await.unwrap();
            let mut buf = [0; 8];
            let (n, from) = b.recv_from(&mut buf).await.unwrap();
            assert_eq!((&buf[..n], from), (&b"dgram"[..], a.local_addr().unwrap()));
            // Connected form.
            a.connect(b.local_addr().unwrap()).await.unwrap();
            b.connect(a.local_addr().unwrap()).await.unwrap();
            a.send(b"c").await.unwrap();
            assert_eq!(b.recv(&mut buf).await.unwrap(), 1);
        });
    });
}

#[test]
fn timers_fire_while_the_sleeper_waits_in_the_poller() {
    within(LIMIT, "timers with the sleeper in epoll", || {
        let rt = rt(1);
        // A registered socket puts the sleeping thread into epoll_wait.
        let _sock = rt.block_on(UdpSocket::bind("127.0.0.1:0")).unwrap();
        for i in 0..20 {
            let t0 = Instant::now();
            // Armed from a thread with no P: the sleeper's wait must break.
            rt.block_on(async { goro::time::sleep(Duration::from_millis(5)).await });
            let took = t0.elapsed();
            assert!(
                took >= Duration::from_millis(5),
                "sleep {i} woke early: {took:?}"
            );
            assert!(took < Duration::from_secs(5), "sleep {i} took {took:?}");
        }
        assert!(rt.stats().netpolls > 0, "the sleeper used the poller");
    });
}
