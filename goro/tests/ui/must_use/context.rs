// A context made and dropped in one statement, and a cancel guard dropped
// at once (which cancels at once), are #[must_use]. `let (ctx, _) = ...`
// is fine: dropping the handle does not cancel.
#![deny(unused_must_use)]

use goro::context::Context;
use std::time::Duration;

fn forgets(parent: &Context) {
    Context::with_cancel(parent);
    Context::with_timeout(parent, Duration::from_secs(1));
    let (_ctx, cancel) = Context::with_cancel(parent);
    cancel.cancel_on_drop();
    let (_ctx, _) = Context::with_timeout(parent, Duration::from_secs(1)); // no error
}

fn main() {
    forgets(&Context::background());
}
