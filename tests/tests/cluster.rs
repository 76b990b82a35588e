//! `scalpel sql --engine ballista://…`: a Ballista scheduler and two executors started here
//! (`scalpel-ballista`, processes on 127.0.0.1) answer the guide's queries on the Parquet
//! dataset of a recording of three processes with the rows the embedded engine gives, `top`'s
//! table among them, and both executors run tasks; a cluster that is not there, a source that
//! is not a dataset and an engine that is not understood are refused clearly.

use std::fs::File;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use scalpel_e2e::score::infer_model;
use scalpel_e2e::sqltop::{guide_queries, top_query};
use scalpel_e2e::{own_bin, record, scalpel};
use serde_json::Value;

fn sql(data: &Path, engine: &str, q: &str) -> Output {
    Command::new(scalpel())
        .args(["sql", data.to_str().unwrap(), "--engine", engine])
        .args(["--format", "jsonl", q])
        .output()
        .unwrap()
}

fn ok(o: &Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout.clone()).unwrap()
}

/// A port nothing listens on now (the OS's choice, then let go).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A node of the cluster, stopped by its PID when dropped; its messages go to `log`.
struct Node {
    child: Child,
    log: PathBuf,
}

impl Node {
    fn start(args: &[&str], log: PathBuf) -> Node {
        let child = Command::new(own_bin("scalpel-ballista"))
            .arg("-v")
            .args(args)
            .stdout(Stdio::null())
            .stderr(File::create(&log).unwrap())
            .spawn()
            .unwrap();
        Node { child, log }
    }

    fn messages(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits (60 s at most) until the node has said `what`; fails if it died first.
    fn wait_for(&mut self, what: &str) {
        let start = Instant::now();
        while !self.messages().contains(what) {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("the node ended ({status}):\n{}", self.messages());
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "no {what:?} after 60 s:\n{}",
                self.messages()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A query's JSON rows, sorted when the query does not fix their order.
fn comparable(rows: &str, ordered: bool) -> Vec<Value> {
    let mut lines: Vec<&str> = rows.lines().collect();
    if !ordered {
        lines.sort_unstable();
    }
    lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Whether two values are equal, numbers with a float within `tol` of the other (relative).
fn same(a: &Value, b: &Value, tol: f64) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if x.is_f64() || y.is_f64() => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            (x - y).abs() <= tol * x.abs().max(y.abs())
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same(v, w, tol)))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same(v, w, tol))
        }
        _ => a == b,
    }
}

#[test]
fn a_ballista_cluster_answers_as_the_embedded_engine_does() {
    let r = record(&own_bin("replicated-store"), &["--rpc", "async"]).success();
    let model = r.tmp.path().join("model");
    infer_model(&r.dir, &model, &[]);
    let data = r.tmp.path().join("tables");
    let o = Command::new(scalpel())
        .args([
            "export",
            model.to_str().unwrap(),
            "--format",
            "parquet",
            "-o",
        ])
        .arg(&data)
        .output()
        .unwrap();
    ok(&o);

    let port = free_port();
    let mut scheduler = Node::start(
        &["scheduler", "--port", &port.to_string()],
        r.tmp.path().join("scheduler.log"),
    );
    scheduler.wait_for("listening on");
    let at = format!("127.0.0.1:{port}");
    let mut executors = Vec::new();
    let mut work_dirs = Vec::new();
    for i in 0..2 {
        let work = r.tmp.path().join(format!("work-{i}"));
        std::fs::create_dir(&work).unwrap();
        let (flight, grpc) = (free_port().to_string(), free_port().to_string());
        // One task at a time each, so that a stage of several partitions needs both.
        let e = Node::start(
            &[
                "executor",
                "--scheduler",
                &at,
                "--port",
                &flight,
                "--grpc-port",
                &grpc,
                "--concurrent-tasks",
                "1",
                "--work-dir",
                work.to_str().unwrap(),
            ],
            r.tmp.path().join(format!("executor-{i}.log")),
        );
        executors.push(e);
        work_dirs.push(work);
    }
    for e in &mut executors {
        e.wait_for("registration succeed");
    }

    let engine = format!("ballista://{at}");
    let top = top_query();
    let mut queries = guide_queries();
    assert!(queries.iter().any(|(_, q)| *q == top));
    queries.push((
        "instances by name".to_owned(),
        "SELECT name, COUNT(*) AS n, SUM(latency_ns) AS ns FROM instances GROUP BY name".to_owned(),
    ));
    for (heading, q) in &queries {
        let embedded = ok(&sql(&data, "embedded", q));
        let cluster = ok(&sql(&data, &engine, q));
        let ordered = q.contains("ORDER BY");
        // Exact but for the last bits of a float; an approximate function's sketch is merged
        // from parts in the order they arrive, so its estimate may move a little.
        let tol = if q.contains("approx_") { 0.05 } else { 1e-9 };
        let (c, e) = (
            comparable(&cluster, ordered),
            comparable(&embedded, ordered),
        );
        assert!(
            c.len() == e.len() && c.iter().zip(&e).all(|(a, b)| same(a, b, tol)),
            "{heading}: the cluster's rows differ from the embedded engine's\n{q}\n\
             cluster:\n{cluster}\nembedded:\n{embedded}"
        );
        assert!(!embedded.is_empty(), "{heading}: no rows");
    }
    for (w, e) in work_dirs.iter().zip(&executors) {
        let jobs = std::fs::read_dir(w).unwrap().count();
        assert!(
            jobs > 0,
            "the executor with {} ran no task:\n{}",
            w.display(),
            e.messages()
        );
    }
    drop(executors);
    drop(scheduler);

    // Nothing listens there any more: the error names the cluster.
    let o = sql(&data, &engine, "SELECT COUNT(*) FROM leaves");
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("the Ballista cluster at {engine}")),
        "{err}"
    );

    // A model is not a dataset: its tables are in this process's memory.
    let o = sql(&model, &engine, "SELECT COUNT(*) FROM leaves");
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("not a dataset") && err.contains("--format parquet"),
        "{err}"
    );

    // An engine that is not understood.
    let o = sql(&data, "ballista://127.0.0.1", "SELECT 1");
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("the port is missing"), "{err}");
}
