//! `goro-trace`: converts a raw goro trace (the file `GORO_TRACE_RAW`
//! writes) to Perfetto's format, for ui.perfetto.dev.
//!
//! Usage: `goro-trace <raw-file> <out.pftrace>` (`-` for either: standard
//! input or output).
//!
//! A binary of the `goro` package itself rather than of a crate of its
//! own: the converter is `goro::trace::to_perfetto`, the format is goro's
//! and versioned with it, and goro's own tests run this binary
//! (`CARGO_BIN_EXE_goro-trace`). A program that depends on goro does not
//! build it; `cargo install goro` or `cargo run -p goro --bin goro-trace`
//! does.

use std::io::{self, Write};
use std::process::ExitCode;

const USAGE: &str = "usage: goro-trace <raw-file> <out.pftrace>\n\
    converts a raw goro trace (written with GORO_TRACE_RAW=path) to Perfetto's \
    format; '-' reads standard input or writes standard output";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let [input, output] = &args[..] else {
        eprintln!(
            "goro-trace: expected 2 arguments, got {}\n{USAGE}",
            args.len()
        );
        return ExitCode::from(2);
    };
    match run(input, output) {
        Ok(done) => {
            if done.cut_off {
                eprintln!(
                    "goro-trace: {input}: the trace is cut off (its program died, or the file \
                     was cut); converted its {} whole events",
                    done.events
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("goro-trace: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(input: &str, output: &str) -> io::Result<goro::trace::Converted> {
    let named = |what: &str, path: &str, e: io::Error| {
        io::Error::new(e.kind(), format!("{path}: {what}: {e}"))
    };
    let raw: Box<dyn io::Read> = if input == "-" {
        Box::new(io::stdin().lock())
    } else {
        Box::new(std::fs::File::open(input).map_err(|e| named("cannot open", input, e))?)
    };
    let mut out: Box<dyn Write> = if output == "-" {
        Box::new(io::stdout().lock())
    } else {
        Box::new(std::fs::File::create(output).map_err(|e| named("cannot create", output, e))?)
    };
    let done = goro::trace::to_perfetto(raw, &mut out).map_err(|e| {
        if e.kind() == io::ErrorKind::InvalidData {
            named("cannot convert", input, e)
        } else {
            e
        }
    })?;
    out.flush()?;
    Ok(done)
}
