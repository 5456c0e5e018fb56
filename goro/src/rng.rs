//! The one random number generator in goro: xorshift64*, owned by whoever
//! draws from it (an M for its steal order, a thread for `select!`'s poll
//! order), so a draw is a few arithmetic instructions with no shared state.
//!
//! Its numbers only spread choices out (which P to rob first, which ready
//! case to take): nothing depends on them being unpredictable, only on
//! every choice being equally likely over time, which xorshift64* gives
//! (it passes BigCrush but for its lowest bits, and `below` uses the
//! highest).

/// A xorshift64* state; never zero.
#[derive(Clone, Debug)]
pub(crate) struct Rng(u64);

impl Rng {
    /// A generator started at `seed` (made odd, so never zero).
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }

    /// A generator seeded from std's randomly keyed hasher and `salt` (a
    /// thread id, a thread number): different in every thread and run.
    #[cfg_attr(loom, allow(dead_code))] // under loom, orders are fixed
    pub(crate) fn from_entropy(salt: impl std::hash::Hash) -> Rng {
        use std::hash::BuildHasher;
        Rng::new(std::collections::hash_map::RandomState::new().hash_one(salt))
    }

    /// The next 64 random bits.
    #[inline]
    pub(crate) fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n`, from the high bits (Lemire's multiply-shift).
    #[inline]
    pub(crate) fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::Rng;

    #[test]
    fn below_covers_the_range_evenly() {
        let mut r = Rng::new(42);
        let mut counts = [0u32; 6];
        for _ in 0..60_000 {
            counts[r.below(6)] += 1;
        }
        for c in counts {
            assert!((9_000..11_000).contains(&c), "uneven: {counts:?}");
        }
    }

    #[test]
    fn a_zero_seed_is_not_stuck_at_zero() {
        let mut r = Rng::new(0);
        assert_ne!(r.next_u64(), r.next_u64());
    }
}
