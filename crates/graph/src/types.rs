//! Leaf types: each thread's (start op, start stack, end op, end stack) tuples symbolized and
//! interned across the whole trace, so that the same call sites in two threads or two processes
//! of one program give one type.

use ahash::AHashMap;
use scalpel_model::fnv::Fnv;
use scalpel_model::graph::{BoundaryInfo, LeafType, OpName};
use scalpel_model::read::{FileTrace, ModuleMap, ProcessTrace};

use super::leaves::LocalType;
use scalpel_symbols::{naming_frame, short_name, SkipList};
use scalpel_symbols::{ModuleWarning, Symbolizer};

/// A symbolized stack: frame names, innermost first, the naming function and the stack's key
/// (`BoundaryInfo::code_key`).
type Sig = (Vec<String>, Option<String>, u64);

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
            sigs: vec![(Vec::new(), None, 0)],
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

    /// [`TypeTable::sig`], once per stack id of the one `file` that `seen` is kept for. Why:
    /// a thread's waits and samples repeat a few stacks thousands of times, and symbolizing a
    /// stack looks up each of its frames.
    fn sig_of(
        &mut self,
        maps: &[&ModuleMap],
        file: &FileTrace,
        id: u32,
        seen: &mut AHashMap<u32, u32>,
    ) -> u32 {
        if let Some(&sig) = seen.get(&id) {
            return sig;
        }
        let sig = self.sig(maps, file, id);
        seen.insert(id, sig);
        sig
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
        let key = code_key(&frames, &names, self.skip);
        let i = self.sigs.len() as u32;
        self.sig_index.insert(names.clone(), i);
        self.sigs.push((names, function, key));
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
        let mut seen = AHashMap::new();
        stacks
            .map(|stack| {
                let sig = self.sig_of(&maps, file, stack, &mut seen);
                let next = self.sites.len() as u32;
                *self.site_index.entry(sig).or_insert_with(|| {
                    let (frames, function, key) = &self.sigs[sig as usize];
                    self.sites.push(BoundaryInfo {
                        op: None,
                        function: function.clone(),
                        frames: frames.clone(),
                        code_key: *key,
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
        let mut seen = AHashMap::new();
        local
            .iter()
            .map(|t| {
                let (sop, sstack, eop, estack) = (t.start_op, t.start_stack, t.end_op, t.end_stack);
                let s = self.sig_of(&maps, file, sstack, &mut seen);
                let e = self.sig_of(&maps, file, estack, &mut seen);
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
                    code_key: sig.2,
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
/// The stack's key (`BoundaryInfo::code_key`): each of the program's own frames by its name;
/// each run of frames in one shared library by the library's file name; each run of the
/// frames `skip` looks past when naming (a language runtime linked into the program, lock and
/// channel wrappers) as one mark. Why: a library's names, and how many frames its inlined
/// functions show as, come from debug files that one machine has and the next does not, and a
/// runtime's internal names change with the toolchain; the program's code is what the key is
/// for.
fn code_key(frames: &[scalpel_symbols::Frame], names: &[String], skip: &SkipList) -> u64 {
    #[derive(PartialEq)]
    enum Run<'f> {
        Library(&'f std::ffi::OsStr),
        Runtime,
        Own,
    }
    let mut h = Fnv::new();
    let mut last = Run::Own;
    for (f, name) in frames.iter().zip(names) {
        let lib = (!f.program)
            .then(|| f.module.as_deref().and_then(|m| m.file_name()))
            .flatten();
        let run = match lib {
            Some(l) => Run::Library(l),
            None if skip.skips(f) => Run::Runtime,
            None => Run::Own,
        };
        match &run {
            Run::Own => {
                h.bytes(name.as_bytes());
            }
            r if *r == last => {}
            Run::Library(l) => {
                h.bytes(b"lib").bytes(l.as_encoded_bytes());
            }
            Run::Runtime => {
                h.bytes(b"runtime");
            }
        }
        last = run;
    }
    h.get()
}

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

/// The share of a group's leaves (per cent) from which its largest path is its main one.
const MAIN_SHARE: u64 = 95;

/// Leaf types whose names collide (a helper like `send_msg` called from several places) are
/// named after their callers too: `send_msg < stage_two`, taking the first named frame below
/// the naming one that tells them apart (thread entry and runtime frames never do), with every
/// caller on the way (`wait < read_msg < handshake`).
///
/// Which types keep the short name, so that names stay the same from one recording to the
/// next:
/// - A group's *main path*, the caller whose types hold at least [`MAIN_SHARE`]% of its
///   leaves, keeps it whatever else ran. A side path that runs a fixed handful of times (the
///   waits for a PostgreSQL session's start-up packet, 0 to 10 a run) beside a main path that
///   grows with the load (94,000 waits for a statement) must not rename the main path when it
///   happens to run often enough, and it did under the rule below alone.
/// - Otherwise, when the types with at least [`RARE_COUNT`] leaves all have one caller, those
///   keep the name and only the rare types with another caller are lengthened: one stray leaf
///   (a backend that waited once inside a `COPY`) does not rename 50,000 waits.
/// - Otherwise (two or more common paths of comparable size, such as a replicated store's
///   commit and ack, 400 each) every type is named after its caller: choosing one of two equal
///   paths as "main" would flip with a single leaf more on either side.
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
    let naming = |t: &LeafType| {
        if t.end.function.is_some() {
            t.end.clone()
        } else {
            t.start.clone()
        }
    };
    let boundaries: Vec<BoundaryInfo> = types.iter().map(naming).collect();
    // How many callers each type's name already shows.
    let mut shown = vec![0usize; types.len()];
    for depth in 0..3 {
        let mut by_name: AHashMap<String, Vec<usize>> = AHashMap::new();
        for (i, t) in types.iter().enumerate() {
            by_name.entry(t.name.clone()).or_default().push(i);
        }
        let mut changed = false;
        let mut groups: Vec<Vec<usize>> = by_name.into_values().filter(|v| v.len() > 1).collect();
        groups.sort_unstable();
        for group in groups {
            let callers: Vec<Option<String>> = group
                .iter()
                .map(|&i| caller(&boundaries[i], depth))
                .collect();
            let keep = keeper(&group, &callers, types);
            if keep == Keep::Alike {
                continue;
            }
            for (&i, c) in group.iter().zip(&callers) {
                if matches!(&keep, Keep::Caller(k) if k == c) || c.is_none() {
                    continue;
                }
                for d in shown[i]..=depth {
                    if let Some(c) = caller(&boundaries[i], d) {
                        types[i].name = format!("{} < {}", types[i].name, short_name(&c));
                    }
                }
                shown[i] = depth + 1;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
}

/// Which types of a colliding group keep its name (see [`disambiguate`]).
#[derive(Debug, PartialEq)]
enum Keep {
    /// The group's types have one caller at this depth: nothing tells them apart.
    Alike,
    /// The types with this caller (`None`: no caller at this depth).
    Caller(Option<String>),
    /// None: every type is named after its caller.
    NoOne,
}

/// Which types of `group` (with `callers` at this depth) keep their name.
fn keeper(group: &[usize], callers: &[Option<String>], types: &[LeafType]) -> Keep {
    let mut leaves: Vec<(&Option<String>, u64)> = Vec::new();
    for (&i, c) in group.iter().zip(callers) {
        match leaves.iter_mut().find(|(x, _)| *x == c) {
            Some((_, n)) => *n += types[i].count,
            None => leaves.push((c, types[i].count)),
        }
    }
    let total: u64 = leaves.iter().map(|l| l.1).sum();
    let main = leaves
        .iter()
        .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(a.0)));
    match main {
        _ if leaves.len() < 2 => return Keep::Alike,
        Some(&(c, n)) if n.saturating_mul(100) >= total.saturating_mul(MAIN_SHARE) => {
            return Keep::Caller(c.clone())
        }
        _ => {}
    }
    let mut common: Vec<&Option<String>> = group
        .iter()
        .zip(callers)
        .filter(|(&i, _)| types[i].count >= RARE_COUNT)
        .map(|(_, c)| c)
        .collect();
    common.sort_unstable();
    common.dedup();
    match common.as_slice() {
        [one] => Keep::Caller((*one).clone()),
        _ => Keep::NoOne,
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
                code_key: 0,
            },
            end: BoundaryInfo {
                op: None,
                function: Some("wait".to_string()),
                frames,
                code_key: 0,
            },
            count,
        }
    }

    fn names(types: &[LeafType]) -> Vec<&str> {
        types.iter().map(|t| t.name.as_str()).collect()
    }

    #[test]
    fn the_main_path_keeps_its_name_whatever_side_paths_ran() {
        let skip = SkipList::default();
        // The main path alone, with a stray leaf from elsewhere, and with a side path that ran
        // a handful of times or hundreds of times: its name is the same in every recording.
        let main = || vec![ty(&["read", "serve"], 50_000), ty(&["read", "serve"], 900)];
        let mut alone = main();
        disambiguate(&mut alone, &skip);
        assert_eq!(names(&alone), ["wait", "wait"]);
        for side in [1, 4, 9, 940] {
            let mut with_side = main();
            with_side.push(ty(&["write", "flush"], side));
            disambiguate(&mut with_side, &skip);
            assert_eq!(
                names(&with_side),
                ["wait", "wait", "wait < write"],
                "{side}"
            );
        }
        // The main path is the caller with 95% of the leaves summed over its types.
        let mut split = vec![
            ty(&["read", "serve"], 30_000),
            ty(&["write", "flush"], 2_000),
            ty(&["read", "serve"], 20_000),
        ];
        disambiguate(&mut split, &skip);
        assert_eq!(names(&split), ["wait", "wait < write", "wait"]);
    }

    #[test]
    fn paths_of_comparable_size_are_all_named_after_their_callers() {
        let skip = SkipList::default();
        // Two equal paths: neither is the main one, whichever has a leaf more.
        for extra in [0, 1] {
            let mut two = vec![
                ty(&["read", "serve"], 400 + extra),
                ty(&["write", "flush"], 400),
            ];
            disambiguate(&mut two, &skip);
            assert_eq!(names(&two), ["wait < read", "wait < write"]);
        }
        // Under 95%, with two common paths: all named after them.
        let mut two = vec![
            ty(&["read", "serve"], 9_000),
            ty(&["write", "flush"], 1_000),
        ];
        disambiguate(&mut two, &skip);
        assert_eq!(names(&two), ["wait < read", "wait < write"]);
        // One common path and rare ones: the rare ones are named after their callers.
        let mut two = vec![ty(&["read", "serve"], 10), ty(&["write", "flush"], 4)];
        disambiguate(&mut two, &skip);
        assert_eq!(names(&two), ["wait", "wait < write"]);
    }

    #[test]
    fn a_side_path_told_apart_deeper_shows_every_caller_on_the_way() {
        let skip = SkipList::default();
        let mut types = vec![
            ty(&["read", "serve"], 50_000),
            ty(&["read", "handshake"], 9),
            ty(&["read", "serve", "copy"], 1),
            ty(&["latch", "sleep"], 300),
            ty(&["latch", "walwriter"], 10),
        ];
        disambiguate(&mut types, &skip);
        assert_eq!(
            names(&types),
            [
                "wait",
                "wait < read < handshake",
                "wait < read < serve < copy",
                "wait < latch",
                "wait < latch < walwriter"
            ]
        );
    }
}
