//! The `scalpel` binary end to end: dump, summary and record (with a stand-in agent).

mod common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

fn scalpel(args: &[&str], agent: Option<&Path>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_scalpel"));
    c.args(args).env_remove("LD_PRELOAD");
    match agent {
        Some(a) => c.env("SCALPEL_AGENT", a),
        None => c.env_remove("SCALPEL_AGENT"),
    };
    c.output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A file that stands in for the agent: the dynamic loader warns that it cannot preload it and
/// runs the command anyway.
fn fake_agent(dir: &Path) -> std::path::PathBuf {
    let p = dir.join("libfake.so");
    fs::write(&p, b"not an ELF file").unwrap();
    p
}

#[test]
fn dump_and_summary() {
    let tmp = tempfile::tempdir().unwrap();
    common::build(tmp.path());
    let dir = tmp.path().to_str().unwrap();
    let out = scalpel(&["dump", dir, "--merged", "--op", "sleep"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "   0.000000300       200/200 sleep\n");
    let err = text(&out.stderr);
    assert!(
        err.contains("warning: ") && err.contains("t200.trace: damaged at offset 4103"),
        "{err}"
    );

    let out = scalpel(&["summary", dir], None);
    assert!(out.status.success());
    let s = text(&out.stdout);
    assert!(
        s.contains("processes:  2") && s.contains("threads:    3"),
        "{s}"
    );
    let out2 = scalpel(&["dump", "--summary", dir], None);
    assert_eq!(out2.stdout, out.stdout);

    let out = scalpel(&["dump", dir, "--op", "bogus"], None);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("unknown operation `bogus`") && err.contains("thread_join"),
        "{err}"
    );

    let missing = tmp.path().join("missing");
    let out = scalpel(&["dump", missing.to_str().unwrap()], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("missing: cannot read"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(
        scalpel(&["dump", dir, "--bogus"], None).status.code(),
        Some(2)
    );
}

#[test]
fn record_runs_the_command_under_the_agent() {
    let tmp = tempfile::tempdir().unwrap();
    let agent = fake_agent(tmp.path());
    let fixture = tmp.path().join("fixture");
    common::build(&fixture);
    let out_dir = tmp.path().join("trace");
    let script = format!(
        "echo \"$SCALPEL_DIR|$SCALPEL_AGENT|$LD_PRELOAD\"; cp -r {}/* \"$SCALPEL_DIR\"; exit 3",
        fixture.display()
    );
    let args = [
        "record",
        "-o",
        out_dir.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        &script,
    ];
    let out = scalpel(&args, Some(&agent));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    let dir = out_dir.canonicalize().unwrap();
    let agent = agent.canonicalize().unwrap();
    let expect = format!(
        "{}|{}|{}\n",
        dir.display(),
        agent.display(),
        agent.display()
    );
    assert_eq!(text(&out.stdout), expect);
    assert!(err.contains("exited with status 3"), "{err}");
    // The fixture's two damaged files, and its four files the recorder did not make (the
    // command copied them in): each named.
    assert!(
        err.contains("events:     6") && err.contains("warnings:   6"),
        "{err}"
    );
    assert_eq!(err.matches("not made by the recorder").count(), 4, "{err}");
    let mode = fs::metadata(&dir).unwrap().permissions().mode();
    assert_eq!(mode & 0o7777, 0o700, "the trace is closed to other users");

    // Not empty: refused, then replaced with --force.
    let out = scalpel(&args, Some(&agent));
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("trace directory is not empty\nscalpel: hint: use --force"),
        "the library says what is wrong, the command line which flag helps: {err}"
    );
    let forced = [
        "record",
        "--force",
        "-o",
        out_dir.to_str().unwrap(),
        "--",
        "true",
    ];
    let out = scalpel(&forced, Some(&agent));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("no trace was recorded"));
    // The earlier trace is gone; only what `record` itself writes is there: the table of shared
    // counters, the (empty) list of files it made and the machine it ran on, each the user's
    // alone.
    let mut left: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    left.sort();
    assert_eq!(left, ["files.list", "host.id", "shared.tbl"]);
    for f in &left {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(dir.join(f)).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{f:?}");
    }
    let host = fs::read_to_string(dir.join("host.id")).unwrap();
    assert!(
        host.starts_with("scalpel-host 1\n") && host.contains("\nboot_id "),
        "{host}"
    );
}

#[test]
fn record_reports_start_failures_like_a_shell() {
    let tmp = tempfile::tempdir().unwrap();
    let agent = fake_agent(tmp.path());
    let d = |n: &str| tmp.path().join(n).to_str().unwrap().to_string();
    let out = scalpel(
        &["record", "-o", &d("a"), "--", "no-such-command-xyz"],
        Some(&agent),
    );
    assert_eq!(out.status.code(), Some(127));
    assert!(text(&out.stderr).contains("cannot run `no-such-command-xyz`: command not found"));

    let plain = tmp.path().join("plain.txt");
    fs::write(&plain, "data").unwrap();
    let out = scalpel(
        &["record", "-o", &d("b"), "--", plain.to_str().unwrap()],
        Some(&agent),
    );
    assert_eq!(out.status.code(), Some(126), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("not executable"));

    let out = scalpel(
        &["record", "-o", &d("c"), "--", "sh", "-c", "kill -TERM $$"],
        Some(&agent),
    );
    assert_eq!(out.status.code(), Some(128 + 15));
    assert!(text(&out.stderr).contains("was killed by SIGTERM"));

    let out = scalpel(
        &["record", "-o", &d("d"), "--", "true"],
        Some(&tmp.path().join("nope.so")),
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("SCALPEL_AGENT="),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn record_forwards_sigterm_and_still_summarizes() {
    let tmp = tempfile::tempdir().unwrap();
    let agent = fake_agent(tmp.path());
    let dir = tmp.path().join("t");
    let child = Command::new(env!("CARGO_BIN_EXE_scalpel"))
        .args(["record", "-o", dir.to_str().unwrap(), "--", "sleep", "30"])
        .env("SCALPEL_AGENT", &agent)
        .env_remove("LD_PRELOAD")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: sends a signal to the process this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(128 + 15));
    let err = text(&out.stderr);
    assert!(
        err.contains("killed by SIGTERM") && err.contains("no trace was recorded"),
        "{err}"
    );
}

/// The hand-built trace in a new temporary directory, inferred into its `out`.
fn inferred() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    common::build(tmp.path());
    let out_dir = tmp.path().join("out");
    let (trace, out) = (tmp.path().to_str().unwrap(), out_dir.to_str().unwrap());
    let o = scalpel(&["infer", trace, "-o", out], None);
    assert!(o.status.success(), "{}", text(&o.stderr));
    (tmp, out_dir)
}

/// `infer` on a directory `infer` wrote says what the directory is instead of "no trace
/// found"; a trace with a model written into it still infers.
#[test]
fn an_inferred_directory_is_named_for_what_it_is() {
    let (tmp, out_dir) = inferred();
    let o = scalpel(&["infer", out_dir.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(
        err.contains("a directory `scalpel infer` wrote") && err.contains("not a trace"),
        "{err}"
    );
    // The trace itself still infers, written into its own directory or not.
    let trace = tmp.path().to_str().unwrap();
    let o = scalpel(&["infer", trace, "-o", trace], None);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = scalpel(&["infer", trace, "-o", out_dir.to_str().unwrap()], None);
    assert!(o.status.success(), "{}", text(&o.stderr));
}

/// `top` on a directory of windows adds up the windows `windows.json` lists (here one, which
/// gives the window's own figures), and a list it cannot use is refused with the file and what
/// is wrong, a window without a model with its directory.
#[test]
fn top_adds_up_the_listed_windows_and_refuses_a_bad_list() {
    let (tmp, out_dir) = inferred();
    let ws = tmp.path().join("ws");
    fs::create_dir(&ws).unwrap();
    fs::rename(&out_dir, ws.join("window-0000")).unwrap();
    let list = |json: &str| fs::write(ws.join("windows.json"), json).unwrap();
    let top = |dir: &Path| scalpel(&["top", dir.to_str().unwrap(), "--format", "json"], None);
    list(r#"{"windows": [{"index": 0, "dir": "window-0000"}]}"#);
    let (one, summed) = (top(&ws.join("window-0000")), top(&ws));
    assert!(summed.status.success(), "{}", text(&summed.stderr));
    let mut one: serde_json::Value = serde_json::from_slice(&one.stdout).unwrap();
    one["windows"] = 1.into();
    let summed: serde_json::Value = serde_json::from_slice(&summed.stdout).unwrap();
    assert_eq!(summed, one);
    for (json, says) in [
        ("not json", "expected"),
        (r#"{"windows": []}"#, "it lists no window"),
        (
            r#"{"windows": [{"dir": "../out"}]}"#,
            "\"../out\" is not a directory name",
        ),
    ] {
        list(json);
        let o = top(&ws);
        assert_eq!(o.status.code(), Some(1), "{json}");
        let err = text(&o.stderr);
        assert!(
            err.contains("windows.json: not a list of windows") && err.contains(says),
            "{json}: {err}"
        );
    }
    list(r#"{"windows": [{"dir": "window-0000"}, {"dir": "window-0001"}]}"#);
    let err = text(&top(&ws).stderr);
    assert!(
        err.contains("window-0001: no model.json in this window"),
        "{err}"
    );
}

/// A graph.json or model.json edited to name a leaf, node or object that does not exist is
/// refused with the file, the table, the entry and the bad value; nothing panics. The edits are
/// made on the complete documents `scalpel export` writes, which the readers take in place of
/// the stored pair.
#[test]
fn top_and_report_refuse_a_graph_whose_indices_name_nothing() {
    let (_tmp, out_dir) = inferred();
    let model_dir = out_dir.to_str().unwrap();
    let ok = scalpel(&["top", model_dir], None);
    assert!(ok.status.success(), "{}", text(&ok.stderr));

    let export = |table: &str| {
        let out = scalpel(&["export", model_dir, "--table", table], None);
        assert!(out.status.success(), "{}", text(&out.stderr));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let graph_path = out_dir.join("graph.json");
    let original = fs::read(&graph_path).unwrap();
    let mut g = export("graph");
    assert!(
        !g["edges"].as_array().unwrap().is_empty(),
        "the fixture has edges"
    );
    g["edges"][0]["to"] = serde_json::json!(999_999);
    fs::write(&graph_path, serde_json::to_vec(&g).unwrap()).unwrap();
    for cmd in ["top", "report"] {
        let out = scalpel(&[cmd, model_dir], None);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{cmd}: {err}");
        assert!(
            err.contains("graph.json is not a consistent causal graph")
                && err.contains("edges[0].to is 999999"),
            "{cmd}: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }

    fs::write(&graph_path, &original).unwrap();
    let model_path = out_dir.join("model.json");
    let mut m = export("model");
    let parents = m["leaf_parent"].as_array_mut().unwrap();
    parents[0] = serde_json::json!({"type": 77_777, "index": 0});
    fs::write(&model_path, serde_json::to_vec(&m).unwrap()).unwrap();
    let out = scalpel(&["top", model_dir], None);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("model.json is not a consistent model")
            && err.contains("leaf_parent[0].type is 77777"),
        "{err}"
    );
}

/// Refusals that say what is wrong: an empty command, filters that keep nothing, and a report
/// path whose directory does not exist (which used to be created, typo and all).
#[test]
fn empty_commands_empty_filters_and_missing_directories_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let agent = fake_agent(tmp.path());
    let out = scalpel(
        &[
            "record",
            "-o",
            tmp.path().join("r").to_str().unwrap(),
            "--",
            "",
        ],
        Some(&agent),
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("the command is empty"),
        "{}",
        text(&out.stderr)
    );

    let trace = tmp.path().join("trace");
    fs::create_dir(&trace).unwrap();
    common::build(&trace);
    let out_dir = tmp.path().join("out");
    let t = trace.to_str().unwrap();
    let o = out_dir.to_str().unwrap();
    let out = scalpel(&["infer", t, "-o", o, "--include", "pid:99999"], None);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("the filters keep none of its"), "{err}");
    assert!(
        err.contains("scalpel: hint: check the filters given to --include"),
        "{err}"
    );
    assert!(
        !out_dir.join("model.json").exists(),
        "no empty model is written"
    );
    let out = scalpel(
        &["top", t, "--exclude", "pid:100", "--exclude", "pid:200"],
        None,
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("the filters keep none of its"));

    let out = scalpel(&["infer", t, "-o", o], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let missing = tmp.path().join("no/such/dir/r.html");
    let out = scalpel(&["report", o, "-o", missing.to_str().unwrap()], None);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("the directory") && err.contains("no/such/dir does not exist"),
        "{err}"
    );
    assert!(!tmp.path().join("no").exists(), "no directory was made");
}

/// `scalpel export`: each table's rows as JSON Lines with their ids, the complete documents, a
/// graph without a model, and refusals that name what is wrong. A damaged `graph.bin` is refused
/// by the views with the file and offset.
#[test]
fn export_writes_the_stored_tables_and_refuses_what_does_not_fit() {
    let (tmp, out_dir) = inferred();
    let trace = tmp.path().to_str().unwrap();
    let dir = out_dir.to_str().unwrap();
    let run = |args: &[&str]| {
        let mut all = vec!["export", dir];
        all.extend_from_slice(args);
        scalpel(&all, None)
    };
    let graph: serde_json::Value =
        serde_json::from_slice(&run(&["--table", "graph"]).stdout).unwrap();
    assert_eq!(graph["schema"], "scalpel-graph/5");
    let leaves = graph["leaves"].as_array().unwrap();
    assert!(!leaves.is_empty());
    let lines = text(&run(&["--table", "leaves"]).stdout);
    assert_eq!(lines.lines().count(), leaves.len());
    for (i, line) in lines.lines().enumerate() {
        let mut row: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(row["id"], i);
        row.as_object_mut().unwrap().remove("id");
        assert_eq!(row, leaves[i], "leaf {i}");
    }
    let model: serde_json::Value =
        serde_json::from_slice(&run(&["--table", "model"]).stdout).unwrap();
    let occurrences: usize = model["types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["occurrences"].as_array().map_or(0, Vec::len))
        .sum();
    let rows = text(&run(&["--table", "occurrences"]).stdout);
    assert_eq!(rows.lines().count(), occurrences);
    let parents: Vec<serde_json::Value> =
        serde_json::from_slice(&run(&["--table", "leaf-parent", "--format", "json"]).stdout)
            .unwrap();
    assert_eq!(parents.len(), leaves.len());

    // Into a file, and the refusals.
    let file = tmp.path().join("edges.jsonl");
    let out = run(&["--table", "edges", "-o", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let edges = graph["edges"].as_array().unwrap().len();
    assert_eq!(fs::read_to_string(&file).unwrap().lines().count(), edges);
    let err = text(&run(&["--table", "model", "--format", "jsonl"]).stderr);
    assert!(
        err.contains("one document\nscalpel: hint: use --format json"),
        "{err}"
    );
    let err = text(&run(&["--table", "nodes"]).stderr);
    assert!(
        err.contains("invalid value 'nodes'") && err.contains("leaves"),
        "{err}"
    );
    let missing = tmp.path().join("no/such/dir/x.json");
    let err = text(&run(&["-o", missing.to_str().unwrap()]).stderr);
    assert!(err.contains("does not exist"), "{err}");
    assert!(!tmp.path().join("no").exists());

    // A graph alone (`infer --stage graph`) exports its own tables and not the model's.
    let graph_dir = tmp.path().join("graph-only");
    let g = graph_dir.to_str().unwrap();
    let out = scalpel(&["infer", trace, "-o", g, "--stage", "graph"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = scalpel(&["export", g, "--table", "leaves"], None);
    assert_eq!(text(&out.stdout).lines().count(), leaves.len());
    let out = scalpel(&["export", g, "--table", "occurrences"], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("model's"),
        "{}",
        text(&out.stderr)
    );

    // A damaged binary table: every view names the file and what is wrong, without a panic.
    let bin = out_dir.join("graph.bin");
    let mut bytes = fs::read(&bin).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x55;
    fs::write(&bin, &bytes).unwrap();
    for cmd in ["top", "export"] {
        let out = scalpel(&[cmd, dir], None);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{cmd}: {err}");
        assert!(
            err.contains("graph.bin does not belong to") && err.contains("checksum"),
            "{cmd}: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
}
