//! CockroachDB (Go's `database/sql` `Rows`, as vendored): rows that are
//! never closed leak the goroutine watching their context
//! (https://github.com/cockroachdb/cockroach/pull/13755).
//!
//! `initContextClose` derives a cancellable context and starts `awaitDone`
//! (G2), which waits for that context to be done. Only `Rows.close`
//! cancels it; the caller never closes the rows, so G2 waits forever.
//!
//! Fix (upstream): the caller closes the rows when it is done with them
//! (Go's `defer rows.Close()`), which cancels the context.

use goro::context::{Cancel, Context, ContextError};
use std::sync::{Arc, OnceLock};

struct Rows {
    cancel: OnceLock<Cancel>,
}

impl Rows {
    fn init_context_close(self: &Arc<Self>, ctx: &Context) {
        let (ctx, cancel) = Context::with_cancel(ctx);
        assert!(self.cancel.set(cancel).is_ok(), "rows are initialised once");
        let rs = self.clone();
        goro::spawn(async move { rs.await_done(ctx).await }); // G2
    }

    async fn await_done(&self, ctx: Context) {
        let _ = ctx.done().recv().await;
        self.close(ctx.err());
    }

    fn close(&self, _err: Option<ContextError>) {
        if let Some(cancel) = self.cancel.get() {
            cancel.cancel();
        }
    }
}

/// The Go program's scenario, once: the rows are left open.
pub async fn buggy() {
    let rs = Arc::new(Rows {
        cancel: OnceLock::new(),
    });
    rs.init_context_close(&Context::background());
}

/// The same scenario with the upstream fix: the rows are closed.
pub async fn fixed() {
    let rs = Arc::new(Rows {
        cancel: OnceLock::new(),
    });
    rs.init_context_close(&Context::background());
    rs.close(None); // defer rows.Close()
}
