//! What a leaf type was blocked on: the calls, objects and call stacks that took its time, with
//! the leaf that held the lock or woke it.

use ahash::AHashMap;
use scalpel_model::format::ObjKind;
use scalpel_model::graph::{BoundaryInfo, Graph, LeafId, LeafTypeId, ObjId, OpName, SiteId};
use serde::Serialize;

use super::kinds::BlockKind;
use super::leaf::{channel_kind, end_kind, GraphIndex};

/// Frames of a call stack kept for display.
pub const STACK_FRAMES: usize = 8;

/// Blocked time of one leaf type in one call, on one object, with one peer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Blame {
    /// The leaf type.
    pub leaf_type: LeafTypeId,
    /// What kind of wait.
    pub kind: BlockKind,
    /// The call (`cond_wait`, `sleep` …).
    pub call: String,
    /// The function that made it.
    pub function: Option<String>,
    /// Its call stack, innermost first, cut to [`STACK_FRAMES`].
    pub stack: Vec<String>,
    /// The object waited on: `mutex 0x…`, `cond 0x…`, or a channel kind (`tcp`, `pipe`, `file`).
    pub object: String,
    /// The leaf type that held the lock or woke the wait, when traced.
    pub peer: Option<LeafTypeId>,
    /// How many calls.
    pub count: u64,
    /// Their time added up.
    pub total_ns: u64,
    /// The longest.
    pub max_ns: u64,
}

type Key = (
    LeafTypeId,
    BlockKind,
    OpName,
    Site,
    String,
    Option<LeafTypeId>,
);

/// Where a call was made: the end boundary of a leaf type, or an inner call site.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Site {
    End(LeafTypeId),
    Inner(SiteId),
}

fn object_name(g: &Graph, o: Option<ObjId>) -> String {
    let Some(info) = o.and_then(|o| g.objects.get(o.get() as usize)) else {
        return "-".into();
    };
    if info.kind.is(ObjKind::Stream) {
        channel_kind(g, o).into_owned()
    } else {
        format!("{} {:#x}", info.kind, info.key)
    }
}

/// Every leaf type's blocked time by call, object and peer, largest first within each leaf
/// type. Waits for new work ([`BlockKind::Idle`]) are left out.
pub(super) fn blame(g: &Graph, idx: &GraphIndex) -> Vec<Blame> {
    let mut acc: AHashMap<Key, (u64, u64, u64)> = AHashMap::new();
    let mut add = |k: Key, ns: u64| {
        let e = acc.entry(k).or_default();
        e.0 += 1;
        e.1 += ns;
        e.2 = e.2.max(ns);
    };
    for (i, l) in g.leaves.iter().enumerate() {
        let i = i as u32;
        let kind = end_kind(g, idx, i);
        if kind == BlockKind::Idle || l.block_ns == 0 {
            continue;
        }
        let Some(op) = l.end_op else { continue };
        let peer = idx.waker(g, i).map(|w| g.leaves[w as usize].ty);
        let key = (
            l.ty,
            kind,
            op,
            Site::End(l.ty),
            object_name(g, l.end_obj),
            peer,
        );
        add(key, l.block_ns);
    }
    let mut holders: AHashMap<(LeafId, ObjId), LeafId> = AHashMap::new();
    for w in &g.lock_waits {
        if let Some(h) = w.holder {
            holders.insert((w.waiter, w.obj), h);
        }
    }
    for w in &g.inner_waits {
        let Some(l) = g.leaves.get(w.leaf.index()) else {
            continue;
        };
        let kind = BlockKind::inside(w.op.op());
        let peer = w
            .obj
            .and_then(|o| holders.get(&(w.leaf, o)))
            .map(|&h| g.leaves[h].ty);
        let key = (
            l.ty,
            kind,
            w.op,
            Site::Inner(w.site),
            object_name(g, w.obj),
            peer,
        );
        add(key, w.ns);
    }
    let mut out: Vec<(Key, (u64, u64, u64))> = acc.into_iter().collect();
    out.sort_by(|a, b| {
        (a.0 .0, std::cmp::Reverse(a.1 .1), &a.0).cmp(&(b.0 .0, std::cmp::Reverse(b.1 .1), &b.0))
    });
    out.into_iter()
        .map(
            |((leaf_type, kind, op, site, object, peer), (count, total, max))| {
                let b: Option<&BoundaryInfo> = match site {
                    Site::End(t) => g.types.get(t.index()).map(|t| &t.end),
                    Site::Inner(s) => g.sites.get(s.index()),
                };
                Blame {
                    leaf_type,
                    kind,
                    call: op.name(),
                    function: b.and_then(|b| b.function.clone()),
                    stack: b
                        .map(|b| b.frames.iter().take(STACK_FRAMES).cloned().collect())
                        .unwrap_or_default(),
                    object,
                    peer,
                    count,
                    total_ns: total,
                    max_ns: max,
                }
            },
        )
        .collect()
}
