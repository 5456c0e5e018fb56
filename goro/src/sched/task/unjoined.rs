//! A panic nobody will see: a task that panicked while detached (its
//! `JoinHandle` dropped), or whose handle was dropped with the panic still
//! in it.
//!
//! Go ends the process on any goroutine's panic (exit status 2): a bug is
//! loud where it happens. Rust's threads and tokio's tasks catch it: the
//! panic hook prints the message and the program goes on, and a joiner
//! receives the payload as an error. goro catches every task's panic too
//! (a panic never takes a worker thread down, `task.rs`), and hands it to
//! the joiner; this module decides what happens when there is none.
//!
//! [`UnjoinedPanic::Continue`], the default, is the Rust convention: the
//! hook has printed the message, the payload is dropped, the runtime goes
//! on. A server whose handler panics keeps serving the other connections,
//! as Go's `net/http` does by recovering in each connection goroutine.
//! [`UnjoinedPanic::Exit`] is Go's: after the hook's message, one line
//! says why, and the process exits with status 2.
//!
//! The setting is process-wide, as an exit is: [`crate::Builder::unjoined_panic`]
//! and `GORO_PANIC` (`continue` or `exit`) set it when a runtime is built.

use std::sync::atomic::{AtomicU8, Ordering};

/// What happens when a task panics and nobody joins it (module docs of
/// `sched/task/unjoined.rs`; [`crate::Builder::unjoined_panic`], `GORO_PANIC`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnjoinedPanic {
    /// The panic hook has printed the message; the program goes on (Rust's
    /// threads and tokio do the same). The default.
    #[default]
    Continue,
    /// After the hook's message, end the process with exit status 2, as a
    /// goroutine's panic ends a Go program.
    Exit,
}

impl UnjoinedPanic {
    /// Parses `GORO_PANIC`'s value.
    pub(crate) fn parse(v: &str) -> Result<UnjoinedPanic, String> {
        match v.trim() {
            "continue" => Ok(UnjoinedPanic::Continue),
            "exit" => Ok(UnjoinedPanic::Exit),
            _ => Err(format!(
                "GORO_PANIC='{v}' is invalid: accepted continue or exit"
            )),
        }
    }
}

/// The process-wide setting (0: continue, 1: exit).
static POLICY: AtomicU8 = AtomicU8::new(0);

/// Sets the process-wide policy (a runtime being built).
pub(crate) fn set(p: UnjoinedPanic) {
    // Relaxed: a flag read once per unjoined panic; the runtime's build
    // happens before any of its tasks runs.
    POLICY.store(p as u8, Ordering::Relaxed);
}

/// A task's panic was dropped unseen: apply the policy.
pub(crate) fn dropped_unseen() {
    if POLICY.load(Ordering::Relaxed) == UnjoinedPanic::Exit as u8 {
        crate::sched::trace::auto::before_exit(|| crate::sched::trace::auto::Why {
            tag: "panic",
            line: "a task panicked and nobody joins it (UnjoinedPanic::Exit)".into(),
        });
        eprintln!(
            "goro: a task panicked and nobody joins it: exiting with status 2 \
             (UnjoinedPanic::Exit; Builder::unjoined_panic or GORO_PANIC=continue keeps running)"
        );
        std::process::exit(2);
    }
}
