//! The task dump on a signal: `GORO_DUMP_SIGNAL=SIGQUIT` (or `SIGUSR1`,
//! `SIGUSR2`) prints every live runtime's dump to stderr when the process
//! receives it, and the program keeps running (Go prints its goroutine dump
//! on SIGQUIT too, but then exits).
//!
//! A signal handler may do almost nothing (only async-signal-safe calls),
//! so it writes one byte to a pipe; a thread of its own, started with the
//! first runtime that asks for it, reads the pipe and takes the dumps with
//! the same code as [`Runtime::dump`](crate::Runtime::dump). Runtimes are
//! registered as weak references: a dropped runtime is skipped and
//! forgotten.

use crate::loom::Unpoison;
use crate::sched::Sched;
use std::io::{self, Read};
use std::os::fd::FromRawFd;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

/// The pipe's write end, for the handler (-1 until installed).
static PIPE_WRITE: AtomicI32 = AtomicI32::new(-1);

/// Runtimes that asked for dumps, and the signal installed.
static STATE: OnceLock<(i32, Mutex<Vec<Weak<Sched>>>)> = OnceLock::new();

/// Parses `GORO_DUMP_SIGNAL`.
pub(crate) fn parse(v: &str) -> Result<i32, String> {
    match v.trim().trim_start_matches("SIG") {
        "QUIT" => Ok(libc::SIGQUIT),
        "USR1" => Ok(libc::SIGUSR1),
        "USR2" => Ok(libc::SIGUSR2),
        _ => Err(format!(
            "GORO_DUMP_SIGNAL='{v}' is invalid: accepted SIGQUIT, SIGUSR1 or SIGUSR2"
        )),
    }
}

/// Registers `sched` for dumps on `signal`, installing the handler and the
/// dump thread on first use.
pub(crate) fn register(sched: &Arc<Sched>, signal: i32) -> io::Result<()> {
    let (installed, list) = match STATE.get() {
        Some(s) => s,
        None => {
            install(signal)?;
            STATE.get_or_init(|| (signal, Mutex::new(Vec::new())))
        }
    };
    if *installed != signal {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "goro: GORO_DUMP_SIGNAL names signal {signal}, but this process already dumps on \
                 signal {installed}: accepted one signal per process"
            ),
        ));
    }
    let mut list = list.lock().unpoison();
    list.retain(|w| w.strong_count() > 0);
    list.push(Arc::downgrade(sched));
    Ok(())
}

extern "C" fn on_signal(_: libc::c_int) {
    let fd = PIPE_WRITE.load(Ordering::Relaxed);
    if fd >= 0 {
        let b = 1u8;
        // SAFETY: write(2) is async-signal-safe; the buffer is a live byte.
        // A full pipe (dumps already pending) drops the byte, which is fine.
        unsafe { libc::write(fd, (&b as *const u8).cast(), 1) };
    }
}

fn install(signal: i32) -> io::Result<()> {
    let mut fds = [0i32; 2];
    // SAFETY: pipe2 writes two descriptors into the array we pass.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // The write end must never block in the handler.
    // SAFETY: fcntl on a descriptor we own.
    unsafe {
        let flags = libc::fcntl(fds[1], libc::F_GETFL);
        libc::fcntl(fds[1], libc::F_SETFL, flags | libc::O_NONBLOCK);
    }
    PIPE_WRITE.store(fds[1], Ordering::Relaxed);
    // SAFETY: the read end is ours alone from here on.
    let mut read_end = unsafe { std::fs::File::from_raw_fd(fds[0]) };
    std::thread::Builder::new()
        .name("goro-dump".into())
        .spawn(move || {
            let mut b = [0u8; 64];
            while let Ok(n) = read_end.read(&mut b) {
                if n == 0 {
                    break;
                }
                dump_all();
            }
        })?;
    // SAFETY: a zeroed sigaction is valid; we set the handler (a plain
    // `extern "C" fn(c_int)`) and SA_RESTART so interrupted calls resume.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as *const () as usize;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        if libc::sigaction(signal, &sa, std::ptr::null_mut()) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

fn dump_all() {
    let Some((_, list)) = STATE.get() else {
        return;
    };
    let live: Vec<Arc<Sched>> = list
        .lock()
        .unpoison()
        .iter()
        .filter_map(Weak::upgrade)
        .collect();
    for (i, s) in live.iter().enumerate() {
        eprintln!(
            "goro: task dump of runtime {} of {} (thread prefix {:?})\n{}",
            i + 1,
            live.len(),
            s.thread_name(),
            crate::runtime::dump::Dump::take(s)
        );
    }
}
