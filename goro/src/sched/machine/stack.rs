//! Another thread's native stack, taken by a signal: what the stuck-poll
//! report (`stuck.rs`) prints under its first line.
//!
//! Go's sysmon can show where a goroutine is because Go owns every frame
//! and can stop a goroutine at a safe point. goro owns neither: the stuck
//! poll is user code on an OS thread, perhaps inside libc. So the monitor
//! asks that thread to look at itself: it sends the thread [`SIGNAL`]
//! with `pthread_kill`, the handler walks the interrupted stack and writes
//! the raw instruction pointers into one preallocated buffer ([`SLOT`]),
//! and the monitor, once the handler says it is done, copies them out; a
//! reporting thread turns them into names and lines ([`symbolize`]),
//! outside the handler, where allocating and taking locks is allowed.
//!
//! # The protocol
//!
//! One capture at a time in the process (several runtimes share the one
//! handler): [`capture`] holds [`CAPTURE`] throughout. `SLOT.state` goes
//!
//! ```text
//!  IDLE --monitor: target, arm--> ARMED --handler: CAS--> TAKING --handler--> DONE --monitor--> IDLE
//!                                   \--monitor, no answer in time: CAS--> IDLE
//! ```
//!
//! The handler claims the slot with a CAS from `ARMED` only if it runs on
//! the target thread and the signal came from this process by
//! `pthread_kill` (`SI_TKILL`); it publishes the frames with a Release
//! store of `DONE` (the monitor's Acquire load pairs with it) and a futex
//! wake. The monitor waits on the futex with a deadline. If the deadline
//! passes while the slot is still `ARMED` (the signal was blocked, or
//! another handler replaced ours), the monitor takes the slot back and
//! the report says the stack is unavailable. If it passes while the
//! handler holds the slot (`TAKING`: an unwind that hangs), the monitor
//! gives up for good ([`BROKEN`]): the buffer may still be written, so it
//! is never armed again, and later reports say so.
//!
//! # How the handler walks the stack, and why this way
//!
//! The handler calls `backtrace::trace_unsynchronized`, which is libgcc's
//! `_Unwind_Backtrace` over the `.eh_frame` unwind tables, and stores each
//! frame's instruction pointer; it allocates nothing and takes no lock of
//! ours. Alternatives considered:
//!
//! * **Frame pointers.** A walk over `rbp` chains is trivially
//!   signal-safe, but Rust's std, libc and most crates are built without
//!   frame pointers, and we cannot make users build with
//!   `-C force-frame-pointers`: the walk would stop at the first frame of
//!   std or libc, which is exactly where a stuck poll sits (a `nanosleep`,
//!   a futex).
//! * **A copy of the stack, unwound later** (what `perf` does, and the
//!   `framehop` crate can do): only a `memcpy` in the handler, the most
//!   signal-safe of all, but it needs every loaded module's unwind
//!   sections found and parsed ahead of time and a cap on the bytes
//!   copied. More code than the report is worth while libgcc does the
//!   job; the way to go if the caveats below bite.
//! * **`std::backtrace::Backtrace` in the handler**: it allocates and
//!   takes std's backtrace lock, neither of which a handler may do.
//!
//! `_Unwind_Backtrace` is not on POSIX's list of async-signal-safe
//! functions; profilers that sample from `SIGPROF` (pprof-rs, gperftools
//! with libgcc) use it all the same. The caveats, and what goro does:
//!
//! * Finding a frame's unwind entry: with glibc 2.35 or later and libgcc
//!   12 or later, `_Unwind_Find_FDE` uses `_dl_find_object`, which takes
//!   no lock. Older pairs call `dl_iterate_phdr`, which takes the loader's
//!   (recursive) lock: a handler that interrupts `dlopen` may read the
//!   module list mid-change. A libgcc older than 12 also takes its own
//!   `object_mutex`, so a handler interrupting a thread inside an unwind
//!   (a panic) could deadlock that thread; the monitor then gives up as
//!   above, but the thread stays stuck.
//! * libgcc initialises a table once per process (`pthread_once`); the
//!   monitor takes its own stack once at install ([`install`]) so that the
//!   handler never runs that first initialisation.
//! * A frame without unwind information (hand-written assembly, JIT code)
//!   ends the walk there: the report shows the frames up to it.
//! * The signal frame itself: libgcc on Linux recognises the kernel's
//!   return trampoline (`__restore_rt`) and unwinds through it to the
//!   interrupted instruction, whose address the handler also reads from
//!   the `ucontext`; [`symbolize`] drops the handler's own frames by
//!   looking for that address.
//!
//! Measured with `examples/stuck_trials.rs` in debug and release
//! (RELIABILITY.md, "Stuck-poll report").
//!
//! # The signal
//!
//! [`SIGNAL`] is `SIGURG`, as Go uses for its own preemption signal, for
//! Go's reasons: its default action is to ignore it, so a stray one is
//! harmless; programs almost never use it (it reports out-of-band TCP data
//! only to a process that asked with `F_SETOWN`); and the realtime
//! signals are claimed by libraries (glibc keeps some, others pick
//! `SIGRTMIN + n` by convention) while a stray realtime signal kills the
//! process. goro uses no other signal on its own (`GORO_DUMP_SIGNAL` is
//! `SIGQUIT`, `SIGUSR1` or `SIGUSR2`).
//!
//! The handler is installed once per process with `SA_SIGINFO |
//! SA_RESTART` (system calls that can restart do; `nanosleep` and
//! futex waits return `EINTR` early, and std's `sleep` and locks go back
//! to waiting: the thread carries on as if nothing happened). It runs on
//! the interrupted thread's own stack, not `SA_ONSTACK`: the alternate
//! stack std gives each thread is sized for its overflow message, not
//! for an unwind. A handler that was there before is kept: every `SIGURG`
//! that is not ours (not from this process, not to the armed thread, or
//! none armed) is passed to it, with its `SA_SIGINFO` form or its plain
//! one (called from ours, so under our mask rather than its own), and one
//! that was ignored or default stays so. A handler that a
//! library installs after ours replaces it; our captures then find no
//! answer and the report says the stack is unavailable.
//!
//! The handler saves and restores `errno` (the futex wake may set it).
//! The thread it targets is alive: it holds a P in a poll, and Ms exit
//! only at shutdown, after the monitor is joined; a `pthread_t` of a
//! joinable, not yet joined thread stays valid even once it has exited.

use crate::loom::Unpoison;
use std::ffi::c_void;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The signal sent to the thread of a stuck poll.
pub(crate) const SIGNAL: libc::c_int = libc::SIGURG;

/// Most frames kept per capture (the handler's own included).
const MAX_FRAMES: usize = 128;

/// How long the monitor waits for the handler's answer.
const ANSWER: Duration = Duration::from_millis(200);

const IDLE: u32 = 0;
const ARMED: u32 = 1;
const TAKING: u32 = 2;
const DONE: u32 = 3;

/// The one buffer the handler writes: atomics, so that the handler and
/// the monitor share it without `unsafe` (plain stores on the handler's
/// side; the state word orders them).
struct Slot {
    state: AtomicU32,
    /// The `pthread_t` the monitor signalled.
    target: AtomicU64,
    /// The interrupted instruction (from the `ucontext`; 0 if unknown).
    pc: AtomicUsize,
    len: AtomicUsize,
    ips: [AtomicUsize; MAX_FRAMES],
}

static SLOT: Slot = Slot {
    state: AtomicU32::new(IDLE),
    target: AtomicU64::new(0),
    pc: AtomicUsize::new(0),
    len: AtomicUsize::new(0),
    ips: [const { AtomicUsize::new(0) }; MAX_FRAMES],
};

/// One capture at a time, over every runtime of the process.
static CAPTURE: Mutex<()> = Mutex::new(());

/// Set when a handler held the slot past its deadline: never arm again.
static BROKEN: AtomicBool = AtomicBool::new(false);

/// The handler that was installed for [`SIGNAL`] before ours.
static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();

/// Whether ours is installed (or why not).
static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();

/// The raw frames of one capture.
pub(crate) struct Frames {
    /// The interrupted instruction, 0 if the platform does not say.
    pc: usize,
    ips: Vec<usize>,
}

/// Installs the handler (once per process); later calls return the first
/// call's outcome.
pub(crate) fn install() -> Result<(), String> {
    INSTALLED.get_or_init(install_once).clone()
}

fn install_once() -> Result<(), String> {
    // libgcc's once-only set-up runs here, not in a handler (module docs).
    // SAFETY: a walk of this thread's own stack, outside any handler; the
    // closure only counts.
    unsafe {
        let mut n = 0;
        backtrace::trace_unsynchronized(|_| {
            n += 1;
            n < 4
        });
    }
    // SAFETY: a zeroed `sigaction` is a valid "no handler" value for the
    // kernel to overwrite.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: reads the current action into `old`, a valid out-pointer.
    if unsafe { libc::sigaction(SIGNAL, std::ptr::null(), &mut old) } != 0 {
        return Err(format!(
            "sigaction(SIGURG) failed: {}",
            std::io::Error::last_os_error()
        ));
    }
    // Stored before ours goes in, so the handler always finds it.
    let _ = PREVIOUS.set(old);
    // SAFETY: as above, zeroed then filled in.
    let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
    act.sa_sigaction =
        on_signal as extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut c_void) as usize;
    act.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
    // SAFETY: `sa_mask` is a valid sigset to empty; sigaction gets valid
    // pointers and a handler that is an `extern "C"` fn of the SA_SIGINFO
    // shape.
    let rc = unsafe {
        libc::sigemptyset(&mut act.sa_mask);
        libc::sigaction(SIGNAL, &act, std::ptr::null_mut())
    };
    if rc != 0 {
        return Err(format!(
            "sigaction(SIGURG) failed: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// The current thread's `pthread_t`, as the P records it for [`capture`].
#[inline]
pub(crate) fn this_thread() -> u64 {
    // SAFETY: pthread_self has no preconditions.
    unsafe { libc::pthread_self() as u64 }
}

/// Takes the stack of thread `thread` (a `pthread_t` from
/// [`this_thread`]), which must be alive (module docs).
pub(crate) fn capture(thread: u64) -> Result<Frames, String> {
    if thread == 0 {
        return Err("no thread recorded for this P".into());
    }
    install()?;
    let _one = CAPTURE.lock().unpoison();
    if BROKEN.load(Ordering::Relaxed) {
        return Err("an earlier capture never finished; stacks are no longer taken".into());
    }
    SLOT.target.store(thread, Ordering::Relaxed);
    SLOT.len.store(0, Ordering::Relaxed);
    SLOT.pc.store(0, Ordering::Relaxed);
    // Release: the handler's Acquire CAS sees the target stored above.
    SLOT.state.store(ARMED, Ordering::Release);
    // SAFETY: `thread` is a live thread's pthread_t (the caller's
    // contract); sending a signal has no other precondition.
    let rc = unsafe { libc::pthread_kill(thread as libc::pthread_t, SIGNAL) };
    if rc != 0 {
        SLOT.state.store(IDLE, Ordering::Relaxed);
        return Err(format!(
            "pthread_kill failed: {}",
            std::io::Error::from_raw_os_error(rc)
        ));
    }
    let deadline = Instant::now() + ANSWER;
    loop {
        // Acquire: pairs with the handler's Release store of DONE, so the
        // frames it wrote are visible.
        let s = SLOT.state.load(Ordering::Acquire);
        if s == DONE {
            break;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            // Relaxed: nothing is read after taking the slot back.
            if SLOT
                .state
                .compare_exchange(ARMED, IDLE, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            {
                return Err(format!(
                    "no answer to SIGURG within {ANSWER:?} (the signal blocked on that thread, \
                     or another handler installed over goro's)"
                ));
            }
            if SLOT.state.load(Ordering::Acquire) == DONE {
                break;
            }
            BROKEN.store(true, Ordering::Relaxed);
            return Err(format!(
                "the stack walk did not finish within {ANSWER:?}; stacks are no longer taken"
            ));
        }
        futex_wait(&SLOT.state, s, left);
    }
    let n = SLOT.len.load(Ordering::Relaxed).min(MAX_FRAMES);
    let ips = SLOT.ips[..n]
        .iter()
        .map(|a| a.load(Ordering::Relaxed))
        .collect();
    let pc = SLOT.pc.load(Ordering::Relaxed);
    SLOT.state.store(IDLE, Ordering::Relaxed);
    Ok(Frames { pc, ips })
}

/// The signal handler. Async-signal-safe: atomics, `pthread_self`,
/// libgcc's unwinder (module docs for its caveats) and a futex wake.
extern "C" fn on_signal(sig: libc::c_int, info: *mut libc::siginfo_t, uc: *mut c_void) {
    // SAFETY: the kernel passes a valid siginfo for an SA_SIGINFO handler.
    let ours = !info.is_null()
        && unsafe {
            (*info).si_code == libc::SI_TKILL && (*info).si_pid() == libc::getpid()
        }
        && SLOT.target.load(Ordering::Relaxed) == this_thread()
        // Acquire: pairs with the monitor's Release store of ARMED.
        && SLOT
            .state
            .compare_exchange(ARMED, TAKING, Ordering::Acquire, Ordering::Relaxed)
            .is_ok();
    if !ours {
        chain(sig, info, uc);
        return;
    }
    // SAFETY: errno is this thread's; read now, written back at the end.
    let errno = unsafe { *libc::__errno_location() };
    SLOT.pc.store(interrupted_pc(uc), Ordering::Relaxed);
    let mut n = 0;
    // SAFETY: walks this thread's stack; the closure only stores into the
    // preallocated slot (module docs: why libgcc's walk is used here).
    unsafe {
        backtrace::trace_unsynchronized(|frame| {
            if let Some(slot) = SLOT.ips.get(n) {
                slot.store(frame.ip() as usize, Ordering::Relaxed);
                n += 1;
            }
            n < MAX_FRAMES
        });
    }
    SLOT.len.store(n, Ordering::Relaxed);
    // Release: publishes the frames to the monitor's Acquire load.
    SLOT.state.store(DONE, Ordering::Release);
    futex_wake(&SLOT.state);
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
}

/// Passes a signal that is not ours to the handler installed before ours.
fn chain(sig: libc::c_int, info: *mut libc::siginfo_t, uc: *mut c_void) {
    let Some(prev) = PREVIOUS.get() else { return };
    let h = prev.sa_sigaction;
    if h == libc::SIG_DFL || h == libc::SIG_IGN {
        return; // SIGURG's default action is to ignore it
    }
    if prev.sa_flags & libc::SA_SIGINFO != 0 {
        // SAFETY: an SA_SIGINFO handler has this signature; we pass on the
        // arguments the kernel gave us.
        let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut c_void) =
            unsafe { std::mem::transmute(h) };
        f(sig, info, uc);
    } else {
        // SAFETY: a plain handler has this signature.
        let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(h) };
        f(sig);
    }
}

/// The instruction the signal interrupted, from the handler's context.
fn interrupted_pc(uc: *mut c_void) -> usize {
    if uc.is_null() {
        return 0;
    }
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    {
        // SAFETY: the kernel passes a valid ucontext_t to an SA_SIGINFO
        // handler.
        unsafe {
            (*uc.cast::<libc::ucontext_t>()).uc_mcontext.gregs[libc::REG_RIP as usize] as usize
        }
    }
    #[cfg(all(target_os = "linux", target_arch = "aarch64"))]
    {
        // SAFETY: as above.
        unsafe { (*uc.cast::<libc::ucontext_t>()).uc_mcontext.pc as usize }
    }
    #[cfg(not(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    )))]
    {
        0
    }
}

fn futex_wait(word: &AtomicU32, expected: u32, timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: a futex wait on a live, aligned u32 with a valid timeout; it
    // returns at once if the word no longer holds `expected`.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            &ts as *const libc::timespec,
        );
    }
}

fn futex_wake(word: &AtomicU32) {
    // SAFETY: a futex wake on a live, aligned u32; a system call, so
    // async-signal-safe.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            1,
        );
    }
}

/// The frame that polls a task's future (`sched/task/mod.rs`): the
/// report's frames end with it.
const TASK_POLL: &str = "goro::sched::task::TaskFuture<F> as core::future::future::Future>::poll";

/// Names the frames of `f`, one line each (`  3: std::thread::sleep at
/// /path/mod.rs:123`; an inlined function shares its caller's number),
/// from the interrupted frame down to the task's poll; at most `max`
/// lines, then how many more there were. Slow the first time in a process
/// (the debug information is read then); call it off the handler.
pub(crate) fn symbolize(f: &Frames, max: usize) -> String {
    // The handler's own frames come first: start at the interrupted one.
    let start = f.ips.iter().position(|&ip| ip == f.pc && ip != 0);
    let ips: Vec<usize> = match start {
        Some(i) => f.ips[i..].to_vec(),
        // The walk did not pass the signal frame: all we know is where
        // the thread was.
        None if f.pc != 0 => vec![f.pc],
        None => f.ips.clone(),
    };
    let mut lines = Vec::new();
    // The outermost frame's return address is 0 (the end of the chain).
    for (i, &ip) in ips.iter().filter(|&&ip| ip != 0).enumerate() {
        // The others are return addresses, which `resolve` steps back from
        // by one byte to land in the call; the interrupted frame's address
        // is the instruction itself (one on a function's first byte would
        // step back into the function before it), so it goes in one byte
        // on.
        let at = if i == 0 && f.pc != 0 { ip + 1 } else { ip };
        let mut named = false;
        backtrace::resolve(at as *mut c_void, |sym| {
            named = true;
            let mut line = match sym.name() {
                Some(n) => format!("{n:#}"),
                None => format!("{ip:#x}"),
            };
            if let (Some(file), Some(l)) = (sym.filename(), sym.lineno()) {
                let _ = write!(line, " at {}:{l}", file.display());
            }
            lines.push((i, line));
        });
        if !named {
            lines.push((i, format!("{ip:#x}")));
        }
    }
    // Below the task's poll are goro's scheduler and the thread's start:
    // the same in every report, so they are counted, not printed.
    let below = lines
        .iter()
        .rposition(|(_, l)| l.contains(TASK_POLL))
        .map_or(0, |i| lines.len() - i - 1);
    let shown = (lines.len() - below).min(max);
    let mut out = String::new();
    for (i, line) in &lines[..shown] {
        let _ = writeln!(out, "  {i:2}: {line}");
    }
    if shown < lines.len() {
        let _ = writeln!(
            out,
            "  ... {} more ({} of goro's scheduler)",
            lines.len() - shown,
            below
        );
    }
    if start.is_none() && f.pc != 0 {
        let _ = writeln!(
            out,
            "  (the unwinder did not get past the signal frame: only the interrupted frame is known)"
        );
    }
    out
}
