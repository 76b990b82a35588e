//! The miner's driver: rounds until nothing repeats often enough, then the model.

use ahash::AHashSet;
use scalpel_model::graph::{EdgeKind, Graph, LeafType, LeafTypeId};
use scalpel_model::progress::Progress;
use scalpel_model::task::{MiningInfo, Model, MODEL_SCHEMA};

use crate::grammar::{self, Grammar};
use crate::input::{MineInput, RoundLeaves};
use crate::ix::{IxVec, LeafIx, SymIx};
use crate::options::{MineOptions, MineWarning, Mined};
use crate::places::{self, Places};
use crate::round::{Phase, Proposals};
use crate::work::{kind_index, LeafEdge, Rule, Work, XEdge};
use crate::{acyclic, build, canon, cross, names, round, sessions, tree, variants};

/// The kind an edge has in patterns. A take from a queue under a mutex without a wait (`queue`)
/// is the same hand-off as the wakeup of a taker that waited on the queue's condition (`cond`)
/// or on a futex word counting its items (`futex`): whether the taker had to wait is timing,
/// not structure, and keeping them apart split nginx's offload task in two types of equal shape
/// (667 and 764 of 2,000 offloads), and a pool fed through a futex word in two (its requests
/// that found an item and those that waited). So a task type's edges say `cond` for all three.
/// Why not `sem` and `eventfd` too: their calls are made whether or not the taker waits, so
/// their edge is there every time and never splits a type.
pub(crate) fn pattern_kind(k: EdgeKind) -> EdgeKind {
    match k {
        EdgeKind::Queue | EdgeKind::Futex => EdgeKind::Cond,
        k => k,
    }
}

/// The most times a pair joins one symbol onto a pair that joined it already (`((a b) b) b …`).
/// A run of one leaf type whose repetitions have different partners (a client's requests, each
/// served by another worker) is no loop, and pairing builds it one repetition a round: rounds
/// in the thousands, each over every edge, on a recording cut while such a run was going on.
/// Nobody reads sixteen nested repetitions as one task; the rest stay as they are.
const MAX_CHAIN: u32 = 16;

/// How many pairs down from `sym` join `other` on the same side (`left`: `sym` is `(x other)`,
/// else `(other x)`), at most [`MAX_CHAIN`].
fn chain_depth(work: &Work, mut sym: SymIx, other: SymIx, left: bool) -> u32 {
    let mut n = 0;
    while n < MAX_CHAIN {
        match &work.syms[sym].rule {
            Rule::Pair { a, b, .. } if left && *b == other => sym = *a,
            Rule::Pair { a, b, .. } if !left && *a == other => sym = *b,
            _ => break,
        }
        n += 1;
    }
    n
}

/// Whether `r` joins a symbol onto a chain of it already [`MAX_CHAIN`] long.
fn extends_chain(work: &Work, r: &Rule) -> bool {
    match r {
        Rule::Pair { a, b, .. } => {
            chain_depth(work, *a, *b, true) >= MAX_CHAIN
                || chain_depth(work, *b, *a, false) >= MAX_CHAIN
        }
        _ => false,
    }
}

/// Mines `graph` into a task model. `graph_file` is recorded in the model as the file its leaf
/// ids refer to.
pub fn mine(graph: &Graph, graph_file: &str, opts: &MineOptions, progress: &dyn Progress) -> Mined {
    mine_input(&MineInput::of(graph), graph_file, opts, progress)
}

/// [`mine`] on what the miner reads of a graph (see [`MineInput`]).
pub fn mine_input(
    graph: &MineInput<'_>,
    graph_file: &str,
    opts: &MineOptions,
    progress: &dyn Progress,
) -> Mined {
    mine_with(graph, graph_file, opts, None, progress)
}

/// [`mine_input`] that first replays `grammar` (the rules another run made, see [`Grammar`])
/// on the graph's leaves, then mines what they leave as usual. Rules over leaf types this
/// graph does not have are left out.
pub fn mine_with(
    graph: &MineInput<'_>,
    graph_file: &str,
    opts: &MineOptions,
    grammar: Option<&Grammar>,
    progress: &dyn Progress,
) -> Mined {
    let Treed {
        work,
        tree,
        learned,
        places,
        info,
        replayed,
        mut warnings,
    } = mine_tree(graph, opts, grammar, progress);
    let mut built = build::build(graph, &work, &tree);
    sessions::build_sessions(graph, &mut built, info.min_support);
    let mut types = built.types;
    for unused in names::name_types(&mut types, graph, &built.leaf_parent, &opts.names) {
        warnings.push(MineWarning::UnusedName(unused));
    }
    Mined {
        grammar: learned,
        replayed,
        places,
        model: Model {
            schema: MODEL_SCHEMA.to_owned(),
            graph: graph_file.to_owned(),
            leaves: graph.leaves.len() as u64,
            mining: info,
            types,
            top_edges: built.top_edges,
            leaf_parent: built.leaf_parent,
        },
        warnings,
    }
}

/// The rules [`mine_with`] would make of `graph` without a grammar to replay, and which of
/// them its model keeps as tasks: the model itself is not built. For a sample whose rules
/// other graphs replay (see [`SamplePart`](crate::SamplePart)).
pub fn learn(graph: &MineInput<'_>, opts: &MineOptions, progress: &dyn Progress) -> Grammar {
    mine_tree(graph, opts, None, progress).learned
}

/// What the rounds and the tree made of a graph, before the model is built from them.
struct Treed {
    work: Work,
    tree: tree::Tree,
    learned: Grammar,
    places: Places,
    info: MiningInfo,
    replayed: usize,
    warnings: Vec<MineWarning>,
}

/// [`mine_with`] up to the tree: `grammar` replayed, then rounds until nothing repeats often
/// enough, then which classes are tasks.
fn mine_tree(
    graph: &MineInput<'_>,
    opts: &MineOptions,
    grammar: Option<&Grammar>,
    progress: &dyn Progress,
) -> Treed {
    let min_support = opts.min_support.max(2);
    let n_leaves = graph.leaves.len() as u32;
    let mut edges: Vec<LeafEdge> = graph
        .edges
        .iter()
        .filter(|e| e.from.get() < n_leaves && e.to.get() < n_leaves && e.from != e.to)
        .map(|e| {
            let kind = kind_index(pattern_kind(e.kind));
            (LeafIx::of_node(e.from), LeafIx::of_node(e.to), kind)
        })
        .collect();
    edges.sort_unstable();
    edges.dedup();
    let (edges, dropped) = acyclic::break_leaf_cycles(n_leaves as usize, edges, |a, b| {
        graph.leaves[a.index()].end_ns > graph.leaves[b.index()].start_ns
    });
    let mut warnings = Vec::new();
    if dropped > 0 {
        warnings.push(MineWarning::CyclesBroken(dropped));
    }
    let leaf_types: Vec<LeafTypeId> = graph.leaves.iter().map(|l| l.ty).collect();
    let local = tree::local_leaves(graph.leaves.len(), &edges);
    let causal = variants::Causal::new(graph.leaves.len(), &edges);
    let mut work = Work::new(&leaf_types, graph.types.len() as u32, edges);
    let mut class_cache = canon::ClassCache::default();
    let mut cross = cross::CrossEdges::default();
    let mut x = Vec::new();
    let mut learned = Grammar::new(&graph.types);
    let mut rounds = 0u32;
    let mut replayed = 0;
    let mut forced = Vec::new();
    let round_leaves = RoundLeaves::new(&graph.leaves);
    if let Some(g) = grammar {
        let mut at = Replay {
            work: &mut work,
            leaves: &round_leaves,
            cross: &mut cross,
            x,
            class_cache: &mut class_cache,
        };
        (rounds, replayed, forced) = at.run(g, &graph.types, &mut learned, progress);
        x = at.x;
    }
    let mut banned: AHashSet<Rule> = AHashSet::new();
    let mut chains_stopped = 0u64;
    loop {
        rounds += 1;
        x = cross.update(&mut work, x);
        progress.status(&format!(
            "mining: round {rounds}, {} edges between {} rules' nodes",
            x.len(),
            work.syms.len()
        ));
        let mut progressed = false;
        'phases: for phase in [Phase::Loops, Phase::Strong, Phase::Weak] {
            // A rule that closes cycles is banned and the phase tried again without it: in a
            // diamond (a → b → c and a → c) the pair (a, c) can never go first, and must not
            // keep (a, b) from going.
            loop {
                let props = propose(
                    (&work, &round_leaves),
                    &x,
                    phase,
                    min_support,
                    &banned,
                    &mut class_cache,
                    None,
                );
                if props.list.is_empty() {
                    continue 'phases;
                }
                let chains: Vec<Rule> = props
                    .rules
                    .iter()
                    .filter(|r| extends_chain(&work, r))
                    .cloned()
                    .collect();
                if !chains.is_empty() {
                    chains_stopped += chains.len() as u64;
                    banned.extend(chains);
                    continue;
                }
                let (applied, refused, added) = apply(&mut work, &x, props, min_support);
                let retry = !refused.is_empty();
                banned.extend(refused);
                if applied {
                    learned.push(phase, added);
                    progressed = true;
                    break 'phases;
                }
                if !retry {
                    continue 'phases;
                }
            }
        }
        if !progressed {
            break;
        }
    }
    progress.done();
    if chains_stopped > 0 {
        warnings.push(MineWarning::ChainsStopped(chains_stopped));
    }
    drop((cross, x));
    // Only the rounds read the leaf-level edges (the tree and the model read the graph's).
    work.edges = Vec::new();
    let rules = work.syms.len() as u32 - work.leaf_types;
    let classes = class_cache.update(&work);
    let tree = tree::build(
        &work,
        &classes,
        (&local, &graph.leaves),
        &causal,
        min_support,
        &forced,
    );
    learned.set_kept(|s| tree.choice(classes.of[s]));
    let places = places::places(&work, (&classes, &tree), &forced);
    Treed {
        work,
        tree,
        learned,
        places,
        info: MiningInfo {
            min_support,
            rounds,
            rules,
            cycle_edges_dropped: dropped,
        },
        replayed,
        warnings,
    }
}

/// The miner's state while a grammar is replayed on it.
struct Replay<'w> {
    work: &'w mut Work,
    leaves: &'w RoundLeaves<'w>,
    cross: &'w mut cross::CrossEdges,
    x: Vec<XEdge>,
    class_cache: &'w mut canon::ClassCache,
}

impl Replay<'_> {
    /// Replays `g`'s steps (see `grammar`), recording what each added in `learned`. Returns the
    /// rounds (the steps that contracted something, as a round does), the rules replayed, and
    /// for each the symbol it has here and what `g`'s tree made of it.
    fn run(
        &mut self,
        g: &Grammar,
        types: &[LeafType],
        learned: &mut Grammar,
        progress: &dyn Progress,
    ) -> (u32, usize, Vec<tree::Replayed>) {
        let (mut rounds, mut replayed) = (0, 0);
        let mut at = grammar::SymMap::new(g, types);
        let none = AHashSet::new();
        for (i, step) in g.steps().iter().enumerate() {
            let allow = at.translate(step);
            if allow.is_empty() {
                continue;
            }
            self.x = self.cross.update(self.work, std::mem::take(&mut self.x));
            let n = g.steps().len();
            progress.status(&format!("mining: replaying step {} of {n}", i + 1));
            let cache = &mut *self.class_cache;
            let props = propose(
                (self.work, self.leaves),
                &self.x,
                step.phase,
                1,
                &none,
                cache,
                Some(&allow),
            );
            let (applied, _, added) = apply(self.work, &self.x, props, 1);
            rounds += u32::from(applied);
            replayed += added.len();
            at.learn(step, &added);
            learned.push(step.phase, added);
        }
        (rounds, replayed, at.kept(g))
    }
}

/// One phase's proposals (see `round`); `allow` restricts them to a replayed step's rules.
fn propose(
    (work, leaves): (&Work, &RoundLeaves<'_>),
    x: &[XEdge],
    phase: Phase,
    min_support: u32,
    banned: &AHashSet<Rule>,
    class_cache: &mut canon::ClassCache,
    allow: Option<&AHashSet<Rule>>,
) -> Proposals {
    match phase {
        Phase::Loops => round::loop_proposals((work, leaves), x, min_support, banned, allow),
        Phase::Strong => {
            round::pair_proposals((work, leaves), x, phase, min_support, banned, None, allow)
        }
        Phase::Weak => {
            let classes = class_cache.update(work);
            round::pair_proposals(
                (work, leaves),
                x,
                phase,
                min_support,
                banned,
                Some(&classes.of),
                allow,
            )
        }
    }
}

/// Applies a round's proposals that keep the graph acyclic, dropping rules left with too few
/// occurrences. Returns whether anything was contracted, the rules dropped because cycles took
/// their support, and the rules added with their symbols.
fn apply(
    work: &mut Work,
    x: &[XEdge],
    props: Proposals,
    min_support: u32,
) -> (bool, Vec<Rule>, Vec<(SymIx, Rule)>) {
    let refused = acyclic::refuse_cycles(x, work.nodes.len(), &props.list);
    let mut left = IxVec::from_elem(0u32, props.rules.len());
    for (p, &r) in props.list.iter().zip(&refused) {
        // Loops of one iteration do not count toward a loop's support.
        if !r && p.parts.len() >= 2 {
            left[p.rule] += 1;
        }
    }
    let mut sym_of = IxVec::from_elem(SymIx::NONE, props.rules.len());
    let mut dropped = Vec::new();
    let mut added = Vec::new();
    for (i, rule) in props.rules.into_iter_enumerated() {
        if left[i] >= min_support {
            sym_of[i] = work.add_symbol(rule.clone()).unwrap_or(SymIx::NONE);
            if sym_of[i].is_some() {
                added.push((sym_of[i], rule));
            }
        } else {
            dropped.push(rule);
        }
    }
    let mut any = false;
    for (p, r) in props.list.iter().zip(refused) {
        let sym = sym_of[p.rule];
        if r || sym.is_none() {
            continue;
        }
        let is_loop = matches!(work.syms[sym].rule, Rule::Loop { .. });
        work.contract(&p.parts, sym, is_loop);
        any = true;
    }
    (any, dropped, added)
}
