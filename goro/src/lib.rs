//! goro: Go's runtime scheduler as a Rust library (work in progress skeleton).
#![warn(missing_docs)]

pub(crate) mod loom;
pub mod chan;
pub mod runtime;
pub(crate) mod sched;

pub use runtime::policy::{Policy, PolicyError, SpinPolicy};
