//! `scalpel sql --engine ballista://…`: a Ballista scheduler and two executors started here
//! (`scalpel-ballista`, processes on 127.0.0.1) answer the guide's queries on the Parquet
//! dataset of a recording of three processes with the rows the embedded engine gives, `top`'s
//! table among them, and both executors run tasks; a cluster that is not there, a source that
//! is not a dataset and an engine that is not understood are refused clearly. (The same on
//! three machines: `tests/hosts.rs`.)

use std::process::Command;

use scalpel_e2e::cluster::{ok, same_answers, sql, Cluster};
use scalpel_e2e::score::infer_model;
use scalpel_e2e::{own_bin, record, scalpel};

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

    let cluster = Cluster::start(r.tmp.path(), 2);
    let engine = cluster.engine.clone();
    same_answers(&data, &engine);
    cluster.every_executor_ran_a_task();
    drop(cluster);

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
