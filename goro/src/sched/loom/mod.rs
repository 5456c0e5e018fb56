//! loom models of the scheduler's lock-free protocols, one file per
//! protocol (built only under `--cfg loom`; CONTRIBUTING.md says how to
//! run them).

mod handoff;
mod monitor;
mod resize;
mod runq;
mod snooze;
mod spare;
mod table;
mod tests;
