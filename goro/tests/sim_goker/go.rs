//! The two Go shapes the ports share that goro spells differently.
//!
//! A Go channel is one value that every holder can send on, receive from
//! and close, and it never closes by itself. A goro channel is a
//! `Sender`/`Receiver` pair that closes when its last `Sender` is dropped:
//! ported naively, a goroutine that exits would close a channel Go leaves
//! open, and a leak the bug causes in Go would turn into a closed channel
//! that wakes the blocked task. [`Chan`] holds both ends, so a channel
//! stays open while anybody holds it, as in Go, and closes only on
//! [`Chan::close`] (Go's `close(ch)`).

use goro::chan::{bounded, Receiver, Sender};
use std::future::Future;
use std::pin::Pin;

/// Go's `chan T`: `Chan::new(0)` is `make(chan T)`, `Chan::new(n)` is
/// `make(chan T, n)`. Cloning it copies the reference, as assigning a Go
/// channel does.
pub struct Chan<T> {
    /// Sends (`ch <- v`), and in `select!` a `send(ch.tx, v)` case.
    pub tx: Sender<T>,
    /// Receives (`<-ch`), and in `select!` a `recv(ch.rx)` case.
    pub rx: Receiver<T>,
}

impl<T> Clone for Chan<T> {
    fn clone(&self) -> Chan<T> {
        Chan {
            tx: self.tx.clone(),
            rx: self.rx.clone(),
        }
    }
}

impl<T> Chan<T> {
    /// `make(chan T, cap)`.
    pub fn new(cap: usize) -> Chan<T> {
        let (tx, rx) = bounded(cap);
        Chan { tx, rx }
    }

    /// `ch <- v`; panics on a closed channel, as Go does.
    pub async fn send(&self, v: T) {
        if self.tx.send(v).await.is_err() {
            panic!("send on closed channel");
        }
    }

    /// `v, ok := <-ch`: `None` once the channel is closed and drained.
    pub async fn recv(&self) -> Option<T> {
        self.rx.recv().await.ok()
    }

    /// `close(ch)`; panics on a second close, as Go does.
    pub fn close(&self) {
        assert!(self.tx.close(), "close of closed channel");
    }
}

/// A Go `func()` that blocks (a callback stored in a struct): a boxed
/// future maker.
pub type Func = Box<dyn Fn() -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;
