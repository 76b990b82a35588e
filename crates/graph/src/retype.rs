//! Leaves that begin where their thread went back for new work are typed by their end alone.
//!
//! A leaf's type is the pair of its boundaries. But where the program edge into a leaf is weak
//! (the thread had finished one unit of work and fetched the next), its start boundary says
//! only how the thread got there: a worker that waited on the queue starts at the wait, one
//! that found the queue non-empty starts where its previous request ended. Both leaves do the
//! same job, taking new work up to the same call, so they get one type: the end boundary with
//! an empty start. Without this, every request type would split by what its worker happened to
//! do before it.

use ahash::AHashMap;
use scalpel_model::graph::{BoundaryInfo, Graph, LeafType, LeafTypeId, OpName};

/// A type key after retyping: an old type, or a fresh-start type by its end boundary.
#[derive(Clone, PartialEq, Eq, Hash)]
enum Key {
    Old(u32),
    Fresh(Option<OpName>, Vec<String>),
}

/// Retypes the leaves after weak program edges (`weak[i]`: the edge from leaf `i` to `i + 1`)
/// and renumbers the types in order of first use.
pub(super) fn new_work_types(graph: &mut Graph, weak: &[bool]) {
    let old = std::mem::take(&mut graph.types);
    let mut index: AHashMap<Key, u32> = AHashMap::new();
    let mut types: Vec<LeafType> = Vec::new();
    // Per old type, its new type when not fresh and when fresh: the key (and its frames) is
    // built once per old type, not once per leaf.
    let mut memo: Vec<[Option<u32>; 2]> = vec![[None; 2]; old.len()];
    for i in 0..graph.leaves.len() {
        let t = graph.leaves[i].ty.get();
        let Some(ty) = old.get(t as usize) else {
            continue;
        };
        let fresh = i > 0
            && weak.get(i - 1).copied().unwrap_or(false)
            && graph.leaves[i - 1].thread == graph.leaves[i].thread;
        let id = match memo[t as usize][usize::from(fresh)] {
            Some(id) => id,
            None => {
                let key = if fresh {
                    Key::Fresh(ty.end.op, ty.end.frames.clone())
                } else {
                    Key::Old(t)
                };
                let next = types.len() as u32;
                let id = *index.entry(key).or_insert_with(|| {
                    let mut nt = ty.clone();
                    nt.count = 0;
                    if fresh {
                        nt.start = BoundaryInfo {
                            op: None,
                            function: None,
                            frames: Vec::new(),
                            code_key: 0,
                        };
                    }
                    types.push(nt);
                    next
                });
                memo[t as usize][usize::from(fresh)] = Some(id);
                id
            }
        };
        types[id as usize].count += 1;
        graph.leaves[i].ty = LeafTypeId::new(id);
    }
    graph.types = types;
}
