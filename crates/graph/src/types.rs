//! Leaf types: each thread's (start op, start stack, end op, end stack) tuples symbolized and
//! interned across the whole trace, so that the same call sites in two threads or two processes
//! of one program give one type.

use ahash::AHashMap;
use scalpel_model::graph::{BoundaryInfo, LeafType, OpName};
use scalpel_model::read::{FileTrace, ModuleMap, ProcessTrace};

use super::leaves::LocalType;
use scalpel_symbols::{naming_frame, short_name, SkipList};
use scalpel_symbols::{ModuleWarning, Symbolizer};

/// A symbolized stack: frame names, innermost first, and the naming function.
type Sig = (Vec<String>, Option<String>);

/// Interns symbolized stacks and leaf types for one trace.
pub(super) struct TypeTable<'a> {
    sym: Symbolizer,
    empty: ModuleMap,
    skip: &'a SkipList,
    sigs: Vec<Sig>,
    sig_index: AHashMap<Vec<String>, u32>,
    index: AHashMap<(Option<OpName>, u32, Option<OpName>, u32), u32>,
    /// The types, in order of first appearance.
    pub types: Vec<LeafType>,
    /// Call sites of inner waits, by stack signature.
    site_index: AHashMap<u32, u32>,
    /// The call sites, in order of first use.
    pub sites: Vec<BoundaryInfo>,
}

/// The process's module maps, newest first.
fn maps_newest_first(p: &ProcessTrace) -> Vec<&ModuleMap> {
    let mut maps: Vec<&ModuleMap> = p.files().flat_map(|f| f.maps.iter()).collect();
    maps.sort_by_key(|m| std::cmp::Reverse(m.ts_ns));
    maps
}

impl<'a> TypeTable<'a> {
    /// An empty table that names leaves with `skip`.
    pub(super) fn new(skip: &'a SkipList) -> Self {
        TypeTable {
            sym: Symbolizer::new(),
            empty: ModuleMap::parse(0, b""),
            skip,
            sigs: vec![(Vec::new(), None)],
            sig_index: AHashMap::from_iter([(Vec::new(), 0)]),
            index: AHashMap::new(),
            types: Vec::new(),
            site_index: AHashMap::new(),
            sites: Vec::new(),
        }
    }

    /// Warnings about modules that could not be symbolized.
    pub(super) fn warnings(&self) -> &[ModuleWarning] {
        self.sym.warnings()
    }

    /// Symbolizes stack `id` of `file` and interns it (0: no stack).
    fn sig(&mut self, maps: &[&ModuleMap], file: &FileTrace, id: u32) -> u32 {
        let Some(pcs) = (id != 0).then(|| file.stacks.get(&u64::from(id))).flatten() else {
            return 0;
        };
        let frames: Vec<_> = pcs
            .iter()
            .map(|&pc| {
                // A return address points after the call: look up the call itself.
                let addr = pc.saturating_sub(1);
                let map = maps.iter().find(|m| m.find(addr).is_some()).copied();
                match map {
                    Some(m) => self.sym.frame(m, addr),
                    None => self.sym.frame(&self.empty, addr),
                }
            })
            .collect();
        let names: Vec<String> = frames.iter().map(frame_name).collect();
        if let Some(&i) = self.sig_index.get(&names) {
            return i;
        }
        let function = naming_frame(&frames, self.skip).map(|i| frame_name(&frames[i]));
        let i = self.sigs.len() as u32;
        self.sig_index.insert(names.clone(), i);
        self.sigs.push((names, function));
        i
    }

    /// Maps stacks of one thread's file to call-site ids (indices into `sites`).
    pub(super) fn thread_sites(
        &mut self,
        p: &ProcessTrace,
        file: &FileTrace,
        stacks: impl Iterator<Item = u32>,
    ) -> Vec<u32> {
        let maps = maps_newest_first(p);
        stacks
            .map(|stack| {
                let sig = self.sig(&maps, file, stack);
                let next = self.sites.len() as u32;
                *self.site_index.entry(sig).or_insert_with(|| {
                    let (frames, function) = &self.sigs[sig as usize];
                    self.sites.push(BoundaryInfo {
                        op: None,
                        function: function.clone(),
                        frames: frames.clone(),
                    });
                    next
                })
            })
            .collect()
    }

    /// Maps one thread's local types to global type ids.
    pub(super) fn thread_types(
        &mut self,
        p: &ProcessTrace,
        file: &FileTrace,
        local: &[LocalType],
    ) -> Vec<u32> {
        let maps = maps_newest_first(p);
        local
            .iter()
            .map(|t| {
                let (sop, sstack, eop, estack) = (t.start_op, t.start_stack, t.end_op, t.end_stack);
                let s = self.sig(&maps, file, sstack);
                let e = self.sig(&maps, file, estack);
                let key = (sop, s, eop, e);
                if let Some(&t) = self.index.get(&key) {
                    return t;
                }
                let t = self.types.len() as u32;
                self.index.insert(key, t);
                let boundary = |op: Option<OpName>, sig: &Sig| BoundaryInfo {
                    op,
                    function: sig.1.clone(),
                    frames: sig.0.clone(),
                };
                let start = boundary(sop, &self.sigs[s as usize]);
                let end = boundary(eop, &self.sigs[e as usize]);
                self.types.push(LeafType {
                    // Named once the leaves are known (`naming::name_types`).
                    name: String::new(),
                    start,
                    end,
                    count: 0,
                });
                t
            })
            .collect()
    }
}

/// A frame as a type key and display text: its function, or its module offset.
fn frame_name(f: &scalpel_symbols::Frame) -> String {
    match (&f.function, &f.module, f.offset) {
        (Some(name), _, _) => name.clone(),
        (None, Some(m), Some(off)) => format!(
            "[+{off:#x}] in {}",
            m.file_name().unwrap_or_default().to_string_lossy()
        ),
        _ => format!("[{:#x}]", f.addr),
    }
}

/// Frames that say nothing about who called: thread and process entry, and the functions the
/// skip list looks past when naming (runtime and library wrappers).
fn says_nothing(f: &str, skip: &SkipList) -> bool {
    f.starts_with('[')
        || matches!(f, "start_thread" | "clone" | "clone3" | "_start" | "main")
        || skip.functions.iter().any(|p| f.starts_with(p.as_str()))
        || f.starts_with("std::rt::")
}

/// A type with fewer leaves than this never lengthens another type's name: as many as the miner
/// needs to call something repeated (`scalpel_mine::DEFAULT_MIN_SUPPORT`).
const RARE_COUNT: u64 = 5;

/// Leaf types whose names collide (a helper like `send_msg` called from several places) are
/// named after their callers too: `send_msg < stage_two`, taking the first named frame below
/// the naming one that tells them apart (thread entry and runtime frames never do).
///
/// A rare type does not rename the common ones: when the types of a group with at least
/// [`RARE_COUNT`] leaves all have one caller, only the rare types with another caller are named
/// after it. Otherwise one stray leaf (a PostgreSQL backend that waited once in the middle of a
/// `COPY`) renamed the type of 50,000 waits in one recording and not in the next, and names
/// must stay the same from one recording of a program to the next. The bound is a count, not a
/// share of the largest type: a side path that runs a fixed number of times (a session's
/// start-up messages, 940 of PostgreSQL's `secure_read`s) against a main path that grows with
/// the load (100,000 statements) crossed a 1% share between two recordings of one setting, and
/// renamed the main path in one of them.
pub(super) fn disambiguate(types: &mut [LeafType], skip: &SkipList) {
    let caller = |b: &BoundaryInfo, depth: usize| -> Option<String> {
        let f = b.function.as_ref()?;
        let at = b.frames.iter().position(|x| x == f)?;
        b.frames[at + 1..]
            .iter()
            .filter(|x| !says_nothing(x, skip))
            .nth(depth)
            .cloned()
    };
    for depth in 0..3 {
        let mut by_name: AHashMap<String, Vec<usize>> = AHashMap::new();
        for (i, t) in types.iter().enumerate() {
            by_name.entry(t.name.clone()).or_default().push(i);
        }
        let mut changed = false;
        let mut groups: Vec<Vec<usize>> = by_name.into_values().filter(|v| v.len() > 1).collect();
        groups.sort_unstable();
        for group in groups {
            // Only when the callers differ within the group.
            let callers: Vec<Option<String>> = group
                .iter()
                .map(|&i| {
                    let t = &types[i];
                    let b = if t.end.function.is_some() {
                        &t.end
                    } else {
                        &t.start
                    };
                    caller(b, depth)
                })
                .collect();
            let mut distinct = callers.clone();
            distinct.sort_unstable();
            distinct.dedup();
            if distinct.len() < 2 {
                continue;
            }
            let common = |i: usize| types[i].count >= RARE_COUNT;
            let mut common_callers: Vec<&Option<String>> = group
                .iter()
                .zip(&callers)
                .filter(|(&i, _)| common(i))
                .map(|(_, c)| c)
                .collect();
            common_callers.sort_unstable();
            common_callers.dedup();
            // The common types' one caller, when they agree: they keep the name.
            let keep = match common_callers.as_slice() {
                [one] => Some((*one).clone()),
                _ => None,
            };
            for (&i, c) in group.iter().zip(callers) {
                if keep.as_ref().is_some_and(|k| *k == c) {
                    continue;
                }
                if let Some(c) = c {
                    types[i].name = format!("{} < {}", types[i].name, short_name(&c));
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A type named `wait`, ending at a stack `wait < callers…`, with `count` leaves.
    fn ty(callers: &[&str], count: u64) -> LeafType {
        let mut frames = vec!["wait".to_string()];
        frames.extend(callers.iter().map(|c| c.to_string()));
        LeafType {
            name: "wait".to_string(),
            start: BoundaryInfo {
                op: None,
                function: None,
                frames: Vec::new(),
            },
            end: BoundaryInfo {
                op: None,
                function: Some("wait".to_string()),
                frames,
            },
            count,
        }
    }

    fn names(types: &[LeafType]) -> Vec<&str> {
        types.iter().map(|t| t.name.as_str()).collect()
    }

    #[test]
    fn a_rare_type_is_named_after_its_caller_without_renaming_the_common_ones() {
        let skip = SkipList::default();
        // The same two common types, with and without a rare one from elsewhere.
        let common = || vec![ty(&["read", "serve"], 50_000), ty(&["read", "serve"], 900)];
        let mut alone = common();
        disambiguate(&mut alone, &skip);
        let mut with_rare = common();
        with_rare.push(ty(&["copy", "load"], 1));
        disambiguate(&mut with_rare, &skip);
        assert_eq!(names(&alone), ["wait", "wait"]);
        assert_eq!(names(&with_rare), ["wait", "wait", "wait < copy"]);
        // Common types with different callers are all named after them, however small the
        // second's share of the first's count.
        let mut two = vec![ty(&["read", "serve"], 50_000), ty(&["write", "flush"], 600)];
        disambiguate(&mut two, &skip);
        assert_eq!(names(&two), ["wait < read", "wait < write"]);
        let mut two = vec![
            ty(&["read", "serve"], 100_000),
            ty(&["write", "flush"], 940),
        ];
        disambiguate(&mut two, &skip);
        assert_eq!(names(&two), ["wait < read", "wait < write"]);
        // Under the count, a type is rare whatever the group's size.
        let mut two = vec![ty(&["read", "serve"], 10), ty(&["write", "flush"], 4)];
        disambiguate(&mut two, &skip);
        assert_eq!(names(&two), ["wait", "wait < write"]);
    }
}
