//! `grammar-halves TRACE_DIR…`: for each recording, a grammar learned on its first half and
//! replayed on the whole, against mining the whole alone (see `scalpel_e2e::grammar`). Prints
//! one line a recording; exits 2 on a trace that cannot be read.

use std::process::ExitCode;

fn main() -> ExitCode {
    let dirs: Vec<_> = std::env::args_os().skip(1).collect();
    if dirs.is_empty() {
        eprintln!("usage: grammar-halves TRACE_DIR…");
        return ExitCode::from(2);
    }
    for d in dirs {
        match scalpel_e2e::grammar::halves(d.as_ref()) {
            Ok(Some(h)) => println!("{}: {h}", d.to_string_lossy()),
            Ok(None) => println!("{}: no leaves in its first half", d.to_string_lossy()),
            Err(e) => {
                eprintln!("grammar-halves: {e}");
                return ExitCode::from(2);
            }
        }
    }
    ExitCode::SUCCESS
}
