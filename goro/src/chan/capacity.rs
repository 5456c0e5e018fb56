//! A channel's capacity and its closed flag, in one 32-bit word.
//!
//! Both fit: the capacity never changes after the channel is made, and
//! the flag is set once. Sharing a word (and a 32-bit senders count beside
//! it, `chan.rs`) makes a channel of a `u64` 88 bytes instead of 104,
//! which puts it in the allocator's 112-byte chunk instead of the 128-byte
//! one: 16 bytes less for every channel, and for every parked task that
//! waits on a channel of its own (docs/ARCHITECTURE.md, "What a parked
//! task costs"). The price is a bound on the capacity, 2^31 - 2, where Go
//! allows what memory allows; a buffer here grows with its backlog, so a
//! larger bound would only ever matter as "no bound", which
//! `unbounded()` gives.
//!
//! The flag is written only by the holder of the channel's lock (`close`),
//! with a plain store: there is never a second writer, so no
//! read-modify-write is needed. It is read under the lock too, which
//! orders the read after the close. The word is atomic only because
//! `capacity()` reads it without the lock, and the capacity's bits of any
//! value it reads are the same.

use crate::loom::{AtomicU32, Ordering};

/// The bit that says the channel is closed.
const CLOSED: u32 = 1 << 31;
/// The capacity's bits.
const CAP: u32 = CLOSED - 1;
/// The capacity of `unbounded()` (and `bounded(usize::MAX)`), encoded.
const UNBOUNDED: u32 = CAP;
/// The largest capacity a bounded channel may have (2^31 - 2).
const MAX_CAP: usize = (UNBOUNDED - 1) as usize;

/// Marks the path that calls it as unlikely (`std::hint::cold_path`,
/// which needs a newer Rust than the workspace's 1.87).
#[cold]
#[inline(always)]
fn cold() {}

/// The capacity and the closed flag (module docs).
pub(crate) struct CapClosed(AtomicU32);

impl CapClosed {
    /// An open channel of capacity `cap`; `usize::MAX` means no bound.
    ///
    /// # Panics
    ///
    /// If `cap` is above 2^31 - 2 and is not `usize::MAX`.
    pub(crate) fn new(cap: usize) -> CapClosed {
        let cap = match cap {
            usize::MAX => UNBOUNDED,
            c if c <= MAX_CAP => c as u32,
            c => panic!(
                "goro: bounded({c}): a channel's capacity must be at most {MAX_CAP} \
                 (2^31 - 2); for no bound use goro::chan::unbounded()"
            ),
        };
        CapClosed(AtomicU32::new(cap))
    }

    /// The capacity; `usize::MAX` for no bound. Any thread, any time.
    #[inline]
    pub(crate) fn cap(&self) -> usize {
        // Relaxed: the capacity's bits never change.
        match self.0.load(Ordering::Relaxed) & CAP {
            UNBOUNDED => usize::MAX,
            c => c as usize,
        }
    }

    /// Whether a buffer of `len` values is below the capacity, for the hot
    /// paths: one load and one compare while the buffer has room (the word
    /// is the capacity itself while the channel is open). Also `true` once
    /// the channel is closed (the flag is the word's top bit): callers look
    /// at [`CapClosed::is_closed`] first, or gain nothing from a closed
    /// channel's room (it has no parked sender to move into the buffer).
    #[inline]
    pub(crate) fn room_for(&self, len: usize) -> bool {
        // Relaxed: as in `cap` and `is_closed`.
        let word = self.0.load(Ordering::Relaxed);
        if len < word as usize {
            return true;
        }
        // The unbounded case marked cold: LLVM would otherwise compute both
        // halves without a branch, 8 instructions where the plain `usize`
        // field this word replaced took 2 (+5% on the buffered rows).
        cold();
        word & CAP == UNBOUNDED
    }

    /// Whether the channel is closed. The caller holds the channel's lock.
    #[inline]
    pub(crate) fn is_closed(&self) -> bool {
        // Relaxed: the lock orders this read after the close's store.
        self.0.load(Ordering::Relaxed) & CLOSED != 0
    }

    /// Marks the channel closed. The caller holds the channel's lock, and
    /// only a holder writes the word: a load and a store, no `fetch_or`.
    #[inline]
    pub(crate) fn set_closed(&self) {
        let word = self.0.load(Ordering::Relaxed);
        self.0.store(word | CLOSED, Ordering::Relaxed);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn room_cap_and_the_flag_read_back_as_written() {
        let c = CapClosed::new(3);
        assert!(
            c.room_for(2) && !c.room_for(3),
            "room below the capacity only"
        );
        assert_eq!(c.cap(), 3);
        assert!(!c.is_closed());
        c.set_closed();
        assert!(c.is_closed());
        assert_eq!(c.cap(), 3, "closing kept the capacity");

        let u = CapClosed::new(usize::MAX);
        assert_eq!(u.cap(), usize::MAX);
        // Past the word's own value, the slow half says unbounded.
        assert!(u.room_for(usize::MAX - 1) && u.room_for(UNBOUNDED as usize));
        let max = CapClosed::new(MAX_CAP);
        assert!(
            !max.room_for(MAX_CAP),
            "the largest bounded capacity is a bound"
        );
        assert_eq!(max.cap(), MAX_CAP);
    }
}
