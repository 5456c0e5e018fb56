//! `accept` under `EMFILE` returns the error, and the listener works again
//! once descriptors are free. (Its own test binary: it lowers the process's
//! descriptor limit, which would starve tests running beside it.)

mod support;

use goro::net::TcpListener;
use std::fs::File;
use support::net::{set_soft_fd_limit, LIMIT};
use support::within;

#[test]
fn accept_under_emfile_returns_the_error_and_recovers() {
    within(LIMIT, "accept under EMFILE", || {
        let rt = goro::Runtime::builder().procs(2).build().unwrap();
        rt.block_on(async {
            let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = l.local_addr().unwrap();
            // Two clients queue in the backlog (plain blocking sockets: the
            // kernel completes the handshake without an accept).
            let c1 = std::net::TcpStream::connect(addr).unwrap();
            let c2 = std::net::TcpStream::connect(addr).unwrap();
            // Use up every descriptor under a lowered limit.
            let old = set_soft_fd_limit(512);
            let mut filler = Vec::new();
            loop {
                match File::open("/dev/null") {
                    Ok(f) => filler.push(f),
                    Err(e) => {
                        assert_eq!(e.raw_os_error(), Some(libc::EMFILE), "{e}");
                        break;
                    }
                }
                assert!(filler.len() < 512, "the limit did not take");
            }
            let e = l
                .accept()
                .await
                .expect_err("no descriptor for the connection");
            assert_eq!(e.raw_os_error(), Some(libc::EMFILE), "got {e:?}");
            // Again: the listener reports the same, it does not hang.
            let e = l.accept().await.expect_err("still no descriptor");
            assert_eq!(e.raw_os_error(), Some(libc::EMFILE), "got {e:?}");
            // Free descriptors: both queued connections are accepted.
            drop(filler);
            set_soft_fd_limit(old);
            let (a, pa) = l.accept().await.expect("accept after fds freed");
            let (b, pb) = l.accept().await.expect("second accept");
            let mut peers = [pa, pb];
            peers.sort();
            let mut want = [c1.local_addr().unwrap(), c2.local_addr().unwrap()];
            want.sort();
            assert_eq!(peers, want);
            drop((a, b, c1, c2));
        });
    });
}
