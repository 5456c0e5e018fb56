//! `select!`'s compile errors teach: a value that is not a channel is named
//! by its type, with what to pass instead (`timer.rx()`,
//! `goro::time::after(d)`, an `await(fut)` case), and a malformed case lists
//! the accepted forms. (rustc points both at the whole `select!`: an error
//! inside another crate's macro is reported at the call.) Cases in `tests/ui/select/`, expected errors beside
//! them (regenerate after a toolchain update as `tests/must_use.rs` says).

#[test]
fn select_errors_name_the_accepted_forms() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/select/*.rs");
}
