//! Readable task names, stable from one recording to the next, and the user's overrides.
//!
//! A leaf type keeps the graph's name (the function that reached its ending sync point, or its
//! operations in their place: see `graph::naming`). A group is named by its first leaf (the
//! earliest in its first occurrence) and its dominant leaf type (the most running time over all
//! its occurrences): `recv_packet → do_work`, or one name when they are the same; operation
//! names in one place share it (`tcp read → sendmsg in memcached`). A loop is `loop:
//! BODY`. Names that come out equal (leaf types included) get `#` and the first hex digits of
//! a key computed from the type's content (its leaf boundaries' operations and stacks; for a
//! group, its children's keys and the edges most of its occurrences have; for a loop, its
//! body's), enough digits to tell them apart, so that a name picks one type and the same
//! program gives the same names whatever order the types were found in; but a type far more
//! common than each of the others of its name, or else the one that holds all the others
//! among its parts, keeps the bare name. Stacks enter the key
//! in the form that does not depend on the machine's debug symbols (`BoundaryInfo::code_key`:
//! a shared library's frames by its file name alone) when that tells a type from the others of
//! its name, and as symbolized when it does not (two call sites in one library). An override
//! file maps generated names to the user's:
//!
//! ```toml
//! [names]
//! "recv_packet → do_work" = "WorkerTask"
//! ```

use std::path::{Path, PathBuf};

use ahash::{AHashMap, AHashSet};
use scalpel_model::fnv::Fnv;
use scalpel_model::graph::EdgeKind;
use scalpel_model::graph::{LeafId, LeafTypeId};

use super::input::MineInput;
use super::ix::IxLists;
use scalpel_model::task::{OccRef, TaskKind, TaskType, TaskTypeId};

/// The name override file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum NamesError {
    /// Unreadable.
    #[error("cannot read the names file {}: {source}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Not a regular file, or too long to be a names file.
    #[error("the names file: {0}")]
    Open(#[from] scalpel_model::open::OpenError),
    /// Not UTF-8.
    #[error("{}: expected UTF-8 text", .path.display())]
    NotText {
        /// The file.
        path: PathBuf,
    },
    /// Not the expected TOML.
    #[error("{}: expected a [names] table of \"generated name\" = \"new name\": {message}", .path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's complaint.
        message: String,
    },
}

/// The longest names file read: a line per task type renamed, and a model has far fewer types.
const MAX_NAMES_FILE: u64 = 16 << 20;

/// Overrides: generated name → the user's name.
#[derive(Clone, Debug, Default)]
pub struct NameOverrides(pub Vec<(String, String)>);

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct NamesFile {
    names: std::collections::BTreeMap<String, String>,
}

impl NameOverrides {
    /// Reads a names file.
    pub fn load(path: &Path) -> Result<NameOverrides, NamesError> {
        // Never a FIFO or a device, and bounded: the whole file is held while it is parsed.
        let opened = scalpel_model::open::open_named(path, MAX_NAMES_FILE)?;
        let bytes = scalpel_model::open::read_all(opened)?;
        let text = String::from_utf8(bytes).map_err(|_| NamesError::NotText {
            path: path.to_owned(),
        })?;
        let f: NamesFile = toml::from_str(&text).map_err(|e| NamesError::Parse {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
        Ok(NameOverrides(f.names.into_iter().collect()))
    }
}

/// Names every type; returns the overrides that matched no type.
pub(super) fn name_types(
    types: &mut [TaskType],
    graph: &MineInput<'_>,
    leaf_parent: &[Option<OccRef>],
    overrides: &NameOverrides,
) -> Vec<String> {
    let leaf_name = |t: LeafTypeId| -> String {
        graph
            .types
            .get(t.index())
            .map_or_else(|| format!("type {t}"), |ty| ty.name.clone())
    };
    for i in 0..types.len() {
        let name = match types[i].kind {
            TaskKind::Leaf => leaf_name(types[i].leaf_type.unwrap_or(LeafTypeId::at(i))),
            TaskKind::Loop => {
                let body = types[i].children.first().map(|c| c.ty.index());
                match body {
                    Some(b) if b < i => format!("loop: {}", types[b].name),
                    _ => "loop".to_owned(),
                }
            }
            TaskKind::Group => group_name(&types[i], graph, &leaf_name),
            TaskKind::Session => {
                // Named by its main member (most frequent), which was named before it.
                let main = types[i]
                    .children
                    .iter()
                    .max_by_key(|c| (c.count, std::cmp::Reverse(c.ty)))
                    .map(|c| c.ty.index());
                match main {
                    Some(m) if m < i => format!("session: {}", types[m].name),
                    _ => "session".to_owned(),
                }
            }
        };
        types[i].name = name;
    }
    // Disambiguate by content, so that the suffix does not depend on type order; by the keys
    // that hold on every machine when they tell a name's types apart, else by the stacks as
    // this machine symbolized them (shared libraries' call sites told apart by their names).
    let portable = content_keys(types, graph, leaf_parent, Stacks::Portable);
    let mut full: Option<Vec<u64>> = None;
    let mut by_name: AHashMap<String, Vec<usize>> = AHashMap::new();
    for (i, ty) in types.iter().enumerate() {
        by_name.entry(ty.name.clone()).or_default().push(i);
    }
    // Only the types whose portable keys collide take their full ones: a type's suffix does
    // not change because another type of its name came or went (Apache's last window, whose
    // shutdown adds a type of one name: that name's every type got another suffix there, and
    // `top`, which adds windows up by name, showed one task twice).
    let mut keys = portable.clone();
    let mut renamed = Vec::new();
    for group in by_name.into_values().filter(|g| g.len() > 1) {
        let main = dominant(&group, types).or_else(|| holder(&group, types));
        if !all_differ(&group, &portable) {
            let full =
                full.get_or_insert_with(|| content_keys(types, graph, leaf_parent, Stacks::Full));
            for &i in &group {
                if group.iter().any(|&j| j != i && portable[j] == portable[i]) {
                    keys[i] = full[i];
                }
            }
        }
        for (&i, suffix) in group.iter().zip(suffixes(&group, &keys)) {
            if Some(i) != main {
                renamed.push((i, suffix));
            }
        }
    }
    for (i, suffix) in renamed {
        types[i].name = format!("{} #{suffix}", types[i].name);
    }
    let mut used = AHashSet::new();
    for ty in types.iter_mut() {
        if let Some((from, to)) = overrides.0.iter().find(|(from, _)| *from == ty.name) {
            used.insert(from.clone());
            ty.name = to.clone();
        }
    }
    overrides
        .0
        .iter()
        .filter(|(from, _)| !used.contains(from))
        .map(|(from, _)| from.clone())
        .collect()
}

/// The type of a group sharing one name, none of them [`dominant`], that holds every other
/// type of the group among its parts (children, their children, …): it keeps the bare name.
/// Why: a task and a part of it named alike with comparable counts (PostgreSQL's COPY: a
/// refill read with its run of reads, and that pair as a part, ~50 each) are told apart by
/// where they stand, and whether the part is a type at all can turn on one occurrence standing
/// alone in one recording and none in the next; the task's own name then stays the same
/// either way. Why after [`dominant`]: a rare task holding a common part (a few requests made
/// of one leaf type and something else) would otherwise take the bare name from the part,
/// whose name would then change with whether the rare task came.
fn holder(group: &[usize], types: &[TaskType]) -> Option<usize> {
    group.iter().copied().find(|&top| {
        let parts = parts_of(top, types);
        group.iter().all(|&i| i == top || parts.contains(&i))
    })
}

/// Every type reachable from `top` through children (without `top` unless a cycle leads back).
fn parts_of(top: usize, types: &[TaskType]) -> AHashSet<usize> {
    let mut seen = AHashSet::new();
    let mut stack = vec![top];
    while let Some(t) = stack.pop() {
        for c in types.get(t).map_or(&[][..], |t| &t.children[..]) {
            if seen.insert(c.ty.index()) {
                stack.push(c.ty.index());
            }
        }
    }
    seen
}

/// How many times more often than every other type of its name a type must occur to keep the
/// bare name.
const DOMINANT: u64 = 10;

/// The type of a group sharing one name that keeps the name bare: the one that occurs at least
/// [`DOMINANT`] times as often as each of the others. A rare type of the same name (a variant
/// seen a few times in one recording and not in the next) then leaves the main type's name as
/// it is from one recording to the next, instead of giving it a suffix in some recordings only.
/// Types of comparable counts all keep their suffixes: which one is larger may change.
fn dominant(group: &[usize], types: &[TaskType]) -> Option<usize> {
    let &top = group
        .iter()
        .max_by_key(|&&i| (types[i].count, std::cmp::Reverse(i)))?;
    group
        .iter()
        .filter(|&&i| i != top)
        .map(|&i| types[i].count)
        .all(|c| c.saturating_mul(DOMINANT) <= types[top].count)
        .then_some(top)
}

fn group_name(
    ty: &TaskType,
    graph: &MineInput<'_>,
    leaf_name: &dyn Fn(LeafTypeId) -> String,
) -> String {
    // A type with variants is named by its core: the occurrences with nothing added, when
    // there are any (extra steps' time would otherwise pick the dominant leaf, run by run).
    let bare = ty
        .variants
        .iter()
        .position(|v| v.extra.is_empty())
        .map(|v| v as u32);
    let core: Vec<&scalpel_model::task::Occurrence> = ty
        .occurrences
        .iter()
        .filter(|o| bare.is_none() || o.variant == bare)
        .collect();
    let Some(first_occ) = core.first() else {
        return "task".to_owned();
    };
    let first = first_occ
        .leaves
        .iter()
        .filter_map(|&l| graph.leaves.get(l.index()).map(|x| (x.start_ns, l, x.ty)))
        .min()
        .map(|x| x.2);
    let mut time: AHashMap<LeafTypeId, u64> = AHashMap::new();
    for occ in &core {
        for &l in &occ.leaves {
            if let Some(x) = graph.leaves.get(l.index()) {
                *time.entry(x.ty).or_insert(0) += x.end_ns.saturating_sub(x.start_ns);
            }
        }
    }
    let dominant = time
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(&a.0)))
        .map(|x| x.0);
    match (first, dominant) {
        (Some(f), Some(d)) if f != d && leaf_name(f) != leaf_name(d) => {
            joined(&leaf_name(f), &leaf_name(d))
        }
        (Some(f), _) => leaf_name(f),
        _ => "task".to_owned(),
    }
}

/// Two leaf names as one: `a → b`, or where both are operations in one place, the operations in
/// that place (`tcp read` and `tcp read → sendmsg` in `memcached` give `tcp read → sendmsg in
/// memcached`).
fn joined(first: &str, dominant: &str) -> String {
    let split = |n: &str| {
        n.rsplit_once(" in ")
            .map(|(ops, at)| (ops.to_owned(), at.to_owned()))
    };
    match (split(first), split(dominant)) {
        (Some((a, at)), Some((b, at2))) if at == at2 => {
            let last = a.rsplit(" → ").next().unwrap_or(&a);
            match b.strip_prefix(last) {
                Some(rest) if rest.is_empty() || rest.starts_with(" → ") => {
                    format!("{a}{rest} in {at}")
                }
                _ => format!("{a} → {b} in {at}"),
            }
        }
        _ => format!("{first} → {dominant}"),
    }
}

/// Each type's content key (see the module docs), children before parents.
/// Which form of a leaf boundary's stack a key is computed from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stacks {
    /// `BoundaryInfo::code_key`: the same whichever debug symbols the machine has.
    Portable,
    /// The frames as symbolized, shared libraries' by name: tells apart call sites in one
    /// library, on this machine.
    Full,
}

/// Whether the types of `group` all have different keys.
fn all_differ(group: &[usize], keys: &[u64]) -> bool {
    let mut seen: Vec<u64> = group.iter().map(|&i| keys[i]).collect();
    seen.sort_unstable();
    seen.windows(2).all(|w| w[0] != w[1])
}

fn content_keys(
    types: &[TaskType],
    graph: &MineInput<'_>,
    leaf_parent: &[Option<OccRef>],
    stacks: Stacks,
) -> Vec<u64> {
    let mut keys = vec![0u64; types.len()];
    let mut order: Vec<usize> = (0..types.len()).collect();
    order.sort_by_key(|&i| (types[i].level, i));
    let mut model_type_of_leaf_type: AHashMap<LeafTypeId, usize> = AHashMap::new();
    for (i, t) in types.iter().enumerate() {
        if t.kind == TaskKind::Leaf {
            model_type_of_leaf_type.insert(t.leaf_type.unwrap_or(LeafTypeId::at(i)), i);
        }
    }
    let out_edges = OutEdges::new(graph);
    for i in order {
        let ty = &types[i];
        let mut h = Fnv::new();
        match ty.kind {
            TaskKind::Leaf => {
                h.bytes(b"leaf");
                let lt = ty.leaf_type.unwrap_or(LeafTypeId::at(i));
                if let Some(l) = graph.types.get(lt.index()) {
                    for b in [&l.start, &l.end] {
                        h.u64(b.op.map_or(u64::MAX, |o| u64::from(o.code())));
                        match stacks {
                            Stacks::Portable => {
                                h.u64(b.code_key);
                            }
                            Stacks::Full => {
                                for f in &b.frames {
                                    h.bytes(f.as_bytes());
                                }
                                h.bytes(b"|");
                            }
                        }
                    }
                }
            }
            TaskKind::Loop => {
                h.bytes(b"loop");
                for c in &ty.children {
                    h.u64(keys.get(c.ty.index()).copied().unwrap_or(0));
                }
            }
            TaskKind::Session => {
                // By its main member: what else a connection did comes and goes by run.
                h.bytes(b"session");
                let main = ty
                    .children
                    .iter()
                    .max_by_key(|c| (c.count, std::cmp::Reverse(c.ty)))
                    .map(|c| c.ty.index());
                h.u64(main.and_then(|m| keys.get(m).copied()).unwrap_or(0));
            }
            TaskKind::Group => {
                h.bytes(b"group");
                let parts = Parts {
                    types,
                    graph,
                    leaf_parent,
                    leaf_model_type: &model_type_of_leaf_type,
                    keys: &keys,
                    out_edges: &out_edges,
                };
                h.u64(parts.shape(TaskTypeId::at(i)));
            }
        }
        keys[i] = h.get();
    }
    keys
}

/// Every leaf's outgoing edges to leaves (an index, built once).
struct OutEdges(IxLists<LeafId, (LeafId, EdgeKind)>);

impl OutEdges {
    fn new(graph: &MineInput<'_>) -> OutEdges {
        let n = graph.leaves.len() as u32;
        // Graph nodes below the leaf count are the leaves, by id.
        let leaf = |id: scalpel_model::graph::NodeId| LeafId::new(id.get());
        let mut list: Vec<(LeafId, LeafId, EdgeKind)> = graph
            .edges
            .iter()
            .filter(|e| e.from.get() < n && e.to.get() < n)
            .map(|e| (leaf(e.from), leaf(e.to), super::pattern_kind(e.kind)))
            .collect();
        list.sort_unstable_by_key(|&(a, b, k)| (a, b, k as u8));
        let pairs = list.iter().map(|&(a, b, k)| (a, (b, k)));
        OutEdges(IxLists::new(n as usize, pairs))
    }

    fn of(&self, leaf: LeafId) -> &[(LeafId, EdgeKind)] {
        self.0.of(leaf)
    }
}

/// What a group type's key is computed from.
struct Parts<'a> {
    types: &'a [TaskType],
    graph: &'a MineInput<'a>,
    leaf_parent: &'a [Option<OccRef>],
    leaf_model_type: &'a AHashMap<LeafTypeId, usize>,
    keys: &'a [u64],
    out_edges: &'a OutEdges,
}

impl Parts<'_> {
    /// The shape of the type's first occurrence: its direct parts (leaves and child
    /// occurrences, loops opaque, each labelled by its type's key) and the edges between them,
    /// hashed by colour refinement, which gives isomorphic shapes the same hash whatever order
    /// the parts were found in. Edges that the miner leaves out of its keys are left out here
    /// too (a weak program edge beside another edge, a wake-up beside a hand-off): they come
    /// and go with timing.
    fn shape(&self, t: TaskTypeId) -> u64 {
        // An occurrence of the core alone, when the type has variants: extra steps are not
        // its shape.
        let ty = &self.types[t.index()];
        let bare = ty
            .variants
            .iter()
            .position(|v| v.extra.is_empty())
            .map(|v| v as u32);
        let at = ty
            .occurrences
            .iter()
            .position(|o| o.variant == bare)
            .unwrap_or(0);
        let Some(occ) = ty.occurrences.get(at) else {
            return 0;
        };
        let me = OccRef {
            ty: t,
            index: at as u32,
        };
        // Each leaf's direct part: the child occurrence under `me` that holds it, or itself.
        let mut part_of: AHashMap<LeafId, usize> = AHashMap::new();
        let mut parts: Vec<(Option<OccRef>, u64)> = Vec::new();
        let mut index: AHashMap<Option<OccRef>, usize> = AHashMap::new();
        for &l in &occ.leaves {
            let mut part: Option<OccRef> = None;
            let mut up = self.leaf_parent.get(l.index()).copied().flatten();
            // Bounded by the depth of the hierarchy; a broken chain ends the climb.
            for _ in 0..self.types.len() {
                match up {
                    Some(r) if r == me => break,
                    Some(r) => {
                        part = Some(r);
                        up = self.types[r.ty.index()]
                            .occurrences
                            .get(r.index as usize)
                            .and_then(|o| o.parent);
                    }
                    None => break,
                }
            }
            let key = match part {
                Some(r) => self.keys[r.ty.index()],
                None => {
                    let lt = self.graph.leaves[l.index()].ty;
                    self.leaf_model_type.get(&lt).map_or(0, |&m| self.keys[m])
                }
            };
            let id = match part {
                // A leaf directly in the group is a part of its own.
                None => {
                    parts.push((None, key));
                    parts.len() - 1
                }
                Some(_) => *index.entry(part).or_insert_with(|| {
                    parts.push((part, key));
                    parts.len() - 1
                }),
            };
            part_of.insert(l, id);
        }
        // Edges between parts, each with the leaf types at its ends (its ports, near enough).
        let leaf_key = |l: LeafId| {
            let lt = self.graph.leaves[l.index()].ty;
            self.leaf_model_type.get(&lt).map_or(0, |&m| self.keys[m])
        };
        let mut edges: Vec<(usize, usize, EdgeKind, u64)> = Vec::new();
        for &l in &occ.leaves {
            let a = part_of[&l];
            for &(to, kind) in self.out_edges.of(l) {
                if let Some(&b) = part_of.get(&to) {
                    if a != b {
                        let ports = Fnv::new().u64(leaf_key(l)).u64(leaf_key(to)).get();
                        edges.push((a, b, kind, ports));
                    }
                }
            }
        }
        edges.sort_unstable_by_key(|&(a, b, k, p)| (a, b, k as u8, p));
        edges.dedup();
        let has = |a: usize, b: usize, f: &dyn Fn(EdgeKind) -> bool| {
            edges.iter().any(|&(x, y, k, _)| x == a && y == b && f(k))
        };
        let kept: Vec<(usize, usize, EdgeKind, u64)> = edges
            .iter()
            .copied()
            .filter(|&(a, b, k, _)| match k {
                EdgeKind::ProgramWeak => !has(a, b, &|k| k != EdgeKind::ProgramWeak),
                EdgeKind::Cond | EdgeKind::Sem | EdgeKind::Futex | EdgeKind::Eventfd => {
                    !has(a, b, &|k| k == EdgeKind::Handoff)
                }
                _ => true,
            })
            .collect();
        // Colour refinement, a few rounds.
        let mut colour: Vec<u64> = parts.iter().map(|p| p.1).collect();
        for _ in 0..3 {
            let mut next = Vec::with_capacity(colour.len());
            for (p, &c) in colour.iter().enumerate() {
                let mut around: Vec<(u8, u8, u64, u64)> = kept
                    .iter()
                    .filter_map(|&(a, b, k, ports)| {
                        if a == p {
                            Some((0, k as u8, ports, colour[b]))
                        } else if b == p {
                            Some((1, k as u8, ports, colour[a]))
                        } else {
                            None
                        }
                    })
                    .collect();
                around.sort_unstable();
                let mut h = Fnv::new();
                h.u64(c);
                for (dir, k, ports, x) in around {
                    h.u64(u64::from(dir)).u64(u64::from(k)).u64(ports).u64(x);
                }
                next.push(h.get());
            }
            colour = next;
        }
        colour.sort_unstable();
        let mut h = Fnv::new();
        h.u64(colour.len() as u64);
        for c in colour {
            h.u64(c);
        }
        h.get()
    }
}

/// Suffixes for types of one name: the fewest hex digits of their keys (at least 4) that tell
/// their distinct keys apart; a type whose whole key equals an earlier one's (in type order)
/// gets that suffix numbered (`b104.2`). Why the distinct keys: one pair of equal keys used to
/// make every type of the name carry all sixteen digits.
fn suffixes(group: &[usize], keys: &[u64]) -> Vec<String> {
    let mut distinct: Vec<u64> = group.iter().map(|&i| keys[i]).collect();
    distinct.sort_unstable();
    distinct.dedup();
    let hex = |k: u64| format!("{k:016x}");
    let digits = [4usize, 6, 8, 12]
        .into_iter()
        .find(|&d| {
            let mut cut: Vec<String> = distinct.iter().map(|&k| hex(k)[..d].to_owned()).collect();
            cut.dedup();
            cut.len() == distinct.len()
        })
        .unwrap_or(16);
    let mut seen: AHashMap<u64, u32> = AHashMap::new();
    group
        .iter()
        .map(|&i| {
            let n = seen.entry(keys[i]).or_insert(0);
            *n += 1;
            let base = hex(keys[i])[..digits].to_owned();
            if *n == 1 {
                base
            } else {
                format!("{base}.{n}")
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ty(count: u64) -> TaskType {
        TaskType {
            name: "tcp read in loop".into(),
            kind: TaskKind::Leaf,
            level: 0,
            leaf_type: None,
            count,
            top_level: count,
            children: Vec::new(),
            edges: Vec::new(),
            variants: Vec::new(),
            occurrences: Vec::new(),
        }
    }

    #[test]
    fn only_a_type_ten_times_as_common_as_the_rest_keeps_a_bare_name() {
        let types = [ty(1000), ty(3), ty(100)];
        assert_eq!(dominant(&[0, 1, 2], &types), Some(0));
        let types = [ty(1000), ty(101), ty(3)];
        assert_eq!(dominant(&[0, 1, 2], &types), None);
        // Equal counts: neither.
        let types = [ty(5), ty(5)];
        assert_eq!(dominant(&[0, 1], &types), None);
    }

    fn holding(count: u64, children: &[usize]) -> TaskType {
        TaskType {
            kind: TaskKind::Group,
            children: children
                .iter()
                .map(|&c| scalpel_model::task::ChildRef {
                    ty: TaskTypeId::at(c),
                    count,
                })
                .collect(),
            ..ty(count)
        }
    }

    /// A task whose part shares its name keeps the bare name (when neither is ten times the
    /// other: `name_types` asks `dominant` first); types of
    /// one name side by side (neither inside the other) are left to the counts.
    #[test]
    fn a_task_holding_the_others_of_its_name_keeps_the_bare_name() {
        // 0: a leaf, 1: the part (0 twice), 2: the task (the part and a leaf), 3: its parent.
        let types = [
            ty(100),
            holding(50, &[0]),
            holding(40, &[1, 0]),
            holding(40, &[2]),
        ];
        assert_eq!(holder(&[1, 2], &types), Some(2));
        assert_eq!(holder(&[1, 3], &types), Some(3));
        assert_eq!(holder(&[2, 1], &types), Some(2));
        // Side by side: neither holds the other.
        let side = [ty(100), holding(50, &[0]), holding(40, &[0])];
        assert_eq!(holder(&[1, 2], &side), None);
    }

    /// Names of leaf types called `wait`, whose ending stacks are `ends` (frames and the
    /// stack's machine-independent key).
    fn names_of<const N: usize>(ends: [(&[&str], u64); N]) -> Vec<String> {
        let mut b = scalpel_model::testgraph::GraphBuilder::new();
        for _ in 0..N {
            b.leaf_type("wait", None);
        }
        let mut graph = b.build();
        for (t, (frames, key)) in graph.types.iter_mut().zip(ends) {
            t.end.frames = frames.iter().map(|f| f.to_string()).collect();
            t.end.code_key = key;
        }
        let input = MineInput::of(&graph);
        let mut types: Vec<TaskType> = (0..N)
            .map(|i| TaskType {
                leaf_type: Some(LeafTypeId::at(i)),
                ..ty(10)
            })
            .collect();
        name_types(&mut types, &input, &[], &NameOverrides::default());
        types.into_iter().map(|t| t.name).collect()
    }

    #[test]
    fn suffixes_do_not_change_with_the_debug_symbols_of_a_library() {
        // The same program on a machine with libc's debug symbols and on one without.
        let with = names_of([
            (&["wait", "a", "__libc_start_call_main"], 1),
            (&["wait", "b", "__libc_start_call_main"], 2),
            (&["wait", "c", "__libc_start_call_main"], 3),
        ]);
        let without = names_of([
            (&["wait", "a", "[+0x27249] in libc.so.6"], 1),
            (&["wait", "b", "[+0x27249] in libc.so.6"], 2),
            (&["wait", "c", "[+0x27249] in libc.so.6"], 3),
        ]);
        assert_eq!(with, without);
        assert!(with
            .iter()
            .all(|n| n.starts_with("wait #") && n.len() == 10));
    }

    #[test]
    fn call_sites_told_apart_only_inside_a_library_get_suffixes_from_their_stacks() {
        // Two stacks that differ in a library's frames alone have one machine-independent
        // key; their suffixes then come from the frames, short and without a `.2`.
        let names = names_of([
            (&["wait", "[+0x10] in mod_x.so"], 7),
            (&["wait", "[+0x20] in mod_x.so"], 7),
            (&["wait", "other"], 9),
        ]);
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), 3, "{names:?}");
        assert!(names.iter().all(|n| n.len() == 10), "{names:?}");
    }

    #[test]
    fn a_suffix_stays_when_other_types_of_its_name_collide() {
        // A window of a recording with one more type of the name, whose machine-independent
        // key is another's: the first type's suffix is what it is without them.
        let two = names_of([(&["wait", "other"], 9), (&["wait", "x"], 5)]);
        let three = names_of([
            (&["wait", "other"], 9),
            (&["wait", "[+0x10] in mod_x.so"], 7),
            (&["wait", "[+0x20] in mod_x.so"], 7),
        ]);
        assert_eq!(two[0], three[0], "{two:?} {three:?}");
        let mut unique = three.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), 3, "{three:?}");
    }

    #[test]
    fn equal_keys_are_numbered_and_leave_the_others_short() {
        let keys = [
            0xb104_8090_d647_5257,
            0xb104_8090_d647_5257,
            0x2e03_0000_0000_0001,
        ];
        assert_eq!(suffixes(&[0, 1, 2], &keys), ["b104", "b104.2", "2e03"]);
        // Distinct keys sharing their first four digits get six.
        let keys = [0x1234_5600_0000_0000, 0x1234_7800_0000_0000];
        assert_eq!(suffixes(&[0, 1], &keys), ["123456", "123478"]);
    }
}
