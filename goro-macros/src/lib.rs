//! `#[goro::main]` and `#[goro::test]`: run an `async fn` on a goro runtime.
//!
//! The body runs as the runtime's main task (`Runtime::run`, Go's main
//! goroutine), so it must be `Send`; `local` polls it on the calling
//! thread instead (`Runtime::block_on`). Arguments:
//!
//! * `procs = N` (default: `GORO_PROCS` or the available parallelism for
//!   `main`, 2 for tests so that stealing is exercised even on one core);
//! * `deadlock = false`: no likely-deadlock check. Otherwise a test fails
//!   with the task dump (`goro::Deadlock::Fail`, after a second of
//!   everything parked) and a `main` prints the report and exits with
//!   status 2, as Go does (`goro::Deadlock::Exit`, after half a second);
//! * tests report a poll that runs 20 ms or more with its stack
//!   (`Builder::stuck_poll`; `GORO_STUCK=off` turns it off);
//! * `panic = exit` (`main` only): a task that panics with nobody joining
//!   it ends the process with status 2, as in Go (`goro::UnjoinedPanic`);
//!   `panic = continue` is the default;
//! * `local`;
//! * `sim` (tests only): run the body in a `goro::sim` bubble instead of a
//!   runtime: virtual time, a seeded schedule, and a deadlock or leak
//!   failing the test with the blocked tasks named. With `seed = N` the
//!   seed is fixed; without it, `GORO_SIM_SEED` or a random one, printed
//!   when the test fails. `procs = N` sets the bubble's virtual Ps.

use proc_macro::TokenStream;
use quote::quote;
use syn::parse::Parser;
use syn::{parse_macro_input, punctuated::Punctuated, Expr, ItemFn, Meta, Token};

struct Args {
    procs: Option<Expr>,
    /// `deadlock = false`: no likely-deadlock failure (tests) or exit (main).
    deadlock: Option<Expr>,
    /// `panic = exit | continue` (main only): `goro::UnjoinedPanic`.
    panic: Option<syn::Ident>,
    /// `local`: poll the body on the calling thread (`Runtime::block_on`)
    /// instead of running it as the main task; for a body that is not
    /// `Send`.
    local: bool,
    /// `sim`: run the body in a `goro::sim` bubble (tests only).
    sim: bool,
    /// `seed = N` (with `sim`): the bubble's seed.
    seed: Option<Expr>,
}

fn parse_args(args: TokenStream, test: bool) -> Result<Args, syn::Error> {
    let metas = Punctuated::<Meta, Token![,]>::parse_terminated.parse(args)?;
    let mut out = Args {
        procs: None,
        deadlock: None,
        panic: None,
        local: false,
        sim: false,
        seed: None,
    };
    for m in metas {
        match m {
            Meta::NameValue(nv) if nv.path.is_ident("procs") => out.procs = Some(nv.value),
            Meta::NameValue(nv) if nv.path.is_ident("deadlock") => out.deadlock = Some(nv.value),
            Meta::NameValue(nv) if !test && nv.path.is_ident("panic") => {
                let policy = match &nv.value {
                    Expr::Path(p) if p.path.is_ident("exit") || p.path.is_ident("continue") => {
                        p.path.get_ident().cloned()
                    }
                    _ => None,
                };
                match policy {
                    Some(id) => out.panic = Some(id),
                    None => {
                        return Err(syn::Error::new_spanned(
                            nv.value,
                            "`panic` takes `exit` (Go: a task's unjoined panic ends the process \
                             with status 2) or `continue` (the default)",
                        ))
                    }
                }
            }
            Meta::Path(p) if p.is_ident("local") => out.local = true,
            Meta::Path(p) if test && p.is_ident("sim") => out.sim = true,
            Meta::NameValue(nv) if test && nv.path.is_ident("seed") => out.seed = Some(nv.value),
            other => {
                let accepted = if test {
                    "accepted `procs = <expr>`, `deadlock = <bool>`, `local`, `sim` and \
                     `seed = <u64>` (for example #[goro::test(procs = 4, deadlock = false)] \
                     or #[goro::test(sim, seed = 7)])"
                } else {
                    "accepted `procs = <expr>`, `deadlock = <bool>`, `panic = exit|continue` \
                     and `local` (for example #[goro::main(procs = 4, panic = exit)])"
                };
                return Err(syn::Error::new_spanned(
                    other,
                    format!("unknown argument: {accepted}"),
                ));
            }
        }
    }
    if out.seed.is_some() && !out.sim {
        return Err(syn::Error::new(
            proc_macro2::Span::call_site(),
            "`seed` goes with `sim`: accepted #[goro::test(sim, seed = <u64>)]",
        ));
    }
    if out.sim && (out.deadlock.is_some() || out.local) {
        return Err(syn::Error::new(
            proc_macro2::Span::call_site(),
            "`sim` takes only `seed = <u64>` and `procs = <expr>`: a bubble always reports \
             deadlocks, and runs its body on the test's thread already",
        ));
    }
    Ok(out)
}

fn expand(args: TokenStream, item: TokenStream, test: bool) -> TokenStream {
    let Args {
        procs,
        deadlock,
        panic,
        local,
        sim,
        seed,
    } = match parse_args(args, test) {
        Ok(a) => a,
        Err(e) => return e.to_compile_error().into(),
    };
    let mut f = parse_macro_input!(item as ItemFn);
    if f.sig.asyncness.is_none() {
        return syn::Error::new_spanned(
            f.sig.fn_token,
            "#[goro::main]/#[goro::test] need an `async fn`",
        )
        .to_compile_error()
        .into();
    }
    f.sig.asyncness = None;
    let body = &f.block;
    if sim {
        return expand_sim(&f, procs, seed);
    }
    let builder = match (procs, test) {
        (Some(p), _) => quote! { ::goro::Runtime::builder().procs(#p) },
        (None, true) => quote! { ::goro::Runtime::builder().procs(2) },
        (None, false) => quote! { ::goro::Runtime::builder() },
    };
    // A likely deadlock fails a test, and ends a main with status 2 after
    // half a second (Go: at once), unless `deadlock = false`.
    let (on_deadlock, grace) = if test {
        (quote! { ::goro::Deadlock::Fail }, quote! {})
    } else {
        (
            quote! { ::goro::Deadlock::Exit },
            quote! { .deadlock_grace(::std::time::Duration::from_millis(500)) },
        )
    };
    let builder = match deadlock {
        None => quote! { #builder.deadlock(#on_deadlock) #grace },
        Some(on) => quote! {
            #builder.deadlock(if #on { #on_deadlock } else { ::goro::Deadlock::Off }) #grace
        },
    };
    let builder = match panic {
        Some(p) if p == "exit" => quote! { #builder.unjoined_panic(::goro::UnjoinedPanic::Exit) },
        Some(_) => quote! { #builder.unjoined_panic(::goro::UnjoinedPanic::Continue) },
        None => builder,
    };
    // A test reports a poll stuck for 20 ms with its stack (GORO_STUCK
    // overrides it).
    let builder = if test {
        quote! { #builder.stuck_poll(::core::option::Option::Some(::goro::runtime::DEFAULT_TEST_STUCK_POLL)) }
    } else {
        builder
    };
    let attrs = &f.attrs;
    let vis = &f.vis;
    let sig = &f.sig;
    let test_attr = if test {
        quote! { #[::core::prelude::v1::test] }
    } else {
        quote! {}
    };
    // The body runs as the main task (Go's main goroutine), or with
    // `local` on the calling thread, outside every P.
    let run = if local {
        quote! { rt.block_on(async move #body) }
    } else {
        quote! { ::goro::__private::body_must_be_send_or_write_goro_main_local(&rt, async move #body) }
    };
    quote! {
        #test_attr
        #(#attrs)*
        #vis #sig {
            let rt = #builder.build().expect("goro: failed to start the runtime");
            #run
        }
    }
    .into()
}

/// `#[goro::test(sim)]`: the body is the root of a `goro::sim` bubble; an
/// error (a deadlock, a leak, the step limit) fails the test with its
/// report, which names the seed.
fn expand_sim(f: &ItemFn, procs: Option<Expr>, seed: Option<Expr>) -> TokenStream {
    let body = &f.block;
    let mut builder = quote! { ::goro::sim::Builder::new() };
    if let Some(s) = seed {
        builder = quote! { #builder.seed(#s) };
    }
    if let Some(p) = procs {
        builder = quote! { #builder.procs(#p) };
    }
    let attrs = &f.attrs;
    let vis = &f.vis;
    let sig = &f.sig;
    quote! {
        #[::core::prelude::v1::test]
        #(#attrs)*
        #vis #sig {
            match #builder.run(async move #body) {
                ::core::result::Result::Ok(v) => v,
                ::core::result::Result::Err(e) => ::core::panic!("{}", e),
            }
        }
    }
    .into()
}

/// Runs `async fn main` on a goro runtime.
///
/// ```ignore
/// #[goro::main(procs = 4)]
/// async fn main() {
///     goro::spawn(async { println!("hello from a task") }).await.unwrap();
/// }
/// ```
#[proc_macro_attribute]
pub fn main(args: TokenStream, item: TokenStream) -> TokenStream {
    expand(args, item, false)
}

/// Runs an `async fn` test on a fresh goro runtime (2 Ps unless `procs = N`).
///
/// A likely deadlock (every task and the test's future parked on one
/// another, nothing else to wake them, for a second) fails the test with
/// the task dump instead of hanging; `deadlock = false` opts out. A poll
/// that runs 20 ms or more is reported on stderr with its stack
/// (`Builder::stuck_poll`; `GORO_STUCK=off` turns it off).
///
/// ```ignore
/// #[goro::test]
/// async fn adds() {
///     assert_eq!(goro::spawn(async { 1 + 1 }).await.unwrap(), 2);
/// }
/// ```
#[proc_macro_attribute]
pub fn test(args: TokenStream, item: TokenStream) -> TokenStream {
    expand(args, item, true)
}
