//! Thread groups: threads that play one role become one node (the 16 workers of a pool), so
//! that the graph stays small and their weights add up.
//!
//! Two threads are in one group when their processes carry the same title (digits masked, so
//! that PostgreSQL's backends on different ports agree), their names agree once trailing
//! numbers are removed (`worker-3`, `worker-7`), and the leaf types they ran are alike: the
//! overlap of their histograms, 2·Σmin(a, b) / Σ(a + b), is above [`SIMILAR`] (wPerf's rule on
//! call-stack histograms; leaf types are our stacks). Groups are the connected components of
//! that relation, so a role whose threads drifted apart stays together through the ones between.

use ahash::AHashMap;
use scalpel_model::graph::Graph;

/// Histogram overlap above which two threads play one role.
pub(super) const SIMILAR: f64 = 0.45;

/// Threads per name beyond which they are grouped by name alone (the pairwise comparison is
/// quadratic).
const MAX_COMPARED: usize = 2048;

/// One group.
#[derive(Clone, Debug)]
pub(super) struct Group {
    pub name: String,
    pub threads: Vec<u32>,
}

/// Threads → groups.
#[derive(Clone, Debug)]
pub(super) struct Grouping {
    /// Per thread, its group.
    pub of: Vec<u32>,
    pub groups: Vec<Group>,
}

/// The name of thread `t`'s process: its title, or the command's file name and its first word
/// that is neither an option nor an option's value (`replicated-store client`); digits masked
/// and cut before a `(` (PostgreSQL's client address), so that a role's processes agree. In
/// traces of several machines it begins with the machine's name: a wait on another machine is
/// a wait between machines, and the same role on two machines is two nodes.
fn process_label(g: &Graph, t: usize) -> String {
    format!("{}{}", host_prefix(g, t), role_label(g, t))
}

/// `NAME: ` for thread `t`'s machine in traces of several machines, else nothing.
fn host_prefix(g: &Graph, t: usize) -> String {
    g.threads
        .get(t)
        .and_then(|t| g.processes.get(t.process.index()))
        .and_then(|p| g.hosts.get(p.host.index()))
        .map_or_else(String::new, |h| format!("{}: ", h.host))
}

/// [`process_label`] without the machine.
fn role_label(g: &Graph, t: usize) -> String {
    let p = g
        .threads
        .get(t)
        .and_then(|t| g.processes.get(t.process.index()));
    let raw = match p {
        Some(p) => match (&p.title, p.cmdline.first()) {
            (Some(title), _) => title.clone(),
            (None, Some(cmd)) => {
                let name = cmd.rsplit('/').next().unwrap_or(cmd).to_owned();
                let word = p.cmdline.windows(2).find_map(|w| {
                    let (before, arg) = (&w[0], &w[1]);
                    let plain = !arg.is_empty()
                        && arg
                            .chars()
                            .all(|c| c.is_ascii_alphabetic() || c == '-' || c == '_')
                        && !arg.starts_with('-');
                    (plain && !before.starts_with('-')).then_some(arg)
                });
                match word {
                    Some(w) => format!("{name} {w}"),
                    None => name,
                }
            }
            (None, None) => "process".to_owned(),
        },
        None => "process".to_owned(),
    };
    let cut = raw.split('(').next().unwrap_or(&raw);
    // A title's paths and options (nginx's `master process /usr/sbin/nginx -c …`) say nothing
    // of the role.
    let words: Vec<&str> = cut
        .split_whitespace()
        .enumerate()
        .filter(|&(i, w)| i == 0 || !(w.starts_with('/') || w.starts_with('-')))
        .map(|(_, w)| w)
        .collect();
    // Digits are masked after the command's own name (`apache2` stays).
    let (first, rest) = words.split_first().map_or(("", &[][..]), |(f, r)| (*f, r));
    let rest = mask_digits(&rest.join(" "));
    if rest.is_empty() {
        first.to_owned()
    } else {
        format!("{first} {rest}")
    }
}

/// `s` with every run of digits replaced by `#`.
fn mask_digits(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_ascii_digit() {
            if !out.ends_with('#') {
                out.push('#');
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// A thread's name without the number that tells it from its siblings.
fn role_name(name: &str) -> &str {
    name.trim_end_matches(|c: char| c.is_ascii_digit())
        .trim_end_matches(['-', '_', '#', ' ', ':', '/', '.'])
}

/// Histogram overlap of two leaf-type count lists (sorted by type).
fn similarity(a: &[(u32, u64)], b: &[(u32, u64)]) -> f64 {
    let total: u64 = a.iter().chain(b).map(|x| x.1).sum();
    if total == 0 {
        return 1.0;
    }
    let (mut i, mut j, mut common) = (0, 0, 0u64);
    while i < a.len() && j < b.len() {
        match a[i].0.cmp(&b[j].0) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += a[i].1.min(b[j].1);
                i += 1;
                j += 1;
            }
        }
    }
    2.0 * common as f64 / total as f64
}

fn find(parent: &mut [u32], mut x: u32) -> u32 {
    while parent[x as usize] != x {
        let up = parent[parent[x as usize] as usize];
        parent[x as usize] = up;
        x = up;
    }
    x
}

/// Groups the threads of `g`.
/// Groups the threads of `g`; with `merge` off, each thread is a group of its own, named
/// `process: thread (tid)`.
pub(super) fn group_threads(g: &Graph, merge: bool) -> Grouping {
    let n = g.threads.len();
    // Leaf-type histograms, and each thread's busiest type by wall time (to name a role).
    let mut hist: Vec<AHashMap<u32, u64>> = vec![AHashMap::new(); n];
    let mut wall: Vec<AHashMap<u32, u64>> = vec![AHashMap::new(); n];
    for l in &g.leaves {
        let t = l.thread.index();
        if t < n {
            *hist[t].entry(l.ty.get()).or_insert(0) += 1;
            *wall[t].entry(l.ty.get()).or_insert(0) +=
                l.end_ns.saturating_sub(l.start_ns) + l.block_ns;
        }
    }
    let hist: Vec<Vec<(u32, u64)>> = hist
        .into_iter()
        .map(|h| {
            let mut v: Vec<(u32, u64)> = h.into_iter().collect();
            v.sort_unstable();
            v
        })
        .collect();
    let mut by_key: AHashMap<(String, String), Vec<u32>> = AHashMap::new();
    let mut labels = Vec::with_capacity(n);
    for (t, info) in g.threads.iter().enumerate() {
        let label = process_label(g, t);
        let role = role_name(&info.name).to_owned();
        labels.push((label.clone(), role.clone()));
        by_key.entry((label, role)).or_default().push(t as u32);
    }
    let mut parent: Vec<u32> = (0..n as u32).collect();
    for members in by_key.values().filter(|_| merge) {
        for (a, &x) in members.iter().enumerate() {
            for &y in &members[a + 1..] {
                if members.len() > MAX_COMPARED
                    || similarity(&hist[x as usize], &hist[y as usize]) > SIMILAR
                {
                    let (rx, ry) = (find(&mut parent, x), find(&mut parent, y));
                    parent[rx.max(ry) as usize] = rx.min(ry);
                }
                if members.len() > MAX_COMPARED {
                    break;
                }
            }
        }
    }
    // Groups in order of their first thread, so that ids follow the trace.
    let mut of = vec![u32::MAX; n];
    let mut groups: Vec<Group> = Vec::new();
    for t in 0..n {
        let r = find(&mut parent, t as u32) as usize;
        if of[r] == u32::MAX {
            of[r] = groups.len() as u32;
            groups.push(Group {
                name: String::new(),
                threads: Vec::new(),
            });
        }
        of[t] = of[r];
        groups[of[t] as usize].threads.push(t as u32);
    }
    if merge {
        name_groups(g, &labels, &wall, &mut groups);
    } else {
        for gr in &mut groups {
            let t = gr.threads[0] as usize;
            let info = &g.threads[t];
            gr.name = format!("{}: {} ({})", labels[t].0, info.name, info.tid);
        }
    }
    Grouping { of, groups }
}

/// A function that names what a leaf type does: the first named frame of its end, then of its
/// start, leaving out addresses in stripped code and the frames every thread has.
fn role_function(t: &scalpel_model::graph::LeafType) -> Option<String> {
    let generic = |f: &str| {
        f.starts_with("[+")
            || f.starts_with("start_thread")
            || f.starts_with("clone")
            || f.starts_with("__libc_start")
            || f == "_start"
            || f == "main"
    };
    [&t.end, &t.start].into_iter().find_map(|b| {
        b.function
            .iter()
            .chain(&b.frames)
            .find(|f| !generic(f))
            .cloned()
    })
}

/// Names each group `process: thread ×N`, with the role's busiest call when several groups
/// would share a name, and `#k` when that does not tell them apart either.
fn name_groups(
    g: &Graph,
    labels: &[(String, String)],
    wall: &[AHashMap<u32, u64>],
    groups: &mut [Group],
) {
    let base = |gr: &Group| {
        let t = gr.threads[0] as usize;
        let (label, role) = &labels[t];
        // A main thread is named after its command, cut to 15 bytes by the kernel.
        let bare = label.strip_prefix(&host_prefix(g, t)).unwrap_or(label);
        let first = bare.split([' ', ':']).next().unwrap_or("");
        if role.is_empty() || first.starts_with(role.as_str()) || label.is_empty() {
            label.clone()
        } else {
            format!("{label}: {role}")
        }
    };
    let mut count: AHashMap<String, usize> = AHashMap::new();
    for gr in groups.iter() {
        *count.entry(base(gr)).or_insert(0) += 1;
    }
    let mut used: AHashMap<String, usize> = AHashMap::new();
    for gr in groups.iter_mut() {
        let mut name = base(gr);
        if count[&name] > 1 {
            let mut w: AHashMap<u32, u64> = AHashMap::new();
            for &t in &gr.threads {
                for (&ty, &ns) in &wall[t as usize] {
                    *w.entry(ty).or_insert(0) += ns;
                }
            }
            // The busiest leaf type with a named function says what the role does (a
            // stripped binary's addresses and the thread start say nothing).
            let mut by_wall: Vec<(u32, u64)> = w.into_iter().collect();
            by_wall.sort_unstable_by_key(|&(ty, ns)| (std::cmp::Reverse(ns), ty));
            let named = by_wall
                .iter()
                .filter_map(|&(ty, _)| g.types.get(ty as usize))
                .find_map(role_function);
            if let Some(f) = named {
                name = format!("{name} ({f})");
            }
        }
        let k = used.entry(name.clone()).or_insert(0);
        *k += 1;
        if *k > 1 {
            name = format!("{name} #{k}");
        }
        if gr.threads.len() > 1 {
            name = format!("{name} ×{}", gr.threads.len());
        }
        gr.name = name;
    }
}
