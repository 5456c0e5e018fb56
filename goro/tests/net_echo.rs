//! Echo over many concurrent loopback connections, at procs 1 and 4.

mod support;

use goro::net::{TcpListener, TcpStream};
use support::net::{raise_fd_limit, read_exact, LIMIT};
use support::within;

const CONNS: usize = 1000;
const ROUNDS: usize = 5;

fn echo_many(procs: usize) {
    // Two fds per connection (both ends live in this process), plus slack.
    let limit = raise_fd_limit(2 * CONNS as u64 + 256);
    let conns = CONNS.min((limit as usize).saturating_sub(256) / 2);
    assert!(conns >= 100, "fd limit {limit} too low for this test");
    let rt = goro::Runtime::builder().procs(procs).build().unwrap();
    let total = rt.block_on(async move {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let server = goro::spawn(async move {
            let mut handlers = Vec::with_capacity(conns);
            for _ in 0..conns {
                let (s, _) = l.accept().await.expect("accept");
                handlers.push(goro::spawn(async move {
                    let mut buf = [0u8; 256];
                    let mut echoed = 0;
                    loop {
                        match s.read(&mut buf).await.expect("server read") {
                            0 => return echoed,
                            n => {
                                s.write_all(&buf[..n]).await.expect("server write");
                                echoed += n;
                            }
                        }
                    }
                }));
            }
            let mut sum = 0;
            for h in handlers {
                sum += h.await.unwrap();
            }
            sum
        });
        let clients: Vec<_> = (0..conns)
            .map(|i| {
                goro::spawn(async move {
                    let s = TcpStream::connect(addr).await.expect("connect");
                    s.set_nodelay(true).unwrap();
                    for r in 0..ROUNDS {
                        let msg = format!("conn {i} round {r}");
                        s.write_all(msg.as_bytes()).await.expect("client write");
                        let mut back = vec![0; msg.len()];
                        read_exact(&s, &mut back).await.expect("client read");
                        assert_eq!(back, msg.as_bytes(), "echo of connection {i}");
                    }
                    s.shutdown(std::net::Shutdown::Write).unwrap();
                    // The server closes after our shutdown: we read EOF.
                    assert_eq!(s.read(&mut [0; 8]).await.unwrap(), 0);
                })
            })
            .collect();
        for c in clients {
            c.await.unwrap();
        }
        server.await.unwrap()
    });
    assert!(total > 0);
    let st = rt.stats();
    eprintln!("STATS procs={procs} {st:?}");
    assert!(st.netpolls > 0, "the poller was used: {st:?}");
}

#[test]
fn echo_over_1000_connections_with_one_p() {
    within(LIMIT, "echo at procs=1", || echo_many(1));
}

#[test]
fn echo_over_1000_connections_with_four_ps() {
    within(LIMIT, "echo at procs=4", || echo_many(4));
}
