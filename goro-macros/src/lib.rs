//! `#[goro::main]` and `#[goro::test]`: run an `async fn` on a goro runtime.
//!
//! Both accept an optional `procs = N` argument (default: `GORO_PROCS` or
//! the available parallelism for `main`, 2 for tests so that stealing is
//! exercised even on one core).

use proc_macro::TokenStream;
use quote::quote;
use syn::parse::Parser;
use syn::{parse_macro_input, punctuated::Punctuated, Expr, ItemFn, Meta, Token};

fn procs_arg(args: TokenStream) -> Result<Option<Expr>, syn::Error> {
    let metas = Punctuated::<Meta, Token![,]>::parse_terminated.parse(args)?;
    let mut procs = None;
    for m in metas {
        match m {
            Meta::NameValue(nv) if nv.path.is_ident("procs") => procs = Some(nv.value),
            other => {
                return Err(syn::Error::new_spanned(
                    other,
                    "unknown argument: accepted `procs = <expr>` (for example #[goro::main(procs = 4)])",
                ))
            }
        }
    }
    Ok(procs)
}

fn expand(args: TokenStream, item: TokenStream, test: bool) -> TokenStream {
    let procs = match procs_arg(args) {
        Ok(p) => p,
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
    let attrs = &f.attrs;
    let vis = &f.vis;
    let sig = &f.sig;
    let test_attr = if test {
        quote! { #[::core::prelude::v1::test] }
    } else {
        quote! {}
    };
    quote! {
        #test_attr
        #(#attrs)*
        #vis #sig {
            let rt = #builder.build().expect("goro: failed to start the runtime");
            rt.block_on(async move #body)
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
