//! Valid recordings at the extremes: the analysis must neither crash nor recurse as deep as its
//! input, and must still use everything in them.

use scalpel_e2e::score::infer_model;
use scalpel_e2e::*;
use scalpel_model::graph::Leaf;
use scalpel_model::task::TaskKind;
use std::fs;
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

/// A writer that runs ahead of its reader: a pause after every 300 reads lets one read take
/// about a thousand one-byte writes. Those writes are one loop of writes feeding the read, found
/// in a few rounds. The miner dropped such a run whole (its writes feed different reads), and
/// pair contraction then grew each long stretch by one write per round: about 1,000 rounds and
/// 1,000 nested types, minutes for 25,000 leaves, and thousands of writes left unclustered.
#[test]
fn writes_that_run_ahead_of_their_reader_are_one_loop() {
    let exe = build_c("bytestorm", "bytestorm", &[]);
    let run = record(&exe, &["20000", "300"]).success();
    let out = run.tmp.path().join("model");
    let (model, graph) = infer_model(&run.dir, &out, &["--depth", "1"]);
    let is_write = |l: &Leaf| l.end_op.and_then(|o| o.op()) == Some(Op::Write);
    let writes = graph.leaves.iter().filter(|l| is_write(l)).count();
    let mut looped: std::collections::HashSet<u32> = std::collections::HashSet::new();
    for t in model.types.iter().filter(|t| t.kind == TaskKind::Loop) {
        for o in &t.occurrences {
            looped.extend(
                o.leaves
                    .iter()
                    .map(|l| l.get())
                    .filter(|&l| is_write(&graph.leaves[l as usize])),
            );
        }
    }
    assert!(
        looped.len() * 100 >= writes * 99,
        "{} of {writes} writes lie in loops",
        looped.len()
    );
    let longest = model
        .types
        .iter()
        .flat_map(|t| &t.occurrences)
        .filter_map(|o| o.iterations)
        .max();
    assert!(longest >= Some(100), "longest loop: {longest:?} iterations");
    assert!(
        model.mining.rounds <= 20,
        "{} mining rounds, {} types",
        model.mining.rounds,
        model.types.len()
    );
}

/// Structure-aware mutants of a real recording (bit flips, cuts, extreme header fields and
/// record lengths, dropped, repeated and swapped records, a dropped event with its LOST record,
/// removed and copied files): `dump`, `summary` and `infer` each end with a result or a clear
/// error, never a panic, a signal, or more than 2 GiB. `.ci/run` runs 5,000 of them on release
/// builds (`mutate-traces`); this is the quick share of the test command.
#[test]
fn mutants_of_a_real_trace_end_clearly() {
    use scalpel_e2e::fuzzrun::{run, Verdict, COMMANDS};
    use scalpel_e2e::mutate::{apply, choose, copy_trace, Rng};
    let run_dir = record(
        &own_bin("threadpool"),
        &["--connections", "3", "--requests", "4"],
    )
    .success();
    let work = tempfile::tempdir().unwrap();
    let mut bad = Vec::new();
    for seed in 0..24u64 {
        let mut rng = Rng::new(seed);
        let m = choose(&run_dir.dir, &mut rng).unwrap();
        let dir = work.path().join(format!("m{seed}"));
        copy_trace(&run_dir.dir, &dir).unwrap();
        apply(&m, &run_dir.dir, &dir).unwrap();
        for cmd in COMMANDS {
            let out = dir.join(format!("out-{cmd}"));
            let r = run(
                &scalpel(),
                cmd,
                &dir,
                &out,
                std::time::Duration::from_secs(120),
            );
            if !matches!(r.verdict, Verdict::Clear { .. }) || r.peak > 2 << 30 {
                bad.push(format!(
                    "seed {seed} {m}: {cmd}: {:?}, {} MiB",
                    r.verdict,
                    r.peak >> 20
                ));
            }
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

/// Every mutant that ever failed `mutate-traces` is kept in `tests/regressions/` (with the
/// mutation that made it in `mutation.txt`) and must end clearly. Three made `infer` take
/// minutes (a chain of requests nested two hundred levels deep by the miner, whose
/// canonical-form search, drawing and rollup were each superlinear in that depth);
/// `header-2709` (a thread file's clock base damaged, so its events are kept a century off)
/// made the rollups' sums of latencies pass u64, which the overflow checks the tests build with
/// turned into a panic.
#[test]
fn kept_mutants_end_clearly() {
    use scalpel_e2e::fuzzrun::{run, Verdict, COMMANDS};
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions");
    let work = tempfile::tempdir().unwrap();
    let mut seen = 0;
    for e in fs::read_dir(&dir).unwrap() {
        let input = e.unwrap().path();
        seen += 1;
        for cmd in COMMANDS {
            let out = work.path().join(format!(
                "{}-{cmd}",
                input.file_name().unwrap().to_string_lossy()
            ));
            let r = run(
                &scalpel(),
                cmd,
                &input,
                &out,
                std::time::Duration::from_secs(300),
            );
            assert!(
                matches!(r.verdict, Verdict::Clear { code: 0 }),
                "{}: {cmd}: {:?}",
                input.display(),
                r.verdict
            );
        }
    }
    assert!(seen >= 3, "{seen} kept inputs");
}
