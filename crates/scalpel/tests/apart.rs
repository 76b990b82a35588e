//! Two machines' graphs built apart, each from its own trace (`infer --stage graph
//! --parquet`, or `infer --stage graph` then `export --format parquet`), and the messages between them joined in SQL by the guide's
//! query on `peer_transfers` (`scalpel sql` on both datasets): the same edges between machines
//! as the graph of both traces built together.

#[allow(
    dead_code,
    reason = "the module serves several test binaries, each using a part"
)]
mod tracebuild;

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output};

use scalpel_graph::{build_graph_of, GraphOptions};
use scalpel_model::graph::{EdgeKind, Graph, PeerOp};
use scalpel_model::store::read_graph;
use tracebuild::talk::{talk, talk_between, Clock, CONN};

/// A leaf as both graphs name it: machine, thread, its first and last events in the file.
type LeafKey = (String, u32, u32, u32);

fn run(args: &[&OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_scalpel"))
        .args(args)
        .output()
        .unwrap()
}

fn ok(o: &Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn err(o: &Output) -> String {
    assert!(
        !o.status.success(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The guide's query for the messages between machines (the ```sql block under its heading).
fn messages_query() -> String {
    let guide = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/guide/tables.md");
    let text = std::fs::read_to_string(&guide).unwrap();
    let (_, after) = text
        .split_once("## Several machines, each written where its trace is")
        .expect("the guide's section on several machines");
    let (_, block) = after.split_once("```sql\n").expect("its query");
    block
        .split_once("```")
        .expect("the query's end")
        .0
        .to_owned()
}

/// How a machine's dataset is written.
#[derive(Clone, Copy, PartialEq)]
enum Written {
    /// By `infer --stage graph --parquet DIR`.
    ByInfer,
    /// By `infer --stage graph`, then `export --format parquet`.
    ByExport,
}

/// The graph of `trace` alone, and its tables as the dataset `data`.
fn apart(trace: &Path, data: &Path, how: Written) -> Graph {
    let graph_dir = data.with_extension("graph");
    let mut infer: Vec<&OsStr> = vec!["infer".as_ref(), trace.as_os_str()];
    infer.extend(["--stage", "graph", "-o"].map(OsStr::new));
    infer.push(graph_dir.as_os_str());
    if how == Written::ByInfer {
        infer.extend(["--parquet".as_ref(), data.as_os_str()]);
    }
    let said = ok(&run(&infer));
    if how == Written::ByExport {
        ok(&run(&[
            "export".as_ref(),
            graph_dir.as_os_str(),
            "--format".as_ref(),
            "parquet".as_ref(),
            "-o".as_ref(),
            data.as_os_str(),
        ]));
    } else {
        assert!(said.contains("wrote "), "{said}");
    }
    read_graph(&graph_dir.join("graph.json")).unwrap()
}

fn key(g: &Graph, host: &str, leaf: u32) -> LeafKey {
    let l = &g.leaves[leaf as usize];
    (
        host.to_owned(),
        g.threads[l.thread.index()].tid,
        l.start_event,
        l.end_event,
    )
}

/// The stream and connect edges between the machines of `g`.
fn crossing(g: &Graph) -> BTreeSet<(String, LeafKey, LeafKey)> {
    let host = |leaf: u32| {
        let t = g.leaves[leaf as usize].thread;
        let h = g.processes[g.threads[t.index()].process.index()].host;
        g.hosts[h.index()].host.clone()
    };
    let n = g.leaves.len() as u32;
    g.edges
        .iter()
        .filter(|e| e.from.get() < n && e.to.get() < n)
        .filter(|e| matches!(e.kind, EdgeKind::Stream | EdgeKind::Connect))
        .filter(|e| host(e.from.get()) != host(e.to.get()))
        .map(|e| {
            let kind = if e.kind == EdgeKind::Connect {
                "connect"
            } else {
                "stream"
            };
            let (f, t) = (e.from.get(), e.to.get());
            (kind.to_owned(), key(g, &host(f), f), key(g, &host(t), t))
        })
        .collect()
}

#[test]
fn messages_joined_from_graphs_built_apart_are_the_edges_of_one_graph() {
    let tmp = tempfile::tempdir().unwrap();
    let (da, db) = talk(tmp.path(), Clock::TRUE, Clock::TRUE, 2, CONN);
    let (sa, sb) = (tmp.path().join("data-a"), tmp.path().join("data-b"));
    let ga = apart(&da, &sa, Written::ByExport);
    let gb = apart(&db, &sb, Written::ByInfer);
    // A's halves: its connect, its 20 requests out, its 20 answers in; B's the other halves.
    let ops = |g: &Graph, op: PeerOp| g.peer_transfers.iter().filter(|p| p.op == op).count();
    assert_eq!(
        [PeerOp::Connect, PeerOp::Write, PeerOp::Read].map(|op| ops(&ga, op)),
        [1, 20, 20]
    );
    assert_eq!(
        [PeerOp::Accept, PeerOp::Write, PeerOp::Read].map(|op| ops(&gb, op)),
        [1, 20, 20]
    );
    let rows = ok(&run(&[
        "sql".as_ref(),
        sa.as_os_str(),
        sb.as_os_str(),
        "--format".as_ref(),
        "jsonl".as_ref(),
        messages_query().as_ref(),
    ]));
    // Each dataset of one machine is named by its directory.
    let graph_of = |h: &str| match h {
        "data-a" => (&ga, "a"),
        "data-b" => (&gb, "b"),
        other => panic!("machine {other}"),
    };
    let joined: Vec<(String, LeafKey, LeafKey)> = rows
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let end = |host: &str, leaf: &str| {
                let (g, name) = graph_of(v[host].as_str().unwrap());
                key(g, name, v[leaf].as_u64().unwrap() as u32)
            };
            let kind = v["kind"].as_str().unwrap().to_owned();
            (
                kind,
                end("from_host", "from_leaf"),
                end("to_host", "to_leaf"),
            )
        })
        .collect();
    let both = build_graph_of(&[da, db], &GraphOptions::default()).unwrap();
    let want = crossing(&both.graph);
    assert_eq!(want.len(), 1 + 2 * 20, "{want:?}");
    let got: BTreeSet<_> = joined.iter().cloned().collect();
    assert_eq!(got.len(), joined.len(), "a message twice: {rows}");
    assert_eq!(got, want);
    // In the graph of both, no transfer is left with a peer outside.
    assert!(both.graph.peer_transfers.is_empty());
}

#[test]
fn a_connection_on_loopback_has_no_peer_on_another_machine() {
    let tmp = tempfile::tempdir().unwrap();
    let ends = ("127.0.0.1:40000", "127.0.0.1:80");
    let (da, _) = talk_between(tmp.path(), (Clock::TRUE, Clock::TRUE), 1, CONN, ends);
    let g = apart(&da, &tmp.path().join("data-a"), Written::ByInfer);
    assert!(g.peer_transfers.is_empty(), "{:?}", g.peer_transfers);
    assert!(g.unmatched.external_bytes_out > 0);
}

#[test]
fn datasets_that_cannot_be_one_fleet_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let (da, db) = talk(tmp.path(), Clock::TRUE, Clock::TRUE, 1, CONN);
    let one = tmp.path().join("one").join("m");
    let two = tmp.path().join("two").join("m");
    std::fs::create_dir_all(one.parent().unwrap()).unwrap();
    std::fs::create_dir_all(two.parent().unwrap()).unwrap();
    apart(&da, &one, Written::ByInfer);
    apart(&db, &two, Written::ByInfer);
    let q = "SELECT COUNT(*) FROM leaves";
    // Both named `m` by their directories.
    let e = err(&run(&[
        "sql".as_ref(),
        one.as_os_str(),
        two.as_os_str(),
        q.as_ref(),
    ]));
    assert!(
        e.contains("each machine's dataset must have a name of its own"),
        "{e}"
    );
    // A dataset of two machines is a fleet already.
    let merged = tmp.path().join("merged");
    ok(&run(&[
        "export".as_ref(),
        da.as_os_str(),
        db.as_os_str(),
        "--format".as_ref(),
        "parquet".as_ref(),
        "-o".as_ref(),
        merged.as_os_str(),
    ]));
    let e = err(&run(&[
        "sql".as_ref(),
        merged.as_os_str(),
        one.as_os_str(),
        q.as_ref(),
    ]));
    assert!(e.contains("holds the tables of 2 machines (a, b)"), "{e}");
    // A dataset and a trace.
    let e = err(&run(&[
        "sql".as_ref(),
        one.as_os_str(),
        da.as_os_str(),
        q.as_ref(),
    ]));
    assert!(e.contains("is a dataset and"), "{e}");
    // Alone, each still answers.
    assert!(!ok(&run(&["sql".as_ref(), merged.as_os_str(), q.as_ref()])).is_empty());
}
