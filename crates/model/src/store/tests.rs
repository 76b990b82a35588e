//! Round trips of the stored graph and model, and the errors for files that do not fit.

use std::path::Path;

use proptest::prelude::*;

use super::*;
use crate::graph::{
    Edge, EdgeKind, InnerWait, Leaf, LeafId, LeafTypeId, NodeId, ObjId, OpName, ThreadId,
};
use crate::task::{ChildRef, Occurrence, TaskKind, TaskTypeId};

fn leaf(thread: u32, start: u64, end: u64) -> Leaf {
    let mut l = Leaf::new(
        ThreadId::new(thread),
        LeafTypeId::new(thread % 3),
        start,
        end,
    );
    l.block_ns = end / 7;
    l.start_event = u32::try_from(start % 1000).unwrap();
    l.end_event = l.start_event + 3;
    l
}

fn graph() -> Graph {
    let mut leaves = vec![
        leaf(0, 1_700_000_000_000_000, 1_700_000_000_000_900),
        leaf(0, 1_700_000_000_001_000, 1_700_000_000_001_000),
        // Out of order and ending before it starts: stored exactly all the same.
        leaf(1, 5, 3),
        leaf(1, u64::MAX, 0),
    ];
    leaves[0].start_op = Some(OpName::from_code(3));
    leaves[0].end_op = Some(OpName::from_code(250)); // a code this reader does not know
    leaves[0].end_obj = Some(ObjId::new(7));
    leaves[1].bytes_in = u64::MAX;
    leaves[2].start_event = u32::MAX;
    leaves[2].end_event = 0;
    let edges = vec![
        Edge {
            from: NodeId::new(0),
            to: NodeId::new(1),
            kind: EdgeKind::Program,
            obj: None,
        },
        Edge {
            from: NodeId::new(3),
            to: NodeId::new(2),
            kind: EdgeKind::Fork,
            obj: Some(ObjId::new(0)),
        },
    ];
    let mut g = Graph::new(Vec::new(), Vec::new(), leaves, edges);
    g.leaf_cpu_ns = vec![Some(1), None, Some(u64::MAX), None];
    g.leaf_files = vec![LeafFile {
        leaf: LeafId::new(2),
        bytes_in: 9,
        bytes_out: 0,
    }];
    g.inner_waits = vec![InnerWait {
        leaf: LeafId::new(0),
        op: OpName::from_code(5),
        obj: None,
        at_ns: 12,
        ns: 3,
        site: crate::graph::SiteId::new(0),
    }];
    g.sample_period_ns = 1_000_000;
    g
}

fn model() -> Model {
    let occ = |leaves: Vec<u32>, parent| Occurrence {
        leaves: leaves.into_iter().map(LeafId::new).collect(),
        parent,
        iterations: None,
        variant: None,
    };
    let group = TaskType {
        name: "a → b".to_owned(),
        kind: TaskKind::Group,
        level: 1,
        leaf_type: None,
        count: 2,
        top_level: 2,
        children: vec![ChildRef {
            ty: TaskTypeId::new(0),
            count: 4,
        }],
        edges: Vec::new(),
        variants: Vec::new(),
        occurrences: vec![occ(vec![0, 1], None), occ(vec![3, 2, u32::MAX], None)],
    };
    let leaf_type = TaskType {
        name: "a".to_owned(),
        kind: TaskKind::Leaf,
        level: 0,
        leaf_type: Some(LeafTypeId::new(0)),
        count: 4,
        top_level: 0,
        children: Vec::new(),
        edges: Vec::new(),
        variants: Vec::new(),
        occurrences: Vec::new(),
    };
    let parent = Some(OccRef {
        ty: TaskTypeId::new(1),
        index: 0,
    });
    Model {
        schema: MODEL_SCHEMA.to_owned(),
        graph: "graph.json".to_owned(),
        leaves: 4,
        mining: MiningInfo {
            min_support: 2,
            rounds: 1,
            rules: 1,
            cycle_edges_dropped: 0,
        },
        types: vec![leaf_type, group],
        top_edges: Vec::new(),
        leaf_parent: vec![parent, parent, None, None],
    }
}

fn write(dir: &Path, json: &str, bin: &str, (j, b): (Vec<u8>, Vec<u8>)) {
    std::fs::write(dir.join(json), j).unwrap();
    std::fs::write(dir.join(bin), b).unwrap();
}

#[test]
fn graph_and_model_round_trip_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let (g, m) = (graph(), model());
    write(
        dir.path(),
        "graph.json",
        GRAPH_TABLES,
        encode_graph(&g).unwrap(),
    );
    write(
        dir.path(),
        "model.json",
        MODEL_TABLES,
        encode_model(&m).unwrap(),
    );
    assert_eq!(read_graph(&dir.path().join("graph.json")).unwrap(), g);
    assert_eq!(read_model(&dir.path().join("model.json")).unwrap(), m);
    // The JSON files hold no bulk table.
    let text = std::fs::read_to_string(dir.path().join("model.json")).unwrap();
    assert!(!text.contains("\"occurrences\":[") && !text.contains("\"leaf_parent\":["));
    assert!(text.contains("\"occurrences\":2"), "row counts: {text}");
}

#[test]
fn transfers_with_peers_are_a_last_table_only_when_there_are_some() {
    let dir = tempfile::tempdir().unwrap();
    let plain = graph();
    let (_, plain_bin) = encode_graph(&plain).unwrap();
    let mut g = graph();
    g.peer_transfers = vec![crate::graph::PeerTransfer {
        leaf: LeafId::new(1),
        obj: Some(ObjId::new(0)),
        op: crate::graph::PeerOp::Write,
        connection: u64::MAX,
        offset: 1 << 40,
        len: 17,
    }];
    let mut connect = g.peer_transfers[0];
    connect.obj = None;
    connect.op = crate::graph::PeerOp::Connect;
    g.peer_transfers.push(connect);
    let (json, bin) = encode_graph(&g).unwrap();
    assert!(bin.starts_with(&plain_bin) && bin.len() > plain_bin.len());
    write(dir.path(), "graph.json", GRAPH_TABLES, (json, bin));
    assert_eq!(read_graph(&dir.path().join("graph.json")).unwrap(), g);
}

#[test]
fn complete_documents_are_read_too() {
    let dir = tempfile::tempdir().unwrap();
    let (g, m) = (graph(), model());
    std::fs::write(dir.path().join("g.json"), serde_json::to_vec(&g).unwrap()).unwrap();
    std::fs::write(dir.path().join("m.json"), serde_json::to_vec(&m).unwrap()).unwrap();
    assert_eq!(read_graph(&dir.path().join("g.json")).unwrap(), g);
    assert_eq!(read_model(&dir.path().join("m.json")).unwrap(), m);
}

/// Rewrites the JSON file's length and checksum to fit `bin`, as a tool that damaged the binary
/// file on purpose would, so that the decoder itself meets the damage.
fn refit(dir: &Path, bin: &[u8]) {
    let path = dir.join("graph.json");
    let mut head: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    head["tables"]["bytes"] = bin.len().into();
    head["tables"]["fnv1a"] = fnv1a(bin).into();
    std::fs::write(path, serde_json::to_vec(&head).unwrap()).unwrap();
    std::fs::write(dir.join(GRAPH_TABLES), bin).unwrap();
}

#[test]
fn damaged_or_foreign_tables_are_refused_with_file_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("graph.json");
    let (json, bin) = encode_graph(&graph()).unwrap();
    write(
        dir.path(),
        "graph.json",
        GRAPH_TABLES,
        (json.clone(), bin.clone()),
    );

    // Another run's binary file, or a truncated one: the JSON file's length and sum differ.
    std::fs::write(dir.path().join(GRAPH_TABLES), &bin[..bin.len() - 1]).unwrap();
    let err = read_graph(&path).unwrap_err().to_string();
    assert!(
        err.contains("graph.bin does not belong to") && err.contains("bytes"),
        "{err}"
    );
    let mut other = bin.clone();
    other[20] ^= 1;
    std::fs::write(dir.path().join(GRAPH_TABLES), &other).unwrap();
    let err = read_graph(&path).unwrap_err().to_string();
    assert!(err.contains("checksum"), "{err}");

    // Damage the decoder meets: a cut table, bytes left over, a table out of place.
    refit(dir.path(), &bin[..bin.len() - 3]);
    let err = read_graph(&path).unwrap_err().to_string();
    assert!(
        err.contains("graph.bin at offset") && err.contains("table"),
        "{err}"
    );
    let mut longer = bin.clone();
    longer.push(0);
    refit(dir.path(), &longer);
    let err = read_graph(&path).unwrap_err().to_string();
    assert!(
        err.contains(&format!("offset {}", bin.len())) && err.contains("end of the file"),
        "{err}"
    );
    let mut renamed = bin.clone();
    renamed[9] = b'x'; // the first table's name, "leaves", after magic and its length byte
    refit(dir.path(), &renamed);
    let err = read_graph(&path).unwrap_err().to_string();
    assert!(
        err.contains("offset 8") && err.contains("\"xeaves\""),
        "{err}"
    );
    let mut magic = bin.clone();
    magic[0] = b'X';
    refit(dir.path(), &magic);
    let err = read_graph(&path).unwrap_err().to_string();
    assert!(err.contains("offset 0") && err.contains("magic"), "{err}");

    // A row count that differs from the JSON file's.
    std::fs::write(dir.path().join(GRAPH_TABLES), &bin).unwrap();
    let mut head: serde_json::Value = serde_json::from_slice(&json).unwrap();
    head["tables"]["rows"]["edges"] = 3.into();
    std::fs::write(&path, serde_json::to_vec(&head).unwrap()).unwrap();
    let err = read_graph(&path).unwrap_err().to_string();
    assert!(
        err.contains("table edges") && err.contains("2 rows"),
        "{err}"
    );

    // A schema nobody wrote, and a missing binary file.
    std::fs::write(&path, br#"{"schema":"scalpel-graph/9"}"#).unwrap();
    let err = read_graph(&path).unwrap_err().to_string();
    assert!(
        err.contains("scalpel-graph/9") && err.contains(GRAPH_FILE_SCHEMA),
        "{err}"
    );
    std::fs::write(&path, &json).unwrap();
    std::fs::remove_file(dir.path().join(GRAPH_TABLES)).unwrap();
    let err = read_graph(&path).unwrap_err().to_string();
    assert!(
        err.contains("cannot read") && err.contains("graph.bin"),
        "{err}"
    );
}

#[test]
fn a_claimed_length_beyond_the_file_reserves_nothing() {
    // A table claiming 2^60 rows in a few bytes fails on the bytes, without reserving for the
    // rows it claims.
    let dir = tempfile::tempdir().unwrap();
    let (json, bin) = encode_graph(&graph()).unwrap();
    write(dir.path(), "graph.json", GRAPH_TABLES, (json, bin));
    let mut bin = MAGIC.to_vec();
    bin.extend(postcard::to_stdvec("leaves").unwrap());
    bin.extend(postcard::to_stdvec(&(1u64 << 60)).unwrap());
    refit(dir.path(), &bin);
    let err = read_graph(&dir.path().join("graph.json"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("offset 15") && err.contains("rows of table leaves"),
        "{err}"
    );
}

proptest! {
    #[test]
    fn any_leaves_round_trip(rows in proptest::collection::vec(
        (0u32..4, any::<u64>(), any::<u64>(), any::<u32>(), any::<u32>(), any::<Option<u8>>()),
        0..40,
    )) {
        let leaves: Vec<Leaf> = rows
            .iter()
            .map(|&(t, s, e, se, ee, op)| {
                let mut l = leaf(t, s, e);
                l.start_event = se;
                l.end_event = ee;
                l.end_op = op.map(OpName::from_code);
                l
            })
            .collect();
        let g = Graph::new(Vec::new(), Vec::new(), leaves, Vec::new());
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "graph.json", GRAPH_TABLES, encode_graph(&g).unwrap());
        prop_assert_eq!(read_graph(&dir.path().join("graph.json")).unwrap(), g);
    }
}
