//! # goro: write Rust concurrency the way you write Go
//!
//! goro is an async runtime for Rust, like tokio, built for code written
//! the way Go code is: start a cheap task for every piece of concurrent
//! work, pass values over channels, wait on several things at once with
//! `select!`, bound work with timeouts and cancel it with contexts, serve
//! TCP and HTTP. Underneath runs a port of Go's own scheduler, so tasks are
//! spread over your cores the way goroutines are: per-thread queues, idle
//! threads stealing work, timers kept per thread, a task that never waits
//! still giving way to others.
//!
//! ```
//! use std::time::Duration;
//!
//! #[goro::main(procs = 2)]
//! async fn main() {
//!     let (tx, rx) = goro::chan::bounded::<u64>(0); // unbuffered, as in Go
//!     goro::spawn(async move {
//!         for i in 0..3 {
//!             tx.send(i).await.unwrap();
//!         }
//!     }); // `tx` is dropped when the task ends: the channel closes
//!     let mut got = Vec::new();
//!     loop {
//!         goro::select! {
//!             recv(rx) -> v => match v {
//!                 Ok(v) => got.push(v),
//!                 Err(_) => break, // closed
//!             },
//!             recv(goro::time::after(Duration::from_secs(10))) -> _ => panic!("too slow"),
//!         }
//!     }
//!     assert_eq!(got, [0, 1, 2]);
//! }
//! ```
//!
//! # From Go to goro
//!
//! | Go | goro |
//! |---|---|
//! | `go f()` | [`goro::spawn(f())`](spawn), which returns a [`JoinHandle`] to await the result |
//! | `runtime.Gosched()` | [`goro::yield_now().await`](yield_now) |
//! | `runtime.GOMAXPROCS(n)` | [`Builder::procs(n)`](Builder::procs), `#[goro::main(procs = n)]`, or `GORO_PROCS=n` |
//! | `ch := make(chan T, n)` | [`let (tx, rx) = goro::chan::bounded::<T>(n)`](chan::bounded) |
//! | `ch <- v`, `v, ok := <-ch`, `close(ch)` | `tx.send(v).await`, `rx.recv().await` (`Err` once closed and drained), `tx.close()` |
//! | `select { case ... }` | [`goro::select! { recv(rx) -> v => ..., send(tx, v) -> r => ..., default => ... }`](select!) |
//! | `for v := range ch` | `while let Ok(v) = rx.recv().await`, `rx` as a [`Stream`](futures_core::Stream), or [`rx.iter()`](chan::Receiver::iter) on a plain thread |
//! | `case <-time.After(d):` beside a receive or send | [`rx.recv_timeout(d).await`](chan::Receiver::recv_timeout), [`tx.send_timeout(v, d).await`](chan::Sender::send_timeout), or `default(d) => ...` in [`select!`] |
//! | a nil channel in a `select` | [`goro::chan::never()`](chan::never) |
//! | `select {}` | `goro::select! {}` (waits forever) |
//! | crossbeam's `select_biased!` | `goro::select! { biased; ... }` |
//! | crossbeam's `select!` on a thread | [`goro::select_blocking!`](select_blocking!) |
//! | crossbeam's `unbounded()` | [`goro::chan::unbounded()`](chan::unbounded) |
//! | `time.Sleep(d)` | [`goro::time::sleep(d).await`](time::sleep) |
//! | `time.After(d)` | [`goro::time::after(d)`](time::after) (a channel, for `select!`) |
//! | `time.NewTimer(d)` | [`goro::time::Timer::new(d)`](time::Timer) |
//! | `time.NewTicker(d)` | [`goro::time::Ticker::new(d)`](time::Ticker) |
//! | `time.AfterFunc(d, f)` | [`goro::time::after_func(d, f)`](time::after_func) |
//! | `context.WithTimeout(ctx, d)` | [`Context::with_timeout(&ctx, d)`](context::Context::with_timeout); `<-ctx.Done()` is `ctx.done().recv().await` |
//! | `context.WithCancel(ctx)` | [`Context::with_cancel(&ctx)`](context::Context::with_cancel) |
//! | `sync.WaitGroup` | [`goro::sync::WaitGroup`](sync::WaitGroup) (`add`, `done`, `wait().await`) |
//! | `sync.Mutex` | [`goro::sync::Mutex<T>`](sync::Mutex) (it owns the data it guards; `lock().await`) |
//! | `sync.RWMutex` | [`goro::sync::RwLock<T>`](sync::RwLock) |
//! | `sync.Once` | [`goro::sync::OnceCell<T>`](sync::OnceCell) (`get_or_init`) |
//! | `sync.Pool` | [`goro::sync::Pool<T>`](sync::Pool) |
//! | `net.Listen("tcp", addr)`, `l.Accept()` | [`TcpListener::bind(addr).await`](net::TcpListener::bind), [`l.accept().await`](net::TcpListener::accept) |
//! | `net.Dial("tcp", addr)` | [`TcpStream::connect(addr).await`](net::TcpStream::connect) |
//! | `conn.SetReadDeadline(t)` | [`s.set_read_deadline(Some(t))`](net::TcpStream::set_read_deadline) |
//!
//! Each row as running code:
//!
//! ```
//! # #[goro::main(procs = 2)] async fn main() {
//! // go f(), runtime.Gosched()
//! let h = goro::spawn(async {
//!     goro::yield_now().await; // let other tasks run
//!     6 * 7
//! });
//! assert_eq!(h.await.unwrap(), 42);
//! # }
//! ```
//!
//! ```
//! // runtime.GOMAXPROCS(4)
//! let rt = goro::Runtime::builder().procs(4).build().unwrap();
//! assert_eq!(rt.procs(), 4);
//! assert_eq!(rt.block_on(async { goro::spawn(async { 1 }).await.unwrap() }), 1);
//! ```
//!
//! ```
//! # #[goro::main(procs = 2)] async fn main() {
//! // ch := make(chan int, 2); ch <- 1; ch <- 2; close(ch); for v := range ch {...}
//! let (tx, rx) = goro::chan::bounded::<i32>(2);
//! tx.send(1).await.unwrap();
//! tx.send(2).await.unwrap();
//! tx.close();
//! let mut sum = 0;
//! while let Ok(v) = rx.recv().await {
//!     sum += v;
//! }
//! assert_eq!(sum, 3);
//! # }
//! ```
//!
//! ```
//! # #[goro::main(procs = 2)] async fn main() {
//! // select { case v := <-in: ...; case out <- 1: ...; default: ... }
//! let (in_tx, in_rx) = goro::chan::bounded::<&str>(1);
//! let (out_tx, _out_rx) = goro::chan::bounded::<i32>(0); // nobody receives
//! in_tx.send("hi").await.unwrap();
//! let got = goro::select! {
//!     recv(in_rx) -> v => v.unwrap(),
//!     send(out_tx, 1) -> _ => "sent",
//! };
//! assert_eq!(got, "hi");
//! let nothing = goro::select! {
//!     recv(in_rx) -> _ => false,
//!     default => true, // nothing ready: does not wait
//! };
//! assert!(nothing);
//! # }
//! ```
//!
//! ```
//! use futures::StreamExt;
//! use std::time::Duration;
//! # #[goro::main(procs = 2)] async fn main() {
//! // for v := range ch; a receive with a timeout; a nil channel; priority
//! let (tx, rx) = goro::chan::unbounded::<u32>();
//! for i in 1..=3 {
//!     tx.send(i).await.unwrap();
//! }
//! drop(tx); // the last sender: closes the channel
//! assert_eq!(rx.clone().collect::<Vec<_>>().await, [1, 2, 3]);
//! let (tx, rx) = goro::chan::bounded::<u32>(1);
//! assert!(rx.recv_timeout(Duration::from_millis(1)).await.is_err());
//! let off = goro::chan::never::<u32>(); // a case switched off
//! tx.send(7).await.unwrap();
//! let got = goro::select! {
//!     biased; // the first ready case in source order
//!     recv(off) -> _ => 0,
//!     recv(rx) -> v => v.unwrap(),
//!     default(Duration::from_secs(10)) => 0,
//! };
//! assert_eq!(got, 7);
//! # }
//! ```
//!
//! ```
//! // crossbeam's select! and iteration on plain threads
//! let (tx, rx) = goro::chan::bounded::<u32>(0);
//! let producer = std::thread::spawn(move || {
//!     for i in 0..3 {
//!         goro::select_blocking! {
//!             send(tx, i) -> r => r.unwrap(),
//!         }
//!     }
//! });
//! assert_eq!(rx.iter().sum::<u32>(), 3);
//! producer.join().unwrap();
//! ```
//!
//! ```
//! use std::time::{Duration, Instant};
//! # #[goro::main(procs = 2)] async fn main() {
//! // time.Sleep, time.After, time.NewTimer
//! let t0 = Instant::now();
//! goro::time::sleep(Duration::from_millis(1)).await;
//! assert!(t0.elapsed() >= Duration::from_millis(1));
//! let fired_at = goro::time::after(Duration::from_millis(1)).recv().await.unwrap();
//! assert!(fired_at >= t0);
//! let t = goro::time::Timer::new(Duration::from_secs(3600));
//! assert!(t.stop(), "stopped before it fired");
//! # }
//! ```
//!
//! ```
//! use std::sync::atomic::{AtomicU32, Ordering};
//! use std::sync::Arc;
//! use std::time::Duration;
//! # #[goro::main(procs = 2)] async fn main() {
//! // time.NewTicker, time.AfterFunc
//! let ticker = goro::time::Ticker::new(Duration::from_millis(1));
//! for _ in 0..3 {
//!     ticker.rx().recv().await.unwrap();
//! }
//! ticker.stop();
//! let calls = Arc::new(AtomicU32::new(0));
//! let (done_tx, done_rx) = goro::chan::bounded::<()>(1);
//! let c = calls.clone();
//! let _t = goro::time::after_func(Duration::from_millis(1), move || {
//!     c.fetch_add(1, Ordering::SeqCst);
//!     let _ = done_tx.try_send(());
//! });
//! done_rx.recv().await.unwrap();
//! assert_eq!(calls.load(Ordering::SeqCst), 1);
//! # }
//! ```
//!
//! ```
//! use goro::context::{Context, ContextError};
//! use std::time::Duration;
//! # #[goro::main(procs = 2)] async fn main() {
//! // ctx, cancel := context.WithTimeout(parent, d)
//! let (ctx, _) = Context::with_timeout(&Context::background(), Duration::from_millis(5));
//! let _ = ctx.done().recv().await; // <-ctx.Done()
//! assert_eq!(ctx.err(), Some(ContextError::DeadlineExceeded));
//! // ctx, cancel := context.WithCancel(parent); cancel()
//! let (ctx, cancel) = Context::with_cancel(&Context::background());
//! cancel.cancel();
//! assert_eq!(ctx.err(), Some(ContextError::Canceled));
//! # }
//! ```
//!
//! ```
//! use goro::sync::{Mutex, OnceCell, Pool, RwLock, WaitGroup};
//! use std::sync::Arc;
//! # #[goro::main(procs = 2)] async fn main() {
//! // sync.WaitGroup and sync.Mutex: ten tasks add to a counter
//! let wg = WaitGroup::new();
//! let total = Arc::new(Mutex::new(0));
//! for i in 1..=10 {
//!     wg.add(1);
//!     let (wg, total) = (wg.clone(), total.clone());
//!     goro::spawn(async move {
//!         *total.lock().await += i;
//!         wg.done();
//!     });
//! }
//! wg.wait().await;
//! assert_eq!(*total.lock().await, 55);
//! // sync.RWMutex
//! let config = RwLock::new(String::from("v1"));
//! *config.write().await = String::from("v2");
//! assert_eq!(*config.read().await, "v2");
//! // sync.Once
//! static GREETING: OnceCell<String> = OnceCell::new();
//! let g = GREETING.get_or_init(|| async { String::from("hello") }).await;
//! assert_eq!(g, "hello");
//! // sync.Pool
//! let bufs = Pool::new(|| Vec::<u8>::with_capacity(4096));
//! let mut b = bufs.get();
//! b.extend_from_slice(b"data");
//! b.clear();
//! bufs.put(b);
//! # }
//! ```
//!
//! ```
//! use goro::net::{TcpListener, TcpStream};
//! use std::time::{Duration, Instant};
//! # #[goro::main(procs = 2)] async fn main() -> std::io::Result<()> {
//! // l, _ := net.Listen("tcp", "127.0.0.1:0"); conn, _ := l.Accept()
//! let l = TcpListener::bind("127.0.0.1:0").await?;
//! let addr = l.local_addr()?;
//! goro::spawn(async move {
//!     let (conn, _peer) = l.accept().await.unwrap();
//!     conn.write_all(b"hello").await.unwrap();
//! });
//! // conn, _ := net.Dial("tcp", addr); conn.SetReadDeadline(...)
//! let conn = TcpStream::connect(addr).await?;
//! conn.set_read_deadline(Some(Instant::now() + Duration::from_secs(10)));
//! let mut buf = [0; 5];
//! conn.read_exact(&mut buf).await?;
//! assert_eq!(&buf, b"hello");
//! # Ok(())
//! # }
//! ```
//!
//! # Running async code
//!
//! `#[goro::main]` turns `async fn main` into a program that runs it on a
//! goro runtime; `#[goro::test]` does the same for a test. Without the
//! macros, build a [`Runtime`] and call [`Runtime::block_on`]:
//!
//! ```
//! let rt = goro::Runtime::builder().procs(2).build().expect("runtime");
//! let v = rt.block_on(async { goro::spawn(async { 1 + 1 }).await.unwrap() });
//! assert_eq!(v, 2);
//! ```
//!
//! Everything that waits (channels, timers, sockets, `goro::sync`) needs to
//! run inside a runtime: in a task, or inside `block_on`. Blocking calls
//! (a file read, a CPU-heavy loop) belong in [`spawn_blocking`] or
//! [`block_in_place`], so they do not hold up the tasks sharing a thread.
//!
//! # Common tasks
//!
//! ## Spawn a task, get its result
//!
//! A task's panic does not bring down the program: it comes back as a
//! [`JoinError`]. Dropping a [`JoinHandle`] lets the task run on (as a Go
//! goroutine); [`JoinHandle::abort`] stops it.
//!
//! ```
//! # #[goro::main(procs = 2)] async fn main() {
//! let ok = goro::spawn(async { "done" });
//! let bad = goro::spawn(async { panic!("boom") });
//! assert_eq!(ok.await.unwrap(), "done");
//! assert!(bad.await.unwrap_err().is_panic());
//! # }
//! ```
//!
//! ## Wait for many tasks
//!
//! Keep their handles and await each (results in order), or count them
//! with a [`sync::WaitGroup`] as in Go.
//!
//! ```
//! # #[goro::main(procs = 2)] async fn main() {
//! let handles: Vec<_> = (0..10).map(|i| goro::spawn(async move { i * i })).collect();
//! let mut sum = 0;
//! for h in handles {
//!     sum += h.await.unwrap();
//! }
//! assert_eq!(sum, 285);
//! # }
//! ```
//!
//! ## Time out
//!
//! [`time::timeout`] bounds any future; in a `select!`, a
//! [`time::after`] channel is the timeout case.
//!
//! ```
//! use std::time::Duration;
//! # #[goro::main(procs = 2)] async fn main() {
//! let slow = std::future::pending::<()>();
//! assert!(goro::time::timeout(Duration::from_millis(5), slow).await.is_err());
//!
//! let (_tx, rx) = goro::chan::bounded::<u32>(0); // nothing will arrive
//! let what = goro::select! {
//!     recv(rx) -> _ => "message",
//!     recv(goro::time::after(Duration::from_millis(5))) -> _ => "timed out",
//! };
//! assert_eq!(what, "timed out");
//! # }
//! ```
//!
//! ## Cancel work
//!
//! Hand a [`context::Context`] to the workers; each selects on
//! `ctx.done()` next to its work, and one `cancel()` (or the deadline)
//! stops them all. Dropping the cancel handle does not cancel: as in Go,
//! `let (ctx, _) = Context::with_timeout(..)` lives until its deadline.
//!
//! ```
//! use goro::context::Context;
//! # #[goro::main(procs = 2)] async fn main() {
//! let (ctx, cancel) = Context::with_cancel(&Context::background());
//! let (jobs_tx, jobs_rx) = goro::chan::bounded::<u32>(0);
//! let workers: Vec<_> = (0..4)
//!     .map(|_| {
//!         let (ctx, jobs) = (ctx.clone(), jobs_rx.clone());
//!         goro::spawn(async move {
//!             let mut done = 0;
//!             loop {
//!                 goro::select! {
//!                     recv(jobs) -> job => match job {
//!                         Ok(_) => done += 1,
//!                         Err(_) => return done,
//!                     },
//!                     recv(ctx.done()) -> _ => return done, // cancelled
//!                 }
//!             }
//!         })
//!     })
//!     .collect();
//! for job in 0..8 {
//!     jobs_tx.send(job).await.unwrap();
//! }
//! cancel.cancel(); // every worker stops
//! let mut total = 0;
//! for w in workers {
//!     total += w.await.unwrap();
//! }
//! assert_eq!(total, 8);
//! # }
//! ```
//!
//! ## Serve TCP
//!
//! One task per connection, as a Go server runs one goroutine per
//! connection; [`net::TcpListener::accept_with_backoff`] rides out running
//! out of file descriptors the way Go's `net/http` does.
//!
//! ```
//! use goro::net::{TcpListener, TcpStream};
//! # #[goro::main(procs = 2)] async fn main() -> std::io::Result<()> {
//! let l = TcpListener::bind("127.0.0.1:0").await?;
//! let addr = l.local_addr()?;
//! goro::spawn(async move {
//!     loop {
//!         let Ok((conn, _)) = l.accept().await else { continue };
//!         goro::spawn(async move {
//!             // An echo server: read until the client shuts down.
//!             let mut buf = [0; 1024];
//!             while let Ok(n @ 1..) = conn.read(&mut buf).await {
//!                 if conn.write_all(&buf[..n]).await.is_err() {
//!                     break;
//!                 }
//!             }
//!         });
//!     }
//! });
//! let c = TcpStream::connect(addr).await?;
//! c.write_all(b"echo").await?;
//! let mut buf = [0; 4];
//! c.read_exact(&mut buf).await?;
//! assert_eq!(&buf, b"echo");
//! # Ok(())
//! # }
//! ```
//!
//! ## Serve HTTP
//!
//! With the cargo feature `hyper`, [`net::hyper`] runs hyper 1.x's HTTP/1
//! server and client connections as goro tasks (`examples/http_hello.rs`
//! is a complete server with Go's read and write timeouts):
//!
//! ```
//! # #[cfg(feature = "hyper")]
//! # #[goro::main(procs = 2)] async fn main() -> std::io::Result<()> {
//! use goro::net::hyper::{GoroIo, GoroTimer};
//! use hyper::{body::Incoming, service::service_fn, Request, Response};
//! use std::convert::Infallible;
//!
//! let l = goro::net::TcpListener::bind("127.0.0.1:0").await?;
//! let addr = l.local_addr()?;
//! goro::spawn(async move {
//!     loop {
//!         let Ok((conn, _)) = l.accept().await else { continue };
//!         goro::spawn(async move {
//!             let hello = service_fn(|_req: Request<Incoming>| async {
//!                 Ok::<_, Infallible>(Response::new(String::from("Hello, World!")))
//!             });
//!             let _ = hyper::server::conn::http1::Builder::new()
//!                 .timer(GoroTimer)
//!                 .serve_connection(GoroIo::new(conn), hello)
//!                 .await;
//!         });
//!     }
//! });
//! # let c = goro::net::TcpStream::connect(addr).await?;
//! # c.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").await?;
//! # let mut resp = Vec::new();
//! # let mut buf = [0; 512];
//! # while let n @ 1.. = c.read(&mut buf).await? {
//! #     resp.extend_from_slice(&buf[..n]);
//! # }
//! # assert!(resp.ends_with(b"Hello, World!"));
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "hyper"))] fn main() {}
//! ```
//!
//! # How it works
//!
//! goro is Go's scheduler, its G/M/P design, rebuilt for Rust futures. In
//! Go's words: a G is a goroutine, an M an OS thread, a P a "processor",
//! the right to run Gs, with its own run queue; there are exactly
//! `GOMAXPROCS` Ps. goro has the same pieces:
//!
//! | Go | goro | what it is |
//! |---|---|---|
//! | G | task | one spawned future ([`spawn`], [`JoinHandle`]) |
//! | M | machine / worker thread | an OS thread running the scheduler loop |
//! | P | processor | the right to run tasks: local run queue, `runnext` (a one-task slot for the task just woken, run next), counters; exactly `procs` of them |
//! | sched | `Sched` | global queue, idle Ps and their mask, spinning count, idle Ms |
//! | sysmon | monitor thread | marks Ps stuck in one long poll so thieves drain them; sleeps when the runtime is idle |
//! | netpoll | poller ([`net`]) | one epoll per runtime; any M polls it without blocking, at most one M blocks in it |
//! | `GODEBUG=schedtrace=X` | `GORO_SCHEDTRACE=X` | a line of scheduler state on stderr every X ms |
//!
//! The design comes from five improvements to Go's runtime, the "seeds";
//! each can be switched off (see [`Policy`], `GORO_POLICY=...`) so one run
//! shows what it is worth:
//!
//! | seed | mechanism | switch |
//! |---|---|---|
//! | 000 don't burn CPU | every runtime wait spins briefly, then yields, then parks | [`Policy::spin`] |
//! | 001 per-P timers | a timer heap per P, fired by its scheduler loop; idle Ps' timers run by thieves | [`Policy::timers`] |
//! | 002 idle mask, bounded stealing | thieves skip idle Ps; 2 steal passes | [`Policy::idle_mask`], [`Policy::steal_passes`] |
//! | 003 pool victim cache | a [`sync::Pool`] cycle moves each pool's values to a victim cache and drops the previous victim's | [`Policy::pool_victim`], [`Builder::pool_cycle`] |
//! | 004 no thrashing | wakes go to `runnext`; thieves pause before taking it | [`Policy::runnext`], [`Policy::runnext_steal_pause`] |
//!
//! # Cargo features
//!
//! - `hyper`: [`net::hyper`], the executor, IO and timer adapters for
//!   hyper 1.x (HTTP/1).
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

pub mod chan;
pub use sched::task::coop;
pub mod context;
pub(crate) mod loom;
pub mod net;
pub(crate) mod rng;
pub mod runtime;
pub(crate) mod sched;
#[cfg(not(loom))]
pub mod sim;
pub mod stats;
pub mod sync;
pub mod time;
pub mod trace;

pub use goro_macros::{main, test};

/// What `#[goro::main]` and `#[goro::test]` expand to. Not a public API.
#[doc(hidden)]
pub mod __private {
    use std::future::Future;

    /// Runs the body as the main task ([`crate::Runtime::run`]). Its name
    /// is the hint rustc prints under a body that is not `Send` ("required
    /// by a bound in ..."): `#[goro::main(local)]` polls such a body on the
    /// calling thread instead (`Runtime::block_on`).
    #[track_caller]
    pub fn body_must_be_send_or_write_goro_main_local<F>(rt: &crate::Runtime, body: F) -> F::Output
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        rt.run(body)
    }
}
pub use runtime::deadlock::Deadlock;
pub use runtime::dump::{Dump, TaskInfo};
pub use runtime::{Builder, Runtime};
pub use sched::machine::blocking::{block_in_place, spawn_blocking};
pub use sched::policy::{
    Policy, PolicyError, Preempt, RunnextWake, Snoozers, SpinPolicy, TimerPlacement,
};
pub use sched::task::group::TaskGroup;
pub use sched::task::meta::{Reason as WaitReason, State as TaskState, TaskId};
pub use sched::task::spawn::{spawn, spawn_named, yield_now};
pub use sched::task::unjoined::UnjoinedPanic;
pub use sched::task::{JoinError, JoinHandle};
pub use stats::Stats;

/// The README's Rust examples, compiled and run as doc tests so that the
/// first code a user copies keeps working.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
