//! What a `select!` case accepts: a channel end, or anything that derefs to
//! one (a reference, `Arc<Receiver<T>>`, `Box<Sender<T>>`, a struct with
//! `Deref<Target = Receiver<T>>`), as crossbeam's `select!` does.
//!
//! The macro passes each case's channel expression through [`recv_chan`] or
//! [`send_chan`], whose trait bounds carry the hints a user needs when the
//! expression is something else (a `Timer`, a future): see the
//! `#[diagnostic::on_unimplemented]` messages below.
//!
//! The element type is a parameter of the traits, not an associated type:
//! a wrong type then fails one bound (reported once, with the hints), where
//! an associated type would also fail to normalize in `recv_chan`'s return
//! type and be reported a second time, as a bare `Deref` bound. The
//! `Deref` impls follow a chain of derefs to its end; a chain that ends
//! somewhere else than a channel end (`Arc<Timer>`) is reported at that
//! end, as "`Timer: Deref` is not satisfied", without the hints.

use std::ops::Deref;

use super::{Receiver, Sender};

mod sealed {
    /// Seals `SelectRecv` and `SelectSend`: implemented by the channel ends
    /// and by every `Deref` type (the traits' own impls then require the
    /// target to be a channel end).
    pub trait Sealed {}
}

impl<T> sealed::Sealed for Receiver<T> {}
impl<T> sealed::Sealed for Sender<T> {}
impl<D: Deref + ?Sized> sealed::Sealed for D {}

/// What `recv(..)` in a [`select!`](crate::select!) accepts: a
/// [`Receiver<T>`], or anything that derefs to one (`&Receiver<T>`,
/// `Arc<Receiver<T>>`, a wrapper with `Deref<Target = Receiver<T>>`).
/// Sealed.
#[diagnostic::on_unimplemented(
    message = "`select!`'s `recv(..)` takes a `goro::chan::Receiver`, not `{Self}`",
    label = "not a channel receiver",
    note = "for a `Timer` or `Ticker`, pass its channel: `recv(timer.rx())`",
    note = "for a timeout, add `recv(goro::time::after(d))` or a `default(d) => ...` arm",
    note = "to wait on a future, use a future case: `await(future) -> output => ...`"
)]
pub trait SelectRecv<T>: sealed::Sealed {
    /// The receiver itself.
    fn receiver(&self) -> &Receiver<T>;
}

impl<T> SelectRecv<T> for Receiver<T> {
    fn receiver(&self) -> &Receiver<T> {
        self
    }
}

impl<T, D> SelectRecv<T> for D
where
    D: Deref + ?Sized,
    D::Target: SelectRecv<T>,
{
    fn receiver(&self) -> &Receiver<T> {
        (**self).receiver()
    }
}

/// What `send(..)` in a [`select!`](crate::select!) accepts: a
/// [`Sender<T>`], or anything that derefs to one (`&Sender<T>`,
/// `Box<Sender<T>>`, a wrapper with `Deref<Target = Sender<T>>`). Sealed.
#[diagnostic::on_unimplemented(
    message = "`select!`'s `send(..)` takes a `goro::chan::Sender`, not `{Self}`",
    label = "not a channel sender",
    note = "`send(tx, value) -> res => ...` sends on a channel; to wait on a future, use `await(future) -> output => ...`"
)]
pub trait SelectSend<T>: sealed::Sealed {
    /// The sender itself.
    fn sender(&self) -> &Sender<T>;
}

impl<T> SelectSend<T> for Sender<T> {
    fn sender(&self) -> &Sender<T> {
        self
    }
}

impl<T, D> SelectSend<T> for D
where
    D: Deref + ?Sized,
    D::Target: SelectSend<T>,
{
    fn sender(&self) -> &Sender<T> {
        (**self).sender()
    }
}

/// The receiver behind `recv(rx)`'s expression (macro plumbing: a wrong
/// type gets [`SelectRecv`]'s hints).
#[doc(hidden)]
pub fn recv_chan<T, R: SelectRecv<T> + ?Sized>(rx: &R) -> &Receiver<T> {
    rx.receiver()
}

/// The sender behind `send(tx, v)`'s expression (macro plumbing).
#[doc(hidden)]
pub fn send_chan<T, S: SelectSend<T> + ?Sized>(tx: &S) -> &Sender<T> {
    tx.sender()
}
