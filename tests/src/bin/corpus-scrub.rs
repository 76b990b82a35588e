//! `corpus-scrub DIR`: readies a freshly recorded trace directory for the golden corpus
//! (`tests/corpus/`, recorded by `scripts/record-corpus.sh`).
//!
//! It refuses a trace that lost events or threads (re-record it: a corpus case must be
//! complete), makes every module path in its MAPS records relative (see
//! `scalpel_e2e::corpus::scrub`: the graph then needs no file of the recording machine), and
//! removes `shared.tbl`, which then holds only zero counters behind a 1.5 MB hole that a
//! checkout would write out in full (a reader takes a missing one as no losses). Exits 1 with a
//! message on any problem.

use std::path::{Path, PathBuf};

use scalpel_e2e::corpus::scrub::scrub_file;
use scalpel_model::read::read_dir;

fn trace_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        if p.is_dir() {
            out.extend(trace_files(&p)?);
        } else if p.extension().is_some_and(|x| x == "trace") {
            out.push(p);
        }
    }
    out.sort();
    Ok(out)
}

fn scrub(dir: &Path) -> Result<usize, String> {
    let t = read_dir(dir).map_err(|e| e.to_string())?;
    if t.losses.any() {
        return Err(format!(
            "{}: the recording lost {}",
            dir.display(),
            t.losses
        ));
    }
    for (_, f) in t.files() {
        if f.lost_events() > 0 {
            let n = f.lost_events();
            return Err(format!("{}: {n} event(s) lost", f.path.display()));
        }
    }
    let mut changed = 0;
    for f in trace_files(dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        changed += scrub_file(&f).map_err(|e| e.to_string())?;
    }
    let shared = dir.join("shared.tbl");
    if shared.exists() {
        std::fs::remove_file(&shared).map_err(|e| format!("{}: {e}", shared.display()))?;
    }
    Ok(changed)
}

fn main() {
    let dirs: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    if dirs.is_empty() {
        eprintln!("usage: corpus-scrub TRACE_DIR...");
        std::process::exit(2);
    }
    for d in dirs {
        match scrub(&d) {
            Ok(n) => println!("{}: {n} module path(s) made relative", d.display()),
            Err(e) => {
                eprintln!("corpus-scrub: {e}");
                std::process::exit(1);
            }
        }
    }
}
