//! The command line of the server examples (`echo_server`, `http_hello`),
//! parsed by hand: `--addr HOST:PORT`, `--procs N`, `--seconds S`,
//! `--help`; and their accept loop ([`serve`]).
//!
//! Included by each with `#[path = "net_flags.rs"] mod net_flags;`.

use std::net::{SocketAddr, ToSocketAddrs};

/// The parsed flags.
pub struct Flags {
    /// Where to listen (the first address `--addr` resolves to).
    pub addr: SocketAddr,
    /// `--procs`, if given (else goro's default: `GORO_PROCS` or the
    /// available parallelism).
    pub procs: Option<usize>,
    /// `--seconds`: stop accepting after this long and return from
    /// `main` (so a runtime-wide trace, `GORO_TRACE`, is written whole);
    /// `None`: serve until killed.
    pub seconds: Option<std::time::Duration>,
}

/// Parses the process's arguments. `--help` prints `about` and the flags
/// and exits 0; a bad flag prints one line naming the flag and its
/// accepted form and exits 2.
pub fn parse(name: &str, about: &str) -> Flags {
    match parse_from(std::env::args().skip(1)) {
        Ok(Some(f)) => f,
        Ok(None) => {
            println!("{name}: {about}\n");
            println!("Usage: {name} [--addr HOST:PORT] [--procs N] [--seconds S]\n");
            println!("  --addr HOST:PORT  address to listen on (default 127.0.0.1:8080;");
            println!("                    port 0 picks a free port; the address is printed");
            println!("                    as `listening on HOST:PORT` once ready)");
            println!("  --procs N         goro Ps, 1 to 4096 (default: GORO_PROCS, else the");
            println!("                    number of CPUs)");
            println!("  --seconds S       stop after S seconds and exit 0 (default: serve");
            println!("                    until killed)");
            println!("  -h, --help        this help");
            std::process::exit(0);
        }
        Err(msg) => {
            eprintln!("{name}: {msg}");
            std::process::exit(2);
        }
    }
}

/// `Ok(None)` for `--help`.
fn parse_from(mut args: impl Iterator<Item = String>) -> Result<Option<Flags>, String> {
    let mut addr = None;
    let mut procs = None;
    let mut seconds = None;
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        match flag.as_str() {
            "-h" | "--help" => return Ok(None),
            "--addr" | "--procs" | "--seconds" => {
                let form = match flag.as_str() {
                    "--addr" => "HOST:PORT",
                    "--procs" => "N",
                    _ => "S",
                };
                let v = inline
                    .or_else(|| args.next())
                    .ok_or_else(|| format!("{flag}: missing its value, expected {flag} {form}"))?;
                match flag.as_str() {
                    "--addr" => addr = Some(parse_addr(&v)?),
                    "--procs" => procs = Some(parse_procs(&v)?),
                    _ => seconds = Some(parse_seconds(&v)?),
                }
            }
            _ => {
                return Err(format!(
                    "unknown argument {arg:?}: accepted --addr HOST:PORT, --procs N, --seconds S, --help"
                ))
            }
        }
    }
    Ok(Some(Flags {
        addr: match addr {
            Some(a) => a,
            None => parse_addr("127.0.0.1:8080")?,
        },
        procs,
        seconds,
    }))
}

fn parse_seconds(v: &str) -> Result<std::time::Duration, String> {
    match v.parse::<u64>() {
        Ok(n) if n > 0 => Ok(std::time::Duration::from_secs(n)),
        _ => Err(format!(
            "--seconds {v:?}: expected a whole number of seconds, 1 or more"
        )),
    }
}

fn parse_addr(v: &str) -> Result<SocketAddr, String> {
    let bad = |why: String| format!("--addr {v:?}: {why}; expected HOST:PORT, e.g. 127.0.0.1:8080");
    v.to_socket_addrs()
        .map_err(|e| bad(e.to_string()))?
        .next()
        .ok_or_else(|| bad("no address".into()))
}

fn parse_procs(v: &str) -> Result<usize, String> {
    match v.parse::<usize>() {
        Ok(n) if (1..=4096).contains(&n) => Ok(n),
        _ => Err(format!(
            "--procs {v:?}: expected a whole number from 1 to 4096"
        )),
    }
}

/// A runtime with `procs` Ps (goro's default when `None`); exits 2 if goro
/// rejects the setting (a bad `GORO_PROCS`, say).
pub fn runtime(name: &str, procs: Option<usize>) -> goro::Runtime {
    let b = goro::Runtime::builder();
    let b = match procs {
        Some(n) => b.procs(n),
        None => b,
    };
    b.build().unwrap_or_else(|e| {
        eprintln!("{name}: {e}");
        std::process::exit(2);
    })
}

/// Listens on `addr`, prints the address once ready, and spawns
/// `handle(stream)` for every connection, forever. Accept errors from
/// running out of descriptors or memory are ridden out with Go net/http's
/// back-off (`accept_with_backoff`); any other, or a failed bind, exits 1.
pub async fn serve<F>(
    name: &str,
    addr: SocketAddr,
    seconds: Option<std::time::Duration>,
    handle: impl Fn(goro::net::TcpStream) -> F,
) where
    F: std::future::Future<Output = ()> + Send + 'static,
{
    let l = goro::net::TcpListener::bind(addr)
        .await
        .unwrap_or_else(|e| {
            eprintln!("{name}: listen on {addr}: {e}");
            std::process::exit(1);
        });
    println!("listening on {}", l.local_addr().expect("local address"));
    let stop_at = seconds.map(|d| std::time::Instant::now() + d);
    loop {
        let accept = l.accept_with_backoff(|e, delay| {
            eprintln!("{name}: accept: {e}; retrying in {delay:?}")
        });
        let accepted = match stop_at {
            None => accept.await,
            Some(t) => {
                let left = t.saturating_duration_since(std::time::Instant::now());
                match goro::time::timeout(left, accept).await {
                    Ok(a) => a,
                    Err(_) => return, // served for the time asked
                }
            }
        };
        match accepted {
            Ok((stream, _peer)) => drop(goro::spawn(handle(stream))),
            Err(e) => {
                // Not a passing condition (the listener itself broke).
                eprintln!("{name}: accept: {e}");
                std::process::exit(1);
            }
        }
    }
}
