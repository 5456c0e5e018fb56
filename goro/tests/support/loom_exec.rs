//! Driving futures inside loom models: a `block_on` that parks the loom
//! thread between polls, and `loom::model` with a preemption bound. Shared
//! by the `loom_*.rs` test files that poll goro's futures.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use loom::sync::{Condvar, Mutex};

/// A waker that parks the polling loom thread on a condition variable.
struct Parker {
    woken: Mutex<bool>,
    cv: Condvar,
}

impl Wake for Parker {
    fn wake(self: Arc<Self>) {
        *self.woken.lock().unwrap() = true;
        self.cv.notify_one();
    }
}

/// Polls `fut` to completion, sleeping between polls until woken. A lost
/// wakeup shows up as loom reporting a deadlock.
pub fn block_on<F: Future>(fut: F) -> F::Output {
    let parker = Arc::new(Parker {
        woken: Mutex::new(false),
        cv: Condvar::new(),
    });
    let waker = Waker::from(parker.clone());
    let mut cx = Context::from_waker(&waker);
    let mut fut = pin!(fut);
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
        let mut woken = parker.woken.lock().unwrap();
        while !*woken {
            woken = parker.cv.wait(woken).unwrap();
        }
        *woken = false;
    }
}

/// `loom::model` with at most `bound` preemptions per execution (unless
/// `LOOM_MAX_PREEMPTIONS` says otherwise), for the models whose full state
/// space takes minutes; bugs in practice need very few preemptions.
pub fn model_bounded<F: Fn() + Sync + Send + 'static>(bound: usize, f: F) {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(bound);
    }
    b.check(f);
}
