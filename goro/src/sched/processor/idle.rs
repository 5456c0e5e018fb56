//! Who is idle, who is spinning: the idle P list, the idle-P mask, the idle M
//! list and the spinning-M count (Go's `sched.pidle`, `idlepMask`,
//! `sched.midle`, `sched.nmspinning`).
//!
//! # Worker parking and unparking (Go's "delicate dance")
//!
//! We want enough running threads to use the available parallelism, and no
//! more: no thread should burn CPU looking for work that is not there, and no
//! runnable task should wait while a P sits idle. The rule, as in Go:
//!
//! * A thread is woken (`wakep`) when work is published, a P is idle, and no
//!   thread is already spinning (looking for work). The woken thread spins.
//! * A spinning thread that finds work stops spinning and calls `wakep`, so
//!   the next arrival has a spinner ready ("the last spinner wakes a
//!   replacement"); at most half the busy Ps may spin at once.
//! * A spinning thread that finds nothing gives up its P, *then* decrements
//!   `nmspinning`, *then* re-checks every run queue and the global queue.
//!
//! The last two rules pair up: a publisher stores its task, issues a SeqCst
//! fence, then reads `npidle`/`nmspinning`; the thread going idle stores
//! `npidle`/`nmspinning`, issues a SeqCst fence, then reads the queues. With
//! both fences, at least one side sees the other's write, so a task published
//! while every thread is going to sleep is always picked up (the loom model
//! `loom_park` checks this).
//!
//! # Hand-off: a task put into a busy P's `runnext` (seed 004)
//!
//! A task readied by a running task goes to that P's `runnext`: it runs as
//! soon as the current poll returns. If the poll keeps running, the task
//! must still reach an idle P promptly. Go calls `wakep` on every ready;
//! the woken spinner pauses before it steals the only task from a running
//! P's `runnext`, so that in a pipeline (the owner runs the task itself a
//! moment later) it does not steal and the task does not thrash between
//! Ps. That is seed 004, and goro keeps both halves (`RunnextWake::Eager`).
//!
//! In a pipeline, though, Go's spinner then loops: after the pause it finds
//! nothing, gives its P back, re-checks the run queues, sees the *next*
//! task in the busy P's `runnext`, takes a P again and pauses again, for as
//! long as the pipeline runs, still counted as spinning (so the putter
//! wakes nobody else). Go's pause is a `usleep(3)`, which Linux's timer
//! slack stretches to about 50 µs, so its spinner in effect looks at the
//! busy P every 50 µs or so. goro's pause spins, so the same loop
//! (`RunnextWake::Eager`) burns the other core. The default
//! (`RunnextWake::Watch`) makes the sleep explicit and puts it where it
//! belongs:
//!
//! * A spinner giving up whose re-check finds nothing but tasks in busy Ps'
//!   `runnext` stays counted as spinning and parks as the *watcher*, with a
//!   timeout of [`WATCH`] instead of indefinitely.
//! * Since it counts as spinning, a put (into `runnext` or anywhere) wakes
//!   nobody meanwhile. When the timeout ends, the watcher takes an idle P
//!   and searches as a spinner: a task behind a long poll is stolen after
//!   the usual pause, a task that a pipeline's owner runs itself is left
//!   alone, and the M watches again or, with no such task left anywhere,
//!   stops spinning and parks for good (nothing to watch: zero wakeups).
//! * Woken with a P before its timeout, it keeps its spinning count for
//!   the search it is about to make.
//!
//! No wakeup is lost: a putter that saw `nmspinning > 0` and woke nobody is
//! covered by the watcher, which re-checks after every timeout and, before
//! it stops counting as spinning, re-checks once more after the decrement
//! (the idle side of publish-fence-check). `runnext` needs no fence on the
//! putter's side: the swap is a SeqCst read-modify-write, as Go's
//! `runnext` CAS is its barrier.
//!
//! Rejected (measured in BENCH_RESULTS.md, "Scheduling guarantees:
//! hand-off and cooperative preemption"):
//!
//! * No wake at all (`RunnextWake::Off`): the task waits for the current
//!   poll to return or for the monitor's stuck-P rescue after a 10 ms
//!   slice, so `spawn_busy` at procs 2 waits milliseconds where Go's waits
//!   well under one.
//! * Go's spinner loop as it is (`RunnextWake::Eager`): the same latency
//!   as the default, but in a pipeline the spinner re-takes a P and pauses
//!   again without end, and goro's pause spins, so it keeps the other core
//!   busy: measured slower and costlier in CPU than the watcher on
//!   `ring/n=10` at procs 2 ("The hand-off mechanism: variants measured").
//! * A pause that ends when `runnext` empties and then takes whatever is
//!   there: in a pipeline the owner keeps `runnext` full, so the thief
//!   waits out the pause and takes the pipeline's *next* task, migrating
//!   the pipeline again and again (measured on `ring`, same section). The
//!   thief takes only the task it paused for, as Go's `runqgrab` does
//!   (`runq.rs`, `grab`).
//! * A wake deferred to the monitor (it would look at busy Ps' `runnext`
//!   every ~50 µs and wake a thread for a task whose poll has not moved):
//!   not built. The monitor cannot know when a `runnext` fills, so it
//!   would have to look every 50 µs whenever any P is busy and another
//!   idle, a constant wakeup rate on a lightly loaded runtime, where the
//!   watcher only looks while a pipeline runs; and its wake would add a
//!   second thread wake to the latency.
//! * Yielding in the pause (`Backoff` with `sched_yield`): a thief that
//!   Linux wakes on the busy poll's CPU gives that poll its CPU back for a
//!   whole time slice, so now and then a `wake_busy` rep waits milliseconds
//!   (a perf trace, same section, "The pause must not yield").
//!
//! The idle mask (seed 002) has one bit per P, set while the P is in the idle
//! list; thieves skip those Ps without touching their run queues. It is only
//! updated at idle transitions, which are rare compared to steals.
//!
//! # A held P is a value
//!
//! Taking a P off the idle list ([`Idle::pidleget`], and a shrink's
//! [`Idle::pidle_remove_from`]) is the only way to get a [`HeldP`]: a value,
//! neither `Clone` nor `Copy`, that says "this thread may run P `id`'s tasks
//! and push into its run queue". It moves from there to an M (its thread's
//! context, `context.rs`), through a [`crate::sched::machine::park::Handoff`] to
//! another M, and back through the release paths ([`Idle::pidleput`],
//! `Sched::handoffp`, a retire), which consume it. So there is at most one
//! per P, which is what makes [`HeldP::local`], the owner's handle on the
//! P's run queue, sound. The idle list itself holds plain ids of Ps that
//! nobody holds; [`Idle::pidleput_free`] is the one way to put an id there
//! without giving back a `HeldP`, for Ps never handed out (start-up, a grow).

use crate::loom::Unpoison;
use crate::loom::{AtomicU64, AtomicUsize, Mutex, MutexGuard, Ordering};
use crate::sched::machine::park::Parker;
use crate::sched::machine::snooze::SnoozeToken;
use crate::sched::runq::Local;
use crate::sched::Sched;
use crate::sched::MAX_PROCS;
use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::Duration;

/// A P held by the current owner: the right to run its tasks and to push
/// into its run queue (module docs, "A held P is a value"). Dropping one
/// loses the P for good (only shutdown does: an `Exit` handoff overriding
/// a P handoff); the scheduler gives it back through a release path.
#[derive(PartialEq, Eq)]
pub(crate) struct HeldP {
    /// The id, bitwise negated: never zero (ids are below `MAX_PROCS`), so
    /// `Option<HeldP>` is one word with `None` all zeros, and reading the
    /// thread's P costs one load and a test, as a plain `usize` would.
    not_id: NonZeroUsize,
}

impl HeldP {
    /// Only the idle list mints one, from an id it held (or a model, below).
    fn new(id: usize) -> HeldP {
        assert!(id < MAX_PROCS, "goro: P {id} out of range (scheduler bug)");
        HeldP {
            not_id: NonZeroUsize::new(!id).expect("an id below MAX_PROCS"),
        }
    }

    /// Which P this is (ids for stats, traces, task records, timers).
    #[inline(always)]
    pub(crate) fn id(&self) -> usize {
        !self.not_id.get()
    }

    /// The id of the P in `slot`, or, for `None`, `usize::MAX`: an id no
    /// P has, which panics as an index. One load and a `not`, for the
    /// scheduler loop's "which P do I hold", which it only asks holding
    /// one (`Machine::p`).
    #[inline(always)]
    pub(crate) fn id_or_out_of_range(slot: &Option<HeldP>) -> usize {
        !slot.as_ref().map_or(0, |p| p.not_id.get())
    }

    /// The owner's handle on this P's run queue in `sched` (the runtime
    /// whose idle list minted it).
    #[inline]
    pub(crate) fn local<'a>(&'a mut self, sched: &'a Sched) -> Local<'a> {
        // SAFETY: a `HeldP` exists once per P (module docs), and we borrow
        // it for the handle's life, so no other owner of this queue exists
        // anywhere, and this thread cannot give the P away meanwhile.
        unsafe { Local::new(&sched.ps[self.id()].runq) }
    }

    /// A held P that a loom model sets up by hand, without the idle list.
    ///
    /// # Safety
    ///
    /// The model's runtime never had `id` on its idle list, and the model
    /// makes no other `HeldP` for it.
    #[cfg(all(test, loom))]
    pub(crate) unsafe fn for_model(id: usize) -> HeldP {
        HeldP::new(id)
    }
}

impl std::fmt::Debug for HeldP {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeldP").field("id", &self.id()).finish()
    }
}

/// How long the watcher sleeps between looks (Go's pause is a `usleep(3)`,
/// which Linux's default timer slack makes about as long).
pub(crate) const WATCH: Duration = Duration::from_micros(50);

/// The lists protected by the idle lock.
pub(crate) struct IdleLists {
    /// Idle Ps, used as a stack (the most recently idled P is warmest).
    pub(crate) ps: Vec<usize>,
    /// Idle Ms (parked worker threads), a stack.
    pub(crate) ms: Vec<Arc<Parker>>,
    /// The monitor's idle-period clock: counts every P taken off the list
    /// and every new wait that could start a deadlock ([`Idle::new_wait`]).
    /// A changed count ends an idle period even when the monitor saw no
    /// busy P in between (the P was taken and given back while it ran the
    /// previous period's check).
    activity: u64,
}

pub(crate) struct Idle {
    lists: Mutex<IdleLists>,
    /// Length of `lists.ps`, readable without the lock.
    npidle: AtomicUsize,
    /// Number of spinning Ms (looking for work while holding a P, or woken to).
    nmspinning: AtomicUsize,
    /// The right to look again for work (seed 000), one M at a time.
    pub(crate) snooze: SnoozeToken,

    /// Bit i set while P i is idle.
    mask: Box<[AtomicU64]>,
    /// Bit i set while P i may have timers (Go's `timerpMask`): set when
    /// the P is taken or a timer is armed on it by a thread that does not
    /// hold it, cleared when it goes idle with an empty heap. Thieves on
    /// their last pass run the due timers of these Ps, busy ones included,
    /// so a timer armed by a task that keeps its P busy still fires on time.
    timer_mask: Box<[AtomicU64]>,
}

impl Idle {
    pub(crate) fn new(procs: usize) -> Idle {
        Idle {
            lists: Mutex::new(IdleLists {
                ps: Vec::with_capacity(procs),
                ms: Vec::new(),
                activity: 0,
            }),
            npidle: AtomicUsize::new(0),
            nmspinning: AtomicUsize::new(0),
            snooze: SnoozeToken::new(),
            mask: (0..procs.div_ceil(64)).map(|_| AtomicU64::new(0)).collect(),
            timer_mask: (0..procs.div_ceil(64)).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, IdleLists> {
        self.lists.lock().unpoison()
    }

    /// Gives the held P `p` back to the idle list; `has_timers` reads
    /// whether its heap holds entries. Caller holds the lock.
    pub(crate) fn pidleput(
        &self,
        lists: &mut IdleLists,
        p: HeldP,
        has_timers: impl FnOnce() -> bool,
    ) {
        self.put_idle(lists, p.id(), has_timers);
    }

    /// Puts P `p`, which nobody holds, on the idle list (start-up, a grow);
    /// otherwise as [`Idle::pidleput`].
    ///
    /// # Safety
    ///
    /// No `HeldP` for `p` exists, and `p` is not on the idle list: it was
    /// never handed out, or its last `HeldP` was consumed by a retire
    /// (`resize.rs`'s free list). Else two owners could push into its queue.
    pub(crate) unsafe fn pidleput_free(
        &self,
        lists: &mut IdleLists,
        p: usize,
        has_timers: impl FnOnce() -> bool,
    ) {
        self.put_idle(lists, p, has_timers);
    }

    fn put_idle(&self, lists: &mut IdleLists, p: usize, has_timers: impl FnOnce() -> bool) {
        lists.ps.push(p);
        // Clear the timer bit first, *then* look at the heap, and set it
        // again if the heap is not empty. A thread without a P may push a
        // timer onto this P's heap at any moment (`Sched::arm_queue`'s
        // round-robin) and then sets the bit (Release) unconditionally:
        // either its set comes after our clear and survives, or our clear
        // reads from it (Acquire), so the heap read below sees its push.
        // Reading the heap before clearing (as first written) let a push
        // land between the two and lose its bit: an idle P with timers
        // that thieves skip and the timer sleeper cannot reach (loom
        // model `loom_timer_mask_never_hides_an_idle_ps_timers`).
        self.timer_mask[p / 64].fetch_and(!(1 << (p % 64)), Ordering::Acquire);
        if has_timers() {
            self.set_timer_bit(p);
        }
        // Relaxed: the mask is a hint for thieves; the SeqCst npidle store
        // below is what the wake protocol relies on.
        self.mask[p / 64].fetch_or(1 << (p % 64), Ordering::Relaxed);
        // SeqCst: one half of the publish-fence-check pairing (module docs).
        self.npidle.fetch_add(1, Ordering::SeqCst);
    }

    /// Takes an idle P. Caller holds the lock.
    pub(crate) fn pidleget(&self, lists: &mut IdleLists) -> Option<HeldP> {
        let p = lists.ps.pop()?;
        lists.activity += 1;
        self.mask[p / 64].fetch_and(!(1 << (p % 64)), Ordering::Relaxed);
        self.set_timer_bit(p); // a running P may arm timers at any moment
        self.npidle.fetch_sub(1, Ordering::SeqCst);
        Some(HeldP::new(p))
    }

    /// Takes every idle P with an id of at least `procs` off the idle list
    /// (a shrink, `resize.rs`, which retires them). Caller holds the lock.
    pub(crate) fn pidle_remove_from(&self, lists: &mut IdleLists, procs: usize) -> Vec<HeldP> {
        let mut out = Vec::new();
        lists.ps.retain(|&p| {
            let keep = p < procs;
            if !keep {
                out.push(p);
            }
            keep
        });
        for &p in &out {
            self.mask[p / 64].fetch_and(!(1 << (p % 64)), Ordering::Relaxed);
            self.npidle.fetch_sub(1, Ordering::SeqCst);
        }
        out.into_iter().map(HeldP::new).collect()
    }

    /// The idle-period clock (`IdleLists::activity`). Read under the lock,
    /// after the monitor's `idle_sleep` store: a taker or a new waiter that
    /// bumped it before is seen here, one that bumps it after sees the
    /// monitor asleep and kicks it.
    pub(crate) fn activity(&self) -> u64 {
        self.lock().activity
    }

    /// A new wait began outside every P (a `block_on` caller parked): a
    /// new idle period for the deadlock check.
    pub(crate) fn new_wait(&self) {
        self.lock().activity += 1;
    }

    pub(crate) fn npidle(&self) -> usize {
        self.npidle.load(Ordering::SeqCst)
    }

    pub(crate) fn nmspinning(&self) -> usize {
        self.nmspinning.load(Ordering::SeqCst)
    }

    /// Whether P `p` is idle according to the mask.
    pub(crate) fn is_idle(&self, p: usize) -> bool {
        self.mask[p / 64].load(Ordering::Relaxed) & (1 << (p % 64)) != 0
    }

    /// Marks P `p` as maybe holding timers (it was taken, a timer was armed
    /// on it from outside, or it went idle with timers).
    pub(crate) fn set_timer_bit(&self, p: usize) {
        // Release: pairs with the Acquire clear in `pidleput`, which then
        // sees the heap push made before this set (see there).
        self.timer_mask[p / 64].fetch_or(1 << (p % 64), Ordering::Release);
    }

    pub(crate) fn has_timer_bit(&self, p: usize) -> bool {
        self.timer_mask[p / 64].load(Ordering::Relaxed) & (1 << (p % 64)) != 0
    }

    /// First half of `wakep`: claims the right to start a spinning M.
    /// Returns false if a P is not idle or a thread already spins.
    #[inline]
    pub(crate) fn try_claim_spinner(&self) -> bool {
        // SeqCst: the reads of the publish-fence-check pairing.
        self.npidle.load(Ordering::SeqCst) != 0
            && self.nmspinning.load(Ordering::SeqCst) == 0
            && self
                .nmspinning
                .compare_exchange(0, 1, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
    }

    /// Claims a spinner slot if none is taken, whether or not a P is idle
    /// (`handoffp`: the P being handed off is the one the spinner will hold).
    pub(crate) fn claim_first_spinner(&self) -> bool {
        self.nmspinning
            .compare_exchange(0, 1, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    }

    /// Counts one more spinning M (an M that starts looking for work).
    pub(crate) fn inc_spinning(&self) {
        self.nmspinning.fetch_add(1, Ordering::SeqCst);
    }

    /// Counts one spinning M less; returns the count left.
    pub(crate) fn dec_spinning(&self) -> usize {
        let prev = self.nmspinning.fetch_sub(1, Ordering::SeqCst);
        assert!(prev > 0, "goro: nmspinning underflow (scheduler bug)");
        prev - 1
    }
}
