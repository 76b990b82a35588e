//! Valid recordings at the extremes: the analysis must neither crash nor recurse as deep as its
//! input, and must still use everything in them.

use scalpel_e2e::score::infer_model;
use scalpel_e2e::*;
use std::process::Command;

/// 20,000 one-byte writes read 4 KiB at a time: `infer` and `top` finish, and every read's
/// bytes come from the writer. A recursive strongly-connected-components pass overflowed the
/// stack on this graph's long paths (infer and top aborted: at 20,000 writes in the debug build
/// the tests use, at 100,000 in a release build). The drawing is kept to one level: its time on
/// such graphs is another matter (issue 24).
#[test]
fn a_pipe_written_a_byte_at_a_time_is_inferred() {
    let exe = build_c("bytestorm", "bytestorm", &[]);
    let run = record(&exe, &["20000"]).success();
    assert!(
        run.stdout().contains("read 20000 bytes"),
        "{}",
        run.stdout()
    );
    let out = run.tmp.path().join("model");
    let (model, graph) = infer_model(&run.dir, &out, &["--depth", "1"]);
    assert_eq!(model.leaves as usize, graph.leaves.len());
    let writes = graph
        .leaves
        .iter()
        .filter(|l| l.end_op.and_then(|o| o.op()) == Some(Op::Write))
        .count();
    assert!(writes >= 20_000, "{writes} leaves end at a write");
    assert_eq!(
        graph.unmatched.external_bytes_in, 0,
        "every byte read was written"
    );
    let o = Command::new(scalpel())
        .arg("top")
        .arg(&run.dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}
