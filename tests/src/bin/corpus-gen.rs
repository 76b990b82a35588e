//! `corpus-gen N [SEED] [--keep DIR] [--min-share X] [--max-types T] [--scalpel PATH]`:
//! generates, records and scores N programs from seed SEED on (default 0), one line each; exits
//! 1 when any program is below the bounds (default: 95% of its requests whole in one task type,
//! at most 10 types for 95% of the leaves), 2 when one could not be built, recorded or inferred.
//! The `scalpel` binary is the one beside this program unless `--scalpel` names another.
//! `--rescore DIR` records nothing: it infers and scores again the programs a `--keep DIR` run
//! kept (to compare rules on the same recordings). A kept program's temporary directory is left
//! as a symbolic link to where it was kept, so that a rescore finds the program the trace names.
//! A broken pipe on standard output (`| head`) ends the run quietly.

use std::path::PathBuf;
use std::process::ExitCode;

use scalpel_e2e::generated::{run, score, GenError, Outcome, Spec};

struct Args {
    count: u64,
    seed: u64,
    keep: Option<PathBuf>,
    rescore: Option<PathBuf>,
    scalpel: PathBuf,
    min_share: f64,
    max_types: usize,
}

fn parse() -> Result<Args, String> {
    let mut args = Args {
        count: 0,
        seed: 0,
        keep: None,
        rescore: None,
        scalpel: std::env::current_exe()
            .ok()
            .and_then(|e| Some(e.parent()?.join("scalpel")))
            .unwrap_or_else(|| PathBuf::from("scalpel")),
        min_share: 0.95,
        max_types: 10,
    };
    let mut positional = Vec::new();
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--keep" => args.keep = Some(PathBuf::from(value("--keep")?)),
            "--scalpel" => args.scalpel = PathBuf::from(value("--scalpel")?),
            "--rescore" => args.rescore = Some(PathBuf::from(value("--rescore")?)),
            "--min-share" => {
                let v = value("--min-share")?;
                args.min_share = v
                    .parse()
                    .map_err(|_| format!("--min-share: not a number: {v}"))?;
            }
            "--max-types" => {
                let v = value("--max-types")?;
                args.max_types = v
                    .parse()
                    .map_err(|_| format!("--max-types: not a count: {v}"))?;
            }
            _ => positional.push(a),
        }
    }
    let num = |s: &str, what: &str| {
        s.parse::<u64>()
            .map_err(|_| format!("{what}: not a number: {s}"))
    };
    match positional.as_slice() {
        [n] => args.count = num(n, "N")?,
        [n, s] => {
            args.count = num(n, "N")?;
            args.seed = num(s, "SEED")?;
        }
        _ => return Err("usage: corpus-gen N [SEED] [--keep DIR] [--min-share X] [--max-types T] [--scalpel PATH] [--rescore DIR]".into()),
    }
    Ok(args)
}

/// Prints a line; a reader that has gone (`| head`) ends the run, as it would a shell tool.
fn say(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    if writeln!(std::io::stdout(), "{line}").is_err() {
        std::process::exit(0);
    }
}

/// Prints a program's line and counts it.
fn tally(
    outcome: Result<Outcome, GenError>,
    seed: u64,
    args: &Args,
    below: &mut u32,
    failed: &mut u32,
) {
    match outcome {
        Ok(o) => {
            let ok = o.share() >= args.min_share && o.types <= args.max_types;
            *below += u32::from(!ok);
            say(format_args!(
                "{}{}",
                o.line(),
                if ok { "" } else { "  BELOW" }
            ));
        }
        Err(e) => {
            *failed += 1;
            say(format_args!(
                "seed={seed} {} FAILED: {e}",
                Spec::from_seed(seed)
            ));
        }
    }
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("corpus-gen: {e}");
            return ExitCode::from(2);
        }
    };
    let (mut below, mut failed) = (0, 0);
    for seed in args.seed..args.seed.saturating_add(args.count) {
        if let Some(kept) = &args.rescore {
            let dir = kept.join(format!("seed-{seed}"));
            let outcome = score(&Spec::from_seed(seed), &dir, &args.scalpel);
            tally(outcome, seed, &args, &mut below, &mut failed);
            continue;
        }
        let tmp = match tempfile::Builder::new().prefix("scalpel-gen-").tempdir() {
            Ok(t) => t,
            Err(e) => {
                eprintln!("corpus-gen: a temporary directory: {e}");
                return ExitCode::from(2);
            }
        };
        tally(
            run(seed, tmp.path(), &args.scalpel),
            seed,
            &args,
            &mut below,
            &mut failed,
        );
        if let Some(keep) = &args.keep {
            let to = keep.join(format!("seed-{seed}"));
            let _ = std::fs::remove_dir_all(&to);
            let _ = std::fs::create_dir_all(keep);
            let from = tmp.keep();
            if let Err(e) = std::fs::rename(&from, &to) {
                eprintln!("corpus-gen: keeping {}: {e}", from.display());
            } else if let Ok(to) = std::path::absolute(&to) {
                // The trace names the program by the path it ran from, and symbols are read
                // only from the file with the inode recorded: a link there to the kept
                // directory lets `--rescore` name frames as the first run did.
                let _ = std::os::unix::fs::symlink(&to, &from);
            }
        }
    }
    say(format_args!(
        "{} programs: {below} below the bounds, {failed} failed",
        args.count
    ));
    if failed > 0 {
        ExitCode::from(2)
    } else if below > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
