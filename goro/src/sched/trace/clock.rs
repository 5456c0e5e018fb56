//! The trace's clock: a cycle counter where there is one (x86-64's TSC,
//! Go's `cputicks`), the monotonic clock in nanoseconds elsewhere. An
//! event reads it only while tracing is on. Ticks become nanoseconds only
//! when events are written out, by a line through two (ticks, monotonic
//! nanoseconds) pairs: one taken when the session started, one at the
//! time of writing.

/// The raw clock.
#[inline(always)]
pub(crate) fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `rdtsc` has no preconditions; every x86-64 CPU has it.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        mono_ns()
    }
}

/// `CLOCK_MONOTONIC` in nanoseconds.
pub(crate) fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec we own; CLOCK_MONOTONIC
    // exists on every Linux, so the call cannot fail.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A (ticks, nanoseconds) pair.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stamp {
    pub(crate) ticks: u64,
    pub(crate) ns: u64,
}

impl Stamp {
    pub(crate) fn now() -> Stamp {
        Stamp {
            ticks: ticks(),
            ns: mono_ns(),
        }
    }
}

/// Ticks to nanoseconds, through two stamps.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ToNs {
    t0: u64,
    ns0: u64,
    /// Nanoseconds per tick.
    rate: f64,
}

impl ToNs {
    pub(crate) fn new(a: Stamp, b: Stamp) -> ToNs {
        let dt = b.ticks.saturating_sub(a.ticks);
        let rate = if dt < 1_000 {
            // Too close to measure (a snapshot just after the start):
            // take the counter for a nanosecond clock, roughly right on
            // current CPUs and exact off x86-64.
            if cfg!(target_arch = "x86_64") {
                0.4
            } else {
                1.0
            }
        } else {
            b.ns.saturating_sub(a.ns) as f64 / dt as f64
        };
        ToNs {
            t0: a.ticks,
            ns0: a.ns,
            rate,
        }
    }

    /// Ticks per `ns` nanoseconds (for a window given in time).
    pub(crate) fn ticks_for(&self, ns: u64) -> u64 {
        (ns as f64 / self.rate) as u64
    }

    pub(crate) fn ns(&self, t: u64) -> u64 {
        let d = t as i128 - self.t0 as i128;
        (self.ns0 as i128 + (d as f64 * self.rate) as i128).max(0) as u64
    }
}
