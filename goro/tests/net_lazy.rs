//! A runtime that never opens a socket never makes an epoll; the first
//! socket makes exactly one. (Its own binary: it counts the process's
//! epoll descriptors.)

mod support;

use std::time::Duration;
use support::within;

fn epoll_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd")
        .flatten()
        .filter(|e| {
            std::fs::read_link(e.path())
                .map(|p| p.to_string_lossy().contains("eventpoll"))
                .unwrap_or(false)
        })
        .count()
}

#[test]
fn the_epoll_is_made_on_the_first_socket_only() {
    within(Duration::from_secs(60), "lazy poller", || {
        let base = epoll_fds();
        let rt = goro::Runtime::builder().procs(2).build().unwrap();
        rt.block_on(async {
            let hs: Vec<_> = (0..100)
                .map(|i| {
                    goro::spawn(async move {
                        goro::time::sleep(Duration::from_millis(1)).await;
                        i
                    })
                })
                .collect();
            for h in hs {
                h.await.unwrap();
            }
        });
        assert_eq!(epoll_fds(), base, "no socket, no epoll");
        assert_eq!(rt.stats().netpolls, 0);
        // The epoll and the registry's duplicate of its descriptor.
        let first = rt.block_on(async {
            let _a = goro::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
            epoll_fds()
        });
        assert!(first > base, "the first socket made the epoll");
        rt.block_on(async {
            let _b = goro::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
            let _c = goro::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
        });
        assert_eq!(epoll_fds(), first, "one epoll per runtime, kept");
    });
}
