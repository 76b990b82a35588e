//! The tables of a small graph and its model: rows as the graph's own tables, instances as the
//! rollup's, parts by window, a dataset that refuses a directory it did not write, and a
//! dataset of a trace's windows.

use scalpel_mine::{mine, MineOptions};
use scalpel_model::graph::{EdgeKind, Graph};
use scalpel_model::progress::Quiet;
use scalpel_model::task::Model;
use scalpel_model::testgraph::GraphBuilder;

use crate::{
    build_tables, read_manifest, write_dataset, DatasetWriter, TableName, TableSource, TablesError,
};

/// Two threads: one writes and the other reads, 20 times, 10 ms apart.
fn graph_and_model() -> (Graph, Model) {
    graph_and_model_at(0)
}

/// The same, from `start_ns` on.
fn graph_and_model_at(start_ns: u64) -> (Graph, Model) {
    let mut b = GraphBuilder::new();
    let (read, write) = (b.leaf_type("read", None), b.leaf_type("write", None));
    let (a, z) = (b.thread("a"), b.thread("z"));
    for i in 0..20u64 {
        let t = start_ns + 10_000_000 * i;
        let w = b.leaf(a, write, t, t + 5);
        let r = b.leaf(z, read, t + 10, t + 20);
        b.edge(w, r, EdgeKind::Stream);
    }
    b.program_order(|_, _| Some(EdgeKind::Program));
    let graph = b.build();
    let model = mine(&graph, "graph.json", &MineOptions::default(), &Quiet).model;
    (graph, model)
}

fn rows(t: &crate::Tables, name: TableName) -> usize {
    t.tables
        .iter()
        .find(|x| x.name == name)
        .map_or(0, |x| x.batch.num_rows())
}

#[test]
fn rows_are_the_graphs_and_instances_the_rollups() {
    let (g, m) = graph_and_model();
    let t = build_tables(&g, Some(&m), 50_000_000).unwrap();
    assert_eq!(rows(&t, TableName::Leaves), g.leaves.len());
    assert_eq!(rows(&t, TableName::Edges), g.edges.len());
    assert_eq!(rows(&t, TableName::TaskTypes), m.types.len());
    let occurrences: usize = m.types.iter().map(|t| t.occurrences.len()).sum();
    assert!(occurrences > 0);
    assert_eq!(rows(&t, TableName::Instances), g.leaves.len() + occurrences);
    assert_eq!(rows(&t, TableName::Hosts), 1);
    assert_eq!(t.hosts, ["local"]);
    // 200 ms of leaves in windows of 50 ms: four parts of leaves.
    let leaves = t
        .tables
        .iter()
        .find(|x| x.name == TableName::Leaves)
        .unwrap();
    let parts = leaves.partitions().unwrap();
    assert_eq!(parts.len(), 4);
    assert_eq!(
        parts.iter().map(|(_, b)| b.num_rows()).sum::<usize>(),
        g.leaves.len()
    );
    // Without a model, no model tables and no parents.
    let t = build_tables(&g, None, 50_000_000).unwrap();
    assert!(t.tables.iter().all(|x| !x.name.needs_model()));
    let err = TableSource::new(&g, None, 1)
        .build(TableName::Instances)
        .unwrap_err();
    assert!(matches!(err, TablesError::NoModel("instances")), "{err}");
}

#[test]
fn a_dataset_replaces_its_own_and_refuses_a_users_directory() {
    let (g, m) = graph_and_model();
    let t = || TableSource::new(&g, Some(&m), 50_000_000);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("tables");
    let first = write_dataset(&dir, t()).unwrap();
    assert!(dir
        .join("leaves/host=local/time_window=3/part-0.parquet")
        .is_file());
    assert!(dir.join("task_types/part-0.parquet").is_file());
    assert_eq!(read_manifest(&dir).unwrap(), first);
    // Written again: the same manifest, no file left from before.
    let again = write_dataset(&dir, TableSource::new(&g, Some(&m), 100_000_000)).unwrap();
    assert!(!dir.join("leaves/host=local/time_window=3").exists());
    assert_eq!(again.tables.len(), first.tables.len());

    let mine = tmp.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    std::fs::write(mine.join("a.txt"), "x").unwrap();
    let err = write_dataset(&mine, t()).unwrap_err();
    assert!(matches!(err, TablesError::NotADataset { .. }), "{err}");
    assert_eq!(std::fs::read_dir(&mine).unwrap().count(), 1);

    std::fs::write(dir.join("scalpel-tables.json"), "{\"schema\": 3").unwrap();
    let err = read_manifest(&dir).unwrap_err().to_string();
    assert!(
        err.contains("scalpel-tables.json") && err.contains("line 1"),
        "{err}"
    );
}

#[test]
fn a_traces_windows_are_one_dataset_with_time_windows_from_the_first() {
    let (g0, m0) = graph_and_model();
    // The second window begins where the first ends, 200 ms in.
    let (g1, m1) = graph_and_model_at(200_000_000);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("tables");
    let mut w = DatasetWriter::create(&dir, 50_000_000, true).unwrap();
    w.add(TableSource::new(&g0, Some(&m0), 50_000_000)).unwrap();
    w.add(TableSource::new(&g1, Some(&m1), 50_000_000)).unwrap();
    let m = w.finish().unwrap();
    assert_eq!(m.infer_windows, 2);
    assert_eq!(read_manifest(&dir).unwrap(), m);
    let leaves = m.tables.iter().find(|t| t.name == "leaves").unwrap();
    assert_eq!(leaves.rows, (g0.leaves.len() + g1.leaves.len()) as u64);
    assert_eq!(leaves.files, 8);
    // Four time windows each, counted from the first window's first leaf.
    for (k, tw) in [(0, 0), (0, 3), (1, 4), (1, 7)] {
        let part = format!("leaves/infer_window={k}/host=local/time_window={tw}/part-0.parquet");
        assert!(dir.join(&part).is_file(), "{part}");
    }
    assert!(dir
        .join("task_types/infer_window=1/part-0.parquet")
        .is_file());
    assert!(!dir
        .join("leaves/infer_window=1/host=local/time_window=0")
        .exists());

    // A dataset of one model takes one.
    let one = tmp.path().join("one");
    let mut w = DatasetWriter::create(&one, 50_000_000, false).unwrap();
    w.add(TableSource::new(&g0, Some(&m0), 50_000_000)).unwrap();
    let err = w
        .add(TableSource::new(&g1, Some(&m1), 50_000_000))
        .unwrap_err();
    assert!(matches!(err, TablesError::OneModel), "{err}");
    // Unfinished, it is refused as incomplete, and the next export replaces it.
    drop(w);
    let err = read_manifest(&one).unwrap_err();
    assert!(matches!(err, TablesError::Incomplete { .. }), "{err}");
    write_dataset(&one, TableSource::new(&g1, Some(&m1), 50_000_000)).unwrap();
    assert!(read_manifest(&one).unwrap().complete);
}
