//! `TcpStream::split` / `into_split`: the halves work concurrently from two
//! tasks, and each half has its own deadline (Go's `SetReadDeadline` /
//! `SetWriteDeadline`): a read deadline firing on the read half leaves the
//! write half writing, and the other way round.

mod support;

use goro::net::{TcpListener, TcpStream};
use std::io::ErrorKind;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::within;

const LIMIT: Duration = Duration::from_secs(60);
/// The most any single wait in these tests may take.
const WAIT: Duration = Duration::from_secs(30);

/// `fut`, failing with `what` if it takes longer than [`WAIT`].
async fn bounded<F: std::future::Future>(what: &str, fut: F) -> F::Output {
    match goro::time::timeout(WAIT, fut).await {
        Ok(v) => v,
        Err(_) => panic!("{what}: not done within {WAIT:?}"),
    }
}

async fn pair() -> (TcpStream, TcpStream) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
    let (s, _) = bounded("accept", l.accept()).await.unwrap();
    (c, s)
}

#[test]
fn owned_halves_read_and_write_from_two_tasks_with_a_deadline_each() {
    within(LIMIT, "owned halves", || {
        let rt = goro::Runtime::builder().procs(2).build().unwrap();
        rt.block_on(async {
            let (client, server) = pair().await;
            let (r, w) = server.into_split();
            let read_timed_out = Arc::new(AtomicBool::new(false));

            // The reader: its deadline fires while the client is silent.
            let flag = read_timed_out.clone();
            let reader = goro::spawn(async move {
                let deadline = Instant::now() + Duration::from_millis(50);
                r.set_read_deadline(Some(deadline));
                let e = bounded("read past its deadline", r.read(&mut [0; 16]))
                    .await
                    .expect_err("the client sent nothing: the read must time out");
                assert_eq!(e.kind(), ErrorKind::TimedOut, "{e}");
                assert!(Instant::now() >= deadline, "timed out before the deadline");
                flag.store(true, Ordering::SeqCst);
                // Cleared, the read half is usable again.
                r.set_read_deadline(None);
                let mut buf = [0; 4];
                bounded("read after clearing", r.read_exact(&mut buf))
                    .await
                    .unwrap();
                assert_eq!(&buf, b"done");
                r
            });

            // The writer: keeps writing while the reader times out, and
            // after; then its own deadline fails a write and nothing else.
            let flag = read_timed_out.clone();
            let writer = goro::spawn(async move {
                let chunk = [7u8; 1024];
                let mut sent = 0usize;
                let start = Instant::now();
                while !flag.load(Ordering::SeqCst) {
                    assert!(start.elapsed() < WAIT, "the read deadline never fired");
                    bounded("write before", w.write_all(&chunk)).await.unwrap();
                    sent += chunk.len();
                }
                for _ in 0..100 {
                    bounded("write after the read deadline", w.write_all(&chunk))
                        .await
                        .expect("the read deadline must not affect the write half");
                    sent += chunk.len();
                }
                w.set_write_deadline(Some(Instant::now()));
                let e = bounded("write past its deadline", w.write(&chunk))
                    .await
                    .unwrap_err();
                assert_eq!(e.kind(), ErrorKind::TimedOut, "{e}");
                w.set_write_deadline(None);
                bounded("write after clearing", w.write_all(b"tail"))
                    .await
                    .unwrap();
                sent + 4
                // `w` dropped: the write side is shut down, the client sees EOF.
            });

            // The client drains everything the writer sends, until EOF.
            let client = Arc::new(client);
            let c = client.clone();
            let drain = goro::spawn(async move {
                let mut got = 0usize;
                let mut buf = vec![0; 64 * 1024];
                loop {
                    match bounded("client read", c.read(&mut buf)).await.unwrap() {
                        0 => return got,
                        n => got += n,
                    }
                }
            });

            let sent = bounded("writer", writer).await.unwrap();
            assert!(sent > 100 * 1024, "wrote {sent} bytes");
            client.write_all(b"done").await.unwrap();
            let r = bounded("reader", reader).await.unwrap();
            let got = bounded("drain", drain).await.unwrap();
            assert_eq!(got, sent, "the client got every byte the writer sent");
            drop(r); // both halves gone: the socket closes
            let n = bounded("read after close", client.read(&mut [0; 4])).await;
            assert!(matches!(n, Ok(0) | Err(_)), "closed socket: {n:?}");
        });
    });
}

#[test]
fn borrowed_halves_keep_separate_deadlines() {
    within(LIMIT, "borrowed halves", || {
        let rt = goro::Runtime::builder().procs(1).build().unwrap();
        rt.block_on(async {
            let (client, server) = pair().await;
            let (r, w) = server.split();
            // Reads time out while writes go through...
            r.set_read_deadline(Some(Instant::now()));
            let e = bounded("read", r.read(&mut [0; 4])).await.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::TimedOut);
            bounded("write", w.write_all(b"ping")).await.unwrap();
            let mut buf = [0; 4];
            bounded("client read", client.read_exact(&mut buf))
                .await
                .unwrap();
            assert_eq!(&buf, b"ping");
            // ...and the other way round.
            r.set_read_deadline(None);
            w.set_write_deadline(Some(Instant::now()));
            let e = bounded("write", w.write(b"x")).await.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::TimedOut);
            client.write_all(b"pong").await.unwrap();
            bounded("read", r.read_exact(&mut buf)).await.unwrap();
            assert_eq!(&buf, b"pong");
            // A read and a write waiting at once in one task.
            w.set_write_deadline(None);
            r.set_read_deadline(Some(Instant::now() + Duration::from_millis(20)));
            let (read, wrote) = bounded(
                "read and write together",
                futures::future::join(r.read(&mut [0; 4]), w.write_all(b"more")),
            )
            .await;
            assert_eq!(read.unwrap_err().kind(), ErrorKind::TimedOut);
            wrote.unwrap();
        });
    });
}

#[test]
fn reunite_gives_the_stream_back_only_for_its_own_halves() {
    within(LIMIT, "reunite", || {
        let rt = goro::Runtime::builder().procs(1).build().unwrap();
        rt.block_on(async {
            let (a, b) = pair().await;
            let (ar, aw) = a.into_split();
            let (br, bw) = b.into_split();
            let e = ar.reunite(bw).expect_err("halves of two streams");
            let (ar, bw) = (e.0, e.1);
            let a = ar.reunite(aw).expect("halves of one stream");
            let b = bw.reunite(br).expect("halves of one stream");
            // Reunited, the write side was not shut down.
            a.write_all(b"ok").await.unwrap();
            let mut buf = [0; 2];
            bounded("read", b.read_exact(&mut buf)).await.unwrap();
            assert_eq!(&buf, b"ok");
            // read_exact on a peer that shuts down first: UnexpectedEof.
            a.shutdown(std::net::Shutdown::Write).unwrap();
            let e = bounded("read_exact", b.read_exact(&mut [0; 8]))
                .await
                .unwrap_err();
            assert_eq!(e.kind(), ErrorKind::UnexpectedEof);
        });
    });
}
