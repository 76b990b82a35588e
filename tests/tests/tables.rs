//! The tables for other engines: `scalpel export --format parquet` on the demo's program reads
//! back in pyarrow with the documented columns and the rows `export --table` gives; `scalpel
//! sql` answers the guide's queries, `top`'s figures equal the guide's SQL for them (in memory
//! and from the files), and a directory that is not a dataset is refused untouched.
//!
//! pyarrow is not Debian's: the test uses `SCALPEL_TABLES_PYTHON` (default `python3`) and
//! skips the pyarrow part when it cannot import it, unless `SCALPEL_TABLES_REQUIRED=1` (CI sets
//! both, with the virtual environment it makes).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use scalpel_e2e::score::infer_model;
use scalpel_e2e::sqltop::{compare, guide, guide_queries, rows};
use scalpel_e2e::{own_bin, record, scalpel, Run};
use scalpel_model::graph::Graph;
use scalpel_model::task::Model;

fn run(args: &[&str]) -> Output {
    Command::new(scalpel()).args(args).output().unwrap()
}

fn ok(o: &Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn python() -> Option<String> {
    scalpel_e2e::python_with(
        "SCALPEL_TABLES",
        "import pyarrow.dataset",
        "pyarrow",
        "tables::pyarrow",
    )
}

/// Lines of `export --table NAME` on the model in `out`.
fn export_rows(out: &Path, table: &str) -> u64 {
    let o = run(&["export", out.to_str().unwrap(), "--table", table]);
    ok(&o).lines().count() as u64
}

/// The guide's paragraph on `table`, whose backquoted words are its columns.
fn documented(table: &str) -> String {
    let g = guide();
    let start = g
        .find(&format!("\n`{table}`"))
        .unwrap_or_else(|| panic!("docs/guide/tables.md has no paragraph for {table}"));
    let rest = &g[start + 1..];
    rest[..rest.find("\n\n").unwrap_or(rest.len())].to_owned()
}

fn demo() -> (Run, PathBuf, Model, Graph) {
    let r = record(&own_bin("replicated-store"), &["--rpc", "async"]).success();
    let out = r.tmp.path().join("model");
    let (model, graph) = infer_model(&r.dir, &out, &[]);
    (r, out, model, graph)
}

/// pyarrow reads every table with the columns written, partition columns added.
fn read_with_pyarrow(py: &str, data: &Path, tables: &scalpel_tables::Tables) {
    let manifest = scalpel_tables::read_manifest(data).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tables/read.py");
    let o = Command::new(py).arg(script).arg(data).output().unwrap();
    let lines = ok(&o);
    assert_eq!(lines.lines().count(), tables.tables.len(), "{lines}");
    for line in lines.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let name = v["name"].as_str().unwrap();
        let t = tables
            .tables
            .iter()
            .find(|t| t.name.name() == name)
            .unwrap();
        let rows = manifest
            .tables
            .iter()
            .find(|m| m.name == name)
            .unwrap()
            .rows;
        assert_eq!(v["rows"].as_u64(), Some(rows), "{name}");
        let mut want: Vec<String> = t
            .batch
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        if t.name.is_partitioned() {
            want.extend(["host".to_owned(), "time_window".to_owned()]);
        }
        let got: Vec<String> = serde_json::from_value(v["columns"].clone()).unwrap();
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn the_demos_tables_read_back_and_answer_sql_as_top_does() {
    let (r, out, model, graph) = demo();
    let data = r.tmp.path().join("tables");
    ok(&run(&[
        "export",
        out.to_str().unwrap(),
        "--format",
        "parquet",
        "-o",
        data.to_str().unwrap(),
    ]));
    let manifest = scalpel_tables::read_manifest(&data).unwrap();
    let rows_of: BTreeMap<&str, u64> = manifest
        .tables
        .iter()
        .map(|t| (t.name.as_str(), t.rows))
        .collect();

    // The rows `export --table` gives, table by table.
    assert_eq!(rows_of["leaves"], export_rows(&out, "leaves"));
    assert_eq!(rows_of["edges"], export_rows(&out, "edges"));
    assert_eq!(rows_of["samples"], export_rows(&out, "samples"));
    assert_eq!(
        rows_of["waits"],
        export_rows(&out, "lock-waits") + export_rows(&out, "inner-waits")
    );
    assert_eq!(
        rows_of["instances"],
        export_rows(&out, "occurrences") + export_rows(&out, "leaves")
    );
    assert_eq!(rows_of["task_types"], model.types.len() as u64);
    assert_eq!(rows_of["threads"], graph.threads.len() as u64);
    assert!(
        rows_of["leaves"] > 1_000 && rows_of["edges"] > 1_000,
        "{rows_of:?}"
    );

    // Every column is in the guide, under its table.
    let tables =
        scalpel_tables::build_tables(&graph, Some(&model), scalpel_tables::DEFAULT_WINDOW_NS)
            .unwrap();
    for t in &tables.tables {
        let doc = documented(t.name.name());
        for f in t.batch.schema().fields() {
            assert!(
                doc.contains(&format!("`{}`", f.name())),
                "{}.{} is not in the guide",
                t.name.name(),
                f.name()
            );
        }
    }

    // `top` equals the guide's SQL, in memory and from the files.
    let (types, diffs) = compare(&graph, &model, &r.tmp.path().join("scratch")).unwrap();
    assert!(types >= 3, "top lists {types} types");
    assert!(
        diffs.is_empty(),
        "top and SQL differ:\n{}",
        diffs.join("\n")
    );

    // Every query of the guide runs, on the files and on the model, with the same rows.
    let files = scalpel_sql::Engine::from_dataset(&data, &scalpel_sql::Place::Embedded).unwrap();
    let memory = scalpel_sql::Engine::from_tables(&tables).unwrap();
    for (heading, q) in guide_queries() {
        let a = rows(&files, &q).unwrap_or_else(|e| panic!("{heading}: {e}\n{q}"));
        let b = rows(&memory, &q).unwrap_or_else(|e| panic!("{heading}: {e}\n{q}"));
        assert_eq!(a, b, "{heading}");
        eprintln!("{heading}: {} rows", a.len());
    }

    // The command line: the same answer from the dataset and from the model.
    let q = "SELECT name, COUNT(*) AS n FROM instances WHERE kind <> 'leaf' GROUP BY name ORDER BY n DESC, name";
    let from_files = ok(&run(&["sql", data.to_str().unwrap(), q, "--format", "csv"]));
    let from_model = ok(&run(&["sql", out.to_str().unwrap(), q, "--format", "csv"]));
    assert_eq!(from_files, from_model);
    // Options between the words, as the guide writes them.
    let between = ok(&run(&["sql", data.to_str().unwrap(), "--format", "csv", q]));
    assert_eq!(between, from_files);
    let o = run(&["sql", "--format", "csv", q]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("expected what to query, then the query"),
        "{}",
        stderr(&o)
    );
    assert!(from_files.lines().count() > 2, "{from_files}");

    if let Some(py) = python() {
        read_with_pyarrow(&py, &data, &tables);
    }
}

#[test]
fn bad_requests_are_refused_clearly_and_touch_nothing() {
    let (r, out, _, _) = demo();
    let model = out.to_str().unwrap();

    // A directory of the user's: refused, left as it was.
    let mine = r.tmp.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    std::fs::write(mine.join("notes.txt"), "mine").unwrap();
    let o = run(&[
        "export",
        model,
        "--format",
        "parquet",
        "-o",
        mine.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("not a Scalpel table dataset"),
        "{}",
        stderr(&o)
    );
    let left: Vec<_> = std::fs::read_dir(&mine)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["notes.txt"]);
    assert_eq!(
        std::fs::read_to_string(mine.join("notes.txt")).unwrap(),
        "mine"
    );

    // Parquet needs a directory, and holds every table.
    let o = run(&["export", model, "--format", "parquet"]);
    assert!(stderr(&o).contains("-o DIR"), "{}", stderr(&o));
    let t = r.tmp.path().join("t");
    let o = run(&[
        "export",
        model,
        "--format",
        "parquet",
        "--table",
        "leaves",
        "-o",
        t.to_str().unwrap(),
    ]);
    assert!(stderr(&o).contains("holds every table"), "{}", stderr(&o));

    // A dataset written twice is replaced, not added to.
    let data = r.tmp.path().join("tables");
    let args = [
        "export",
        model,
        "--format",
        "parquet",
        "-o",
        data.to_str().unwrap(),
    ];
    ok(&run(&args));
    let first = scalpel_tables::read_manifest(&data).unwrap();
    ok(&run(&args));
    assert_eq!(scalpel_tables::read_manifest(&data).unwrap(), first);

    // Lists (a machine's addresses, a process's arguments) as text in CSV.
    let csv = ok(&run(&[
        "sql",
        data.to_str().unwrap(),
        "SELECT id, cmdline FROM processes ORDER BY id",
        "--format",
        "csv",
    ]));
    assert!(
        csv.lines().count() >= 4 && csv.contains("replicated-store"),
        "{csv}"
    );

    // A window of nanoseconds, or a window without Parquet: refused before anything is read.
    let o = run(&[
        "export",
        model,
        "--format",
        "parquet",
        "--window",
        "5",
        "-o",
        t.to_str().unwrap(),
    ]);
    assert!(stderr(&o).contains("at least 1ms"), "{}", stderr(&o));
    let o = run(&["export", model, "--window", "10s", "--table", "leaves"]);
    assert!(stderr(&o).contains("--format parquet"), "{}", stderr(&o));

    // An export that did not finish: its manifest says so, sql refuses it, the next export
    // replaces it.
    let manifest = data.join("scalpel-tables.json");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(
        &manifest,
        text.replace("\"complete\": true", "\"complete\": false"),
    )
    .unwrap();
    let o = run(&["sql", data.to_str().unwrap(), "SELECT 1"]);
    assert!(stderr(&o).contains("did not finish"), "{}", stderr(&o));
    ok(&run(&args));
    assert_eq!(scalpel_tables::read_manifest(&data).unwrap(), first);

    // A query that does not parse, or names no table: an error that says so.
    let o = run(&["sql", model, "SELEC 1"]);
    assert!(
        !o.status.success() && stderr(&o).contains("SELEC"),
        "{}",
        stderr(&o)
    );
    let o = run(&["sql", data.to_str().unwrap(), "SELECT * FROM nosuch"]);
    assert!(
        !o.status.success() && stderr(&o).contains("nosuch"),
        "{}",
        stderr(&o)
    );
    let o = run(&["sql", model]);
    assert!(!o.status.success());
}
