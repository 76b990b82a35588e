//! Leaf type names that say what the leaf does, even in a stripped program.
//!
//! A leaf type is named by the function that reached its ending call (`send_reply`) when that
//! function is the program's own code at the call. In a stripped program the nearest named frame
//! can be far out, and the name would say nothing of what the leaf did. Then the leaf is named
//! by its operations and the kinds of channel they were on, with the named frame as the place:
//! `tcp read → writev in ap_core_output_filter`. With no usable named frame the place is the
//! module: `tcp read → sendmsg in memcached` (its handlers are stripped, and libevent's
//! `event_base_loop` that called them is a loop, which never names the work: see
//! `scalpel_symbols::naming_frame`). A leaf that starts where its thread fetched new work has
//! no start operation and is named by its end: `tcp read in memcached`.

use ahash::AHashMap;
use scalpel_model::format::ChanKind;
use scalpel_model::graph::ChannelKind;
use scalpel_model::graph::{BoundaryInfo, Graph, LeafType, OpName};

use super::event::KindOf;
use scalpel_symbols::{short_name, SkipList};

/// The channel kinds seen most often at a type's start and end calls.
#[derive(Clone, Copy, Default)]
struct Channels {
    start: Option<ChanKind>,
    end: Option<ChanKind>,
}

/// Renames every leaf type of `graph` (before callers disambiguate equal names). `kinds` holds
/// each object's kind and channel code, by object index.
pub(super) fn name_types(graph: &mut Graph, kinds: &[KindOf], skip: &SkipList) {
    let chans = channels(graph, kinds);
    for (t, ty) in graph.types.iter_mut().enumerate() {
        ty.name = type_name(ty, chans.get(t).copied().unwrap_or_default(), skip);
    }
}

/// Per type, the most frequent channel kind of its leaves' ending call, and of the call that
/// ended the leaf before them on their thread (where they started).
fn channels(graph: &Graph, kinds: &[KindOf]) -> Vec<Channels> {
    let chan_of = |leaf: usize| -> Option<ChanKind> {
        let o = graph.leaves.get(leaf)?.end_obj?;
        kinds
            .get(o.index())
            .and_then(|&(_, c)| c)
            .and_then(ChannelKind::known)
            .filter(|&c| c != ChanKind::Other)
    };
    let mut counts: Vec<[AHashMap<ChanKind, u64>; 2]> = vec![Default::default(); graph.types.len()];
    for (i, l) in graph.leaves.iter().enumerate() {
        let Some(c) = counts.get_mut(l.ty.index()) else {
            continue;
        };
        if let Some(k) = chan_of(i) {
            *c[1].entry(k).or_default() += 1;
        }
        let prev_same_thread = i > 0 && graph.leaves[i - 1].thread == l.thread;
        if let Some(k) = prev_same_thread.then(|| chan_of(i - 1)).flatten() {
            *c[0].entry(k).or_default() += 1;
        }
    }
    let most = |m: &AHashMap<ChanKind, u64>| {
        m.iter()
            .max_by_key(|&(k, n)| (*n, std::cmp::Reverse(*k)))
            .map(|(&k, _)| k)
    };
    counts
        .iter()
        .map(|[s, e]| Channels {
            start: most(s),
            end: most(e),
        })
        .collect()
}

/// Whether an unnamed frame of the program lies inside the naming function: then that function
/// is a distant caller, not what the leaf does.
fn named_from_afar(b: &BoundaryInfo, f: &str, skip: &SkipList) -> bool {
    let Some(at) = b.frames.iter().position(|x| x == f) else {
        return false;
    };
    b.frames[..at].iter().any(|x| {
        x.starts_with("[+")
            && x.split_once(" in ")
                .is_some_and(|(_, m)| !skip.modules.iter().any(|s| m.contains(s.as_str())))
    })
}

/// The operations and channel kinds: `tcp read → sendmsg`, `eventfd read → tcp writev`,
/// `tcp read` (new work), `cond_wait → exit`.
fn operations(ty: &LeafType, ch: Channels) -> String {
    let op = |o: Option<OpName>, c: Option<ChanKind>, shown: Option<ChanKind>| {
        let name = o.map_or_else(|| "exit".to_owned(), OpName::name);
        match c {
            Some(c) if Some(c) != shown => format!("{} {name}", c.name()),
            _ => name,
        }
    };
    match (ty.start.op, ty.end.op) {
        (None, None) => "thread".to_owned(),
        (None, e) => op(e, ch.end, None),
        (s, e) => {
            let first = op(s, ch.start, None);
            let shown = ch.start.filter(|_| s.is_some());
            format!("{first} → {}", op(e, ch.end, shown))
        }
    }
}

/// A leaf type's name: its function, or its operations in their place (see the module docs).
fn type_name(ty: &LeafType, ch: Channels, skip: &SkipList) -> String {
    let b = if ty.end.function.is_some() {
        &ty.end
    } else {
        &ty.start
    };
    match &b.function {
        Some(f) if f.starts_with('[') => match f.split_once(" in ") {
            Some((_, module)) => format!("{} in {module}", operations(ty, ch)),
            None => operations(ty, ch),
        },
        Some(f) if named_from_afar(b, f, skip) => {
            format!("{} in {}", operations(ty, ch), short_name(f))
        }
        Some(f) => short_name(f),
        None => operations(ty, ch),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scalpel_model::format::Op;

    fn boundary(op: Option<Op>, frames: &[&str], function: Option<&str>) -> BoundaryInfo {
        BoundaryInfo {
            op: op.map(OpName::from),
            function: function.map(str::to_owned),
            frames: frames.iter().map(|s| s.to_string()).collect(),
            code_key: 0,
        }
    }

    fn ty(start: BoundaryInfo, end: BoundaryInfo) -> LeafType {
        LeafType {
            name: String::new(),
            start,
            end,
            count: 0,
        }
    }

    #[test]
    fn stripped_handlers_are_named_by_their_operations_in_the_nearest_named_frame() {
        let skip = SkipList::default();
        let tcp = Channels {
            start: Some(ChanKind::Tcp),
            end: Some(ChanKind::Tcp),
        };
        let frames = [
            "sendmsg",
            "[+0x1ea25] in memcached",
            "event_base_loop",
            "[+0x9000] in memcached",
        ];
        let t = ty(
            boundary(Some(Op::Read), &[], None),
            boundary(Some(Op::Sendmsg), &frames, Some("event_base_loop")),
        );
        assert_eq!(
            type_name(&t, tcp, &skip),
            "tcp read → sendmsg in event_base_loop"
        );
        // The program's own named function at the call names it, as before.
        let own = ["sendmsg", "send_reply", "main"];
        let t = ty(
            boundary(Some(Op::Read), &[], None),
            boundary(Some(Op::Sendmsg), &own, Some("send_reply")),
        );
        assert_eq!(type_name(&t, tcp, &skip), "send_reply");
        // No named frame: the module is the place; new work has no start.
        let t = ty(
            boundary(None, &[], None),
            boundary(
                Some(Op::Read),
                &["[+0x10] in nginx"],
                Some("[+0x10] in nginx"),
            ),
        );
        let mixed = Channels {
            start: None,
            end: Some(ChanKind::Eventfd),
        };
        assert_eq!(type_name(&t, mixed, &skip), "eventfd read in nginx");
        // No stack at all.
        let t = ty(boundary(None, &[], None), boundary(None, &[], None));
        assert_eq!(type_name(&t, Channels::default(), &skip), "thread");
        let t = ty(
            boundary(Some(Op::Read), &[], None),
            boundary(Some(Op::Write), &[], None),
        );
        let two = Channels {
            start: Some(ChanKind::Pipe),
            end: Some(ChanKind::Tcp),
        };
        assert_eq!(type_name(&t, two, &skip), "pipe read → tcp write");
    }
}
