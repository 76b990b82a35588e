//! What the server scripts (`scripts/trace-*.sh`) assert about a real server's model, over
//! `scalpel_model`'s types: each figure is computed here, printed, and held against the bound
//! the server's `scripts/servers/<server>.toml` gives (`server-check` runs them). The scripts
//! only start the server and its load.

mod config;
mod handoffs;
mod offloads;
mod requests;
mod roles;
mod typeedges;
mod waits;

use std::collections::BTreeMap;
use std::io::{self, Write};

use scalpel_model::graph::Graph;
use scalpel_model::task::Model;

pub use config::{Checks, ConfigError};
pub use handoffs::{handoff_figures, HandoffFigures};
pub use offloads::{offload_figures, OffloadFigures};
pub use requests::{named, request_figures, top_level_cover, RequestFigures, NAMED_SHARE};
pub use roles::{role_task, top_group};

/// What a run is given besides the model.
#[derive(Debug, Default)]
pub struct Run {
    /// The server's name, for the printed lines.
    pub name: String,
    /// Requests the load generator counted.
    pub requests: u64,
    /// From another recording: the names of the types that hold half a percent of the leaves,
    /// with their shares (see [`Outcome::shares`]). A type that holds 1% in either recording
    /// must be in the other by the same name, holding at least half a percent there: a share
    /// that only drifted across 1% (PostgreSQL's COPY held 0.85-1.0% of the leaves in six
    /// recordings here) is no changed name, a renamed or vanished type is.
    pub same_names: Option<BTreeMap<String, f64>>,
}

/// What a run found: the failures, and what the scripts reuse.
#[derive(Debug, Default)]
pub struct Outcome {
    /// One line per bound missed.
    pub failures: Vec<String>,
    /// The names of the types that hold half a percent of the leaves, with the share each
    /// holds (for a later `same_names`).
    pub shares: BTreeMap<String, f64>,
    /// The task the roles found, by name (for `scalpel top --expand`).
    pub role_task: Option<String>,
}

/// Runs every check `checks` holds, printing the figures on `out`.
pub fn check(
    graph: &Graph,
    model: &Model,
    checks: &Checks,
    run: &Run,
    out: &mut impl Write,
) -> io::Result<Outcome> {
    let mut o = Outcome::default();
    if let Some(rule) = &checks.requests {
        requests_check(graph, model, rule, run, out, &mut o)?;
    }
    if let Some(r) = &checks.role_task {
        role_check(graph, model, r, run, out, &mut o)?;
    }
    if let Some(b) = &checks.offloads {
        let f = offload_figures(graph, model);
        let reached = share(f.reached as u64, f.writes as u64);
        writeln!(
            out,
            "{}: eventfd completions reaching a leaf of another thread: {} of {} ({:.1}%)",
            run.name,
            f.reached,
            f.writes,
            100.0 * reached
        )?;
        let (top, n) = f.most().map_or(("-".to_owned(), 0), |(t, n)| {
            (model.types[t.index()].name.clone(), n)
        });
        let held = share(n as u64, f.offloads as u64);
        writeln!(
            out,
            "{}: offloads: {} ({} with the hand-off to the pool seen); held by {} task types, \
             none for {}; the most: {n} ({:.1}%) in '{top}'",
            run.name,
            f.offloads,
            f.with_handoff,
            f.holders.keys().filter(|t| t.is_some()).count(),
            f.holders.get(&None).copied().unwrap_or(0),
            100.0 * held
        )?;
        bound(&mut o, reached >= b.min_reached, || {
            format!(
                "under {:.0}% of the eventfd completions reach a worker leaf",
                100.0 * b.min_reached
            )
        });
        bound(&mut o, f.offloads == 0 || held >= b.min_held, || {
            format!(
                "one task type holds {:.1}% of the offloads, under {:.0}%",
                100.0 * held,
                100.0 * b.min_held
            )
        });
    }
    if let Some(b) = &checks.handoffs {
        let f = handoff_figures(graph);
        let delay = f.median_delay_ns.map_or(String::new(), |d| {
            format!(" (median delay {} us)", d / 1000)
        });
        writeln!(
            out,
            "{}: connection hand-offs: {}; landing on the worker's notify read: {}{delay}",
            run.name, f.handoffs, f.landed
        )?;
        bound(
            &mut o,
            f.handoffs > 0 && share(f.landed as u64, f.handoffs as u64) >= b.min_landed,
            || "a hand-off does not land on the worker's notify read".to_owned(),
        );
    }
    waits_check(graph, checks, run, out, &mut o)?;
    if checks.top_equals_sql {
        sql_check(graph, model, run, out, &mut o)?;
    }
    if !checks.type_edges.is_empty() {
        let edges = typeedges::type_edges(graph, checks.type_edge_min_count);
        for want in &checks.type_edges {
            let kind = want.kind.as_deref().unwrap_or("any");
            if typeedges::has_edge(&edges, want) {
                writeln!(out, "type graph: {} -> {} ({kind})", want.from, want.to)?;
            } else {
                o.failures.push(format!(
                    "no {kind} edge from a '{}' type to a '{}' type",
                    want.from, want.to
                ));
            }
        }
    }
    for f in &o.failures {
        writeln!(out, "FAIL: {f}")?;
    }
    Ok(o)
}

/// `top` against the guide's SQL, on the tables in memory and on a Parquet dataset.
fn sql_check(
    graph: &Graph,
    model: &Model,
    run: &Run,
    out: &mut impl Write,
    o: &mut Outcome,
) -> io::Result<()> {
    let scratch = tempfile::tempdir()?;
    match crate::sqltop::compare(graph, model, &scratch.path().join("tables")) {
        Ok((types, diffs)) => {
            writeln!(
                out,
                "{}: top and SQL on {types} task types: {} differences",
                run.name,
                diffs.len()
            )?;
            o.failures.extend(diffs);
        }
        Err(e) => o.failures.push(format!("the SQL for top failed: {e}")),
    }
    Ok(())
}

fn share(n: u64, of: u64) -> f64 {
    if of == 0 {
        0.0
    } else {
        n as f64 / of as f64
    }
}

fn bound(o: &mut Outcome, ok: bool, why: impl FnOnce() -> String) {
    if !ok {
        o.failures.push(why());
    }
}

fn requests_check(
    graph: &Graph,
    model: &Model,
    rule: &config::RequestRule,
    run: &Run,
    out: &mut impl Write,
    o: &mut Outcome,
) -> io::Result<()> {
    let f = request_figures(graph, model, rule);
    let name = |t: scalpel_model::task::TaskTypeId| {
        model
            .types
            .get(t.index())
            .map_or("(a leaf type)", |t| t.name.as_str())
    };
    let Some(req) = f.request_type else {
        o.failures.push(format!(
            "no task holds a request marker ({} markers)",
            f.markers
        ));
        return Ok(());
    };
    let held = share(f.held, run.requests);
    let top = share(f.top_or_session, f.held);
    writeln!(
        out,
        "{}: request task '{}'{}: {} of {} requests ({:.1}%; {} marker leaves), {} of them \
         top-level or under a session ({:.1}%), {} in a session task",
        run.name,
        name(req),
        match f.request_types.len() {
            0 | 1 => String::new(),
            n => format!(" and {} more", n - 1),
        },
        f.held,
        run.requests,
        100.0 * held,
        f.markers,
        f.top_or_session,
        100.0 * top,
        f.in_session
    )?;
    if f.request_types.len() > 1 {
        for &(t, n) in &f.request_types {
            writeln!(
                out,
                "{}:   request task type '{}': {} requests ({:.1}%)",
                run.name,
                name(t),
                n,
                100.0 * share(n, run.requests)
            )?;
        }
    }
    writeln!(
        out,
        "{}: {} session types, {} sessions",
        run.name, f.session_types, f.sessions
    )?;
    writeln!(
        out,
        "{}: {} task types cover 95% of {} leaves; {} types in all; {} hold at least 1% of the leaves",
        run.name,
        f.cover_95,
        f.leaves,
        f.types,
        f.names.len()
    )?;
    for n in &f.names {
        writeln!(out, "    {n}")?;
    }
    writeln!(out, "{}: the types that cover 95% of the leaves:", run.name)?;
    for &(t, n) in f.covering.iter().take(20) {
        writeln!(
            out,
            "  {n:8} {:5.1}%  {}",
            100.0 * share(n, f.leaves),
            name(t)
        )?;
    }
    if f.covering.len() > 20 {
        writeln!(out, "  … and {} more types", f.covering.len() - 20)?;
    }
    bound(o, held >= rule.min_share, || {
        format!(
            "the request task covers {:.1}% of requests, under {:.0}%",
            100.0 * held,
            100.0 * rule.min_share
        )
    });
    bound(o, top >= rule.min_top, || {
        format!(
            "{:.1}% of the request task's occurrences are top-level or under a session, under {:.0}%",
            100.0 * top,
            100.0 * rule.min_top
        )
    });
    if let Some(min) = rule.min_in_session {
        bound(o, share(f.in_session, f.held) >= min, || {
            format!(
                "{} of {} request occurrences are in a session task, under {:.0}%",
                f.in_session,
                f.held,
                100.0 * min
            )
        });
    }
    bound(o, f.cover_95 <= rule.max_types, || {
        format!(
            "{} task types cover 95% of the leaves, over {}",
            f.cover_95, rule.max_types
        )
    });
    bound(o, f.nested_loops.is_empty(), || {
        format!(
            "{} loops over a loop, such as '{}'",
            f.nested_loops.len(),
            f.nested_loops[0]
        )
    });
    if let Some(before) = &run.same_names {
        let gone: Vec<_> = named(before)
            .into_iter()
            .filter(|n| !f.shares.contains_key(n))
            .collect();
        let new: Vec<_> = (f.names.iter())
            .filter(|&n| !before.contains_key(n))
            .collect();
        if gone.is_empty() && new.is_empty() {
            writeln!(
                out,
                "{}: the {} names are those of the other recording",
                run.name,
                f.names.len()
            )?;
        } else {
            o.failures.push(format!(
                "names changed between recordings: gone {gone:?}, new {new:?}"
            ));
        }
    }
    o.shares = f.shares;
    Ok(())
}

fn role_check(
    graph: &Graph,
    model: &Model,
    r: &config::RoleTask,
    run: &Run,
    out: &mut impl Write,
    o: &mut Outcome,
) -> io::Result<()> {
    let Some(t) = role_task(graph, model, &r.roles) else {
        let roles: Vec<_> = r.roles.iter().map(|r| r.name.as_str()).collect();
        o.failures
            .push(format!("no task holds a leaf of every role: {roles:?}"));
        return Ok(());
    };
    let ty = &model.types[t.index()];
    let held = share(ty.count, run.requests);
    writeln!(
        out,
        "{}: task {} '{}' serves a request: {} occurrences ({:.0}% of {} requests), level {}, \
         {} at the top level",
        run.name,
        t.index(),
        ty.name,
        ty.count,
        100.0 * held,
        run.requests,
        ty.level,
        ty.top_level
    )?;
    o.role_task = Some(ty.name.clone());
    bound(o, held >= r.min_share, || {
        format!(
            "the request task covers under {:.0}% of the requests",
            100.0 * r.min_share
        )
    });
    if r.top {
        let top = top_group(model);
        bound(
            o,
            top == Some(t) && ty.top_level * 2 >= run.requests,
            || {
                let most = top.map_or("-", |x| model.types[x.index()].name.as_str());
                format!(
                "the request task is {} times a top-level task; the most frequent top-level task is '{most}'",
                ty.top_level
            )
            },
        );
    }
    Ok(())
}

fn waits_check(
    graph: &Graph,
    checks: &Checks,
    run: &Run,
    out: &mut impl Write,
    o: &mut Outcome,
) -> io::Result<()> {
    if let Some(s) = &checks.storage_waits {
        let (by_op, n, ns) = waits::storage_waits(graph, &s.frame);
        writeln!(
            out,
            "{}: storage waits: {by_op:?}; with {} in the stack: {n} ({:.1} ms)",
            run.name,
            s.frame,
            ns as f64 / 1e6
        )?;
        bound(o, n > 0, || {
            format!("no storage wait has {} in its stack", s.frame)
        });
    }
    if let Some(t) = &checks.titles {
        let titles = waits::titles(graph);
        writeln!(
            out,
            "{}: processes: {}, with a title: {}",
            run.name,
            graph.processes.len(),
            titles.values().sum::<usize>()
        )?;
        for (role, n) in &titles {
            writeln!(out, "  {n:>3} x {role}")?;
        }
        let missing: Vec<_> = t
            .want
            .iter()
            .filter(|w| !titles.keys().any(|r| r.contains(w.as_str())))
            .collect();
        bound(o, missing.is_empty(), || {
            format!("no process titled {missing:?}")
        });
    }
    if let Some(s) = &checks.sleeps {
        let (inside, ns, cut, woken) = waits::sleeps(graph, &s.frame);
        writeln!(
            out,
            "{}: waits in {}: {inside} inside their task as lock time ({:.1} ms); {cut} cut their \
             task, {woken} of those with their waker",
            run.name,
            s.frame,
            ns as f64 / 1e6
        )?;
        bound(
            o,
            cut == 0 || share(woken as u64, cut as u64) >= s.min_woken,
            || {
                format!(
                    "under {:.0}% of the {} waits that cut have a waker",
                    100.0 * s.min_woken,
                    s.frame
                )
            },
        );
        bound(
            o,
            share(inside as u64, (inside + cut) as u64) >= s.min_inside || inside + cut == 0,
            || {
                format!(
                    "under {:.0}% of the {} waits are lock time inside their task",
                    100.0 * s.min_inside,
                    s.frame
                )
            },
        );
    }
    Ok(())
}
