//! Accept retry: the delay before an accept loop retries after running out
//! of descriptors or memory (the accept loop of Go's `http.Server.Serve`).
//! Not the runtime's spin-wait back-off (`sched/backoff.rs`): this one
//! sleeps milliseconds between failed `accept`s, in the calling task.
//!
//! A server that runs out of file descriptors (`EMFILE`, `ENFILE`) or
//! kernel memory (`ENOBUFS`, `ENOMEM`) cannot accept, but the connection
//! stays in the backlog and `accept` would fail again at once: a loop that
//! retries immediately burns a core until some connection closes, and one
//! that gives up kills the server for a passing condition. Go's `net/http`
//! sleeps instead, 5 ms after the first failure, doubling up to 1 s, and
//! starts over at 5 ms after the next success;
//! [`TcpListener::accept_with_backoff`] does the same. Errors that concern
//! one connection only and are not the listener's (`ECONNABORTED`: the
//! client left while queued; `EINTR`; the network errors that Linux's
//! `accept(2)` passes on from the new socket) are retried at once, as Go's
//! `poll.FD.Accept` retries `ECONNABORTED`. Everything else, including the
//! listener's own deadline, goes to the caller.
//!
//! The back-off state lives in the call: one call is one run of failures,
//! and it ends with the next accepted connection, which is exactly when Go
//! resets its `tempDelay`.
//!
//! # Rejected
//!
//! - Backing off on every error, as Go's `Serve` does for anything whose
//!   `Temporary()` is true (which includes a passed deadline): a caller
//!   that sets an accept deadline wants to see it, not a retry loop.
//! - A back-off object kept by the caller across calls: the caller would
//!   have to remember to reset it on success, and nothing else needs it.

use crate::net::{TcpListener, TcpStream};
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

/// The first back-off after a resource error (Go's `net/http`: 5 ms).
const FIRST_DELAY: Duration = Duration::from_millis(5);
/// The longest back-off (Go's `net/http`: 1 s).
const MAX_DELAY: Duration = Duration::from_secs(1);

/// What to do about an `accept` error.
#[derive(Debug, PartialEq, Eq)]
enum Retry {
    /// This connection failed, not the listener: try the next one now.
    Now,
    /// The process or the system is out of a resource: wait, then retry.
    Later,
    /// The caller's business (a deadline, a closed or broken listener).
    No,
}

fn classify(e: &io::Error) -> Retry {
    match e.raw_os_error() {
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM) => Retry::Later,
        // accept(2), "Error handling": pending network errors of the new
        // socket are reported by accept and should be treated as EAGAIN.
        Some(
            libc::ECONNABORTED
            | libc::EINTR
            | libc::EPROTO
            | libc::ENETDOWN
            | libc::ENOPROTOOPT
            | libc::EHOSTDOWN
            | libc::ENONET
            | libc::EHOSTUNREACH
            | libc::EOPNOTSUPP
            | libc::ENETUNREACH,
        ) => Retry::Now,
        _ => Retry::No,
    }
}

/// The back-off after `prev` (`None`: the first failure).
fn next_delay(prev: Option<Duration>) -> Duration {
    prev.map_or(FIRST_DELAY, |d| (d * 2).min(MAX_DELAY))
}

impl TcpListener {
    /// Waits for a connection as [`TcpListener::accept`] does, but rides out
    /// resource exhaustion the way Go's `http.Server` does: on `EMFILE`,
    /// `ENFILE`, `ENOBUFS` or `ENOMEM` it calls `on_error` with the error
    /// and the delay it is about to sleep (5 ms, doubling up to 1 s), sleeps,
    /// and tries again. Errors of a single queued connection
    /// (`ECONNABORTED` and the like) are skipped at once. Any other error,
    /// including `TimedOut` past the listener's deadline, is returned.
    ///
    /// `on_error` is where a server logs; it may not block.
    ///
    /// ```
    /// # goro::Runtime::builder().procs(2).build().unwrap().block_on(async {
    /// let l = goro::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let addr = l.local_addr()?;
    /// goro::spawn(async move { goro::net::TcpStream::connect(addr).await.unwrap() });
    /// // A server's accept loop: log, back off, keep serving.
    /// let (conn, _peer) = l
    ///     .accept_with_backoff(|e, delay| eprintln!("accept: {e}; retrying in {delay:?}"))
    ///     .await?;
    /// # drop(conn);
    /// # Ok::<(), std::io::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn accept_with_backoff(
        &self,
        mut on_error: impl FnMut(&io::Error, Duration),
    ) -> io::Result<(TcpStream, SocketAddr)> {
        let mut delay = None;
        loop {
            match self.accept().await {
                Ok(c) => return Ok(c),
                Err(e) => match classify(&e) {
                    Retry::Now => {}
                    Retry::Later => {
                        let d = next_delay(delay);
                        delay = Some(d);
                        on_error(&e, d);
                        crate::time::sleep(d).await;
                    }
                    Retry::No => return Err(e),
                },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_from_5ms_to_1s_as_go_does() {
        let mut d = None;
        let mut seen = Vec::new();
        for _ in 0..10 {
            let n = next_delay(d);
            seen.push(n.as_millis());
            d = Some(n);
        }
        assert_eq!(seen, [5, 10, 20, 40, 80, 160, 320, 640, 1000, 1000]);
    }

    #[test]
    fn resource_errors_back_off_and_deadlines_do_not() {
        let os = io::Error::from_raw_os_error;
        assert_eq!(classify(&os(libc::EMFILE)), Retry::Later);
        assert_eq!(classify(&os(libc::ENFILE)), Retry::Later);
        assert_eq!(classify(&os(libc::ECONNABORTED)), Retry::Now);
        assert_eq!(classify(&os(libc::EBADF)), Retry::No);
        assert_eq!(classify(&io::ErrorKind::TimedOut.into()), Retry::No);
    }
}
