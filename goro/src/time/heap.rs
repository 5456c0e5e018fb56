//! A 4-ary min-heap keyed by deadline: the shape of each P's timer heap.
//!
//! Go's timer heaps are 4-ary (`runtime/time.go`): a wider node halves the
//! depth of a binary heap, so a push (sift-up) touches half as many levels,
//! and the four children of a node usually share a cache line of keys.
//! Pop does a bit more comparing per level, but timers are pushed (armed,
//! reset) far more often than they fire.
//!
//! The heap knows nothing of timer states: entries whose timer was stopped
//! or re-armed elsewhere stay in place ("zombies") until they reach the top or
//! until [`Heap::retain`] sweeps them, which the timer code does when zombies
//! pass a quarter of the heap. That keeps stop and reset O(1).

/// One heap entry: a deadline and what it is for.
#[derive(Debug)]
pub(crate) struct Entry<T> {
    pub(crate) when: u64,
    pub(crate) item: T,
}

#[derive(Debug)]
pub(crate) struct Heap<T> {
    v: Vec<Entry<T>>,
}

impl<T> Default for Heap<T> {
    fn default() -> Self {
        Heap { v: Vec::new() }
    }
}

const D: usize = 4;

impl<T> Heap<T> {
    pub(crate) fn len(&self) -> usize {
        self.v.len()
    }

    /// The earliest deadline, if any.
    pub(crate) fn peek_when(&self) -> Option<u64> {
        self.v.first().map(|e| e.when)
    }

    pub(crate) fn push(&mut self, when: u64, item: T) {
        self.v.push(Entry { when, item });
        let last = self.v.len() - 1;
        self.sift_up(last);
    }

    /// Removes and returns the earliest entry.
    pub(crate) fn pop(&mut self) -> Option<Entry<T>> {
        if self.v.is_empty() {
            return None;
        }
        let e = self.v.swap_remove(0);
        if !self.v.is_empty() {
            self.sift_down(0);
        }
        Some(e)
    }

    /// Keeps only the entries for which `keep` is true, then restores the
    /// heap order in O(n) (Floyd's heapify).
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&Entry<T>) -> bool) {
        self.v.retain(|e| keep(e));
        if self.v.len() > 1 {
            for i in (0..=(self.v.len() - 2) / D).rev() {
                self.sift_down(i);
            }
        }
    }

    /// Removes every entry.
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = Entry<T>> + '_ {
        self.v.drain(..)
    }

    fn sift_up(&mut self, mut i: usize) {
        while i > 0 {
            let parent = (i - 1) / D;
            if self.v[i].when >= self.v[parent].when {
                break;
            }
            self.v.swap(i, parent);
            i = parent;
        }
    }

    fn sift_down(&mut self, mut i: usize) {
        let n = self.v.len();
        loop {
            let first = i * D + 1;
            if first >= n {
                break;
            }
            let last = (first + D).min(n);
            let mut min = first;
            for c in first + 1..last {
                if self.v[c].when < self.v[min].when {
                    min = c;
                }
            }
            if self.v[min].when >= self.v[i].when {
                break;
            }
            self.v.swap(i, min);
            i = min;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn pops_in_deadline_order(whens in proptest::collection::vec(0u64..1000, 0..200)) {
            let mut h = Heap::default();
            for (i, &w) in whens.iter().enumerate() {
                h.push(w, i);
            }
            let mut sorted = whens.clone();
            sorted.sort();
            let popped: Vec<u64> = std::iter::from_fn(|| h.pop()).map(|e| e.when).collect();
            prop_assert_eq!(popped, sorted);
        }

        #[test]
        fn retain_keeps_heap_order(whens in proptest::collection::vec(0u64..1000, 0..200), drop_mod in 2usize..5) {
            let mut h = Heap::default();
            for (i, &w) in whens.iter().enumerate() {
                h.push(w, i);
            }
            h.retain(|e| e.item % drop_mod != 0);
            let mut want: Vec<u64> = whens.iter().enumerate().filter(|(i, _)| i % drop_mod != 0).map(|(_, &w)| w).collect();
            want.sort();
            let popped: Vec<u64> = std::iter::from_fn(|| h.pop()).map(|e| e.when).collect();
            prop_assert_eq!(popped, want);
        }
    }
}
