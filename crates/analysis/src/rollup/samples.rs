//! On-CPU time from the agent's samples (`scalpel record --sample HZ`), and the wall-clock
//! graph that puts it beside the off-CPU waits (`scalpel flame --on-cpu`, `--wall`).
//!
//! Each sample stands for the thread CPU time its timer measured (the period, more when the
//! kernel merged expiries), under the interrupted stack with the process and thread as root
//! frames. A sample taken inside the agent's own code ends in a `[scalpel agent]` frame: that is
//! the cost of recording, shown rather than hidden. With a task, only samples that fell inside
//! the leaves of its occurrences count (`Graph::leaf_at`): the CPU profile of one request type
//! across every thread it ran on.
//!
//! The wall-clock graph is the on-CPU stacks with their innermost frame suffixed `_[c]` and the
//! off-CPU ones ([`super::off_cpu`], without wakers) suffixed `_[o]`, in nanoseconds; the view
//! turns both into samples at the sampling rate.

use scalpel_model::graph::Graph;
use scalpel_model::task::Model;

use super::flame::{frame, selected, site_frames, thread_roots};
use super::{off_cpu, FlameOptions, Folded};

/// The frame a sample inside the agent ends with.
pub const AGENT_FRAME: &str = "[scalpel agent]";
/// The suffix of an on-CPU leaf frame in the wall-clock graph.
pub const ON_CPU_SUFFIX: &str = "_[c]";
/// The suffix of an off-CPU leaf frame in the wall-clock graph.
pub const OFF_CPU_SUFFIX: &str = "_[o]";

/// The sampling period of `g`'s samples, ns; None when the trace has no samples.
pub fn sample_period_ns(g: &Graph) -> Option<u64> {
    (!g.samples.is_empty() && g.sample_period_ns > 0).then_some(g.sample_period_ns)
}

/// The on-CPU folded stacks of `g` (see the module docs); `opts.waker` does not apply.
pub fn on_cpu(g: &Graph, model: &Model, opts: &FlameOptions) -> Folded {
    on_cpu_suffixed(g, model, opts, "")
}

fn on_cpu_suffixed(g: &Graph, model: &Model, opts: &FlameOptions, suffix: &str) -> Folded {
    let keep = selected(g, model, opts);
    let roots = thread_roots(g, opts.per_process);
    let mut out = Folded::default();
    for s in &g.samples {
        if opts.task.is_some()
            && !g
                .leaf_at(s.thread, s.at_ns)
                .is_some_and(|l| keep[l.index()])
        {
            continue;
        }
        let mut frames = roots.get(s.thread.index()).cloned().unwrap_or_default();
        match g.sites.get(s.site.index()) {
            Some(site) if !site.frames.is_empty() => frames.extend(site_frames(site)),
            _ if !s.in_agent => frames.push(frame("[no stack]")),
            _ => {}
        }
        if s.in_agent {
            frames.push(AGENT_FRAME.to_owned());
        }
        if let Some(last) = frames.last_mut() {
            last.push_str(suffix);
        }
        out.add(&frames, s.weight_ns);
    }
    out
}

/// The wall-clock folded stacks of `g`: on-CPU samples and off-CPU waits together (see the
/// module docs), in nanoseconds.
pub fn wall(g: &Graph, model: &Model, opts: &FlameOptions) -> Folded {
    let mut out = on_cpu_suffixed(g, model, opts, ON_CPU_SUFFIX);
    let off = off_cpu(
        g,
        model,
        &FlameOptions {
            waker: false,
            ..*opts
        },
    );
    for (stack, ns) in off.stacks {
        *out.stacks.entry(stack + OFF_CPU_SUFFIX).or_insert(0) += ns;
    }
    out
}
