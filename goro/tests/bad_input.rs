//! Bad input: every configuration input and API precondition that a caller
//! can get wrong, and what goro does with it. Each test backs one row of
//! the README's "Configuration" table (rows backed by older tests name
//! those instead). The house rule: an error that names the input and the
//! accepted form, or Go's (or tokio's) documented behaviour; never silent
//! clamping, never a lost value.
#![cfg(not(loom))]

mod support;

use std::io::ErrorKind;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::net::pair;
use support::{thread_state, threads_named, wait_until, within};

const LIMIT: Duration = Duration::from_secs(60);
const WAIT: Duration = Duration::from_secs(30);

fn rt(procs: usize) -> goro::Runtime {
    goro::Runtime::builder().procs(procs).build().unwrap()
}

fn invalid_input(r: std::io::Result<goro::Runtime>) -> String {
    let e = r.expect_err("build must fail");
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    e.to_string()
}

// --------------------------------------------------------------------------
// Builder
// --------------------------------------------------------------------------

// procs(0) / procs(1_000_000) and steal_passes=0:
// sched_basic::procs_zero_is_rejected_with_the_accepted_range,
// sched_basic::bad_policy_field_is_rejected.

#[test]
fn builder_policy_runnext_steal_pause_above_10ms_is_an_error() {
    let mut p = goro::Policy::default();
    p.runnext_steal_pause = Duration::from_millis(11);
    let e = invalid_input(goro::Runtime::builder().procs(1).policy(p).build());
    assert!(
        e.contains("runnext_steal_pause") && e.contains("accepted 0..=10ms"),
        "{e}"
    );
}

#[test]
fn builder_thread_name_with_a_nul_byte_is_an_error_not_a_panic() {
    let e = invalid_input(
        goro::Runtime::builder()
            .procs(1)
            .thread_name("bad\0name")
            .build(),
    );
    assert!(e.contains("thread_name") && e.contains("NUL"), "{e}");
    // Long names are accepted (Linux shows the first 15 bytes).
    let rt = goro::Runtime::builder()
        .procs(1)
        .thread_name("a-rather-long-thread-name-prefix")
        .build()
        .unwrap();
    assert_eq!(
        rt.block_on(async { goro::spawn(async { 1 }).await.unwrap() }),
        1
    );
}

#[test]
fn builder_pool_cycle_zero_is_an_error_naming_the_range() {
    let e = invalid_input(
        goro::Runtime::builder()
            .procs(1)
            .pool_cycle(Duration::ZERO)
            .build(),
    );
    assert!(
        e.contains("pool_cycle(0ns)") && e.contains("greater than zero"),
        "{e}"
    );
}

/// A pool cycle too far off for `Instant` means "never", as for timers; it
/// used to overflow `Instant + Duration` and kill the monitor thread (which
/// also retakes stuck Ps) as soon as the runtime started.
#[test]
fn builder_pool_cycle_too_large_for_instant_means_never_and_the_monitor_lives() {
    within(LIMIT, "pool_cycle(Duration::MAX)", || {
        let rt = goro::Runtime::builder()
            .procs(1)
            .thread_name("bi-cycle")
            .pool_cycle(Duration::MAX)
            .build()
            .expect("a huge interval is accepted");
        let pool = Arc::new(goro::sync::Pool::new(|| 0u32));
        let p = pool.clone();
        // A pool with values: the monitor computes the next cycle's time.
        rt.block_on(async move {
            goro::spawn(async move { p.put(1) }).await.unwrap();
        });
        // The monitor of an idle runtime sleeps; one that panicked is gone.
        wait_until(WAIT, "the monitor thread is alive and asleep", || {
            threads_named("bi-cycle-monit")
                .first()
                .and_then(|&t| thread_state(t))
                .is_some_and(|(s, _)| s == 'S')
        });
        assert_eq!(
            rt.block_on(async { goro::spawn(async { 2 }).await.unwrap() }),
            2
        );
        drop(pool);
    });
}

// --------------------------------------------------------------------------
// Entering the runtime
// --------------------------------------------------------------------------

#[test]
#[should_panic(expected = "goro::spawn_blocking called outside a goro runtime")]
fn spawn_blocking_outside_a_runtime_panics_with_a_clear_message() {
    drop(goro::spawn_blocking(|| ()));
}

#[test]
fn block_in_place_on_the_block_on_thread_just_runs() {
    let rt = rt(1);
    // The block_on thread holds no P: nothing to hand off.
    let v = rt.block_on(async { goro::block_in_place(|| 5) });
    assert_eq!(v, 5);
}

#[test]
#[should_panic(expected = "goro::time::context::with_deadline called outside a goro runtime")]
fn context_with_timeout_outside_a_runtime_panics_with_a_clear_message() {
    let bg = goro::context::Context::background();
    let _ = goro::context::Context::with_timeout(&bg, Duration::from_secs(1));
}

#[test]
fn pool_outside_a_runtime_works() {
    let pool = goro::sync::Pool::new(|| 1u32);
    pool.put(9);
    assert_eq!(pool.get(), 9, "a plain thread's put is found again");
    assert_eq!(pool.get(), 1, "then new is called");
}

// --------------------------------------------------------------------------
// JoinHandle
// --------------------------------------------------------------------------

/// Polling a `JoinHandle` again after it returned the task's result is a
/// bug in the caller: it panics naming the mistake (as tokio's does),
/// rather than pretending the finished task was cancelled.
#[test]
fn join_handle_polled_after_its_result_panics_with_a_clear_message() {
    within(LIMIT, "JoinHandle polled twice", || {
        let rt = rt(1);
        let msg = rt.block_on(async {
            let mut h = goro::spawn(async { 3 });
            assert_eq!((&mut h).await.unwrap(), 3);
            let again = goro::spawn(async move { (&mut h).await.is_ok() }).await;
            again.unwrap_err().to_string()
        });
        assert!(
            msg.contains("JoinHandle polled after it returned the task's result"),
            "{msg}"
        );
        // An aborted handle still answers Cancelled, every time.
        rt.block_on(async {
            let mut h = goro::spawn(std::future::pending::<()>());
            h.abort();
            assert!((&mut h).await.unwrap_err().is_cancelled());
            assert!((&mut h).await.unwrap_err().is_cancelled());
        });
    });
}

#[test]
#[should_panic(expected = "JoinError::into_panic on a cancelled task")]
fn join_error_into_panic_on_a_cancelled_task_panics() {
    let rt = rt(1);
    let e = rt.block_on(async {
        let h = goro::spawn(std::future::pending::<()>());
        h.abort();
        h.await.unwrap_err()
    });
    let _ = e.into_panic();
}

// --------------------------------------------------------------------------
// Channels
// --------------------------------------------------------------------------

/// The buffer grows with use, so any capacity is accepted without
/// allocating it up front.
#[test]
fn a_huge_channel_capacity_is_accepted_and_allocates_lazily() {
    let (tx, rx) = goro::chan::bounded::<u64>(usize::MAX);
    assert_eq!(tx.capacity(), usize::MAX);
    for i in 0..1000 {
        tx.try_send(i).unwrap();
    }
    assert_eq!(rx.len(), 1000);
    assert_eq!(rx.try_recv(), Ok(0));
}

// --------------------------------------------------------------------------
// Sync
// --------------------------------------------------------------------------

#[test]
#[should_panic(expected = "sync: WaitGroup counter overflow")]
fn waitgroup_counter_overflow_panics() {
    let wg = goro::sync::WaitGroup::new();
    wg.add(isize::MAX);
    wg.add(isize::MAX);
    wg.add(isize::MAX);
}

#[test]
fn semaphore_acquire_many_above_available_waits_and_zero_is_immediate() {
    within(LIMIT, "semaphore", || {
        let rt = rt(2);
        rt.block_on(async {
            let sem = Arc::new(goro::sync::Semaphore::new(2));
            assert_eq!(sem.acquire_many(0).await.num_permits(), 0);
            // More than it has now is not an error: it waits for them.
            assert!(sem.try_acquire_many(5).is_none());
            let s = sem.clone();
            let h = goro::spawn(async move { s.acquire_many(5).await.num_permits() });
            sem.add_permits(3);
            assert_eq!(h.await.unwrap(), 5);
            assert_eq!(sem.available_permits(), 5, "the permits came back");
        });
    });
}

#[test]
#[should_panic(expected = "permits exceed Semaphore::MAX_PERMITS")]
fn semaphore_new_above_max_permits_panics() {
    let n = std::hint::black_box(goro::sync::Semaphore::MAX_PERMITS + 1);
    let _ = goro::sync::Semaphore::new(n);
}

// --------------------------------------------------------------------------
// Time and context
// --------------------------------------------------------------------------

#[test]
fn ticker_reset_to_zero_panics_like_go() {
    let rt = rt(1);
    let r = rt.block_on(async {
        let t = goro::time::Ticker::new(Duration::from_secs(3600));
        goro::spawn(async move { t.reset(Duration::ZERO) }).await
    });
    let e = r.unwrap_err().to_string();
    assert!(
        e.contains("non-positive interval for goro::time::Ticker::reset"),
        "{e}"
    );
}

#[test]
fn timer_reset_to_zero_and_sleep_until_the_past_fire_at_once() {
    within(LIMIT, "zero and past", || {
        let rt = rt(1);
        rt.block_on(async {
            let t = goro::time::Timer::new(Duration::from_secs(3600));
            t.reset(Duration::ZERO);
            goro::time::timeout(WAIT, t.rx().recv())
                .await
                .expect("Timer reset to 0 fires at once")
                .unwrap();
            let past = Instant::now() - Duration::from_secs(1);
            goro::time::timeout(WAIT, goro::time::sleep_until(past))
                .await
                .expect("sleep_until a past instant returns at once");
        });
    });
}

#[test]
fn context_with_a_past_deadline_is_done_at_once() {
    within(LIMIT, "past deadline", || {
        let rt = rt(1);
        rt.block_on(async {
            let bg = goro::context::Context::background();
            let past = Instant::now() - Duration::from_secs(1);
            let (ctx, _cancel) = goro::context::Context::with_deadline(&bg, past);
            goro::time::timeout(WAIT, ctx.done().recv())
                .await
                .expect("done at once")
                .ok();
            assert_eq!(
                ctx.err(),
                Some(goro::context::ContextError::DeadlineExceeded)
            );
            let (ctx, _cancel) = goro::context::Context::with_timeout(&bg, Duration::ZERO);
            goro::time::timeout(WAIT, ctx.done().recv())
                .await
                .expect("a zero timeout is done at once")
                .ok();
        });
    });
}

// --------------------------------------------------------------------------
// Net
// --------------------------------------------------------------------------

#[test]
fn udp_send_on_an_unconnected_socket_is_an_error() {
    within(LIMIT, "udp send unconnected", || {
        let rt = rt(1);
        rt.block_on(async {
            let u = goro::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
            let e = u.send(b"x").await.unwrap_err();
            assert!(
                matches!(e.kind(), ErrorKind::NotConnected)
                    || e.raw_os_error() == Some(libc::EDESTADDRREQ),
                "{e:?}"
            );
            assert!(u.peer_addr().is_err(), "no peer");
        });
    });
}

#[test]
fn connect_or_bind_to_a_bad_address_is_an_error() {
    within(LIMIT, "bad addresses", || {
        let rt = rt(1);
        rt.block_on(async {
            // Not an address (no port): rejected before any syscall.
            let e = goro::net::TcpStream::connect("127.0.0.1")
                .await
                .unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidInput, "no port: {e:?}");
            // An address in use.
            let l = goro::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let e = goro::net::TcpListener::bind(l.local_addr().unwrap())
                .await
                .unwrap_err();
            assert_eq!(e.kind(), ErrorKind::AddrInUse, "{e:?}");
            // An address that is not this host's.
            let e = goro::net::UdpSocket::bind("192.0.2.1:0").await.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::AddrNotAvailable, "{e:?}");
        });
    });
}

#[test]
fn reading_after_shutdown_read_is_end_of_file_and_writing_after_shutdown_write_an_error() {
    within(LIMIT, "after shutdown", || {
        let rt = rt(1);
        rt.block_on(async {
            let (c, _s) = pair().await;
            c.shutdown(std::net::Shutdown::Read).unwrap();
            let mut buf = [0u8; 4];
            assert_eq!(c.read(&mut buf).await.unwrap(), 0, "EOF, no wait, no panic");
            c.shutdown(std::net::Shutdown::Write).unwrap();
            let e = c.write(b"x").await.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::BrokenPipe, "{e:?}");
        });
    });
}

#[test]
fn a_none_deadline_clears_and_a_past_one_times_out_at_once() {
    within(LIMIT, "deadlines", || {
        let rt = rt(1);
        rt.block_on(async {
            let (c, s) = pair().await;
            let mut buf = [0u8; 4];
            c.set_read_deadline(Some(Instant::now() - Duration::from_secs(1)));
            let e = c.read(&mut buf).await.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::TimedOut, "{e:?}");
            c.set_read_deadline(None);
            s.write_all(b"ok").await.unwrap();
            assert_eq!(
                c.read(&mut buf).await.unwrap(),
                2,
                "None cleared the deadline"
            );
        });
    });
}
