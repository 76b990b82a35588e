//! Thread groups across the windows of a trace: which of each window's groups are one node of
//! the summed wait-for graph, and what that node is called.
//!
//! Each window groups its threads by their leaves in that window, so one role may be two
//! groups in one window (clients still starting up beside clients at work) and one in the
//! next. A window's group joins every summed node that holds one of its threads (the threads
//! are one role there, as the whole trace's components join threads alike anywhere); a group
//! of threads no window has shown yet joins the node of its name without the thread count,
//! else is a node of its own. A node is named by the name that the most waiting was
//! weighed under, so a role whose `#k` or busiest function changed from window to window
//! keeps the name most of its time had.

use ahash::AHashMap;
use scalpel_model::graph::Graph;

use super::groups::Group;
use super::WaitNode;

/// A group's name without its ` ×N` thread count: what names one role in every window.
pub(super) fn group_key(name: &str) -> &str {
    match name.rsplit_once(" ×") {
        Some((key, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => key,
        _ => name,
    }
}

/// A group key without the ` #k` that told it from a group of the same name in its window.
fn unnumbered(key: &str) -> &str {
    match key.rsplit_once(" #") {
        Some((base, k)) if !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()) => base,
        _ => key,
    }
}

/// The summed nodes' names, in node order: each name without its window's ` #k`, numbered
/// again among the summed nodes as one trace's groups are (the second of a name `#2`, and so
/// on), since which `#k` a role took depended on the window.
pub(super) fn renumbered<'k>(keys: impl Iterator<Item = &'k str>) -> Vec<String> {
    let mut used: AHashMap<&str, usize> = AHashMap::new();
    keys.map(|key| {
        let base = unnumbered(key);
        let k = used.entry(base).or_insert(0);
        *k += 1;
        match *k {
            1 => base.to_owned(),
            k => format!("{base} #{k}"),
        }
    })
    .collect()
}

/// A summed node as the windows made it.
#[derive(Clone, Debug, Default)]
pub(super) struct Role {
    /// Its name (see [`renumbered`]).
    pub name: String,
    /// Its threads, numbered in order of first appearance in the recording.
    pub threads: Vec<u32>,
    /// Time its threads waited (direct waits only).
    pub waited_ns: u64,
}

/// The roles found so far: parts joined into nodes (a union-find over parts).
#[derive(Default)]
pub(super) struct Roles {
    parent: Vec<u32>,
    /// Per part: the names its groups had, with the waiting weighed under each (plus one per
    /// group, so that a name without waiting counts); its threads; its waiting.
    names: Vec<Vec<(String, u64)>>,
    threads: Vec<Vec<u32>>,
    waited: Vec<u64>,
    by_key: AHashMap<String, u32>,
    /// Each thread's part (the first it was in) and its number.
    thread_part: AHashMap<(u32, u32), u32>,
    thread_ids: AHashMap<(u32, u32), u32>,
}

impl Roles {
    fn find(&self, mut x: u32) -> u32 {
        while self.parent[x as usize] != x {
            x = self.parent[x as usize];
        }
        x
    }

    /// The threads of `n`, a group of `g`, by process and thread id.
    fn ids<'a>(g: &'a Graph, n: &'a WaitNode) -> impl Iterator<Item = (u32, u32)> + 'a {
        n.threads.iter().map(|t| {
            let info = &g.threads[t.index()];
            (info.pid, info.tid)
        })
    }

    /// The node of `group`, a thread group of window graph `g`, once every window is in: the
    /// node of its threads, else of its name.
    pub(super) fn node(&self, g: &Graph, group: &Group) -> Option<u32> {
        let part = group
            .threads
            .iter()
            .map(|&t| {
                let info = &g.threads[t as usize];
                (info.pid, info.tid)
            })
            .find_map(|t| self.thread_part.get(&t).copied())
            .or_else(|| self.by_key.get(group_key(&group.name)).copied())?;
        Some(self.find(part))
    }

    /// Adds `n`, a group of window graph `g`, and returns its part.
    pub(super) fn add(&mut self, g: &Graph, n: &WaitNode) -> u32 {
        let key = group_key(&n.name);
        let mut joined: Vec<u32> = Self::ids(g, n)
            .filter_map(|t| self.thread_part.get(&t).map(|&p| self.find(p)))
            .collect();
        joined.sort_unstable();
        joined.dedup();
        let part = match joined.first() {
            Some(&p) => p,
            None => match self.by_key.get(key) {
                Some(&p) => self.find(p),
                None => self.new_part(key),
            },
        };
        for &other in joined.iter().skip(1) {
            self.parent[other as usize] = part;
        }
        match self.names[part as usize].iter_mut().find(|(k, _)| k == key) {
            Some(named) => named.1 += n.waited_ns + 1,
            None => self.names[part as usize].push((key.to_owned(), n.waited_ns + 1)),
        }
        self.waited[part as usize] += n.waited_ns;
        for t in Self::ids(g, n).collect::<Vec<_>>() {
            let next = self.thread_ids.len() as u32;
            let id = *self.thread_ids.entry(t).or_insert(next);
            self.thread_part.entry(t).or_insert(part);
            self.threads[part as usize].push(id);
        }
        part
    }

    fn new_part(&mut self, key: &str) -> u32 {
        let p = self.parent.len() as u32;
        self.parent.push(p);
        self.names.push(Vec::new());
        self.threads.push(Vec::new());
        self.waited.push(0);
        self.by_key.insert(key.to_owned(), p);
        p
    }

    /// The nodes, in order of their first part, and each part's node index.
    pub(super) fn finish(&self) -> (Vec<Role>, Vec<u32>) {
        let n = self.parent.len();
        let mut index = vec![u32::MAX; n];
        let mut roles: Vec<Role> = Vec::new();
        let mut names: Vec<Vec<(String, u64)>> = Vec::new();
        for part in 0..n {
            let root = self.find(part as u32) as usize;
            if index[root] == u32::MAX {
                index[root] = roles.len() as u32;
                roles.push(Role::default());
                names.push(Vec::new());
            }
            let k = index[root] as usize;
            index[part] = index[root];
            roles[k].threads.extend(&self.threads[part]);
            roles[k].waited_ns += self.waited[part];
            for (name, w) in &self.names[part] {
                match names[k].iter_mut().find(|(x, _)| x == name) {
                    Some(x) => x.1 += w,
                    None => names[k].push((name.clone(), *w)),
                }
            }
        }
        // The name most waiting was weighed under (ties: the first seen).
        let chosen: Vec<&str> = names
            .iter()
            .map(|ns| {
                let best = ns.iter().map(|x| x.1).max().unwrap_or(0);
                ns.iter().find(|x| x.1 == best).map_or("", |x| x.0.as_str())
            })
            .collect();
        for (role, name) in roles.iter_mut().zip(renumbered(chosen.into_iter())) {
            role.threads.sort_unstable();
            role.threads.dedup();
            role.name = name;
        }
        (roles, index)
    }
}

#[cfg(test)]
mod tests {
    use super::{group_key, renumbered};

    #[test]
    fn summed_groups_are_numbered_again_in_node_order() {
        let keys = ["pool (read) #3", "pool (read)", "main", "pool (read) #2"];
        assert_eq!(
            renumbered(keys.into_iter()),
            ["pool (read)", "pool (read) #2", "main", "pool (read) #3"]
        );
    }

    #[test]
    fn a_groups_key_is_its_name_without_the_thread_count() {
        assert_eq!(group_key("nginx: worker ×4"), "nginx: worker");
        assert_eq!(group_key("nginx: worker"), "nginx: worker");
        assert_eq!(group_key("pool ×x"), "pool ×x");
        assert_eq!(group_key("a ×2 b"), "a ×2 b");
    }
}
