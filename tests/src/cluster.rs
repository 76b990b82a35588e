//! A Ballista cluster of processes on 127.0.0.1 (`scalpel-ballista`: a scheduler and its
//! executors), each stopped by its PID when dropped, and the check that `scalpel sql` on it
//! gives a dataset the rows the embedded engine gives.

use std::fs::File;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::sqltop::{guide_queries, top_query};
use crate::{own_bin, scalpel};

/// `scalpel sql DATA --engine ENGINE --format jsonl Q`.
pub fn sql(data: &Path, engine: &str, q: &str) -> Output {
    Command::new(scalpel())
        .args(["sql", data.to_str().unwrap(), "--engine", engine])
        .args(["--format", "jsonl", q])
        .output()
        .unwrap()
}

/// The standard output of a run that succeeded.
pub fn ok(o: &Output) -> String {
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

/// A scheduler and its executors, with their logs and working directories under a directory.
pub struct Cluster {
    /// `ballista://127.0.0.1:PORT`, for `--engine`.
    pub engine: String,
    executors: Vec<(Node, PathBuf)>,
    // Last: the executors stop before their scheduler.
    _scheduler: Node,
}

impl Cluster {
    /// Starts a scheduler and `executors` executors that run one task at a time each (so that
    /// a stage of several partitions needs them all), and waits until every executor has
    /// registered.
    pub fn start(dir: &Path, executors: usize) -> Cluster {
        let port = free_port();
        let mut scheduler = Node::start(
            &["scheduler", "--port", &port.to_string()],
            dir.join("scheduler.log"),
        );
        scheduler.wait_for("listening on");
        let at = format!("127.0.0.1:{port}");
        let mut nodes = Vec::new();
        for i in 0..executors {
            let work = dir.join(format!("executor-{i}"));
            std::fs::create_dir(&work).unwrap();
            let (flight, grpc) = (free_port().to_string(), free_port().to_string());
            let mut args = vec!["executor", "--scheduler", &at, "--port", &flight];
            args.extend(["--grpc-port", &grpc, "--concurrent-tasks", "1"]);
            args.extend(["--work-dir", work.to_str().unwrap()]);
            let e = Node::start(&args, dir.join(format!("executor-{i}.log")));
            nodes.push((e, work));
        }
        for (e, _) in &mut nodes {
            e.wait_for("registration succeed");
        }
        Cluster {
            engine: format!("ballista://{at}"),
            executors: nodes,
            _scheduler: scheduler,
        }
    }

    /// Fails unless every executor wrote a task's results in its working directory.
    pub fn every_executor_ran_a_task(&self) {
        for (e, work) in &self.executors {
            let jobs = std::fs::read_dir(work).unwrap().count();
            assert!(
                jobs > 0,
                "the executor with {} ran no task:\n{}",
                work.display(),
                e.messages()
            );
        }
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

/// Fails unless every query of the guide (`top`'s among them), and one without `ORDER BY`,
/// gives on the dataset `data` at `engine` the rows the embedded engine gives.
pub fn same_answers(data: &Path, engine: &str) {
    let top = top_query();
    let mut queries = guide_queries();
    // Those on several machines' datasets are checked on them (`apart`).
    queries.retain(|(h, _)| h != crate::apart::FLEET_HEADING);
    assert!(queries.iter().any(|(_, q)| *q == top));
    queries.push((
        "instances by name".to_owned(),
        "SELECT name, COUNT(*) AS n, SUM(latency_ns) AS ns FROM instances GROUP BY name".to_owned(),
    ));
    for (heading, q) in &queries {
        let embedded = ok(&sql(data, "embedded", q));
        let cluster = ok(&sql(data, engine, q));
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
}
