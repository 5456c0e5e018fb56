//! A channel's buffer memory: given back when the backlog falls, and the
//! values left in it dropped one by one when the channel goes (`chan.rs`'s
//! module docs, "Memory, and values that panic").

use std::collections::VecDeque;

/// Drops the values left in a channel's buffer when the channel goes.
///
/// A value's `Drop` may panic. Dropping the `VecDeque` as it is would run
/// the next value's `Drop` during that panic's unwind, and a second panic
/// aborts the process. So each value is dropped under `catch_unwind`: every
/// value is dropped, and the first panic is resumed once they all are (or
/// dropped, if this thread is already unwinding, where resuming would
/// abort).
pub(super) fn drop_values<T>(buf: VecDeque<T>) {
    if !std::mem::needs_drop::<T>() {
        return;
    }
    let mut first_panic = None;
    for v in buf {
        if let Err(p) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(v))) {
            first_panic.get_or_insert(p);
        }
    }
    if let Some(p) = first_panic {
        if !std::thread::panicking() {
            std::panic::resume_unwind(p);
        }
    }
}

/// Smallest buffer, in bytes, that is ever given back: below it a channel
/// keeps what it has, so a small channel never reallocates.
const SHRINK_FLOOR_BYTES: usize = 16 * 1024;

/// Gives a buffer's memory back once the backlog has fallen to a quarter
/// of what the buffer holds, halving it at most (down to the floor).
///
/// The buffer grows with the backlog (a `bounded(1 << 30)` costs nothing up
/// front), so without this a channel that once held a burst keeps that
/// memory for its whole life. The gap between the shrink point (a quarter)
/// and the new size (twice the backlog) is the hysteresis: a steady backlog
/// never reallocates, and each shrink copies at most a quarter of the
/// buffer, paid for by the receives that emptied the other three quarters.
#[inline]
pub(super) fn shrink_if_sparse<T>(buf: &mut VecDeque<T>) {
    if std::mem::size_of::<T>() == 0 {
        return; // a buffer of zero-sized values holds no memory
    }
    let held = buf.capacity();
    if held > shrink_floor::<T>() && buf.len() <= held / 4 {
        shrink(buf);
    }
}

#[cold]
#[inline(never)]
fn shrink<T>(buf: &mut VecDeque<T>) {
    buf.shrink_to((buf.len() * 2).max(shrink_floor::<T>()));
}

/// [`SHRINK_FLOOR_BYTES`] in values of `T` (at least 16).
const fn shrink_floor<T>() -> usize {
    let n = SHRINK_FLOOR_BYTES / std::mem::size_of::<T>();
    if n < 16 {
        16
    } else {
        n
    }
}
