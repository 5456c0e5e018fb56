//! The runtime: builder, handle, block_on.
pub mod policy;

/// The spin policy of the runtime this thread belongs to, or the default
/// outside a runtime.
pub(crate) fn current_spin_policy() -> policy::SpinPolicy {
    policy::SpinPolicy::DEFAULT
}
