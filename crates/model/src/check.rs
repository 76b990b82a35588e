//! Checks that every index in a [`Graph`] and a [`Model`] names an entry of its table, so that
//! code reading a `graph.json` or `model.json` from disk (which anyone may have edited) can
//! index without panicking. The stages' own output always passes.

use crate::graph::Graph;
use crate::task::Model;

/// An index that names no entry.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{table}[{index}].{field} is {value}, but {target} has {len} entries")]
pub struct Invalid {
    /// The table holding the bad index (`edges`, `leaves` …).
    pub table: &'static str,
    /// The entry.
    pub index: usize,
    /// Its field.
    pub field: &'static str,
    /// The value found.
    pub value: u64,
    /// The table it should index.
    pub target: &'static str,
    /// That table's length.
    pub len: usize,
}

/// Checks `value < len`.
fn within(
    table: &'static str,
    index: usize,
    field: &'static str,
    value: usize,
    target: &'static str,
    len: usize,
) -> Result<(), Invalid> {
    if value < len {
        Ok(())
    } else {
        Err(Invalid {
            table,
            index,
            field,
            value: value as u64,
            target,
            len,
        })
    }
}

impl Graph {
    /// Every index in range: threads' leaf ranges, leaves' threads, types and objects, edge
    /// ends and objects, externals', locks', waits' and side tables' references.
    pub fn check(&self) -> Result<(), Invalid> {
        let (leaves, objs) = (self.leaves.len(), self.objects.len());
        for (i, t) in self.threads.iter().enumerate() {
            within(
                "threads",
                i,
                "process",
                t.process.index(),
                "processes",
                self.processes.len(),
            )?;
            // Its leaves end at most at the end of the table.
            let end = t.first_leaf.index().saturating_add(t.leaves as usize);
            within(
                "threads",
                i,
                "first_leaf + leaves",
                end,
                "leaves + 1",
                leaves + 1,
            )?;
        }
        for (i, l) in self.leaves.iter().enumerate() {
            within(
                "leaves",
                i,
                "thread",
                l.thread.index(),
                "threads",
                self.threads.len(),
            )?;
            within("leaves", i, "type", l.ty.index(), "types", self.types.len())?;
            if let Some(o) = l.end_obj {
                within("leaves", i, "end_obj", o.index(), "objects", objs)?;
            }
        }
        let nodes = leaves + self.externals.len();
        for (i, e) in self.edges.iter().enumerate() {
            within("edges", i, "from", e.from.index(), "nodes", nodes)?;
            within("edges", i, "to", e.to.index(), "nodes", nodes)?;
            if let Some(o) = e.obj {
                within("edges", i, "obj", o.index(), "objects", objs)?;
            }
        }
        for (i, x) in self.externals.iter().enumerate() {
            within("externals", i, "obj", x.obj.index(), "objects", objs)?;
        }
        for (i, l) in self.locks.iter().enumerate() {
            within("locks", i, "obj", l.obj.index(), "objects", objs)?;
        }
        for (i, w) in self.lock_waits.iter().enumerate() {
            within("lock_waits", i, "obj", w.obj.index(), "objects", objs)?;
            within(
                "lock_waits",
                i,
                "waiter",
                w.waiter.index(),
                "leaves",
                leaves,
            )?;
            if let Some(h) = w.holder {
                within("lock_waits", i, "holder", h.index(), "leaves", leaves)?;
            }
        }
        for (i, w) in self.inner_waits.iter().enumerate() {
            within("inner_waits", i, "leaf", w.leaf.index(), "leaves", leaves)?;
            within(
                "inner_waits",
                i,
                "site",
                w.site.index(),
                "sites",
                self.sites.len(),
            )?;
            if let Some(o) = w.obj {
                within("inner_waits", i, "obj", o.index(), "objects", objs)?;
            }
        }
        for (i, f) in self.leaf_files.iter().enumerate() {
            within("leaf_files", i, "leaf", f.leaf.index(), "leaves", leaves)?;
        }
        for (i, p) in self.peer_transfers.iter().enumerate() {
            within(
                "peer_transfers",
                i,
                "leaf",
                p.leaf.index(),
                "leaves",
                leaves,
            )?;
            if let Some(o) = p.obj {
                within("peer_transfers", i, "obj", o.index(), "objects", objs)?;
            }
        }
        if !self.leaf_cpu_ns.is_empty() && self.leaf_cpu_ns.len() != leaves {
            return Err(Invalid {
                table: "leaf_cpu_ns",
                index: 0,
                field: "len",
                value: self.leaf_cpu_ns.len() as u64,
                target: "leaves",
                len: leaves,
            });
        }
        Ok(())
    }
}

impl Model {
    /// Every index in range, `graph` being the graph its leaf ids refer to: types' children,
    /// edges and occurrences, top-level edges and each leaf's parent.
    pub fn check(&self, graph: &Graph) -> Result<(), Invalid> {
        let (types, leaves) = (self.types.len(), graph.leaves.len());
        let occ_len = |ty: usize| -> usize {
            match self.types.get(ty) {
                Some(t) if t.occurrences.is_empty() => leaves,
                Some(t) => t.occurrences.len(),
                None => 0,
            }
        };
        for (i, t) in self.types.iter().enumerate() {
            if let Some(lt) = t.leaf_type {
                within(
                    "types",
                    i,
                    "leaf_type",
                    lt.index(),
                    "graph types",
                    graph.types.len(),
                )?;
            }
            for c in &t.children {
                within("types", i, "children.type", c.ty.index(), "types", types)?;
            }
            for e in &t.edges {
                within("types", i, "edges.from", e.from.index(), "types", types)?;
                within("types", i, "edges.to", e.to.index(), "types", types)?;
            }
            for o in &t.occurrences {
                for l in &o.leaves {
                    within(
                        "types",
                        i,
                        "occurrences.leaves",
                        l.index(),
                        "leaves",
                        leaves,
                    )?;
                }
                if let Some(p) = o.parent {
                    within(
                        "types",
                        i,
                        "occurrences.parent.type",
                        p.ty.index(),
                        "types",
                        types,
                    )?;
                    within(
                        "types",
                        i,
                        "occurrences.parent.index",
                        p.index as usize,
                        "occurrences",
                        occ_len(p.ty.index()),
                    )?;
                }
            }
        }
        for (i, e) in self.top_edges.iter().enumerate() {
            within("top_edges", i, "from", e.from.index(), "types", types)?;
            within("top_edges", i, "to", e.to.index(), "types", types)?;
        }
        for (i, p) in self.leaf_parent.iter().enumerate() {
            if let Some(p) = p {
                within("leaf_parent", i, "type", p.ty.index(), "types", types)?;
                within(
                    "leaf_parent",
                    i,
                    "index",
                    p.index as usize,
                    "occurrences",
                    occ_len(p.ty.index()),
                )?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{External, ExternalRole, ObjId};

    #[test]
    fn an_external_naming_no_object_is_invalid() {
        let mut g = Graph::new(Vec::new(), Vec::new(), Vec::new(), Vec::new());
        assert_eq!(g.check(), Ok(()));
        g.externals.push(External {
            role: ExternalRole::Source,
            obj: ObjId::new(4_294_967_294),
        });
        let e = g.check().unwrap_err();
        assert_eq!(
            (e.table, e.field, e.value),
            ("externals", "obj", 4_294_967_294)
        );
        assert_eq!(
            e.to_string(),
            "externals[0].obj is 4294967294, but objects has 0 entries"
        );
    }
}
