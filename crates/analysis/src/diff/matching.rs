//! Which task type of one run is which of the other's.
//!
//! Names are keyed by content (`scalpel-mine`'s `names`): the same kind of work gets the same
//! name in every recording of a program, so types are first paired by equal names. A name two
//! types of one run share (possible only through a names file that gave two types one name)
//! pairs nothing by name. What is left is paired by structure: types of the same kind whose
//! names are equal once the `#` suffix is cut (the suffix is a digest of the type's content,
//! so a type whose content moved a little, such as one more edge that most occurrences have,
//! keeps its readable name and changes its suffix). Within such a family the pairs are chosen
//! greedily, most alike first: the share of child names they have in common, then the
//! closeness of their sizes (leaves per instance), then of their instance counts, then their
//! names (so the choice is deterministic). Size before count: two recordings of PostgreSQL
//! nested one `COPY` type a level deeper in one of them, so the two candidates in the other
//! had one child name in common each; the wrong one had the same count, 51, and two leaves an
//! instance against hundreds, and a diff of one setting against itself called it 88% faster.

use ahash::AHashMap;
use scalpel_model::task::{Model, TaskKind};
use serde::Serialize;

/// How a pair of types was matched.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchedBy {
    /// The same name.
    Name,
    /// The same name before the `#` suffix, the same kind and the most alike children.
    Structure,
}

/// One side's type, as the matcher sees it.
#[derive(Clone, Debug)]
pub(super) struct Candidate<'m> {
    pub name: &'m str,
    pub kind: TaskKind,
    /// Its children's names without their suffixes, sorted.
    pub children: Vec<&'m str>,
    pub count: u64,
    /// Leaves its instances hold.
    pub leaves: u64,
}

impl<'m> Candidate<'m> {
    /// The candidate for type `ty` of `model`, with `count` instances holding `leaves` leaves.
    pub(super) fn of(model: &'m Model, ty: usize, count: u64, leaves: u64) -> Self {
        let t = &model.types[ty];
        let mut children: Vec<&str> = t
            .children
            .iter()
            .filter_map(|c| model.types.get(c.ty.index()))
            .map(|c| base_name(&c.name))
            .collect();
        children.sort_unstable();
        Candidate {
            name: &t.name,
            kind: t.kind,
            children,
            count,
            leaves,
        }
    }
}

/// `name` without a trailing ` #` and hex digits.
pub(super) fn base_name(name: &str) -> &str {
    match name.rsplit_once(" #") {
        Some((base, key)) if !key.is_empty() && key.bytes().all(|b| b.is_ascii_hexdigit()) => base,
        _ => name,
    }
}

/// The pairs (old index, new index into the candidate lists) and how each was made.
pub(super) fn pair(old: &[Candidate], new: &[Candidate]) -> Vec<(usize, usize, MatchedBy)> {
    let mut pairs = by_name(old, new);
    let (mut old_done, mut new_done) = (vec![false; old.len()], vec![false; new.len()]);
    for &(o, n, _) in &pairs {
        old_done[o] = true;
        new_done[n] = true;
    }
    // Families: unpaired types by (kind, base name).
    let mut scored: Vec<(Likeness, usize, usize)> = Vec::new();
    let mut family: AHashMap<(TaskKind, &str), Vec<usize>> = AHashMap::new();
    for (i, c) in new.iter().enumerate().filter(|&(i, _)| !new_done[i]) {
        family
            .entry((c.kind, base_name(c.name)))
            .or_default()
            .push(i);
    }
    for (o, c) in old.iter().enumerate().filter(|&(o, _)| !old_done[o]) {
        for &n in family
            .get(&(c.kind, base_name(c.name)))
            .into_iter()
            .flatten()
        {
            scored.push((likeness(c, &new[n]), o, n));
        }
    }
    // Most alike first: shared children, then the nearest sizes, then the nearest counts.
    scored.sort_by(|a, b| {
        let key = |l: &Likeness| (std::cmp::Reverse(l.children), l.size_apart, l.count_apart);
        key(&a.0)
            .cmp(&key(&b.0))
            .then(old[a.1].name.cmp(old[b.1].name))
            .then(new[a.2].name.cmp(new[b.2].name))
    });
    for (_, o, n) in scored {
        if !old_done[o] && !new_done[n] {
            old_done[o] = true;
            new_done[n] = true;
            pairs.push((o, n, MatchedBy::Structure));
        }
    }
    pairs
}

/// Pairs of equal names that each side has once.
fn by_name(old: &[Candidate], new: &[Candidate]) -> Vec<(usize, usize, MatchedBy)> {
    let new_once = once(new);
    let mut pairs: Vec<(usize, usize, MatchedBy)> = once(old)
        .into_iter()
        .filter_map(|(name, o)| Some((o?, new_once.get(name).copied().flatten()?)))
        .map(|(o, n)| (o, n, MatchedBy::Name))
        .collect();
    pairs.sort_unstable_by_key(|&(o, n, _)| (o, n));
    pairs
}

/// Each name's candidate, `None` for a name several share.
fn once<'m>(side: &[Candidate<'m>]) -> AHashMap<&'m str, Option<usize>> {
    let mut seen: AHashMap<&str, Option<usize>> = AHashMap::new();
    for (i, c) in side.iter().enumerate() {
        seen.entry(c.name)
            .and_modify(|e| *e = None)
            .or_insert(Some(i));
    }
    seen
}

/// How alike two types of one family are.
struct Likeness {
    /// The share of their children's names in common, per mille (1000 when neither has any).
    children: u64,
    /// How far apart their leaves per instance are: the larger over the smaller, per mille.
    size_apart: u64,
    /// How far apart their instance counts are, the same way.
    count_apart: u64,
}

/// The larger of two positive figures over the smaller, per mille (each taken as at least 1).
fn apart(a: u64, b: u64) -> u64 {
    let (lo, hi) = (a.min(b).max(1), a.max(b).max(1));
    hi.saturating_mul(1000) / lo
}

fn likeness(a: &Candidate, b: &Candidate) -> Likeness {
    let (mut i, mut j, mut common) = (0, 0, 0u64);
    while i < a.children.len() && j < b.children.len() {
        match a.children[i].cmp(b.children[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
        }
    }
    let all = (a.children.len() + b.children.len()) as u64 - common;
    // Sizes per mille of a leaf, so that 2.4 and 2.6 leaves an instance stay apart.
    let size = |c: &Candidate| c.leaves.saturating_mul(1000) / c.count.max(1);
    Likeness {
        children: (common * 1000).checked_div(all).unwrap_or(1000),
        size_apart: apart(size(a), size(b)),
        count_apart: apart(a.count, b.count),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand<'a>(name: &'a str, children: &[&'a str], count: u64) -> Candidate<'a> {
        Candidate {
            name,
            kind: TaskKind::Group,
            children: children.to_vec(),
            count,
            leaves: count * 2,
        }
    }

    #[test]
    fn between_equally_alike_children_the_nearer_size_wins_over_the_nearer_count() {
        // One type nested a level deeper in the new run: each new candidate shares one child
        // name with the old type; the one of its size is the one, not the one of its count.
        let mut old = cand("copy", &["loop: read", "row"], 51);
        old.leaves = 51 * 300;
        let mut deeper = cand("copy #1", &["loop: read", "row → read"], 50);
        deeper.leaves = 50 * 310;
        let inner = cand("copy #2", &["read", "row"], 51);
        let p = pair(&[old], &[inner, deeper]);
        assert_eq!(p, [(0, 1, MatchedBy::Structure)]);
    }

    #[test]
    fn suffixes_are_cut_only_when_they_are_hex_keys() {
        assert_eq!(base_name("read → write #a1f0"), "read → write");
        assert_eq!(base_name("handler #main"), "handler #main");
        assert_eq!(base_name("loop: x"), "loop: x");
    }

    #[test]
    fn names_first_then_the_most_alike_of_a_family() {
        let old = [
            cand("commit", &["a"], 10),
            cand("work #11", &["a", "b"], 100),
            cand("work #22", &["c"], 50),
            cand("gone", &[], 1),
        ];
        let new = [
            cand("work #33", &["c"], 40),
            cand("commit", &["a"], 12),
            cand("work #44", &["a", "b", "d"], 90),
            cand("fresh", &[], 1),
        ];
        let mut p = pair(&old, &new);
        p.sort_unstable_by_key(|&(o, n, _)| (o, n));
        assert_eq!(
            p,
            [
                (0, 1, MatchedBy::Name),
                (1, 2, MatchedBy::Structure),
                (2, 0, MatchedBy::Structure)
            ]
        );
    }

    #[test]
    fn a_shared_name_pairs_by_structure_not_by_name() {
        let old = [cand("x", &["a"], 5), cand("x", &["b"], 5)];
        let new = [cand("x", &["b"], 5), cand("x", &["a"], 5)];
        let mut p = pair(&old, &new);
        p.sort_unstable_by_key(|&(o, n, _)| (o, n));
        assert_eq!(
            p,
            [(0, 1, MatchedBy::Structure), (1, 0, MatchedBy::Structure)]
        );
    }
}
