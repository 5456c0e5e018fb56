//! A 4-ary min-heap keyed by deadline: the shape of each P's timer heap.
//!
//! Go's timer heaps are 4-ary (`runtime/time.go`): a wider node halves the
//! depth of a binary heap, so a push (sift-up) touches half as many levels,
//! and the four children of a node usually share a cache line of keys.
//! Pop does a bit more comparing per level, but timers are pushed (armed,
//! reset) far more often than they fire.
//!
//! The heap knows nothing of timer states: entries whose timer was stopped
//! or re-armed elsewhere stay in place ("zombies") until they reach the top
//! or the end of the array ([`Heap::pop_last`] removes a leaf for free), or
//! until [`Heap::retain`] sweeps them, which the timer code does when zombies
//! pass a quarter of the heap. That keeps stop and reset O(1).

/// The deadlines and the items are kept in two parallel arrays: a
/// sift-down compares four children's deadlines, which are then 32
/// adjacent bytes (half a cache line) instead of four 24-byte entries
/// spread over two lines; with tens of thousands of timers armed, those
/// lines are cache misses. Sifts move a hole instead of swapping.
#[derive(Debug)]
pub(crate) struct Heap<T> {
    whens: Vec<u64>,
    items: Vec<T>,
}

impl<T> Default for Heap<T> {
    fn default() -> Self {
        Heap {
            whens: Vec::new(),
            items: Vec::new(),
        }
    }
}

const D: usize = 4;

impl<T> Heap<T> {
    pub(crate) fn len(&self) -> usize {
        self.whens.len()
    }

    /// The earliest deadline, if any.
    pub(crate) fn peek_when(&self) -> Option<u64> {
        self.whens.first().copied()
    }

    /// The earliest item, if any.
    pub(crate) fn peek(&self) -> Option<&T> {
        self.items.first()
    }

    pub(crate) fn push(&mut self, when: u64, item: T) {
        self.whens.push(when);
        self.items.push(item);
        self.sift_up(self.whens.len() - 1);
    }

    /// Removes and returns the earliest entry: its deadline and item.
    pub(crate) fn pop(&mut self) -> Option<(u64, T)> {
        if self.whens.is_empty() {
            return None;
        }
        let when = self.whens.swap_remove(0);
        let item = self.items.swap_remove(0);
        if !self.whens.is_empty() {
            self.sift_down(0);
        }
        Some((when, item))
    }

    /// The last item in array order (a leaf), if any.
    pub(crate) fn last(&self) -> Option<&T> {
        self.items.last()
    }

    /// Removes the last item in array order: a leaf, so no sift is needed.
    pub(crate) fn pop_last(&mut self) -> Option<T> {
        self.whens.pop()?;
        self.items.pop()
    }

    /// Keeps only the items for which `keep` is true, then restores the
    /// heap order in O(n) (Floyd's heapify).
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&T) -> bool) {
        let mut w = 0;
        for r in 0..self.items.len() {
            if keep(&self.items[r]) {
                self.whens.swap(w, r);
                self.items.swap(w, r);
                w += 1;
            }
        }
        self.whens.truncate(w);
        self.items.truncate(w);
        if w > 1 {
            for i in (0..=(w - 2) / D).rev() {
                self.sift_down(i);
            }
        }
    }

    /// Removes every item.
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = T> + '_ {
        self.whens.clear();
        self.items.drain(..)
    }

    fn sift_up(&mut self, mut i: usize) {
        let when = self.whens[i];
        let start = i;
        while i > 0 {
            let parent = (i - 1) / D;
            if when >= self.whens[parent] {
                break;
            }
            self.whens[i] = self.whens[parent];
            i = parent;
        }
        if i != start {
            self.whens[i] = when;
            // The items follow the same path: rotate it.
            let mut j = start;
            while j != i {
                let parent = (j - 1) / D;
                self.items.swap(j, parent);
                j = parent;
            }
        }
    }

    fn sift_down(&mut self, mut i: usize) {
        let n = self.whens.len();
        let when = self.whens[i];
        loop {
            let first = i * D + 1;
            if first >= n {
                break;
            }
            let last = (first + D).min(n);
            let mut min = first;
            let mut min_when = self.whens[first];
            for c in first + 1..last {
                if self.whens[c] < min_when {
                    min = c;
                    min_when = self.whens[c];
                }
            }
            if min_when >= when {
                break;
            }
            self.whens[i] = min_when;
            self.items.swap(i, min);
            i = min;
        }
        self.whens[i] = when;
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
            let popped: Vec<u64> = std::iter::from_fn(|| h.pop()).map(|e| e.0).collect();
            prop_assert_eq!(popped, sorted);
        }

        #[test]
        fn retain_keeps_heap_order(whens in proptest::collection::vec(0u64..1000, 0..200), drop_mod in 2usize..5) {
            let mut h = Heap::default();
            for (i, &w) in whens.iter().enumerate() {
                h.push(w, i);
            }
            h.retain(|item| item % drop_mod != 0);
            let mut want: Vec<u64> = whens.iter().enumerate().filter(|(i, _)| i % drop_mod != 0).map(|(_, &w)| w).collect();
            want.sort();
            let popped: Vec<u64> = std::iter::from_fn(|| h.pop()).map(|e| e.0).collect();
            prop_assert_eq!(popped, want);
        }
    }
}
