//! `scalpel export --format otlp` on the demo's program: every line parses as an
//! `ExportTraceServiceRequest` with the official protobuf definitions (Python's
//! `opentelemetry-proto`, through `tests/otlp/parse.py`), every top-level task instance (every
//! task in a session) is one trace, parents and links point at spans that exist, and the times
//! are Unix time.
//!
//! The Python package is not Debian's: the test uses `SCALPEL_OTLP_PYTHON` (default `python3`)
//! and skips when it cannot import the package, unless `SCALPEL_OTLP_REQUIRED=1` (CI sets both,
//! with a virtual environment it makes).

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use scalpel_e2e::corpus::corpus_dir;
use scalpel_e2e::score::{infer_model, load_model};
use scalpel_e2e::{own_bin, record, scalpel};
use scalpel_model::task::{Model, OccRef, TaskKind};

fn python(test: &str) -> Option<String> {
    scalpel_e2e::python_with(
        "SCALPEL_OTLP",
        "import opentelemetry.proto.collector.trace.v1.trace_service_pb2",
        "opentelemetry-proto",
        &format!("otlp::{test}"),
    )
}

fn export(args: &[&str]) -> std::process::Output {
    Command::new(scalpel())
        .arg("export")
        .args(args)
        .output()
        .unwrap()
}

/// Exports the model in `out` as OTLP into `file`, failing on an error.
fn export_otlp(out: &Path, file: &Path) {
    let args = [
        out.to_str().unwrap(),
        "--format",
        "otlp",
        "-o",
        file.to_str().unwrap(),
    ];
    let o = export(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// One line of `parse.py`'s output.
#[derive(serde::Deserialize)]
struct Parsed {
    /// (trace id, span id, parent span id, start, end).
    spans: Vec<(String, String, String, u64, u64)>,
    /// (trace id, span id).
    links: Vec<(String, String)>,
}

fn parse(py: &str, file: &Path) -> Vec<Parsed> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("otlp/parse.py");
    let o = Command::new(py).arg(script).arg(file).output().unwrap();
    assert!(
        o.status.success(),
        "the OTLP file does not parse: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// What the model says the export must hold: (traces, spans).
fn expected(model: &Model) -> (usize, usize) {
    let kind = |r: &OccRef| model.types[r.ty.index()].kind;
    let exported = |k: TaskKind| !matches!(k, TaskKind::Leaf | TaskKind::Session);
    let (mut traces, mut spans) = (0, 0);
    for t in model.types.iter().filter(|t| exported(t.kind)) {
        spans += t.occurrences.len();
        traces += t
            .occurrences
            .iter()
            .filter(|o| {
                o.parent
                    .as_ref()
                    .is_none_or(|p| kind(p) == TaskKind::Session)
            })
            .count();
    }
    // Leaves in a task, but not directly in a session.
    spans += model
        .leaf_parent
        .iter()
        .flatten()
        .filter(|p| exported(kind(p)))
        .count();
    (traces, spans)
}

/// Exports the model in `out` as OTLP into `file`, parses it and checks it against the model.
fn check(py: &str, out: &Path, file: &Path) -> Vec<Parsed> {
    let (model, _) = load_model(out);
    export_otlp(out, file);
    let lines = parse(py, file);
    let (traces, spans) = expected(&model);
    assert_eq!(lines.len(), traces, "one trace per top-level task instance");
    let written: usize = lines.iter().map(|l| l.spans.len()).sum();
    assert_eq!(
        written, spans,
        "a span per occurrence and per leaf in a task"
    );

    let mut all: BTreeSet<(String, String)> = BTreeSet::new();
    let mut ids = BTreeSet::new();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    for (n, l) in lines.iter().enumerate() {
        let trace: BTreeSet<&str> = l.spans.iter().map(|s| s.0.as_str()).collect();
        assert_eq!(trace.len(), 1, "line {n}: one trace id");
        assert!(
            ids.insert(l.spans[0].0.clone()),
            "line {n}: trace id used twice"
        );
        let own: BTreeSet<&str> = l.spans.iter().map(|s| s.1.as_str()).collect();
        assert_eq!(own.len(), l.spans.len(), "line {n}: a span id twice");
        let roots = l.spans.iter().filter(|s| s.2.is_empty()).count();
        assert_eq!(roots, 1, "line {n}: one root span");
        for (_, span, parent, start, end) in &l.spans {
            assert!(
                parent.is_empty() || own.contains(parent.as_str()),
                "{span}: no parent"
            );
            assert!(start <= end, "{span}: ends before it starts");
            // Unix time, for a trace recorded minutes ago (the corpus's are years old).
            let years = 10 * 365 * 86_400 * 1_000_000_000;
            assert!(
                now - years < *start && *start < now + years,
                "{span}: {start} is no Unix time"
            );
        }
        all.extend(l.spans.iter().map(|s| (s.0.clone(), s.1.clone())));
    }
    for link in lines.iter().flat_map(|l| &l.links) {
        assert!(
            all.contains(link),
            "a link to a span that is not there: {link:?}"
        );
    }
    lines
}

#[test]
fn the_demos_task_instances_are_traces_that_otlp_reads() {
    let Some(py) = python("the_demos_task_instances_are_traces_that_otlp_reads") else {
        return;
    };
    let r = record(&own_bin("replicated-store"), &["--rpc", "async"]).success();
    let out = r.tmp.path().join("model");
    let (_, graph) = infer_model(&r.dir, &out, &[]);
    assert!(graph.processes.len() >= 3);
    let file = r.tmp.path().join("traces.json");
    let lines = check(&py, &out, &file);
    assert!(
        lines.iter().any(|l| !l.links.is_empty()),
        "the client, primary and backup pass messages"
    );

    // The same model gives the same bytes.
    let again = r.tmp.path().join("again.json");
    export_otlp(&out, &again);
    assert_eq!(
        std::fs::read(&file).unwrap(),
        std::fs::read(&again).unwrap()
    );

    // A table has no OTLP form, and a graph alone has no task instances.
    let o = export(&[
        out.to_str().unwrap(),
        "--format",
        "otlp",
        "--table",
        "leaves",
    ]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("no OTLP form"));
    let graph_only = out.join("graph.json");
    let o = export(&[graph_only.to_str().unwrap(), "--format", "otlp"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("the model's task instances"));
}

#[test]
fn each_request_of_a_session_is_a_trace_of_its_own() {
    let Some(py) = python("each_request_of_a_session_is_a_trace_of_its_own") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("model");
    let (model, _) = infer_model(&corpus_dir().join("sessions-loop/trace"), &out, &[]);
    let sessions = model
        .types
        .iter()
        .filter(|t| t.kind == TaskKind::Session)
        .map(|t| t.occurrences.len())
        .sum::<usize>();
    assert!(sessions > 0, "the case has sessions");
    let lines = check(&py, &out, &tmp.path().join("traces.json"));
    assert!(
        lines.len() > sessions,
        "{} traces from {sessions} sessions",
        lines.len()
    );
}
