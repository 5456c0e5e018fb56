//! Peer reset and half-close are reported, never panics.

mod support;

use goro::net::{TcpListener, TcpStream};
use std::io::ErrorKind;
use std::net::Shutdown;
use std::os::fd::AsRawFd;
use support::net::{pair, read_exact, LIMIT};
use support::within;

/// Makes `close` send a reset instead of a FIN (`SO_LINGER` with 0 s).
fn linger_zero(fd: i32) {
    let l = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: setsockopt reads `size_of::<linger>()` bytes from `&l`.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            &l as *const libc::linger as *const libc::c_void,
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0, "setsockopt(SO_LINGER)");
}

#[test]
fn peer_reset_is_an_error_for_a_waiting_reader() {
    within(LIMIT, "reset while reading", || {
        let rt = goro::Runtime::builder().procs(2).build().unwrap();
        rt.block_on(async {
            let (c, s) = pair().await;
            let reader = goro::spawn(async move { c.read(&mut [0; 8]).await });
            linger_zero(s.as_raw_fd());
            drop(s); // RST
            let e = reader
                .await
                .unwrap()
                .expect_err("a reset reads as an error");
            assert_eq!(e.kind(), ErrorKind::ConnectionReset, "got {e:?}");
        });
    });
}

#[test]
fn writing_to_a_reset_peer_is_an_error() {
    within(LIMIT, "write after reset", || {
        let rt = goro::Runtime::builder().procs(1).build().unwrap();
        rt.block_on(async {
            let (c, s) = pair().await;
            linger_zero(s.as_raw_fd());
            drop(s);
            // The first writes may be accepted before the RST is seen; a
            // write after the RST must fail (EPIPE or ECONNRESET).
            let mut err = None;
            for _ in 0..1000 {
                match c.write(&[0; 1024]).await {
                    Ok(_) => goro::yield_now().await,
                    Err(e) => {
                        err = Some(e);
                        break;
                    }
                }
            }
            let e = err.expect("writes to a reset peer kept succeeding");
            assert!(
                matches!(e.kind(), ErrorKind::BrokenPipe | ErrorKind::ConnectionReset),
                "got {e:?}"
            );
        });
    });
}

#[test]
fn half_close_reads_eof_and_the_other_direction_still_works() {
    within(LIMIT, "half-close", || {
        let rt = goro::Runtime::builder().procs(2).build().unwrap();
        rt.block_on(async {
            let (c, s) = pair().await;
            c.write_all(b"last words").await.unwrap();
            c.shutdown(Shutdown::Write).unwrap();
            let mut buf = [0; 10];
            read_exact(&s, &mut buf).await.unwrap();
            assert_eq!(&buf, b"last words");
            assert_eq!(s.read(&mut buf).await.unwrap(), 0, "EOF after the data");
            assert_eq!(s.read(&mut buf).await.unwrap(), 0, "EOF again");
            // The server can still answer on its half.
            s.write_all(b"reply").await.unwrap();
            let mut r = [0; 5];
            read_exact(&c, &mut r).await.unwrap();
            assert_eq!(&r, b"reply");
        });
    });
}

#[test]
fn connect_to_a_closed_port_is_refused() {
    within(LIMIT, "refused connect", || {
        let rt = goro::Runtime::builder().procs(1).build().unwrap();
        rt.block_on(async {
            let addr = {
                let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
                l.local_addr().unwrap()
            }; // closed again
            let e = TcpStream::connect(addr).await.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::ConnectionRefused, "got {e:?}");
        });
    });
}

#[test]
fn sockets_outside_a_runtime_are_an_error_not_a_panic() {
    let r = futures::executor::block_on(TcpListener::bind("127.0.0.1:0"));
    let e = r.unwrap_err();
    assert!(e.to_string().contains("outside a goro runtime"), "{e}");
}

#[test]
fn a_stream_outlives_its_runtime_without_panicking() {
    let rt = goro::Runtime::builder().procs(1).build().unwrap();
    let (c, s) = rt.block_on(pair());
    drop(rt);
    // Dropping sockets and setting deadlines with no runtime left is fine.
    c.set_read_deadline(Some(std::time::Instant::now()));
    drop(c);
    drop(s);
}

/// Data and the FIN arriving together (one edge, readable + peer closed):
/// the short read that takes the data must not leave the next read waiting
/// for an edge that never comes; it returns EOF at once. Repeated, since
/// whether the two land in one edge depends on when a poll happens.
#[test]
fn data_and_fin_in_one_edge_read_then_eof() {
    within(LIMIT, "data + FIN then EOF", || {
        let rt = goro::Runtime::builder().procs(1).build().unwrap();
        rt.block_on(async {
            for round in 0..50 {
                let (c, s) = pair().await;
                c.write_all(b"last").await.unwrap();
                c.shutdown(Shutdown::Write).unwrap();
                // Park briefly so that the M waits in the poller and takes
                // the (data + FIN) event before the first read: the case
                // where the short read's clearing would lose the FIN.
                goro::time::sleep(std::time::Duration::from_millis(1)).await;
                // A missed EOF would wait for this deadline instead.
                s.set_read_deadline(Some(
                    std::time::Instant::now() + std::time::Duration::from_secs(5),
                ));
                let mut buf = [0; 64];
                let mut got = 0;
                loop {
                    match s.read(&mut buf[got..]).await {
                        Ok(0) => break,
                        Ok(n) => got += n,
                        Err(e) => panic!("round {round}: read after {got} bytes: {e}"),
                    }
                }
                assert_eq!(&buf[..got], b"last", "round {round}");
            }
        });
    });
}
