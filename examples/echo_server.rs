//! A TCP echo server on goro: one task per connection, Go's deadlines.
//!
//! Usage: `cargo run --release -p goro --example echo_server -- [--addr HOST:PORT] [--procs N] [--seconds S]`
//! then e.g. `nc 127.0.0.1 8080`.
//!
//! Each read waits at most 5 s (the read deadline is set before it, as a Go
//! server calls `SetReadDeadline`), so a client that goes quiet, or
//! trickles bytes slower than that, is disconnected; each echo must be
//! written within 5 s too, so a client that sends but never reads is cut.
//! Accept errors such as `EMFILE` are logged and ridden out with Go's
//! back-off (5 ms doubling to 1 s) by `TcpListener::accept_with_backoff`.
//!
//! It prints `listening on HOST:PORT` once it accepts, so a script can
//! start it with `--addr 127.0.0.1:0` and read the port.

#[path = "net_flags.rs"]
mod net_flags;

use goro::net::TcpStream;
use std::time::{Duration, Instant};

const NAME: &str = "echo_server";
/// How long a read may wait for the client.
const READ_TIMEOUT: Duration = Duration::from_secs(5);
/// How long an echo may wait for the client to take it.
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// Echoes until the client leaves or a deadline passes (then the stream
/// is dropped, which closes it).
async fn echo(s: TcpStream) {
    let mut buf = vec![0; 16 << 10];
    loop {
        s.set_read_deadline(Some(Instant::now() + READ_TIMEOUT));
        let n = match s.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        s.set_write_deadline(Some(Instant::now() + WRITE_TIMEOUT));
        if s.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

fn main() {
    let flags = net_flags::parse(NAME, "echoes what each TCP client sends (goro)");
    let rt = net_flags::runtime(NAME, flags.procs);
    rt.block_on(net_flags::serve(NAME, flags.addr, flags.seconds, echo));
}
