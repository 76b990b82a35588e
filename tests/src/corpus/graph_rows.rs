//! The graph's golden rows: what `build_graph` made of a trace, as plain text lines, one per
//! row, in id order within each kind of row.
//!
//! Structure only: processes, threads, objects by kind, leaf types by their boundary operations
//! and stack depths, leaves by thread, type, boundary operations, object, cut events and bytes,
//! externals, edges with their kinds and objects, lock counts and waits, inner calls and what
//! did not pair up. Left out: pids, tids, paths, command lines, object keys and descriptions,
//! frame and type names, and every time (all of which say where and when a trace was recorded,
//! or are text for people that later changes may reword).

use std::fmt::Write;

use scalpel_model::graph::{Graph, NodeId, ObjId, OpName};

/// A node as rows name it: `L<i>` for a leaf, `X<i>` for an external.
pub fn node(g: &Graph, n: NodeId) -> String {
    match g.leaf_of(n) {
        Some(l) => format!("L{}", l.index()),
        None => format!("X{}", n.index() - g.leaves.len()),
    }
}

fn op(o: Option<OpName>) -> String {
    o.map_or_else(|| "-".to_string(), OpName::name)
}

fn obj(o: Option<ObjId>) -> String {
    o.map_or_else(|| "-".to_string(), |o| format!("O{}", o.index()))
}

/// The rows of the graph's nodes and tables (everything but its edges).
pub fn graph_rows(g: &Graph) -> String {
    let mut s = String::new();
    for (i, p) in g.processes.iter().enumerate() {
        let threads = g.threads.iter().filter(|t| t.process.index() == i).count();
        let _ = writeln!(
            s,
            "process P{i} incarnation {} threads {threads}",
            p.incarnation
        );
    }
    for (i, t) in g.threads.iter().enumerate() {
        let _ = writeln!(
            s,
            "thread H{i} P{} leaves {} name {:?}",
            t.process.index(),
            t.leaves,
            t.name
        );
    }
    for (i, o) in g.objects.iter().enumerate() {
        let _ = writeln!(s, "object O{i} {}", o.kind);
    }
    for (i, t) in g.types.iter().enumerate() {
        let _ = writeln!(
            s,
            "type T{i} {} -> {} frames {}/{} leaves {}",
            op(t.start.op),
            op(t.end.op),
            t.start.frames.len(),
            t.end.frames.len(),
            t.count
        );
    }
    for (i, l) in g.leaves.iter().enumerate() {
        let _ = writeln!(
            s,
            "leaf L{i} H{} T{} {} -> {} {} events {}..{} bytes {}/{}",
            l.thread.index(),
            l.ty.index(),
            op(l.start_op),
            op(l.end_op),
            obj(l.end_obj),
            l.start_event,
            l.end_event,
            l.bytes_in,
            l.bytes_out
        );
    }
    for f in &g.leaf_files {
        let _ = writeln!(
            s,
            "file L{} bytes {}/{}",
            f.leaf.index(),
            f.bytes_in,
            f.bytes_out
        );
    }
    for (i, x) in g.externals.iter().enumerate() {
        let role = format!("{:?}", x.role).to_lowercase();
        let _ = writeln!(s, "external X{i} {role} O{}", x.obj.index());
    }
    for l in &g.locks {
        let _ = writeln!(
            s,
            "lock O{} acquisitions {} contended {}",
            l.obj.index(),
            l.acquisitions,
            l.contended
        );
    }
    for w in &g.lock_waits {
        let holder = w
            .holder
            .map_or_else(|| "-".into(), |h| format!("L{}", h.index()));
        let _ = writeln!(
            s,
            "lockwait O{} L{} held-by {holder}",
            w.obj.index(),
            w.waiter.index()
        );
    }
    for w in &g.inner_waits {
        let _ = writeln!(
            s,
            "inner L{} {} {}",
            w.leaf.index(),
            w.op.name(),
            obj(w.obj)
        );
    }
    let u = &g.unmatched;
    let _ = writeln!(
        s,
        "unmatched cond_waits {} sem_waits {} futex_waits {} joins {} starts {} \
         external_bytes_in {} external_bytes_out {}",
        u.cond_waits,
        u.sem_waits,
        u.futex_waits,
        u.joins,
        u.starts,
        u.external_bytes_in,
        u.external_bytes_out
    );
    s
}

/// The rows of the graph's edges, in the graph's (sorted) order.
pub fn edge_rows(g: &Graph) -> String {
    let mut s = String::new();
    for e in &g.edges {
        let _ = writeln!(
            s,
            "{} -> {} {} {}",
            node(g, e.from),
            node(g, e.to),
            e.kind.name(),
            obj(e.obj)
        );
    }
    s
}
