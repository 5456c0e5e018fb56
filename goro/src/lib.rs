//! # goro — Go's runtime scheduler as a Rust library
//!
//! goro runs Rust futures the way Go runs goroutines: on Go's G/M/P
//! machinery, with per-P run queues and `runnext`, work stealing, spinning
//! threads and a monitor, plus the five improvements to Go's runtime that
//! its design comes from, each of which can be switched off to measure it.
//!
//! | Go | goro | what it is |
//! |---|---|---|
//! | G | task | one spawned future ([`spawn`], [`JoinHandle`]) |
//! | M | machine / worker thread | an OS thread running the scheduler loop |
//! | P | processor | the right to run tasks: local run queue, `runnext`, counters; exactly `procs` of them |
//! | sched | `Sched` | global queue, idle Ps and their mask, spinning count, idle Ms |
//! | sysmon | monitor thread | marks Ps stuck in one long poll so thieves drain them; sleeps when the runtime is idle |
//! | netpoll | poller ([`net`]) | one epoll per runtime; any M polls it without blocking, at most one M blocks in it |
//! | `go f()` | [`spawn`] | |
//! | `runtime.Gosched()` | [`yield_now`] | |
//! | `GOMAXPROCS` | `GORO_PROCS`, [`Builder::procs`] | |
//! | `GODEBUG=schedtrace=X` | `GORO_SCHEDTRACE=X` | |
//!
//! The seeds (see [`Policy`]):
//!
//! | seed | mechanism | switch |
//! |---|---|---|
//! | 000 don't burn CPU | every runtime wait spins briefly, then yields, then parks | [`Policy::spin`] |
//! | 001 per-P timers | a timer heap per P, fired by its scheduler loop; idle Ps' timers run by thieves | [`Policy::timers`] |
//! | 002 idle mask, bounded stealing | thieves skip idle Ps; 2 steal passes | [`Policy::idle_mask`], [`Policy::steal_passes`] |
//! | 003 pool victim cache | a [`sync::Pool`] cycle moves each pool's values to a victim cache and drops the previous victim's | [`Policy::pool_victim`], [`Builder::pool_cycle`] |
//! | 004 no thrashing | wakes go to `runnext`; thieves pause before taking it | [`Policy::runnext`], [`Policy::runnext_steal_pause`] |
//!
//! ```
//! #[goro::main(procs = 2)]
//! async fn main() {
//!     let handles: Vec<_> = (0..10).map(|i| goro::spawn(async move { i * i })).collect();
//!     let mut sum = 0;
//!     for h in handles {
//!         sum += h.await.unwrap();
//!     }
//!     assert_eq!(sum, 285);
//! }
//! ```
#![warn(missing_docs)]

pub mod chan;
pub use sched::coop;
pub mod context;
pub(crate) mod loom;
pub mod net;
pub mod runtime;
pub(crate) mod sched;
pub mod stats;
pub mod sync;
pub mod time;

pub use goro_macros::{main, test};
pub use runtime::policy::{Policy, PolicyError, Preempt, RunnextWake, SpinPolicy, TimerPlacement};
pub use runtime::{spawn, yield_now, Builder, Runtime};
pub use sched::blocking::{block_in_place, spawn_blocking};
pub use sched::task::{JoinError, JoinHandle};
pub use stats::Stats;
