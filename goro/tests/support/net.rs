//! Helpers shared by the `net_*` tests (`support::net`): file-descriptor
//! limits, a connected loopback pair and `read_exact`.

use std::time::Duration;

/// Raises the soft `RLIMIT_NOFILE` to at least `want` (up to the hard
/// limit); returns the soft limit now in force.
pub fn raise_fd_limit(want: u64) -> u64 {
    // SAFETY: getrlimit/setrlimit read and write the struct we pass.
    unsafe {
        let mut rl: libc::rlimit = std::mem::zeroed();
        assert_eq!(
            libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl),
            0,
            "getrlimit"
        );
        if (rl.rlim_cur as u64) < want {
            rl.rlim_cur = (want as libc::rlim_t).min(rl.rlim_max);
            assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &rl), 0, "setrlimit");
        }
        rl.rlim_cur as u64
    }
}

/// Sets the soft `RLIMIT_NOFILE` to `n` (the EMFILE tests); returns the
/// previous soft limit, to restore.
pub fn set_soft_fd_limit(n: u64) -> u64 {
    // SAFETY: getrlimit/setrlimit read and write the struct we pass.
    unsafe {
        let mut rl: libc::rlimit = std::mem::zeroed();
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl), 0);
        let old = rl.rlim_cur as u64;
        rl.rlim_cur = n as libc::rlim_t;
        assert_eq!(
            libc::setrlimit(libc::RLIMIT_NOFILE, &rl),
            0,
            "setrlimit({n})"
        );
        old
    }
}

/// A connected loopback pair: (the client's end, the server's end).
pub async fn pair() -> (goro::net::TcpStream, goro::net::TcpStream) {
    let l = goro::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let c = goro::net::TcpStream::connect(l.local_addr().unwrap())
        .await
        .unwrap();
    let (s, _) = l.accept().await.unwrap();
    (c, s)
}

/// Reads until `buf` is full; fails on EOF.
pub async fn read_exact(s: &goro::net::TcpStream, buf: &mut [u8]) -> std::io::Result<()> {
    let mut n = 0;
    while n < buf.len() {
        match s.read(&mut buf[n..]).await? {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            k => n += k,
        }
    }
    Ok(())
}

/// A limit for whole tests: generous, since CI machines are shared.
pub const LIMIT: Duration = Duration::from_secs(60);
