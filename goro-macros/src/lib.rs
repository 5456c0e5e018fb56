//! `#[goro::main]` and `#[goro::test]`: run an `async fn` on a goro runtime.
//!
//! Both accept an optional `procs = N` argument (default: `GORO_PROCS` or
//! the available parallelism for `main`, 2 for tests so that stealing is
//! exercised even on one core). A test's runtime fails the test with the
//! task dump on a likely deadlock (`goro::Deadlock::Fail`, after a second
//! of everything parked); `#[goro::test(deadlock = false)]` turns that off.

use proc_macro::TokenStream;
use quote::quote;
use syn::parse::Parser;
use syn::{parse_macro_input, punctuated::Punctuated, Expr, ItemFn, Meta, Token};

struct Args {
    procs: Option<Expr>,
    /// `deadlock = false` (tests only): no likely-deadlock failure.
    deadlock: Option<Expr>,
    /// `local`: poll the body on the calling thread (`Runtime::block_on`)
    /// instead of running it as the main task; for a body that is not
    /// `Send`.
    local: bool,
}

fn parse_args(args: TokenStream, test: bool) -> Result<Args, syn::Error> {
    let metas = Punctuated::<Meta, Token![,]>::parse_terminated.parse(args)?;
    let mut out = Args {
        procs: None,
        deadlock: None,
        local: false,
    };
    for m in metas {
        match m {
            Meta::NameValue(nv) if nv.path.is_ident("procs") => out.procs = Some(nv.value),
            Meta::NameValue(nv) if test && nv.path.is_ident("deadlock") => {
                out.deadlock = Some(nv.value)
            }
            Meta::Path(p) if p.is_ident("local") => out.local = true,
            other => {
                let accepted = if test {
                    "accepted `procs = <expr>`, `deadlock = <bool>` and `local` \
                     (for example #[goro::test(procs = 4, deadlock = false)])"
                } else {
                    "accepted `procs = <expr>` and `local` (for example #[goro::main(procs = 4)])"
                };
                return Err(syn::Error::new_spanned(
                    other,
                    format!("unknown argument: {accepted}"),
                ));
            }
        }
    }
    Ok(out)
}

fn expand(args: TokenStream, item: TokenStream, test: bool) -> TokenStream {
    let Args {
        procs,
        deadlock,
        local,
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
    let builder = match (procs, test) {
        (Some(p), _) => quote! { ::goro::Runtime::builder().procs(#p) },
        (None, true) => quote! { ::goro::Runtime::builder().procs(2) },
        (None, false) => quote! { ::goro::Runtime::builder() },
    };
    // Tests fail on a likely deadlock unless `deadlock = false`.
    let builder = match (test, deadlock) {
        (false, _) => builder,
        (true, None) => quote! { #builder.deadlock(::goro::Deadlock::Fail) },
        (true, Some(on)) => quote! {
            #builder.deadlock(if #on { ::goro::Deadlock::Fail } else { ::goro::Deadlock::Off })
        },
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
/// the task dump instead of hanging; `deadlock = false` opts out.
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
