//! CPU times (`scalpel record --cpu-time`): each leaf's CPU time and its time off the CPU,
//! checked against what the recorded program measured with its own clocks, and what a recording
//! without them shows.

use std::process::Command;

use scalpel_analysis::rollup::{leaf_metrics, BlockKind, GraphIndex};
use scalpel_e2e::score::infer_model;
use scalpel_e2e::{build_c, record_flags, scalpel};
use scalpel_model::format::Op;
use scalpel_model::graph::{Graph, LeafId};

const MS: u64 = 1_000_000;

/// What `cputime` printed: (wall, CPU) in ns of its shared and alone phases.
fn measured(stdout: &str) -> [(u64, u64); 2] {
    let get = |phase: &str| {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(phase))
            .unwrap_or_else(|| panic!("no {phase} line in {stdout:?}"));
        let v: Vec<u64> = line
            .split(' ')
            .skip(1)
            .map(|x| x.parse().unwrap())
            .collect();
        (v[0], v[1])
    };
    [get("shared "), get("alone ")]
}

/// The worker's two phase leaves: the ones that end at its pipe writes.
fn phase_leaves(g: &Graph) -> Vec<LeafId> {
    let t = g
        .threads
        .iter()
        .find(|t| t.name == "worker")
        .unwrap_or_else(|| panic!("no worker thread: {:?}", g.threads));
    let v: Vec<LeafId> = t
        .leaf_ids()
        .filter(|&l| g.leaves[l].end_op.and_then(|o| o.op()) == Some(Op::Write))
        .collect();
    assert_eq!(v.len(), 2, "the worker's leaves ending at a write");
    v
}

#[test]
fn leaf_cpu_and_off_cpu_times_match_the_programs_own_clocks() {
    let exe = build_c("cputime", "cputime", &[]);
    let r = record_flags(&exe, &["--cpu-time"], &[], |_| {}).success();
    let phases = measured(&r.stdout());
    // The recording's summary counts them: every event has one.
    let trace = r.load();
    let events = scalpel_e2e::all_events(&trace).len();
    assert!(
        r.stderr()
            .contains(&format!("cpu times:  {events} events carry one")),
        "{}",
        r.stderr()
    );
    let out = r.tmp.path().join("model");
    let (model, g) = infer_model(&r.dir, &out, &[]);
    assert_eq!(g.leaf_cpu_ns.len(), g.leaves.len(), "a CPU time per leaf");
    let idx = GraphIndex::new(&g);
    let leaves = phase_leaves(&g);
    for ((wall, cpu), &leaf) in phases.iter().zip(&leaves) {
        let l = &g.leaves[leaf];
        // The leaf runs from the read's return to the write's entry; the program measured a
        // window inside it. Whatever the leaf has beyond the window is in `extra`.
        let span = l.end_ns - l.start_ns;
        assert!(span + MS / 10 >= *wall, "leaf {span} ns, program {wall} ns");
        let extra = span.saturating_sub(*wall);
        // CPU time: at least the program's, at most that plus all of the extra span, the
        // write itself and the agent's work around it (well under a millisecond).
        let leaf_cpu = g.leaf_cpu(leaf).expect("the phase leaf has a CPU time");
        assert!(
            leaf_cpu >= *cpu && leaf_cpu <= cpu + extra + l.block_ns + MS,
            "leaf CPU {leaf_cpu} ns, program {cpu} ns, extra span {extra} ns"
        );
        // Off the CPU: no recorded call inside the leaf, so all of it is preemption, and it
        // matches the program's wall minus CPU time within the same margins.
        let m = leaf_metrics(&g, &idx, leaf.get());
        let off = m.blocked[BlockKind::OffCpu.index()];
        let off_program = wall - cpu;
        eprintln!(
            "program: wall {wall} CPU {cpu} off {off_program}; leaf: span {span} CPU {leaf_cpu} \
             off {off}"
        );
        assert!(
            off + l.block_ns + MS >= off_program && off <= off_program + extra,
            "off-CPU {off} ns, program {off_program} ns, extra span {extra} ns"
        );
        assert_eq!(m.cpu_ns, Some(leaf_cpu));
        let sum: u64 = m.running_ns + m.blocked.iter().sum::<u64>();
        assert_eq!(sum, m.wall_ns, "running + blocked = wall");
    }
    // With the spinner on the same CPU the worker lost a good part of its 60 ms.
    let (wall, cpu) = phases[0];
    assert!(
        wall - cpu >= 10 * MS,
        "the spinner took only {} ns of the shared phase",
        wall - cpu
    );
    // `scalpel top` on the phase leaf's type: the time off the CPU is a contributor, and the
    // mean CPU time per instance is the two leaves' mean.
    let ty = g.leaves[leaves[0]].ty;
    assert_eq!(g.leaves[leaves[1]].ty, ty, "both phases, one type");
    let name = &model
        .types
        .iter()
        .find(|t| t.leaf_type == Some(ty))
        .expect("the leaf type is in the model")
        .name;
    let o = Command::new(scalpel())
        .arg("top")
        .arg(&out)
        .args(["--expand", name, "--format", "json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let e = &v["expanded"];
    let mean = (g.leaf_cpu(leaves[0]).unwrap() + g.leaf_cpu(leaves[1]).unwrap()) / 2;
    assert_eq!(e["task"]["cpu_mean_ns"].as_u64(), Some(mean), "{e:#}");
    let off = e["contributors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["what"] == "off_cpu")
        .unwrap_or_else(|| panic!("no off_cpu contributor: {e:#}"));
    assert!(
        off["per_instance_ns"].as_u64().unwrap() >= 5 * MS,
        "{off:#}"
    );
}

#[test]
fn without_cpu_time_no_leaf_has_one() {
    let exe = build_c("cputime", "cputime", &[]);
    let r = record_flags(&exe, &[], &[], |c| {
        // Left in the caller's environment, it must not turn CPU times on.
        c.env("SCALPEL_CPU_TIME", "on");
    })
    .success();
    let trace = r.load();
    let events = scalpel_e2e::all_events(&trace);
    assert!(!events.is_empty());
    assert!(events.iter().all(|e| e.event.cpu_ns.is_none()));
    assert!(!r.stderr().contains("cpu times"), "{}", r.stderr());
    let out = r.tmp.path().join("model");
    let (_, g) = infer_model(&r.dir, &out, &[]);
    assert!(g.leaf_cpu_ns.is_empty());
    let idx = GraphIndex::new(&g);
    for leaf in phase_leaves(&g) {
        let m = leaf_metrics(&g, &idx, leaf.get());
        assert_eq!(m.blocked[BlockKind::OffCpu.index()], 0);
        assert_eq!(m.cpu_ns, None);
    }
}
