//! Traces of several machines, written call by call (`tracebuild`) so that their clocks are
//! known exactly: offsets of days, drifts of ±50 ppm, machines that share no connection, clocks
//! that contradict their messages, a directory given twice or two of one machine.

#[allow(
    dead_code,
    reason = "the module serves several test binaries, each using a part"
)]
mod tracebuild;

use std::path::{Path, PathBuf};

use scalpel_graph::{build_graph_of, Built, GraphError, GraphOptions, GraphWarning};
use scalpel_model::format::{ChanKind, Op};
use scalpel_model::graph::{ClockGrade, EdgeKind};
use scalpel_model::read::{Endpoint, Identity};
use tracebuild::talk::{
    host_file, stream, talk, transfer, Clock, A_ADDR, B_ADDR, CONN, TO_A, TO_B,
};
use tracebuild::{edges, write, Call, Thread};

fn build(dirs: &[&Path]) -> Result<Built, GraphError> {
    let dirs: Vec<PathBuf> = dirs.iter().map(|d| d.to_path_buf()).collect();
    build_graph_of(&dirs, &GraphOptions::default())
}

#[test]
fn an_offset_of_days_and_a_drift_of_50_ppm_are_found() {
    for ppm in [50.0, -50.0] {
        let tmp = tempfile::tempdir().unwrap();
        let a = Clock::TRUE;
        // Two days ahead.
        let b = Clock {
            ahead_ns: 172_800_000_000_000,
            ppm,
        };
        let (da, db) = talk(tmp.path(), a, b, 120, CONN);
        let built = build(&[&da, &db]).unwrap();
        let g = &built.graph;
        assert!(built.warnings.is_empty(), "{:?}", built.warnings);
        let h = &g.hosts[1].clock;
        // B's times map to A's as t_a = (t_b - ahead) / (1 + ppm): at B's start, and
        // -ppm / (1 + ppm) per unit of B's time after it.
        let start_b = g.hosts[1].start_ns;
        let truth = ((start_b as f64 - b.ahead_ns as f64) / (1.0 + ppm * 1e-6)) - start_b as f64;
        let drift_truth_ppb = (1.0 / (1.0 + ppm * 1e-6) - 1.0) * 1e9;
        let err = h.offset_ns as f64 - truth;
        eprintln!(
            "ppm {ppm}: offset error {err:.0} ns (bound {:?}), drift {} ppb against {drift_truth_ppb:.0}",
            h.bound_ns, h.drift_ppb
        );
        assert!(err.abs() <= h.bound_ns.unwrap() as f64 + 1.0, "{h:?}");
        assert!(
            (h.drift_ppb as f64 - drift_truth_ppb).abs() <= 2_000.0,
            "{h:?}"
        );
        // The truth is within the drift's bound, which 120 s of messages keep small.
        let drift_bound = h.drift_bound_ppb.unwrap() as f64;
        assert!(
            (h.drift_ppb as f64 - drift_truth_ppb).abs() <= drift_bound + 1.0,
            "{h:?}"
        );
        assert!(drift_bound <= 2_000.0, "{h:?}");
        assert_eq!(h.grade, ClockGrade::Accurate);
        assert_eq!(h.pairs, 2 * 1200);
        // Each machine's address is the end it wrote from.
        let ip = |s: &str| s.parse::<std::net::IpAddr>().unwrap();
        assert_eq!(g.hosts[0].addresses, [ip("10.0.0.1")]);
        assert_eq!(g.hosts[1].addresses, [ip("10.0.0.2")]);
        // Every request and answer is an edge between the machines, none external.
        assert_eq!(edges(g, EdgeKind::Stream).len(), 2 * 1200);
        assert_eq!(g.unmatched.external_bytes_in, 0);
        // On the aligned clocks, every read ends after its write began.
        for e in g.edges.iter().filter(|e| e.kind == EdgeKind::Stream) {
            let (from, to) = (g.leaf_of(e.from).unwrap(), g.leaf_of(e.to).unwrap());
            assert!(g.leaf(from).end_ns <= g.leaf(to).start_ns, "{e:?}");
        }
    }
}

#[test]
fn one_machine_given_alone_is_read_as_before() {
    let tmp = tempfile::tempdir().unwrap();
    let same = Clock::TRUE;
    let (da, _) = talk(tmp.path(), same, same, 2, CONN);
    let alone = build(&[&da]).unwrap();
    assert!(alone.graph.hosts.is_empty());
    // Its connection's answers come from outside the trace.
    assert_eq!(alone.graph.unmatched.external_bytes_in, 20 * 64);
}

#[test]
fn a_directory_given_twice_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let c = Clock::TRUE;
    let (da, db) = talk(tmp.path(), c, c, 1, CONN);
    let again = tmp.path().join(".").join("a");
    let e = build(&[&da, &db, &again]).unwrap_err();
    assert!(matches!(e, GraphError::GivenTwice { .. }), "{e}");
    assert!(e.to_string().contains("given twice"), "{e}");
}

#[test]
fn two_directories_of_one_machine_are_one_machine_on_one_clock() {
    let tmp = tempfile::tempdir().unwrap();
    let c = Clock::TRUE;
    let (da, db) = talk(tmp.path(), c, c, 1, CONN);
    host_file(&db, "a", 0);
    let built = build(&[&da, &db]).unwrap();
    assert!(
        built
            .warnings
            .iter()
            .any(|w| matches!(w, GraphWarning::OneMachine { .. })),
        "{:?}",
        built.warnings
    );
    assert_eq!(built.graph.hosts.len(), 1);
    assert_eq!(edges(&built.graph, EdgeKind::Stream).len(), 20);
}

#[test]
fn a_machine_nobody_talks_to_keeps_its_wall_clock() {
    let tmp = tempfile::tempdir().unwrap();
    let c = Clock::TRUE;
    let (da, _) = talk(tmp.path(), c, c, 1, CONN);
    let other = tempfile::tempdir().unwrap();
    let ahead = Clock {
        ahead_ns: 5_000_000_000,
        ppm: 0.0,
    };
    // Another recording: another connection.
    let (_, lone) = talk(other.path(), c, ahead, 1, CONN + 0x100);
    host_file(&lone, "lone", 7);
    let built = build(&[&da, &lone]).unwrap();
    let h = &built.graph.hosts[1];
    assert_eq!(h.clock.grade, ClockGrade::WallClock, "{h:?}");
    assert_eq!(h.clock.bound_ns, None);
    // Both wall clocks read the same: its monotonic clock is 5 s ahead.
    assert_eq!(h.clock.offset_ns, -5_000_000_000);
    assert!(
        built
            .warnings
            .iter()
            .any(|w| matches!(w, GraphWarning::Unaligned { .. })),
        "{:?}",
        built.warnings
    );
}

#[test]
fn messages_that_contradict_each_other_are_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let c = Clock::TRUE;
    let (da, db) = talk(tmp.path(), c, c, 1, CONN);
    // B's clock jumps 1 ms back halfway through: no offset fits both halves.
    let mut server = Thread::new(200, 200);
    let t0 = 10_000_000_000u64;
    server.call(Call {
        aux: Some(CONN),
        ..Call::new(t0 + 10_000, 1_000, Op::Accept)
    });
    for i in 0..10u64 {
        let t = t0 + 1_000_000 + i * 100_000_000 - if i >= 5 { 1_000_000 } else { 0 };
        let off = i * 64;
        let to_b = stream(CONN, CONN + TO_B, A_ADDR, B_ADDR);
        let to_a = stream(CONN, CONN + TO_A, B_ADDR, A_ADDR);
        server.call(transfer(t + 19_000, 1_000, Op::Read, to_b, off, 64));
        server.call(transfer(t + 70_000, 2_000, Op::Write, to_a, off, 64));
    }
    std::fs::remove_dir_all(&db).unwrap();
    write(&db, vec![server]);
    host_file(&db, "b", 0);
    let built = build(&[&da, &db]).unwrap();
    let crossed: Vec<_> = built
        .warnings
        .iter()
        .filter(|w| matches!(w, GraphWarning::ClocksCross { .. }))
        .collect();
    assert_eq!(crossed.len(), 1, "{:?}", built.warnings);
    assert!(
        crossed[0].to_string().contains("contradict"),
        "{}",
        crossed[0]
    );
    assert_eq!(built.graph.hosts[1].clock.grade, ClockGrade::Fail);
}

/// The command line: every command that takes a trace takes several, and says what is wrong
/// with a model among them or a directory given twice.
#[test]
fn the_commands_take_the_directories_of_several_machines() {
    let tmp = tempfile::tempdir().unwrap();
    let c = Clock::TRUE;
    let (da, db) = talk(tmp.path(), c, c, 1, CONN);
    let run = |args: &[&std::ffi::OsStr]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_scalpel"))
            .args(args)
            .output()
            .unwrap()
    };
    let (a, b) = (da.as_os_str(), db.as_os_str());
    let o = run(&[
        "export".as_ref(),
        a,
        b,
        "--table".as_ref(),
        "hosts".as_ref(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows: Vec<serde_json::Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 2);
    assert_eq!(
        (rows[0]["host"].as_str(), rows[1]["host"].as_str()),
        (Some("a"), Some("b"))
    );
    assert_eq!(rows[0]["reference"], true);
    let model = tmp.path().join("m");
    let o = run(&["infer".as_ref(), a, b, "-o".as_ref(), model.as_os_str()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let summary = String::from_utf8_lossy(&o.stdout);
    assert!(
        summary.contains("2 machines, 1 connection between them"),
        "{summary}"
    );
    let o = run(&["top".as_ref(), model.as_os_str(), b]);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("not a trace directory"), "{e}");
    let o = run(&["infer".as_ref(), a, b, a]);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("given twice"), "{e}");
}

/// A pipe is a machine's own: one machine's reader of a pipe and another's writer of a pipe with
/// the same key (one inode number, one pid, the same offsets) are two pipes, and the read's
/// bytes come from outside the trace.
#[test]
fn a_pipe_with_the_same_key_on_two_machines_stays_on_each() {
    let tmp = tempfile::tempdir().unwrap();
    let pipe = |key: u64| Identity::Stream {
        chan: ChanKind::Pipe.code(),
        channel_key: key,
        sender: Endpoint::Inode { dev: 1, ino: key },
        receiver: Endpoint::Inode { dev: 1, ino: key },
    };
    let (da, db) = (tmp.path().join("a"), tmp.path().join("b"));
    let mut reader = Thread::new(10, 11);
    reader.call(transfer(500, 2_000, Op::Read, (0x77, pipe(0x77)), 0, 8));
    write(&da, vec![reader]);
    host_file(&da, "a", 0);
    let mut writer = Thread::new(10, 10);
    writer.call(transfer(1_000, 100, Op::Write, (0x77, pipe(0x77)), 0, 8));
    write(&db, vec![writer]);
    host_file(&db, "b", 0);
    let built = build(&[&da, &db]).unwrap();
    assert!(edges(&built.graph, EdgeKind::Stream).is_empty());
    assert_eq!(built.graph.unmatched.external_bytes_in, 8);
    // The same two files as one machine's trace: one pipe, one edge.
    let one = tmp.path().join("one");
    std::fs::create_dir_all(&one).unwrap();
    let mut reader = Thread::new(10, 11);
    reader.call(transfer(500, 2_000, Op::Read, (0x77, pipe(0x77)), 0, 8));
    let mut writer = Thread::new(10, 10);
    writer.call(transfer(1_000, 100, Op::Write, (0x77, pipe(0x77)), 0, 8));
    write(&one, vec![writer, reader]);
    assert_eq!(
        edges(&build(&[&one]).unwrap().graph, EdgeKind::Stream).len(),
        1
    );
}
