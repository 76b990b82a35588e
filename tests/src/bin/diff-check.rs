//! `diff-check DIFF.json --what KIND --frame FUNCTION`: checks what `scalpel diff --format json`
//! found between two runs of a server under two settings whose difference is known. The first
//! type changed beyond noise (the finding) must be a pair of the two runs' types, and the time
//! that moved most in it must be KIND (`io`, `sleep`, `lock`, …) in a call whose function or
//! stack names FUNCTION: either the moved time itself, or, when that time was a wait another
//! thread ended inside FUNCTION too (a commit queued for the log's lock while another commit
//! flushed), what that thread was blocked on (the cause's `behind`). The document must also
//! keep its schema (`scalpel-diff-1`). Prints the finding; exits 1 when a check fails, 2 on
//! bad input.

use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::Value;

struct Args {
    diff: PathBuf,
    what: String,
    frame: String,
}

fn args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let (mut diff, mut what, mut frame) = (None, None, None);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--what" => what = it.next(),
            "--frame" => frame = it.next(),
            s if s.starts_with("--") => return Err(format!("unknown option {s}")),
            _ => diff = Some(PathBuf::from(a)),
        }
    }
    match (diff, what, frame) {
        (Some(diff), Some(what), Some(frame)) => Ok(Args { diff, what, frame }),
        _ => Err("usage: diff-check DIFF.json --what KIND --frame FUNCTION".into()),
    }
}

/// The failures of the checks on `diff`, after printing its finding.
fn check(diff: &Value, a: &Args) -> Vec<String> {
    let types = diff["types"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    let Some(t) = types.iter().find(|t| t["significant"] == true) else {
        return vec![format!(
            "no type changed beyond noise ({} pairs tested)",
            diff["tested"]
        )];
    };
    let (name, c) = (&t["name"], &t["cause"]);
    let p50 = |side: &str| t[side]["p50_ns"].as_u64().unwrap_or(0) as f64 / 1e6;
    println!(
        "finding: {name} (nested: {}), p50 {:.3} ms → {:.3} ms, {} instances → {}",
        t["nested"] == true,
        p50("old"),
        p50("new"),
        t["old"]["count"],
        t["new"]["count"]
    );
    println!(
        "  cause: {} in {} (call {}), {:.1}% of the change; stack: {}",
        c["what"],
        c["function"],
        c["call"],
        100.0 * c["share_change"].as_f64().unwrap_or(0.0),
        c["stack"]
    );
    let b = &c["behind"];
    if b.is_object() {
        println!(
            "  behind it: {} was blocked most in {} in {} (call {}); stack: {}",
            b["leaf"], b["what"], b["function"], b["call"], b["stack"]
        );
    }
    let mut failures = Vec::new();
    if t["status"] != "matched" {
        failures.push(format!(
            "the finding {name} is {}, not matched",
            t["status"]
        ));
    }
    let direct = c["what"] == a.what.as_str() && names(c, &a.frame);
    let behind = names(c, &a.frame) && b["what"] == a.what.as_str() && names(b, &a.frame);
    if !direct && !behind {
        failures.push(format!(
            "neither the time that moved ({} in {}) nor what was behind it ({} in {}) is {} in {}",
            c["what"], c["function"], b["what"], b["function"], a.what, a.frame
        ));
    }
    failures
}

/// Whether a cause's function or stack names `frame`.
fn names(c: &Value, frame: &str) -> bool {
    c["stack"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(std::iter::once(&c["function"]))
        .filter_map(Value::as_str)
        .any(|f| f.contains(frame))
}

fn main() -> ExitCode {
    let a = match args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("diff-check: {e}");
            return ExitCode::from(2);
        }
    };
    let diff: Value = match std::fs::read(&a.diff)
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))
    {
        Ok(v) => v,
        Err(e) => {
            eprintln!("diff-check: {}: {e}", a.diff.display());
            return ExitCode::from(2);
        }
    };
    let mut failures = check(&diff, &a);
    failures.extend(
        scalpel_e2e::schema::violations("scalpel-diff-1", &diff)
            .into_iter()
            .map(|e| format!("the diff breaks its schema: {e}")),
    );
    for f in &failures {
        println!("FAIL: {f}");
    }
    if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
