//! `scalpel export --format otlp` on the demo's program: every line parses as an
//! `ExportTraceServiceRequest` with the official protobuf definitions (Python's
//! `opentelemetry-proto`, through `tests/otlp/parse.py`), every top-level task instance is one
//! trace, parents and links point at spans that exist, and the times are Unix time.
//!
//! The Python package is not Debian's: the test uses `SCALPEL_OTLP_PYTHON` (default `python3`)
//! and skips when it cannot import the package, unless `SCALPEL_OTLP_REQUIRED=1` (CI sets both,
//! with a virtual environment it makes).

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use scalpel_e2e::score::infer_model;
use scalpel_e2e::{own_bin, record, scalpel};
use scalpel_model::task::TaskKind;

fn python() -> Option<String> {
    let py = std::env::var("SCALPEL_OTLP_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let ok = Command::new(&py)
        .args([
            "-c",
            "import opentelemetry.proto.collector.trace.v1.trace_service_pb2",
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        return Some(py);
    }
    assert!(
        std::env::var_os("SCALPEL_OTLP_REQUIRED").is_none_or(|v| v != "1"),
        "SCALPEL_OTLP_REQUIRED=1 but {py} cannot import opentelemetry-proto"
    );
    eprintln!("skipped: {py} has no opentelemetry-proto (set SCALPEL_OTLP_PYTHON)");
    None
}

fn export(args: &[&str]) -> std::process::Output {
    Command::new(scalpel())
        .arg("export")
        .args(args)
        .output()
        .unwrap()
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

#[test]
fn the_demos_task_instances_are_traces_that_otlp_reads() {
    let Some(py) = python() else { return };
    let r = record(&own_bin("replicated-store"), &["--rpc", "async"]).success();
    let out = r.tmp.path().join("model");
    let (model, graph) = infer_model(&r.dir, &out, &[]);
    let file = r.tmp.path().join("traces.json");
    let o = export(&[
        out.to_str().unwrap(),
        "--format",
        "otlp",
        "-o",
        file.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let lines = parse(&py, &file);

    let top: usize = model
        .types
        .iter()
        .filter(|t| t.kind != TaskKind::Leaf)
        .map(|t| t.occurrences.iter().filter(|o| o.parent.is_none()).count())
        .sum();
    assert_eq!(lines.len(), top, "one trace per top-level task instance");
    let occurrences: usize = model
        .types
        .iter()
        .filter(|t| t.kind != TaskKind::Leaf)
        .map(|t| t.occurrences.len())
        .sum();
    let in_tasks = model.leaf_parent.iter().filter(|p| p.is_some()).count();
    let spans: usize = lines.iter().map(|l| l.spans.len()).sum();
    assert_eq!(
        spans,
        occurrences + in_tasks,
        "a span per occurrence and per leaf in a task"
    );

    let mut all: BTreeSet<(String, String)> = BTreeSet::new();
    let mut traces = BTreeSet::new();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    for (n, l) in lines.iter().enumerate() {
        let ids: BTreeSet<&str> = l.spans.iter().map(|s| s.0.as_str()).collect();
        assert_eq!(ids.len(), 1, "line {n}: one trace id");
        assert!(
            traces.insert(l.spans[0].0.clone()),
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
            // Unix time: the recording was made minutes ago.
            let day = 86_400 * 1_000_000_000;
            assert!(
                now - day < *start && *start < now + day,
                "{span}: {start} is no Unix time"
            );
        }
        all.extend(l.spans.iter().map(|s| (s.0.clone(), s.1.clone())));
    }
    let links: Vec<&(String, String)> = lines.iter().flat_map(|l| &l.links).collect();
    assert!(
        !links.is_empty(),
        "the client, primary and backup pass messages"
    );
    for link in links {
        assert!(
            all.contains(link),
            "a link to a span that is not there: {link:?}"
        );
    }
    assert!(graph.processes.len() >= 3);

    // The same model gives the same bytes.
    let again = r.tmp.path().join("again.json");
    let o = export(&[
        out.to_str().unwrap(),
        "--format",
        "otlp",
        "-o",
        again.to_str().unwrap(),
    ]);
    assert!(o.status.success());
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
    let o = export(&[out.join("graph.json").to_str().unwrap(), "--format", "otlp"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("the model's task instances"));
}
