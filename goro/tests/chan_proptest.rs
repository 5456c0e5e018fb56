//! Model-based test: a single-threaded sequence of operations on a channel
//! behaves like a `VecDeque` of capacity `cap` plus a `closed` flag.
//! Includes send/recv futures that are polled once and dropped, to check
//! that cancellation leaves the channel as the model says.

mod support;

use std::collections::VecDeque;
use std::task::Poll;

use goro::chan::{self, RecvError, SendError, TryRecvError, TrySendError};
use proptest::prelude::*;
use support::chan::poll_once;

#[derive(Debug, Clone)]
enum Op {
    TrySend(u8),
    TryRecv,
    Close,
    Len,
    /// Poll `send(v)` once, then drop it.
    SendPolledOnceThenDropped(u8),
    /// Poll `recv()` once, then drop it.
    RecvPolledOnceThenDropped,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => any::<u8>().prop_map(Op::TrySend),
        4 => Just(Op::TryRecv),
        1 => Just(Op::Close),
        2 => Just(Op::Len),
        2 => any::<u8>().prop_map(Op::SendPolledOnceThenDropped),
        2 => Just(Op::RecvPolledOnceThenDropped),
    ]
}

struct Model {
    cap: usize,
    buf: VecDeque<u8>,
    closed: bool,
}

impl Model {
    fn try_send(&mut self, v: u8) -> Result<(), TrySendError<u8>> {
        if self.closed {
            Err(TrySendError::Closed(v))
        } else if self.buf.len() < self.cap {
            self.buf.push_back(v);
            Ok(())
        } else {
            Err(TrySendError::Full(v))
        }
    }

    fn try_recv(&mut self) -> Result<u8, TryRecvError> {
        match self.buf.pop_front() {
            Some(v) => Ok(v),
            None if self.closed => Err(TryRecvError::Closed),
            None => Err(TryRecvError::Empty),
        }
    }
}

proptest! {
    #[test]
    fn buffered_channel_matches_vecdeque_model(
        cap in 0usize..4,
        ops in proptest::collection::vec(op(), 0..64),
    ) {
        let (tx, rx) = chan::bounded::<u8>(cap);
        let mut model = Model { cap, buf: VecDeque::new(), closed: false };
        for (step, op) in ops.into_iter().enumerate() {
            match op {
                Op::TrySend(v) => {
                    prop_assert_eq!(tx.try_send(v), model.try_send(v), "step {}: try_send({})", step, v);
                }
                Op::TryRecv => {
                    prop_assert_eq!(rx.try_recv(), model.try_recv(), "step {}: try_recv", step);
                }
                Op::Close => {
                    prop_assert_eq!(tx.close(), !model.closed, "step {}: close", step);
                    model.closed = true;
                }
                Op::Len => {
                    prop_assert_eq!(rx.len(), model.buf.len(), "step {}: len", step);
                    prop_assert_eq!(tx.is_closed(), model.closed, "step {}: is_closed", step);
                }
                Op::SendPolledOnceThenDropped(v) => {
                    let mut send = tx.send(v);
                    let got = poll_once(&mut send);
                    drop(send);
                    let want = match model.try_send(v) {
                        Ok(()) => Poll::Ready(Ok(())),
                        Err(TrySendError::Closed(v)) => Poll::Ready(Err(SendError(v))),
                        Err(TrySendError::Full(_)) => Poll::Pending, // parked, then cancelled
                    };
                    prop_assert_eq!(got, want, "step {}: send({}) polled once", step, v);
                }
                Op::RecvPolledOnceThenDropped => {
                    let mut recv = rx.recv();
                    let got = poll_once(&mut recv);
                    drop(recv);
                    let want = match model.try_recv() {
                        Ok(v) => Poll::Ready(Ok(v)),
                        Err(TryRecvError::Closed) => Poll::Ready(Err(RecvError)),
                        Err(TryRecvError::Empty) => Poll::Pending, // parked, then cancelled
                    };
                    prop_assert_eq!(got, want, "step {}: recv polled once", step);
                }
            }
        }
        // Whatever is left drains in order.
        tx.close();
        let rest: Vec<u8> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
        prop_assert_eq!(rest, Vec::from(model.buf));
    }
}
