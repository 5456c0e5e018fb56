//! Where a bubble's seed decides: which job runs next, and which virtual P
//! a wake from a timer lands on.
//!
//! Two strategies:
//!
//! * **Uniform** (the default): each step draws a virtual P; it runs its
//!   `runnext` or its queue's head, or, with nothing queued, steals the
//!   head of a P drawn among those with work. Every interleaving that
//!   parallel Ps could produce has a chance, weighted as they would be.
//! * **PCT** (probabilistic concurrency testing, Burckhardt et al., ASPLOS
//!   2010): every task gets a random priority when it is first queued, the
//!   highest-priority runnable task always runs, and at `depth - 1` steps
//!   drawn in advance the task running there drops below every other.
//!   A bug that needs `d` ordering constraints between tasks is found with
//!   probability at least 1/(n·k^(d-1)) per run (n tasks, k steps), where
//!   uniform choice can be exponentially less likely to line them up.
//!
//! The schedule's fingerprint is a hash of each step's task number and
//! virtual P: two runs with the same seed and the same program take the
//! same steps in the same order exactly when their fingerprints match.

use super::{Entry, VirtualP};
use crate::rng::Rng;
use std::collections::HashMap;

/// How a bubble chooses among runnable tasks (`goro::sim::Builder::strategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Strategy {
    /// Each step draws a virtual P, which runs its next task or steals one
    /// (module docs of `goro::sim`).
    #[default]
    Uniform,
    /// Priorities drawn per task, `depth - 1` priority changes at steps
    /// drawn in advance (PCT). `depth` is the number of ordering
    /// constraints a bug may need; 2 to 5 is usual.
    Pct {
        /// Bug depth to aim for (at least 1).
        depth: u32,
    },
}

/// The steps over which PCT spreads its priority changes: the length of a
/// typical test's schedule (a GoKer program takes tens to hundreds).
const PCT_HORIZON: u64 = 400;

pub(crate) struct Chooser {
    rng: Rng,
    strategy: Strategy,
    steps: u64,
    hash: u64,
    /// PCT: each task number's priority (higher runs first).
    prio: HashMap<u64, u64>,
    /// PCT: the steps at which the running task drops, in order.
    change_at: Vec<u64>,
}

/// SplitMix64's finaliser: spreads neighbouring seeds apart (the
/// generator's own seeding only sets the low bit).
pub(crate) fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Chooser {
    pub(crate) fn new(seed: u64, strategy: Strategy) -> Chooser {
        let mut rng = Rng::new(mix(seed));
        let change_at = match strategy {
            Strategy::Uniform => Vec::new(),
            Strategy::Pct { depth } => {
                let mut v: Vec<u64> = (1..depth.max(1))
                    .map(|_| 1 + rng.below(PCT_HORIZON as usize) as u64)
                    .collect();
                v.sort_unstable();
                v
            }
        };
        Chooser {
            rng,
            strategy,
            steps: 0,
            hash: 0xCBF2_9CE4_8422_2325,
            prio: HashMap::new(),
            change_at,
        }
    }

    /// Job `n` is queued: under PCT, it gets its priority the first time.
    pub(crate) fn seen(&mut self, n: u64) {
        if let Strategy::Pct { depth } = self.strategy {
            let rng = &mut self.rng;
            // Above every changed priority (those are below `depth`).
            self.prio
                .entry(n)
                .or_insert_with(|| u64::from(depth) + (rng.next_u64() >> 1));
        }
    }

    /// A virtual P for a wake that no running P claims.
    pub(crate) fn draw(&mut self, procs: usize) -> usize {
        self.rng.below(procs)
    }

    /// Takes the next job and the P that runs it; `None` when no P has work.
    pub(crate) fn pick(&mut self, ps: &mut [VirtualP]) -> Option<(Entry, usize)> {
        if !ps.iter().any(VirtualP::has_work) {
            return None;
        }
        self.steps += 1;
        let (e, p) = match self.strategy {
            Strategy::Uniform => self.pick_uniform(ps),
            Strategy::Pct { .. } => self.pick_pct(ps),
        };
        for word in [e.n, p as u64] {
            // FNV-1a over the step's two words.
            self.hash = (self.hash ^ word).wrapping_mul(0x0000_0100_0000_01B3);
        }
        Some((e, p))
    }

    fn pick_uniform(&mut self, ps: &mut [VirtualP]) -> (Entry, usize) {
        let p = self.rng.below(ps.len());
        if let Some(e) = ps[p].runnext.take().or_else(|| ps[p].queue.pop_front()) {
            return (e, p);
        }
        // Idle: rob a P with work, its oldest job first, as a thief does.
        let victims: Vec<usize> = (0..ps.len()).filter(|&v| ps[v].has_work()).collect();
        let v = victims[self.rng.below(victims.len())];
        let e = ps[v]
            .queue
            .pop_front()
            .or_else(|| ps[v].runnext.take())
            .expect("a victim has work");
        (e, p)
    }

    fn pick_pct(&mut self, ps: &mut [VirtualP]) -> (Entry, usize) {
        let prio = |n: u64| self.prio.get(&n).copied().unwrap_or(0);
        // (priority, P, None for runnext or Some(queue index))
        let mut best: Option<(u64, usize, Option<usize>)> = None;
        for (p, vp) in ps.iter().enumerate() {
            let next = vp.runnext.iter().map(|e| (e.n, None));
            let queued = vp.queue.iter().enumerate().map(|(i, e)| (e.n, Some(i)));
            for (n, at) in next.chain(queued) {
                if best.is_none_or(|(b, _, _)| prio(n) > b) {
                    best = Some((prio(n), p, at));
                }
            }
        }
        let (_, p, at) = best.expect("some P has work");
        let e = match at {
            None => ps[p].runnext.take(),
            Some(i) => ps[p].queue.remove(i),
        }
        .expect("the entry found");
        if let Some(i) = self.change_at.iter().position(|&s| s == self.steps) {
            self.prio.insert(e.n, i as u64);
        }
        (e, p)
    }

    /// 64 bits from the seed's generator.
    pub(crate) fn random_u64(&mut self) -> u64 {
        self.rng.next_u64()
    }

    pub(crate) fn hash(&self) -> u64 {
        self.hash
    }

    pub(crate) fn steps(&self) -> u64 {
        self.steps
    }
}
