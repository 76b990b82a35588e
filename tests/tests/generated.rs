//! The generated corpus's fixed seeds (`scalpel_e2e::generated`): programs of every
//! architecture written from a seed, recorded under a load outside the recording, and scored
//! against the truth they wrote.
//!
//! Every program must build, serve every request under the agent and write the truth of every
//! request; its line is printed (`--nocapture`). The bounds of issue 49 (95% of the requests
//! exactly one occurrence of one task type, at most 10 types for 95% of the leaves) are
//! asserted for the seeds in [`HOLDING`]: those the rules hold today with a margin. A rule that
//! lets another seed reach the bounds adds it; none may leave.

use scalpel_e2e::generated::{run, Arch, Spec};

/// The fixed seeds: 25 consecutive seeds, five of each architecture.
const SEEDS: std::ops::Range<u64> = 0..25;

/// Seeds chosen for a choice no seed of [`SEEDS`] draws: pools whose epoll thread waits for an
/// idle worker on a wake-up pipe (`idle=wakeup-pipe`, the `room` rule), with one worker (47),
/// three (57), four (177) and two (227). Without the rule they score 0, 0.05, 0.86 and 0.19.
/// And pools whose workers answer through one sender thread (`replies=sender`): four workers
/// writing one Unix socket pair (152), two writing one pipe (212), whose writes `streamorder`
/// orders by the two kernels' rules. And pools fed by a thread of their own that waits for an
/// idle worker on a condition (`feeder=idle-cond`, the `room::idle` rule): two workers on
/// condition queues (972 until session 57, now 1352), two on pipes (77 until session 57, now
/// 1627), three on eventfds taking their first item from a peeled call under a global lock (517
/// until session 57; two without the lock: 862). Without the rule the first three scored 0.59,
/// 0.48 and 0.49. Since session 57 (`chunks`), 972, 77 and 517 draw a feeder that hands each
/// request over in pieces, as XZ Utils' main thread does: five on a condition (972, which the
/// rules do not hold: docs/LIMITS.md), six on a pipe (77), five on an eventfd read at a site of
/// its own after a peeled first take (517: 0 before `weak` passed over the pieces' site for the
/// loop head). And a thread per connection under a global lock whose clients pipeline
/// three requests (189789000) and four with group commits (189789020): each request's work
/// under the lock between two replies (`replycalls`).
const CHOSEN: &[u64] = &[
    47, 57, 177, 227, 152, 212, 972, 77, 517, 189789000, 189789020, 1352, 1627, 862,
];

/// Seeds whose programs the rules hold to the bounds (share at least 0.99 in every run
/// tried, the machine idle or loaded). Pipelined replies (4, 14, 15, 19, 24), a group commit's
/// waits (20) and calls to a helper (1) joined them in session 27. Seed 8 (a flooded 3-stage
/// pipeline with commits) meets them on an idle machine but fell to 0.65 on a loaded one.
/// Seed 17 (a pool reporting back to its event loop through a futex-counted queue) joined in
/// session 34: 1.0 in six runs, one of them loaded; seeds 8, 13 and 23 reached the bounds in
/// most of those runs but not all (23 once gave 0).
/// Chosen seeds 47, 57 and 177 joined in session 41 (0.987 to 1.0 in every run, most of them
/// loaded); 227, whose workers take their first item from a peeled call, gave 1.0 in most
/// loaded runs but 0.33 and 0.92 in two of ten. In the 0.92 one, a worker's first take waited
/// twice (a wake-up another worker's take robbed), so the peeled call was taken for the loop
/// head; `weak` now counts that as one visit, and the recording scores 1.0. A later loaded run
/// gave 0.91, not analysed. Seeds 12 and 227 joined in session 43: in 40 loaded runs each (5
/// with two `yes` loops beside, 35 with three) seed 12 gave 1.0 every time and 227 0.992 to
/// 1.0. Seeds 8 and 23 joined in the same session, once a take that waited began new work and
/// tested the loop head's guess (`handoff_weak`): in 10 runs with two `yes` loops beside (and
/// a CI run on the same machine) seed 8 gave 0.986 to 1.0 and 23 0.981 to 1.0 (0.981 to 1.0 in
/// 15 more runs with three loops and the first rule), and every recording kept below the
/// bounds before (8: 0.0 and 0.0; 23: 0.712 and 0.788) rescores 0.981 to 0.986. Seed 13 gave
/// 0.953 to 1.0 in those 10 runs (its kept bad recordings 0.980 to 0.993), seed 7 1.0 but
/// 0.875 once in 40 runs before (a batch of completions answered out of step, not analysed).
/// Seed 13 joined in session 44: 0.993 to 1.0 in 20 runs with two `yes` loops beside. Seed 7
/// (a pool of two fed through a pipe) gave 0.944 to 1.0 in the same 20 runs: in the one below,
/// the pipe's bytes were credited to the wrong one of its two waiting workers (which reader
/// took which bytes is not in the trace; see `streamorder`). Seeds 152 and 212 joined in
/// session 47: in 10 runs with two busy loops beside, 152 gave 0.993 to 1.0 and 212 1.0. In
/// session 51's three CI runs (whole-trace inference byte for byte as before), seed 57 gave 11
/// types once and seed 12 a share of 0.942 once. Seeds 972, 77 and 517 joined in session 55:
/// 1.0 in three runs each and in one with two busy loops beside (1 or 2 types). Seeds
/// 189789000 and 189789020 (a thread per connection under a global lock, pipelined; the second
/// with group commits) joined in session 56: 1.0 in three runs each with a build beside (1 and
/// 6 or 7 types), 0.667 and 0.509 before `replycalls` took the lock's work begun again for the
/// next request. Seed 972 left in session 57: its program changed (a feed in pieces on a
/// condition, 0.875 to 0.981 in seven runs) and its old one is seed 1352's kind; 1352, 1627
/// and 862 (plain feeders) joined with 1.0 in three runs each, and 77 and 517, whose programs
/// changed too, gave 1.0 in four runs each.
const HOLDING: &[u64] = &[
    0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 47, 57,
    177, 227, 152, 212, 77, 517, 189789000, 189789020, 1352, 1627, 862,
];

#[test]
fn every_fixed_seed_runs_and_the_holding_ones_meet_the_bounds() {
    let archs: std::collections::BTreeSet<&str> =
        SEEDS.map(|s| Spec::from_seed(s).arch.name()).collect();
    assert_eq!(
        archs.len(),
        Arch::ALL.len(),
        "the fixed seeds cover every architecture"
    );
    let scalpel = scalpel_e2e::scalpel();
    let mut below = Vec::new();
    for seed in SEEDS.chain(CHOSEN.iter().copied()) {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let o = run(seed, dir.path(), &scalpel).unwrap_or_else(|e| panic!("{e}"));
        println!("{}", o.line());
        assert_eq!(
            o.requests,
            o.spec.total_requests(),
            "seed {seed}: truth of every request"
        );
        let ok = o.share() >= 0.95 && o.types <= 10;
        if HOLDING.contains(&seed) && !ok {
            below.push(o.line());
        }
    }
    assert!(below.is_empty(), "below the bounds:\n{}", below.join("\n"));
}
