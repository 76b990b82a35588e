//! The replicated-store case study: the model inferred for the primary holds the Scalpel paper's
//! three high-level tasks (its Figure 1, PacificA): the worker task (a session receives a
//! packet and dispatches it to the pool), the local commit (mutate, async RPC, a sender puts
//! the mutation on the wire) and the remote ack (receive the ack, reply, a sender puts the
//! reply on the wire). Local commit and remote ack run on the same worker and sender threads
//! and must still come out as two task types.

use scalpel_e2e::score::{load_model as load, report, score, TypeScore};
use scalpel_e2e::{replicated_primary, PAPER_TASKS};

fn get<'a>(sc: &'a [TypeScore], ty: &str) -> &'a TypeScore {
    sc.iter().find(|t| t.truth == ty).expect("true type scored")
}

#[test]
fn the_primary_has_the_papers_three_tasks() {
    let (run, out, tasks) =
        replicated_primary(&["--flow-limit", "16384", "--flow-sleep-ms", "100"]);
    let (model, graph) = load(&out);
    let sc = score(&model, &graph, &tasks, PAPER_TASKS);
    eprintln!("{}", report(&sc));
    // To look at a failing run: SCALPEL_KEEP=1 keeps the trace, model and truth.
    if std::env::var_os("SCALPEL_KEEP").is_some() {
        eprintln!("kept {}", run.tmp.keep().display());
    }
    for ty in ["worker_task", "local_commit", "remote_ack"] {
        let t = get(&sc, ty);
        assert_eq!(t.instances, if ty == "worker_task" { 800 } else { 400 });
        assert!(
            t.precision >= 0.95 && t.recall >= 0.95,
            "{ty}: precision {:.3} recall {:.3}\n{}",
            t.precision,
            t.recall,
            report(&sc)
        );
    }
    let ty = |name: &str| get(&sc, name).model_type.clone().expect("matched").0;
    let (worker, local, remote) = (ty("worker_task"), ty("local_commit"), ty("remote_ack"));
    assert!(
        local != remote && worker != local && worker != remote,
        "{}",
        report(&sc)
    );
    // Each is a task of several leaves, and holds the leaves the paper names: the session's
    // receive; the async RPC and the send; the reply and the send. (Leaf type names, not the
    // task's: a task is named by its first and dominant leaves, which may be one leaf.)
    for (t, words) in [
        (worker, &["recv_packet"][..]),
        (local, &["rpc_async_call", "send_packet"][..]),
        (remote, &["rpc_call_reply", "send_packet"][..]),
    ] {
        let m = &model.types[t as usize];
        assert!(m.leaf_type.is_none(), "{} is a leaf type", m.name);
        let names: Vec<&str> = m.occurrences[0]
            .leaves
            .iter()
            .map(|&l| graph.types[graph.leaves[l].ty.index()].name.as_str())
            .collect();
        for w in words {
            assert!(
                names.iter().any(|n| n.contains(w)),
                "{}: no leaf of {names:?} names {w}",
                m.name
            );
        }
    }
    for t in [local, remote] {
        let occ = &model.types[t as usize].occurrences[0];
        let threads: std::collections::BTreeSet<u32> = occ
            .leaves
            .iter()
            .map(|&l| graph.leaves[l].thread.get())
            .collect();
        assert!(threads.len() >= 2, "{:?}", model.types[t as usize].name);
    }
}
