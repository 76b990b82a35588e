//! The FIFO pairing of puts and takes on hand-made sections.

use scalpel_model::graph::Graph;
use scalpel_model::testgraph::GraphBuilder;

use super::{takes, Section};

/// The mutex.
const MUTEX: u32 = 7;
/// The queue's "not empty" condition.
const COND: u32 = 9;
/// The consumer's dequeue site (its lock call's stack).
const SITE: u32 = 3;

/// A producer's section that put one item: its signal ended `leaf`, at `order`.
fn put(leaf: u32, order: u64) -> Section {
    Section {
        obj: MUTEX,
        order: order + 1,
        leaf,
        stack: 1,
        waited: None,
        wait_from: None,
        signals: vec![(COND, leaf, order)],
    }
}

/// A consumer's section that waited on the condition from `from` and popped in `leaf`.
fn take(leaf: u32, from: u64, order: u64) -> Section {
    Section {
        obj: MUTEX,
        order,
        leaf,
        stack: SITE,
        waited: Some(COND),
        wait_from: Some(from),
        signals: Vec::new(),
    }
}

/// A producer thread (leaves 0..4) and a consumer thread (leaves 4..8).
fn two_threads() -> Graph {
    let mut b = GraphBuilder::new();
    let ty = b.leaf_type("step", None);
    let (p, c) = (b.thread("producer"), b.thread("consumer"));
    for i in 0..4u64 {
        b.leaf(p, ty, 10 * i, 10 * i + 5);
    }
    for i in 0..4u64 {
        b.leaf(c, ty, 10 * i + 6, 10 * i + 9);
    }
    b.build()
}

/// Items A, B, C and D are put at orders 10, 20, 30 and 40; A's take is not among the sections (a
/// window that began while its taker waited holds A's put but not the take's lock). The
/// consumer's next take began waiting at 15, after A was gone: it took B, and the one after it
/// C, and the last D: not A, B and C. (Every take waited: a queue some of whose takes found an
/// item without waiting may be one its takes drain, paired otherwise.)
#[test]
fn an_item_put_before_a_take_began_waiting_is_not_that_takes() {
    let g = two_threads();
    let sections = vec![
        put(0, 10),
        put(1, 20),
        take(5, 15, 21),
        put(2, 30),
        take(6, 25, 31),
        put(3, 40),
        take(7, 35, 41),
    ];
    let (found, capacity) = takes(sections, &g);
    assert!(capacity.is_empty());
    let pairs: Vec<(u32, u32)> = found
        .iter()
        .filter(|t| t.cond == COND)
        .map(|t| (t.from, t.to))
        .collect();
    assert_eq!(pairs, [(1, 5), (2, 6), (3, 7)]);
}
