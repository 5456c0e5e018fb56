//! `#[must_use]` fires for every goro future, guard and handle a user can
//! forget: each case under `tests/ui/must_use/` sets
//! `#![deny(unused_must_use)]`, so a forgotten value is a compile error, and
//! the expected errors are in the `.stderr` beside it.
//!
//! The `.stderr` files are rustc's output, whose wording can change between
//! compiler versions: after a toolchain update, regenerate them with
//! `TRYBUILD=overwrite cargo test -p goro --test must_use` and check in the
//! diff only if every case still lists each forgotten value.

#[test]
fn forgotten_futures_guards_and_handles_are_compile_errors() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/must_use/*.rs");
}
