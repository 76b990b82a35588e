//! `fuzz-input`: between the `cargo fuzz` target `infer` and trace directories
//! (see the `scalpel_fuzzinput` library for what an input is).
//!
//! Usage:
//! - `fuzz-input seeds TRACE DIR`: writes one input per trace file of the recording TRACE into
//!   DIR (each the intact recording): the fuzzer's first corpus.
//! - `fuzz-input apply TRACE INPUT OUT`: writes the trace directory INPUT stands for (TRACE with
//!   one file replaced) as OUT, to replay or keep (`tests/regressions/`).

use std::path::PathBuf;
use std::process::ExitCode;

use scalpel_fuzzinput::{copy_trace, Template};

fn run(args: &[PathBuf]) -> Result<(), String> {
    let tmp = tempfile::tempdir().map_err(|e| format!("a temporary directory: {e}"))?;
    let copy = tmp.path().join("trace");
    let template = |from: &PathBuf| {
        Template::copy(from, &copy).map_err(|e| format!("{}: {e}", from.display()))
    };
    match args {
        [cmd, trace, dir] if cmd.as_os_str() == "seeds" => {
            let t = template(trace)?;
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            for (i, seed) in t.seeds().enumerate() {
                let p = dir.join(format!("seed-{i:03}"));
                std::fs::write(&p, seed).map_err(|e| format!("{}: {e}", p.display()))?;
            }
            Ok(())
        }
        [cmd, trace, input, out] if cmd.as_os_str() == "apply" => {
            let t = template(trace)?;
            let bytes = std::fs::read(input).map_err(|e| format!("{}: {e}", input.display()))?;
            t.apply(&bytes)
                .map_err(|e| format!("{}: {e}", copy.display()))?;
            copy_trace(t.dir(), out).map_err(|e| format!("{}: {e}", out.display()))
        }
        _ => Err("usage: fuzz-input seeds TRACE DIR | fuzz-input apply TRACE INPUT OUT".into()),
    }
}

fn main() -> ExitCode {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fuzz-input: {e}");
            ExitCode::from(2)
        }
    }
}
