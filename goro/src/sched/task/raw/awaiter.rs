//! The joiner's waker in one word.
//!
//! Every task's header keeps the waker of whoever awaits its
//! `JoinHandle`. A `Waker` is two words (data, vtable), and nearly every
//! joiner is another goro task, whose waker is this module's own vtable
//! over that task's header. So the header keeps one word: a goro task's
//! header address (low bit clear: the vtable is known), or the address of
//! a boxed foreign waker (low bit set: a `block_on` caller, another
//! executor), or zero for none. Eight bytes less in every task; with the
//! future wrapper's flags in its table pointer (`TaskFuture`), that takes
//! a parked task of the `parked_tasks` shape from size class 216 down to
//! 200 (docs/ARCHITECTURE.md, "What a parked task costs"). A foreign joiner
//! pays one small allocation when it registers.

use super::runnable::{waker_of, WAKER};
use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::task::Waker;

/// The low bit of a boxed foreign waker's word.
const BOXED: usize = 1;

/// A joiner's waker, or none (module docs). Owns what its word names: a
/// reference to a goro task, or the box.
pub(super) struct Awaiter(usize);

impl Awaiter {
    pub(super) const NONE: Awaiter = Awaiter(0);

    /// Keeps a clone of `w`.
    pub(super) fn new(w: &Waker) -> Awaiter {
        if std::ptr::eq(w.vtable(), &WAKER) {
            // The clone's reference to the joiner's task is ours now; a
            // header is aligned, so its low bit is clear.
            let w = ManuallyDrop::new(w.clone());
            Awaiter(w.data() as usize)
        } else {
            Awaiter(Box::into_raw(Box::new(w.clone())) as usize | BOXED)
        }
    }

    /// Calls `f` with the waker kept, if any.
    pub(super) fn with<R>(&self, f: impl FnOnce(&Waker) -> R) -> Option<R> {
        match self.0 {
            0 => None,
            p if p & BOXED == 0 => {
                // SAFETY: `new` kept a reference to the task whose header
                // this is, so it is live; the waker made here borrows that
                // reference and is never dropped.
                let w = ManuallyDrop::new(unsafe { waker_of(header(p)) });
                Some(f(&w))
            }
            // SAFETY: the box `new` made, alive until our drop.
            p => Some(f(unsafe { &*((p & !BOXED) as *const Waker) })),
        }
    }
}

impl Drop for Awaiter {
    fn drop(&mut self) {
        match self.0 {
            0 => {}
            p if p & BOXED == 0 => {
                // SAFETY: as in `with`; the waker made here takes over the
                // reference `new` kept, and drops it.
                drop(unsafe { waker_of(header(p)) })
            }
            // SAFETY: the box `new` made, given up once.
            p => drop(unsafe { Box::from_raw((p & !BOXED) as *mut Waker) }),
        }
    }
}

/// A goro task's header, from a word [`Awaiter::new`] made of it.
fn header(p: usize) -> NonNull<super::Header> {
    NonNull::new(p as *mut super::Header).expect("a kept header is not null")
}

// SAFETY: the word owns a `Waker` in effect (a task reference or a boxed
// `Waker`), and `Waker` is `Send + Sync`.
unsafe impl Send for Awaiter {}
// SAFETY: as for `Send`; `&Awaiter` only lends a `&Waker`.
unsafe impl Sync for Awaiter {}
