//! `grammar-halves TRACE_DIR…`: for each recording, a grammar learned on its first half and
//! replayed on the whole, against mining the whole alone. `grammar-halves --from TRACE_DIR
//! TRACE_DIR…`: a grammar learned on the first recording, replayed on each of the others (see
//! `scalpel_e2e::grammar`). Prints one line a recording; exits 2 on a trace that cannot be read.

use std::ffi::OsString;
use std::process::ExitCode;

use scalpel_e2e::grammar::{across, halves};

fn main() -> ExitCode {
    let mut args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let from = if args.first().is_some_and(|a| a == "--from") && args.len() >= 3 {
        args.remove(0);
        Some(args.remove(0))
    } else {
        None
    };
    if args.is_empty() || args.iter().any(|a| a.to_string_lossy().starts_with("--")) {
        eprintln!("usage: grammar-halves [--from TRACE_DIR] TRACE_DIR…");
        return ExitCode::from(2);
    }
    for d in args {
        let line = match &from {
            Some(f) => across(f.as_ref(), d.as_ref()).map(|a| a.to_string()),
            None => halves(d.as_ref())
                .map(|h| h.map_or("no leaves in its first half".to_owned(), |h| h.to_string())),
        };
        match line {
            Ok(l) => println!("{}: {l}", d.to_string_lossy()),
            Err(e) => {
                eprintln!("grammar-halves: {e}");
                return ExitCode::from(2);
            }
        }
    }
    ExitCode::SUCCESS
}
