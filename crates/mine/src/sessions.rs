//! Sessions: what one connection does across its requests, as a task above them.
//!
//! A keep-alive client sends many requests on one connection (memcached's, nginx's under
//! `ab -k`, a PostgreSQL backend's statements), and Apache follows each response with the
//! connection's lingering close. Mining finds the requests; nothing joins one connection's
//! requests, since the client's think time between them is outside the trace. After the model
//! is built, the top-level occurrences that touch exactly one TCP connection (their leaves'
//! calls on it, both directions counted as one) are grouped by connection; a connection whose
//! most frequent member type occurs twice or more becomes a session occurrence, typed by that
//! member type, and a session type is kept when it has `--min-support` occurrences. A connection
//! that carried one request and its lingering close (Apache without keep-alive) is no session.
//! A client that reuses its port makes one pair of endpoints name several connections in turn;
//! where connections are handed from the accepting thread to another, each hand-off of the key
//! starts a new connection. Occurrences that touch two connections
//! (a proxy's request, a replicated commit that also talks to a backup) stay top-level.
//! Edges between the members of one session become the session type's; the top-level edges are
//! counted again between what is now top-level.

use std::collections::BTreeMap;

use ahash::AHashMap;
use scalpel_model::format::ChanKind;
use scalpel_model::graph::{EdgeKind, LeafId, ObjId, ObjectInfo};
use scalpel_model::read::Endpoint;

use super::input::MineInput;
use scalpel_model::task::{
    outermost_outside_session, ChildRef, OccRef, Occurrence, TaskKind, TaskType, TaskTypeId,
    TypeEdge,
};

use super::build::Built;

/// A TCP connection's key: both endpoints, in order, so that both directions are one.
fn connection(o: &ObjectInfo) -> Option<(Endpoint, Endpoint)> {
    let channel = o.channel.as_ref().filter(|c| c.kind().is(ChanKind::Tcp))?;
    let (a, b) = channel.connection()?;
    Some((a.clone(), b.clone()))
}

/// Builds the sessions of `built` (see the module docs).
pub(super) fn build_sessions(graph: &MineInput<'_>, built: &mut Built, min_support: u32) {
    // Connection number of each object (by first appearance in object order).
    let mut conn_ids: BTreeMap<(Endpoint, Endpoint), u32> = BTreeMap::new();
    let conn_of_obj: Vec<Option<u32>> = graph
        .objects
        .iter()
        .map(|o| {
            let c = connection(o)?;
            let next = conn_ids.len() as u32;
            Some(*conn_ids.entry(c).or_insert(next))
        })
        .collect();
    let conn_of_leaf = |l: LeafId| -> Option<u32> {
        let o: ObjId = graph.leaves.get(l.index())?.end_obj?;
        conn_of_obj.get(o.index()).copied().flatten()
    };
    // A client that reuses its port makes one key name several connections: each hand-off of a
    // connection to another thread starts a new one (when it was handed off at all).
    let mut handed: AHashMap<u32, Vec<u64>> = AHashMap::new();
    for e in graph.edges.iter().filter(|e| e.kind == EdgeKind::Handoff) {
        let conn = e
            .obj
            .and_then(|o| conn_of_obj.get(o.index()).copied().flatten());
        if let (Some(c), Some(l)) = (conn, graph.leaves.get(e.from.index())) {
            handed.entry(c).or_default().push(l.start_ns);
        }
    }
    for v in handed.values_mut() {
        v.sort_unstable();
    }
    // (Connection, how many of its hand-offs came at or before `at`).
    let instance = |conn: u32, at: u64| -> (u32, u32) {
        let n = handed
            .get(&conn)
            .map_or(0, |v| v.partition_point(|&t| t <= at) as u32);
        (conn, n)
    };
    // Top-level group and loop occurrences on exactly one connection, per connection.
    let mut by_conn: BTreeMap<(u32, u32), Vec<(LeafId, OccRef)>> = BTreeMap::new();
    for (t, ty) in built.types.iter().enumerate() {
        if ty.kind == TaskKind::Leaf {
            continue;
        }
        for (i, o) in ty.occurrences.iter().enumerate() {
            if o.parent.is_some() {
                continue;
            }
            let mut conns = o.leaves.iter().filter_map(|&l| conn_of_leaf(l));
            let Some(first) = conns.next() else { continue };
            if conns.all(|c| c == first) {
                let r = OccRef {
                    ty: TaskTypeId::at(t),
                    index: i as u32,
                };
                // Its last moment: an occurrence may begin before its connection's hand-off
                // (the accept itself), never end before it.
                let at = o
                    .leaves
                    .iter()
                    .filter_map(|l| graph.leaves.get(l.index()))
                    .map(|l| l.end_ns)
                    .max()
                    .unwrap_or(0);
                by_conn
                    .entry(instance(first, at))
                    .or_default()
                    .push((o.leaves[0], r));
            }
        }
    }
    // Session instances by their main member type.
    let mut by_main: BTreeMap<TaskTypeId, Vec<Vec<OccRef>>> = BTreeMap::new();
    for mut members in by_conn.into_values() {
        if members.len() < 2 {
            continue;
        }
        members.sort_unstable_by_key(|&(first, r)| (first, r.ty, r.index));
        let mut count: BTreeMap<TaskTypeId, u32> = BTreeMap::new();
        for (_, r) in &members {
            *count.entry(r.ty).or_insert(0) += 1;
        }
        // A session is a connection's requests: its main type at least twice (a connection
        // that carried one request and its close is that request's, not a session).
        let main = count
            .iter()
            .max_by_key(|&(t, n)| (*n, std::cmp::Reverse(*t)))
            .filter(|&(_, n)| *n >= 2)
            .map(|(t, _)| *t);
        if let Some(main) = main {
            by_main
                .entry(main)
                .or_default()
                .push(members.into_iter().map(|(_, r)| r).collect());
        }
    }
    by_main.retain(|_, v| v.len() >= min_support as usize);
    if by_main.is_empty() {
        return;
    }
    // The new types, their occurrences ordered by first leaf.
    let n_leaves = graph.leaves.len();
    let mut session_of: AHashMap<OccRef, OccRef> = AHashMap::new();
    for (_, mut sessions) in by_main {
        let t = TaskTypeId::at(built.types.len());
        let occ_leaves = |members: &[OccRef], types: &[TaskType]| -> Vec<LeafId> {
            let mut l: Vec<LeafId> = members
                .iter()
                .flat_map(|r| {
                    types[r.ty.index()].occurrences[r.index as usize]
                        .leaves
                        .iter()
                })
                .copied()
                .collect();
            l.sort_unstable();
            l
        };
        let mut occs: Vec<(Vec<LeafId>, Vec<OccRef>)> = sessions
            .drain(..)
            .map(|m| (occ_leaves(&m, &built.types), m))
            .collect();
        occs.sort_unstable_by_key(|(l, _)| l[0]);
        let mut level = 0;
        let mut order: Vec<TaskTypeId> = Vec::new();
        let mut counts: AHashMap<TaskTypeId, u64> = AHashMap::new();
        let mut occurrences = Vec::with_capacity(occs.len());
        for (i, (leaves, members)) in occs.into_iter().enumerate() {
            let me = OccRef {
                ty: t,
                index: i as u32,
            };
            for &r in &members {
                let ty = &mut built.types[r.ty.index()];
                level = level.max(ty.level + 1);
                ty.top_level -= 1;
                ty.occurrences[r.index as usize].parent = Some(me);
                if !order.contains(&r.ty) {
                    order.push(r.ty);
                }
                *counts.entry(r.ty).or_insert(0) += 1;
                session_of.insert(r, me);
            }
            occurrences.push(Occurrence {
                leaves: leaves.into(),
                parent: None,
                iterations: None,
                variant: None,
            });
        }
        built.types.push(TaskType {
            name: String::new(),
            kind: TaskKind::Session,
            level,
            leaf_type: None,
            count: occurrences.len() as u64,
            top_level: occurrences.len() as u64,
            children: order
                .iter()
                .map(|&ty| ChildRef {
                    ty,
                    count: counts[&ty],
                })
                .collect(),
            edges: Vec::new(),
            variants: Vec::new(),
            occurrences,
        });
    }
    // Each leaf's top-level occurrence before the sessions (a leaf alone: its own).
    let root_of = |l: usize| -> OccRef {
        let leaf = OccRef {
            ty: TaskTypeId::new(graph.leaves[l].ty.get()),
            index: l as u32,
        };
        let parent = built.leaf_parent.get(l).copied().flatten();
        outermost_outside_session(&built.types, leaf, parent)
    };
    let roots: Vec<OccRef> = (0..n_leaves).map(root_of).collect();
    let mut inside: BTreeMap<(TaskTypeId, TaskTypeId, TaskTypeId, EdgeKind), u64> = BTreeMap::new();
    let mut top: BTreeMap<(TaskTypeId, TaskTypeId, EdgeKind), u64> = BTreeMap::new();
    for e in graph.edges.iter() {
        let (a, b) = (e.from.get() as usize, e.to.get() as usize);
        if a >= n_leaves || b >= n_leaves || a == b {
            continue;
        }
        let (ra, rb) = (roots[a], roots[b]);
        if ra == rb {
            continue;
        }
        let (sa, sb) = (session_of.get(&ra), session_of.get(&rb));
        match (sa, sb) {
            (Some(x), Some(y)) if x == y => {
                *inside.entry((x.ty, ra.ty, rb.ty, e.kind)).or_insert(0) += 1;
            }
            _ => {
                let ta = sa.map_or(ra.ty, |s| s.ty);
                let tb = sb.map_or(rb.ty, |s| s.ty);
                *top.entry((ta, tb, e.kind)).or_insert(0) += 1;
            }
        }
    }
    for ((host, from, to, kind), count) in inside {
        built.types[host.index()].edges.push(TypeEdge {
            from,
            to,
            kind,
            count,
        });
    }
    built.top_edges = top
        .into_iter()
        .map(|((from, to, kind), count)| TypeEdge {
            from,
            to,
            kind,
            count,
        })
        .collect();
}
