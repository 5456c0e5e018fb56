//! Bounded waiting (seed 000: "don't burn CPU unnecessarily"): one
//! [`Backoff`] for every spin loop in the runtime, with a named profile per
//! user (crossbeam's `Backoff` model).
//!
//! A wait goes through up to three phases, one [`Backoff::snooze`] a round:
//! rounds of active spinning (each a burst of `pause` instructions, the
//! burst doubling from round to round up to a cap), then rounds of
//! `sched_yield`, then what the profile does at the end: tell the caller to
//! park or queue ([`Snooze::Done`]), keep yielding, or sleep. Active
//! spinning is only worth it for waits of about the cost of a context
//! switch; once a wait runs several times longer than expected, the thread
//! being waited for is probably descheduled, and spinning only steals its
//! CPU.
//!
//! Every pause is [`crate::loom::spin_loop`] and every yield
//! [`crate::loom::thread::yield_now`]: one loom path. Under loom a spinning
//! round is a single `spin_loop` (a yield to the model's scheduler, whatever
//! the burst: 64 of them would only multiply the model's states) and a
//! sleep is one too. No model reaches a burst of the policy profile (the
//! scheduler's models run with `spin: 0` and no steal pause, and the mutex
//! does not spin under loom), and the channel lock and the task table take
//! loom's mutex instead of backing off.
//!
//! # Profiles
//!
//! Each constructor is one user's profile; its doc says why the numbers
//! suit that user.
//!
//! | profile | user | spinning rounds (`pause`s) | then | at the end |
//! |---|---|---|---|---|
//! | [`Backoff::new`] `Bounded { spin, yield_ }` | `Machine::backoff` (idle search), `sync/mutex/lock.rs` | `spin` (1, 2, 4 … 64, 64 …) | `yield_` yields | `Done` |
//! | [`Backoff::new`] `Unbounded` | the same, under `spin=unbounded` | [`UNBOUNDED_ROUNDS`] (1, 2 … 64, 64 …) | none | `Done` |
//! | [`Backoff::steal_pause`] | `runnext` steal pause (`runq/steal.rs`) | [`UNBOUNDED_ROUNDS`] (1, 2 … 64, 64 …) | none | `Done` (the caller starts a new one) |
//! | [`Backoff::chan_lock`] | the channel lock (`chan/lock.rs`) | 4 (30 each) | none | `Done`: queue on the mutex |
//! | [`Backoff::task_table`] | the task table's spin lock (`task/table.rs`) | 7 (1, 2 … 64) | none | yield, forever |
//! | [`Backoff::pin_wait`] | the pool's reader wait (`sync/pool/pin.rs`) | 31 (1 each) | 8 yields | sleep 20, 40 … 640, then 1000 µs, forever |
//!
//! Round for round (`step` counts from 0):
//!
//! * `Backoff::new(policy)`: round `step` spins `1 << step.min(6)` pauses
//!   while `step < spin`, yields while `step < spin + yield_`, and says
//!   `Done` after; `Unbounded` spins the same bursts for
//!   [`UNBOUNDED_ROUNDS`] rounds, then says `Done`.
//! * `steal_pause` is `Backoff::new(SpinPolicy::Unbounded)`, whatever the
//!   runtime's policy.
//! * `chan_lock`: 4 rounds of 30 pauses, each followed by the caller's
//!   `try_lock` (its loop is `while snooze() != Done { try_lock }`), then
//!   the caller's `lock`.
//! * `task_table` is `crossbeam_utils::Backoff::snooze` (0.8): step 0 to 6
//!   spin `1 << step` pauses, every later step yields; never done (the
//!   lock's holder runs a few stores, so the lock is always worth waiting
//!   for).
//! * `pin_wait`: steps 0 to 30 one pause, 31 to 38 a yield, step `s` from
//!   39 on a sleep of `min(20 << min(s - 39, 6), 1000)` µs; under loom
//!   every step one `spin_loop`.

use crate::sched::policy::SpinPolicy;

/// One wait's progress through its profile.
#[derive(Debug)]
pub(crate) struct Backoff {
    step: u32,
    profile: Profile,
}

/// What one `snooze` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Snooze {
    /// Spun a burst of `pause` instructions.
    Spun,
    /// Gave the CPU up: called `sched_yield` (or, in [`Backoff::pin_wait`]'s
    /// last phase, slept).
    Yielded,
    /// The budget is spent: park now.
    Done,
}

/// Cap on the doubling burst of `pause` instructions (2^6 = 64 pauses;
/// crossbeam's `SPIN_LIMIT`).
const MAX_BURST_SHIFT: u32 = 6;

/// Under `SpinPolicy::Unbounded`, rounds of pure spinning before a wait that
/// can park does so (about 100 µs: seed 000's "before" spins through a
/// whole wait, but an idle runtime must still go to sleep eventually).
pub(crate) const UNBOUNDED_ROUNDS: u32 = 2048;

/// A profile: how many rounds spin and how long each burst is, how many
/// yield, and what comes after.
#[derive(Debug, Clone, Copy)]
struct Profile {
    /// Rounds of active spinning.
    spin: u32,
    /// `pause`s in the first spinning round.
    pauses: u32,
    /// How many times the burst doubles (round `step` spins
    /// `pauses << step.min(doublings)`).
    doublings: u32,
    /// Rounds of `sched_yield` after the spinning ones.
    yields: u32,
    /// Every round after those.
    end: End,
}

/// What a profile does once its spinning and yielding rounds are spent.
#[derive(Debug, Clone, Copy)]
enum End {
    /// Says [`Snooze::Done`]: the caller parks (or queues).
    Done,
    /// Yields, every round.
    Yield,
    /// Sleeps `first_us` µs, doubling each round up to `max_us`.
    Sleep { first_us: u64, max_us: u64 },
}

impl Backoff {
    /// The runtime's [`SpinPolicy`] (seed 000): the idle search between
    /// fruitless passes (`Machine::backoff`) and the mutex's spin while its
    /// owner runs. `Bounded { spin, yield_ }` spins `spin` doubling bursts
    /// (a few microseconds with the default 6), yields `yield_` times, then
    /// says `Done` so that the caller parks; `Unbounded` (the seed's
    /// "before") spins [`UNBOUNDED_ROUNDS`] bursts, never yielding, then says
    /// `Done`.
    #[inline]
    pub(crate) fn new(policy: SpinPolicy) -> Backoff {
        let (spin, yields) = match policy {
            SpinPolicy::Bounded { spin, yield_ } => (spin, yield_),
            SpinPolicy::Unbounded => (UNBOUNDED_ROUNDS, 0),
        };
        Backoff::with(Profile {
            spin,
            pauses: 1,
            doublings: MAX_BURST_SHIFT,
            yields,
            end: End::Done,
        })
    }

    /// The thief's `runnext` pause (seed 004): the `Unbounded` profile
    /// whatever the policy. The pause is a few microseconds and must never
    /// yield (a thief sharing a CPU with the victim would hand it a whole
    /// time slice, `runq/steal.rs`); its deadline, not the back-off, ends
    /// it, so the caller starts a new `Backoff` at `Done`.
    #[inline]
    pub(crate) fn steal_pause() -> Backoff {
        Backoff::new(SpinPolicy::Unbounded)
    }

    /// The channel lock's wait before it queues on its mutex: 4 rounds of 30
    /// `pause`s, then `Done`. Go's runtime lock spins the same (its
    /// `active_spin` 4, `active_spin_cnt` 30): long enough that the holder
    /// runs several channel operations with the line to itself, short
    /// enough that a descheduled holder costs only a futex wait.
    #[cfg_attr(loom, allow(dead_code))] // its user is not built under loom
    #[inline]
    pub(crate) fn chan_lock() -> Backoff {
        Backoff::with(Profile {
            spin: 4,
            pauses: 30,
            doublings: 0,
            yields: 0,
            end: End::Done,
        })
    }

    /// The task table's spin lock (crossbeam's `Backoff::snooze` schedule):
    /// bursts of 1 to 64 `pause`s, then a yield every round, never `Done`.
    /// The lock is held for a few stores (or a dump's copy of one shard),
    /// so there is nothing to park on and a wait that outlasts the bursts
    /// means the holder was descheduled: yield it the CPU.
    #[cfg_attr(loom, allow(dead_code))] // its user is not built under loom
    #[inline]
    pub(crate) fn task_table() -> Backoff {
        Backoff::with(Profile {
            spin: MAX_BURST_SHIFT + 1,
            pauses: 1,
            doublings: MAX_BURST_SHIFT,
            yields: 0,
            end: End::Yield,
        })
    }

    /// The pool's wait for a pinned reader (`sync/pool/pin.rs`): a pinned
    /// section is a few dozen instructions with no user code and no locks,
    /// so it ends quickly unless its thread was descheduled: 31 single
    /// `pause`s, 8 yields, then sleeps doubling from 20 µs to 1 ms, never
    /// `Done`. Yielding longer would cost a time slice per call on an
    /// oversubscribed machine, and the thread we wait for needs that CPU.
    #[inline]
    pub(crate) fn pin_wait() -> Backoff {
        Backoff::with(Profile {
            spin: 31,
            pauses: 1,
            doublings: 0,
            yields: 8,
            end: End::Sleep {
                first_us: 20,
                max_us: 1000,
            },
        })
    }

    #[inline]
    fn with(profile: Profile) -> Backoff {
        Backoff { step: 0, profile }
    }

    /// Waits a little and says how.
    #[inline]
    pub(crate) fn snooze(&mut self) -> Snooze {
        let round = self.profile.round(self.step);
        self.step = self.step.saturating_add(1);
        match round {
            Round::Spin(pauses) => {
                burst(pauses);
                Snooze::Spun
            }
            Round::Yield => {
                crate::loom::thread::yield_now();
                Snooze::Yielded
            }
            Round::Sleep(us) => {
                sleep(us);
                Snooze::Yielded
            }
            Round::Done => Snooze::Done,
        }
    }
}

/// What one round of a profile does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Round {
    /// Spin this many `pause`s.
    Spin(u32),
    /// `sched_yield`.
    Yield,
    /// Sleep this many µs.
    Sleep(u64),
    /// Nothing: the budget is spent.
    Done,
}

impl Profile {
    /// Round `step` (from 0) of a wait.
    #[inline]
    fn round(&self, step: u32) -> Round {
        if step < self.spin {
            return Round::Spin(self.pauses << step.min(self.doublings));
        }
        let past = step - self.spin;
        if past < self.yields {
            return Round::Yield;
        }
        match self.end {
            End::Done => Round::Done,
            End::Yield => Round::Yield,
            End::Sleep { first_us, max_us } => {
                // Saturating: a long wait's doubling must not wrap around
                // to a short sleep.
                let n = past - self.yields;
                Round::Sleep(first_us.saturating_mul(1 << n.min(63)).min(max_us))
            }
        }
    }
}

/// `pauses` `pause` instructions; one yield to the model under loom.
#[inline]
fn burst(pauses: u32) {
    #[cfg(not(loom))]
    for _ in 0..pauses {
        crate::loom::spin_loop();
    }
    #[cfg(loom)]
    {
        let _ = pauses;
        crate::loom::spin_loop();
    }
}

/// A sleeping end's round; one `spin_loop` under loom, which cannot sleep.
#[cold]
fn sleep(us: u64) {
    #[cfg(not(loom))]
    std::thread::sleep(std::time::Duration::from_micros(us));
    #[cfg(loom)]
    {
        let _ = us;
        crate::loom::spin_loop();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// The first `n` rounds of `b`'s profile.
    fn rounds(b: &Backoff, n: u32) -> Vec<Round> {
        (0..n).map(|step| b.profile.round(step)).collect()
    }

    /// The policy profile is the old `Backoff`: while `step < spin` a burst
    /// of `1 << step.min(6)`, while `step < spin + yield_` a yield, then
    /// `Done`.
    #[test]
    fn policy_profile_is_the_old_backoff() {
        for (spin, yield_) in [(0, 0), (1, 1), (6, 2), (8, 2), (3, 0), (0, 3)] {
            let b = Backoff::new(SpinPolicy::Bounded { spin, yield_ });
            let old: Vec<_> = (0..20)
                .map(|step: u32| {
                    if step < spin {
                        Round::Spin(1 << step.min(6))
                    } else if step < spin + yield_ {
                        Round::Yield
                    } else {
                        Round::Done
                    }
                })
                .collect();
            assert_eq!(rounds(&b, 20), old, "spin {spin}, yield {yield_}");
        }
        let mut b = Backoff::new(SpinPolicy::Bounded { spin: 1, yield_: 1 });
        assert_eq!(b.snooze(), Snooze::Spun);
        assert_eq!(b.snooze(), Snooze::Yielded);
        assert_eq!(b.snooze(), Snooze::Done);
        assert_eq!(b.snooze(), Snooze::Done);
    }

    /// `Unbounded` and the steal pause: bursts of 1, 2 … 64 for 2048
    /// rounds, then `Done`.
    #[test]
    fn unbounded_and_steal_pause_spin_2048_rounds() {
        for b in [Backoff::new(SpinPolicy::Unbounded), Backoff::steal_pause()] {
            let r = rounds(&b, UNBOUNDED_ROUNDS + 2);
            for (step, &x) in r.iter().enumerate() {
                let want = if step < UNBOUNDED_ROUNDS as usize {
                    Round::Spin(1 << step.min(6))
                } else {
                    Round::Done
                };
                assert_eq!(x, want, "step {step}");
            }
        }
    }

    /// The channel lock's old loop: 4 rounds of 30 pauses (each followed
    /// by the caller's `try_lock`), then queue.
    #[test]
    fn chan_lock_is_four_rounds_of_thirty() {
        let b = Backoff::chan_lock();
        let mut want = vec![Round::Spin(30); 4];
        want.extend([Round::Done; 3]);
        assert_eq!(rounds(&b, 7), want);
        let mut b = Backoff::chan_lock();
        let mut tries = 0;
        while b.snooze() != Snooze::Done {
            tries += 1;
        }
        assert_eq!(tries, 4);
    }

    /// crossbeam-utils 0.8's `snooze`: `1 << step` pauses for step 0 to 6
    /// (`SPIN_LIMIT`), then a yield every round, never done.
    #[test]
    fn task_table_is_crossbeams_snooze() {
        let r = rounds(&Backoff::task_table(), 100);
        for (step, &x) in r.iter().enumerate() {
            let want = if step <= 6 {
                Round::Spin(1 << step)
            } else {
                Round::Yield
            };
            assert_eq!(x, want, "step {step}");
        }
        assert_eq!(Backoff::task_table().profile.round(u32::MAX), Round::Yield);
    }

    /// `pin.rs`'s old `backoff`, which counted the round (`n`, from 1)
    /// before acting: 1 to 31 one pause, 32 to 39 a yield, then a sleep of
    /// `min(20 << min(n - 40, 6), 1000)` µs.
    #[test]
    fn pin_wait_is_pins_old_backoff() {
        let r = rounds(&Backoff::pin_wait(), 200);
        for (step, &x) in r.iter().enumerate() {
            let n = step as u32 + 1;
            let old = match n {
                0..=31 => Round::Spin(1),
                32..=39 => Round::Yield,
                n => Round::Sleep((20u64 << (n - 40).min(6)).min(1000)),
            };
            assert_eq!(x, old, "round {n}");
        }
        assert_eq!(
            Backoff::pin_wait().profile.round(u32::MAX),
            Round::Sleep(1000)
        );
    }
}
