//! Recording one event: the thread's trace number, and the out-of-line
//! path from a hook to its P's buffer (or the no-P buffer), with one read
//! of the thread's context (the hot side's design is in `trace/mod.rs`,
//! its cost in `buf.rs` and `compact/encode.rs`).

use super::{compact, Sched};
use crate::sched::context::CTX;
use std::sync::atomic::{AtomicU64, Ordering};

static NEXT_TID: AtomicU64 = AtomicU64::new(1);

/// Thread names by trace thread number, for the M tracks.
pub(crate) static THREAD_NAMES: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// This thread's trace number (a track in Perfetto), given on first use.
pub(super) fn tid() -> u64 {
    CTX.try_with(tid_of).unwrap_or(0)
}

#[inline(always)]
fn tid_of(c: &crate::sched::context::Ctx) -> u64 {
    match c.trace_tid.get() {
        0 => new_tid(c),
        v => u64::from(v),
    }
}

#[cold]
fn new_tid(c: &crate::sched::context::Ctx) -> u64 {
    let v = NEXT_TID.fetch_add(1, Ordering::Relaxed);
    c.trace_tid.set(v as u32);
    let name = std::thread::current()
        .name()
        .map_or_else(|| format!("thread {v}"), str::to_owned);
    let mut names = THREAD_NAMES.lock().unwrap_or_else(|e| e.into_inner());
    if names.len() <= v as usize {
        names.resize(v as usize + 1, String::new());
    }
    names[v as usize] = name;
    v
}

/// Records one event of kind `K` without definitions, out of line: one
/// copy per kind, so that the kind's argument layout is known where the
/// event is encoded (`compact::args`) and costs no branch.
#[inline(never)]
pub(super) fn emit<const K: u8>(sched: &Sched, p: Option<usize>, tid: u64, a: u64, b: u64) {
    record(sched, p, tid, K, a, b, None);
}

/// Records one event of `sched` from the current thread (trace number
/// `tid`): into the P it holds, else into the no-P buffer.
#[inline(always)]
pub(super) fn record(
    sched: &Sched,
    p: Option<usize>,
    tid: u64,
    k: u8,
    a: u64,
    b: u64,
    create: Option<&compact::Create<'_>>,
) {
    let t = &sched.trace;
    let gen = t.gen.load(Ordering::Relaxed);
    let ev = compact::Event {
        kind: k,
        tid,
        a,
        b,
        create,
    };
    // A P added by `set_procs` after the runtime started has no buffer of
    // its own (they are made for the starting procs): its events go to the
    // no-P buffer, and show on its thread's track.
    match p.filter(|&p| p < t.buf.procs()) {
        // SAFETY: `p` is the P this thread holds (`current_p`, or the
        // caller's own P).
        Some(p) => unsafe { t.buf.push_p(p, gen, t.stamps(), &ev, t) },
        None => t.buf.push_shared(gen, &ev, t),
    }
}

/// The P the current thread holds in `sched`, and its trace number, in
/// one read of the thread's context.
#[inline]
pub(super) fn p_and_tid(sched: &Sched) -> (Option<usize>, u64) {
    CTX.try_with(|c| {
        let p = if std::ptr::eq(c.sched.get(), sched) {
            crate::sched::context::held_id(c)
        } else {
            None
        };
        (p, tid_of(c))
    })
    .unwrap_or((None, 0))
}

/// An event of `sched` from the current thread, wherever it runs.
#[inline]
pub(super) fn event<const K: u8>(sched: &Sched, a: u64, b: u64) {
    let (p, tid) = p_and_tid(sched);
    emit::<K>(sched, p, tid, a, b);
}

/// The runtime the current thread works for (an M, a `block_on` caller,
/// a blocking-pool thread), the P it holds and its trace number, if
/// tracing is on in it.
#[inline]
pub(super) fn traced_here<'a>() -> Option<(&'a Sched, Option<usize>, u64)> {
    let (s, p, tid) = CTX
        .try_with(|c| {
            let s = c.sched.get();
            if s.is_null() {
                (c.trace_blocking.get(), None, tid_of(c))
            } else {
                (s, crate::sched::context::held_id(c), tid_of(c))
            }
        })
        .ok()?;
    // SAFETY: a runtime pointer in the context is kept alive by its
    // setter (`m_main`, `EnterGuard`; `blocking_thread` for a pool
    // thread's, which holds an `Arc` of the runtime) until this thread
    // leaves it; the reference is used only by the hook that asked, on
    // this thread, before it returns to the scheduler.
    let s = unsafe { s.as_ref() }?;
    s.trace.on().then_some((s, p, tid))
}
