//! The scheduler.
pub(crate) mod backoff;
