//! A run on a fresh thread under a deadline ([`guarded`]), and the panic
//! hook that keeps a benchmark thread's panic quiet ([`LAST_PANIC`]), so
//! that a panic or a hang ends one contender's row with one line on stderr
//! while the rest of the report goes on. A timed-out run's thread cannot be
//! killed: it is left behind, and its error says so.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{mpsc, Mutex};
use std::time::Duration;

/// The last panic message seen on a benchmark thread (the panic hook keeps
/// it instead of printing it, so a failure is reported once, in one line).
pub static LAST_PANIC: Mutex<Option<String>> = Mutex::new(None);

/// Installs the panic hook: panics on our own threads (`gb-*`: runs, goro
/// and tokio workers) are recorded quietly in [`LAST_PANIC`]; others print
/// as usual.
pub fn install_panic_hook() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let ours = std::thread::current()
            .name()
            .is_some_and(|n| n.starts_with("gb-"));
        if ours {
            let msg = panic_message(info.payload());
            let at = info
                .location()
                .map(|l| format!(" at {}:{}", l.file(), l.line()))
                .unwrap_or_default();
            *LAST_PANIC.lock().unwrap_or_else(|e| e.into_inner()) = Some(format!("{msg}{at}"));
        } else {
            default(info);
        }
    }));
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic".into()
    }
}

/// Runs `f` on a fresh thread and waits at most `timeout` for it.
pub(crate) fn guarded<T: Send + 'static>(
    timeout: Duration,
    f: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    LAST_PANIC.lock().unwrap_or_else(|e| e.into_inner()).take();
    let (tx, rx) = mpsc::channel();
    let h = std::thread::Builder::new()
        .name("gb-run".into())
        .spawn(move || {
            let r = catch_unwind(AssertUnwindSafe(f))
                .unwrap_or_else(|p| Err(format!("panicked: {}", panic_message(&*p))));
            let _ = tx.send(r);
        })
        .map_err(|e| format!("cannot start a run thread: {e}"))?;
    match rx.recv_timeout(timeout) {
        Ok(r) => {
            let _ = h.join();
            r
        }
        Err(mpsc::RecvTimeoutError::Timeout) => {
            let last = LAST_PANIC.lock().unwrap_or_else(|e| e.into_inner()).take();
            Err(format!(
                "timed out after {}s; its thread is left running, so later numbers of this process may be disturbed{}",
                timeout.as_secs(),
                last.map(|m| format!(" (a panic was seen: {m})")).unwrap_or_default()
            ))
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => Err("the run thread died".into()),
    }
}
