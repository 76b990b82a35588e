//! What the edge of a window leaves of occurrences, on hand-built graphs (see `edge`).

use scalpel_model::format::Op;
use scalpel_model::graph::{EdgeKind, Graph, LeafTypeId};
use scalpel_model::task::TaskKind;
use scalpel_model::testgraph::GraphBuilder;

use super::{mined, summary};

/// A listener accepts (type 0) and pushes (1) each of `requests` requests; each goes to one of
/// two workers (read 2, write 3; read 4, write 5) by a fixed pseudo-random sequence (a periodic
/// one would make "this request, then that one" a pattern), so the accept and push are a
/// task of their own, found in two requests' types. After them the listener accepts and pushes
/// `tail` more whose workers take them past the window's end; then the edge cuts each thread
/// in the middle of a leaf (type 6: a piece whose end call is past the edge).
fn cut_listener(requests: u32, tail: u32) -> Graph {
    let mut b = GraphBuilder::new();
    for t in 0..6 {
        b.leaf_type(&format!("L{t}"), None);
    }
    let piece = b.leaf_type("L6", Some(Op::EpollWait));
    let listener = b.thread("listener");
    let workers = [b.thread("w0"), b.thread("w1")];
    let mut clock = 0u64;
    let mut at = |b: &mut GraphBuilder, th, ty: u32| {
        clock += 1_000;
        b.leaf(th, LeafTypeId::new(ty), clock, clock + 5)
    };
    let mut last = [None; 3];
    let mut seed = 0x2545_f491u32;
    let mut follow = |b: &mut GraphBuilder, k: usize, leaf, kind| {
        if let Some(prev) = last[k].replace(leaf) {
            b.edge(prev, leaf, kind);
        }
    };
    for r in 0..requests + tail {
        let accept = at(&mut b, listener, 0);
        follow(&mut b, 0, accept, EdgeKind::ProgramWeak);
        let push = at(&mut b, listener, 1);
        follow(&mut b, 0, push, EdgeKind::Program);
        if r >= requests {
            continue;
        }
        seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        let k = (seed >> 31) as usize;
        let read = at(&mut b, workers[k], 2 + 2 * k as u32);
        b.edge(push, read, EdgeKind::Handoff);
        follow(&mut b, 1 + k, read, EdgeKind::ProgramWeak);
        let write = at(&mut b, workers[k], 3 + 2 * k as u32);
        follow(&mut b, 1 + k, write, EdgeKind::Program);
    }
    for (k, th) in [listener, workers[0], workers[1]].into_iter().enumerate() {
        let cut = at(&mut b, th, piece.get());
        follow(&mut b, k, cut, EdgeKind::ProgramWeak);
    }
    b.build()
}

/// The accept and push of the requests the edge cut stand alone only in this window; in the
/// whole trace each is part of a request. They do not make every request "accept and push,
/// with the worker's read and write as optional steps" (a variant fold onto a core that
/// stands alone often enough): the requests keep their two types, as without the tail.
/// Apache's first window folded every request so (6.8% of its leaves in another innermost task
/// than in the whole model).
#[test]
fn requests_the_edge_cut_do_not_make_the_listeners_part_a_core() {
    for tail in [0, 6, 12] {
        let g = cut_listener(48, tail);
        let m = mined(&g);
        let summary = summary(&g, &m);
        let served = |ty: u32| g.leaves.iter().filter(|l| l.ty.get() == ty).count() as u64;
        for worker in [[2, 3], [4, 5]] {
            let want: Vec<LeafTypeId> = [0, 1, worker[0], worker[1]].map(LeafTypeId::new).to_vec();
            let request = m.types.iter().find(|t| {
                t.kind == TaskKind::Group
                    && t.occurrences.iter().all(|o| {
                        let mut tys: Vec<LeafTypeId> =
                            o.leaves.iter().map(|&l| g.leaves[l].ty).collect();
                        tys.sort_unstable();
                        tys == want
                    })
            });
            let request = request
                .unwrap_or_else(|| panic!("tail {tail}: no request of {want:?}: {summary:?}"));
            let n = served(worker[0]);
            assert_eq!(
                (request.count, request.top_level),
                (n, n),
                "tail {tail}: {summary:?}"
            );
        }
    }
}
