//! Go's deadlines on TCP and UDP sockets.

mod support;

use goro::net::{TcpListener, TcpStream, UdpSocket};
use std::future::{poll_fn, Future};
use std::io::ErrorKind;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::net::{pair, read_exact, LIMIT};
use support::within;

fn rt(procs: usize) -> goro::Runtime {
    goro::Runtime::builder().procs(procs).build().unwrap()
}

#[test]
fn read_deadline_fires_on_a_silent_peer() {
    within(LIMIT, "read deadline on a silent peer", || {
        rt(2).block_on(async {
            let (c, _s) = pair().await;
            let d = Duration::from_millis(50);
            let deadline = Instant::now() + d;
            c.set_read_deadline(Some(deadline));
            let e = c.read(&mut [0; 8]).await.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::TimedOut, "got {e:?}");
            assert_not_early(deadline, "read deadline");
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
            let deadline = Instant::now() + Duration::from_millis(100);
            c.set_write_deadline(Some(deadline));
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
            assert_not_early(deadline, "write deadline");
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
            let (reader, parked) = spawn_parked({
                let c = c.clone();
                async move { c.read(&mut [0; 4]).await }
            });
            wait_parked(&reader, &parked, "the reader parks on the socket").await;
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
            let (reader, parked) = spawn_parked({
                let c = c.clone();
                async move {
                    let mut b = [0; 2];
                    read_exact(&c, &mut b).await.map(|_| b)
                }
            });
            wait_parked(&reader, &parked, "the reader parks").await;
            // Set, then moved later, while the read is parked on the socket.
            let first = Instant::now() + Duration::from_millis(200);
            c.set_read_deadline(Some(first));
            c.set_read_deadline(Some(Instant::now() + Duration::from_secs(30)));
            assert_before(first, "moving the deadline");
            // Past the first deadline (the point of the test, not a settle).
            goro::time::sleep_until(first + Duration::from_millis(20)).await;
            assert!(!reader.is_finished(), "the read ended at the old deadline");
            s.write_all(b"ok").await.unwrap();
            assert_eq!(&reader.await.unwrap().expect("no early timeout"), b"ok");
        });
    });
}

/// A parked read's deadline moved later (still in the future) fires at
/// the new deadline, not before it; moved earlier (still in the future),
/// it fires at the earlier one; cleared, it never fires.
#[test]
fn deadline_moved_while_a_read_is_parked_fires_at_the_new_time() {
    within(LIMIT, "moving a parked read's deadline", || {
        rt(2).block_on(async {
            let (c, s) = pair().await;
            let c = Arc::new(c);
            let parked_read = |c: &Arc<goro::net::TcpStream>| {
                let c = c.clone();
                spawn_parked(async move { c.read(&mut [0; 4]).await })
            };

            // Later: both deadlines set while the read is parked, so
            // neither can pass before it parks however slow the machine.
            c.set_read_deadline(None);
            let (reader, parked) = parked_read(&c);
            wait_parked(&reader, &parked, "reader parks (later)").await;
            let later = move_later(|d| c.set_read_deadline(d));
            let e = reader.await.unwrap().unwrap_err();
            assert_eq!(e.kind(), ErrorKind::TimedOut, "got {e:?}");
            assert_not_early(later, "read deadline moved later");

            // Earlier (from an hour away to 30 ms away).
            c.set_read_deadline(Some(Instant::now() + Duration::from_secs(3600)));
            let (reader, parked) = parked_read(&c);
            wait_parked(&reader, &parked, "reader parks (earlier)").await;
            let earlier = Instant::now() + Duration::from_millis(30);
            c.set_read_deadline(Some(earlier));
            let e = reader.await.unwrap().unwrap_err();
            assert_eq!(e.kind(), ErrorKind::TimedOut, "got {e:?}");
            assert_not_early(earlier, "read deadline moved earlier");

            // Cleared: the old deadline passes, then data arrives.
            c.set_read_deadline(None);
            let (reader, parked) = parked_read(&c);
            wait_parked(&reader, &parked, "reader parks (cleared)").await;
            let old = Instant::now() + Duration::from_millis(200);
            c.set_read_deadline(Some(old));
            c.set_read_deadline(None);
            assert_before(old, "clearing the read deadline");
            goro::time::sleep_until(old + Duration::from_millis(20)).await;
            assert!(!reader.is_finished(), "a cleared deadline fired");
            s.write_all(b"data").await.unwrap();
            let n = reader.await.unwrap().expect("no timeout once cleared");
            assert!(n > 0);
        });
    });
}

/// The same for a write parked on a full socket.
#[test]
fn deadline_moved_while_a_write_is_parked_fires_at_the_new_time() {
    within(LIMIT, "moving a parked write's deadline", || {
        rt(2).block_on(async {
            let (c, _s) = pair().await; // the server side never reads
            let c = Arc::new(c);
            // Each writer writes until a write fails; it parks once the
            // socket's buffers are full.
            let parked_write = |c: &Arc<goro::net::TcpStream>| {
                let c = c.clone();
                spawn_parked(async move {
                    let chunk = vec![0u8; 64 * 1024];
                    let mut written = 0usize;
                    loop {
                        match c.write(&chunk).await {
                            Ok(n) => written += n,
                            Err(e) => return e,
                        }
                        assert!(written < 1 << 30, "wrote 1 GiB to a peer that never reads");
                    }
                })
            };

            let (writer, parked) = parked_write(&c);
            wait_parked(&writer, &parked, "writer parks (later)").await;
            let later = move_later(|d| c.set_write_deadline(d));
            let e = writer.await.unwrap();
            assert_eq!(e.kind(), ErrorKind::TimedOut, "got {e:?}");
            assert_not_early(later, "write deadline moved later");

            c.set_write_deadline(Some(Instant::now() + Duration::from_secs(3600)));
            let (writer, parked) = parked_write(&c);
            wait_parked(&writer, &parked, "writer parks (earlier)").await;
            let earlier = Instant::now() + Duration::from_millis(30);
            c.set_write_deadline(Some(earlier));
            let e = writer.await.unwrap();
            assert_eq!(e.kind(), ErrorKind::TimedOut, "got {e:?}");
            assert_not_early(earlier, "write deadline moved earlier");

            // Into the past while parked: fails at once.
            c.set_write_deadline(None);
            let (writer, parked) = parked_write(&c);
            wait_parked(&writer, &parked, "writer parks (past)").await;
            c.set_write_deadline(Some(Instant::now() - Duration::from_secs(1)));
            let e = writer.await.unwrap();
            assert_eq!(e.kind(), ErrorKind::TimedOut, "got {e:?}");
        });
    });
}

#[test]
fn accept_deadline_fires_and_clears() {
    within(LIMIT, "listener deadline", || {
        rt(1).block_on(async {
            let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let deadline = Instant::now() + Duration::from_millis(20);
            l.set_deadline(Some(deadline));
            assert_eq!(l.accept().await.unwrap_err().kind(), ErrorKind::TimedOut);
            assert_not_early(deadline, "accept deadline");
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
            let deadline = Instant::now() + Duration::from_millis(20);
            b.set_read_deadline(Some(deadline));
            assert_eq!(
                b.recv_from(&mut [0; 8]).await.unwrap_err().kind(),
                ErrorKind::TimedOut
            );
            assert_not_early(deadline, "udp read deadline");
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

/// An accept parked on the listener: its deadline moved later fires at
/// the new time; cleared, a connection is accepted after the old one.
#[test]
fn accept_deadline_moved_while_parked() {
    within(LIMIT, "moving a parked accept's deadline", || {
        rt(2).block_on(async {
            let l = Arc::new(TcpListener::bind("127.0.0.1:0").await.unwrap());
            let addr = l.local_addr().unwrap();
            let parked_accept = |l: &Arc<TcpListener>| {
                let l = l.clone();
                spawn_parked(async move { l.accept().await.map(|_| ()) })
            };
            let (acceptor, parked) = parked_accept(&l);
            wait_parked(&acceptor, &parked, "accept parks (later)").await;
            let later = move_later(|d| l.set_deadline(d));
            let e = acceptor.await.unwrap().unwrap_err();
            assert_eq!(e.kind(), ErrorKind::TimedOut, "got {e:?}");
            assert_not_early(later, "accept deadline moved later");

            l.set_deadline(None);
            let (acceptor, parked) = parked_accept(&l);
            wait_parked(&acceptor, &parked, "accept parks (cleared)").await;
            let old = Instant::now() + Duration::from_millis(200);
            l.set_deadline(Some(old));
            l.set_deadline(None);
            assert_before(old, "clearing the accept deadline");
            goro::time::sleep_until(old + Duration::from_millis(20)).await;
            assert!(!acceptor.is_finished(), "a cleared accept deadline fired");
            let c = TcpStream::connect(addr).await.unwrap();
            acceptor
                .await
                .unwrap()
                .expect("accept once the deadline is cleared");
            drop(c);
        });
    });
}

/// UDP: a parked `recv_from`'s deadline moved later fires at the new time;
/// the write deadline fails a send once past and clears again (a UDP send
/// on loopback does not block, so only the poll-time check is reachable).
#[test]
fn udp_deadlines_moved_while_parked_and_the_write_deadline() {
    within(LIMIT, "udp deadlines", || {
        rt(2).block_on(async {
            let a = UdpSocket::bind("127.0.0.1:0").await.unwrap();
            let b = Arc::new(UdpSocket::bind("127.0.0.1:0").await.unwrap());
            let b_addr = b.local_addr().unwrap();

            let (receiver, parked) = spawn_parked({
                let b = b.clone();
                async move { b.recv_from(&mut [0; 8]).await.map(|(n, _)| n) }
            });
            wait_parked(&receiver, &parked, "recv_from parks").await;
            let later = move_later(|d| b.set_read_deadline(d));
            let e = receiver.await.unwrap().unwrap_err();
            assert_eq!(e.kind(), ErrorKind::TimedOut, "got {e:?}");
            assert_not_early(later, "udp read deadline moved later");

            // Write deadline: in the future, sends work; past, they fail
            // at once though the socket is writable; cleared, they work.
            a.set_write_deadline(Some(Instant::now() + Duration::from_secs(30)));
            assert_eq!(
                a.send_to(b"x", b_addr).await.expect("before the deadline"),
                1
            );
            let deadline = Instant::now() + Duration::from_millis(20);
            a.set_write_deadline(Some(deadline));
            goro::time::sleep_until(deadline).await;
            let e = a.send_to(b"y", b_addr).await.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::TimedOut, "got {e:?}");
            assert_not_early(deadline, "udp write deadline");
            a.connect(b_addr).await.unwrap();
            let e = a.send(b"z").await.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::TimedOut, "connected send: {e:?}");
            a.set_write_deadline(None);
            assert_eq!(a.send(b"w").await.expect("cleared"), 1);
            b.set_read_deadline(None);
            let mut buf = [0; 8];
            let (n, _) = b.recv_from(&mut buf).await.unwrap();
            assert_eq!(
                &buf[..n],
                b"x",
                "only the sends before the deadline went out"
            );
            let (n, _) = b.recv_from(&mut buf).await.unwrap();
            assert_eq!(&buf[..n], b"w");
        });
    });
}

#[test]
fn timers_fire_while_the_sleeper_waits_in_the_poller() {
    // How late past its deadline each sleep may end. The sleeper's
    // epoll_wait has no timeout until the timer is armed; arming it from a
    // thread with no P breaks that wait, and the sleeper waits again with a
    // timeout of exactly the deadline (`park_as_timer_sleeper`,
    // `sched/timer/check.rs`; the monitor sleeps while every P is idle). So the
    // wake is the kernel's: epoll_wait's millisecond rounding and a thread
    // switch, a millisecond or two natively. Not a speed claim: 1 s leaves
    // room for memcheck (20-50x slower) and a loaded CI and still fails a
    // wait that did not break or was re-armed with a wrong timeout.
    const SLACK: Duration = Duration::from_secs(1);
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
            assert!(
                took < Duration::from_millis(5) + SLACK,
                "sleep {i} of 5 ms took {took:?} (SLACK says why a late one is a bug)"
            );
        }
        assert!(rt.stats().netpolls > 0, "the sleeper used the poller");
    });
}

/// Fails unless the clock has reached `deadline`: goro compares deadlines
/// with the clock `Instant` reads (`sched/timer/clock.rs`: nanoseconds since an
/// `Instant` epoch, both ways exactly), so a timeout observed before it is
/// an early fire, with no slack to allow.
fn assert_not_early(deadline: Instant, what: &str) {
    let now = Instant::now();
    assert!(
        now >= deadline,
        "{what} fired {:?} before the deadline",
        deadline - now
    );
}

/// Spawns `f` and sets the flag when its first poll returns `Pending`
/// (the operation is parked on the socket).
fn spawn_parked<T: Send + 'static>(
    f: impl Future<Output = T> + Send + 'static,
) -> (goro::JoinHandle<T>, Arc<AtomicBool>) {
    let parked = Arc::new(AtomicBool::new(false));
    let p = parked.clone();
    let h = goro::spawn(async move {
        let mut f = pin!(f);
        poll_fn(|cx| {
            let r = f.as_mut().poll(cx);
            if r.is_pending() {
                p.store(true, Ordering::SeqCst);
            }
            r
        })
        .await
    });
    (h, parked)
}

/// Waits (yielding to the runtime) until `parked` is set, failing with
/// `what` if the task ends without parking or after 10 s.
async fn wait_parked<T>(task: &goro::JoinHandle<T>, parked: &AtomicBool, what: &str) {
    let limit = Instant::now() + Duration::from_secs(10);
    while !parked.load(Ordering::SeqCst) {
        assert!(
            !task.is_finished(),
            "the operation ended without parking: {what}"
        );
        assert!(Instant::now() < limit, "not parked within 10 s: {what}");
        goro::yield_now().await;
    }
}

/// With an operation parked: sets a deadline 200 ms away, then moves it
/// later (300 ms from the second call); returns the later one. Fails,
/// saying the check is inconclusive, if the first had passed by then.
fn move_later(set: impl Fn(Option<Instant>)) -> Instant {
    let first = Instant::now() + Duration::from_millis(200);
    set(Some(first));
    let later = Instant::now() + Duration::from_millis(300);
    set(Some(later));
    assert_before(first, "moving the deadline later");
    later
}

/// Fails if `deadline` has already passed: the step before it took so long
/// that the check that follows cannot tell an early fire from a due one.
fn assert_before(deadline: Instant, what: &str) {
    assert!(
        Instant::now() < deadline,
        "{what} took until past the first deadline: inconclusive on a machine this slow"
    );
}
