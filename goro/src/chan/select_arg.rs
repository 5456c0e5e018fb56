//! What a `select!` case accepts: a channel end, or a reference to one.
//!
//! The macro passes each case's channel expression through [`recv_chan`] or
//! [`send_chan`], whose trait bounds carry the hints a user needs when the
//! expression is something else (a `Timer`, a future): see the
//! `#[diagnostic::on_unimplemented]` messages below.

use super::{Receiver, Sender};

mod sealed {
    pub trait Sealed {}
    /// Seals `SelectSend` apart from `SelectRecv`: coherence would see
    /// `impl Sealed for &R` twice, once per trait.
    pub trait SealedSend {}
}

/// What `recv(..)` in a [`select!`](crate::select!) accepts: a
/// [`Receiver`], or a reference to one. Sealed.
#[diagnostic::on_unimplemented(
    message = "`select!`'s `recv(..)` takes a `goro::chan::Receiver`, not `{Self}`",
    label = "not a channel receiver",
    note = "for a `Timer` or `Ticker`, pass its channel: `recv(timer.rx())`",
    note = "for a timeout, add `recv(goro::time::after(d))` or a `default(d) => ...` arm",
    note = "`select!` waits on channels, as Go's does; to wait on a future, spawn it and receive its result on a channel"
)]
pub trait SelectRecv: sealed::Sealed {
    /// The channel's element type.
    type Item;
    /// The receiver itself.
    fn receiver(&self) -> &Receiver<Self::Item>;
}

impl<T> sealed::Sealed for Receiver<T> {}
impl<T> SelectRecv for Receiver<T> {
    type Item = T;
    fn receiver(&self) -> &Receiver<T> {
        self
    }
}

impl<R: SelectRecv + ?Sized> sealed::Sealed for &R {}
impl<R: SelectRecv + ?Sized> SelectRecv for &R {
    type Item = R::Item;
    fn receiver(&self) -> &Receiver<R::Item> {
        (**self).receiver()
    }
}

/// The receiver behind `recv(rx)`'s expression (macro plumbing: a wrong
/// type gets [`SelectRecv`]'s hints).
#[doc(hidden)]
pub fn recv_chan<R: SelectRecv + ?Sized>(rx: &R) -> &Receiver<R::Item> {
    rx.receiver()
}

/// The sender behind `send(tx, v)`'s expression (macro plumbing).
#[doc(hidden)]
pub fn send_chan<S: SelectSend + ?Sized>(tx: &S) -> &Sender<S::Item> {
    tx.sender()
}

/// What `send(..)` in a [`select!`](crate::select!) accepts: a [`Sender`],
/// or a reference to one. Sealed.
#[diagnostic::on_unimplemented(
    message = "`select!`'s `send(..)` takes a `goro::chan::Sender`, not `{Self}`",
    label = "not a channel sender",
    note = "`select!` waits on channels, as Go's does: `send(tx, value) -> res => ...`"
)]
pub trait SelectSend: sealed::SealedSend {
    /// The channel's element type.
    type Item;
    /// The sender itself.
    fn sender(&self) -> &Sender<Self::Item>;
}

impl<T> sealed::SealedSend for Sender<T> {}
impl<T> SelectSend for Sender<T> {
    type Item = T;
    fn sender(&self) -> &Sender<T> {
        self
    }
}

impl<S: SelectSend + ?Sized> sealed::SealedSend for &S {}
impl<S: SelectSend + ?Sized> SelectSend for &S {
    type Item = S::Item;
    fn sender(&self) -> &Sender<S::Item> {
        (**self).sender()
    }
}
