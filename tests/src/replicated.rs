//! The replicated-store sample as the tests that study it record it.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::score::{self, TruthTask};
use crate::{own_bin, record_with, scalpel, Run};

/// The paper's local commit and remote ack as the sample's truth composes them: each with the
/// send of the same commit (see samples/README.md).
pub const PAPER_TASKS: &[(&str, &[&str])] = &[
    ("local_commit", &["local_commit", "send_mutation"]),
    ("remote_ack", &["remote_ack", "send_reply"]),
];

/// The replicated-store sample recorded with `args`, and the primary's model inferred into
/// `primary/` beside the trace: the primary alone, as the Scalpel paper models it (the client
/// and the backup are other processes). Returns the run, the model directory and the true
/// tasks the sample wrote (also kept as `truth.jsonl` in the model directory).
pub fn replicated_primary(args: &[&str]) -> (Run, PathBuf, Vec<TruthTask>) {
    replicated_primary_of(&own_bin("replicated-store"), args)
}

/// [`replicated_primary`] of the sample at `exe` (a release build, for one).
pub fn replicated_primary_of(exe: &Path, args: &[&str]) -> (Run, PathBuf, Vec<TruthTask>) {
    let truth_dir = tempfile::tempdir().unwrap();
    let truth = truth_dir.path().join("truth.jsonl");
    let run = record_with(exe, args, |c| {
        c.env("SCALPEL_TRUTH", &truth);
    })
    .success();
    let tasks = score::load_tasks(&truth);
    let primary = tasks
        .iter()
        .find(|t| t.ty == "local_commit")
        .expect("the primary wrote local commits")
        .pid;
    let out = run.tmp.path().join("primary");
    let o = Command::new(scalpel())
        .arg("infer")
        .arg(&run.dir)
        .args(["--include", &format!("pid:{primary}"), "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Beside the model, as `rescore` wants it.
    std::fs::copy(&truth, out.join("truth.jsonl")).unwrap();
    (run, out, tasks)
}
