//! `server-check MODEL_DIR CHECKS.toml NAME REQUESTS [--names-out F] [--same-names F]
//! [--task-out F]`: the figures of a real server's model and the bounds of its checks file
//! (`scripts/servers/<server>.toml`); exits 1 when a bound is missed, 2 on bad input.
//!
//! `--names-out` writes the names of the types that hold half a percent of the leaves, one a
//! line after the share each holds and a tab, for a later recording's `--same-names` (see
//! `Run::same_names`); `--task-out` writes the name of the task the roles found.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use scalpel_e2e::servers::{check, Checks, Run};

struct Args {
    model: PathBuf,
    checks: PathBuf,
    run: Run,
    names_out: Option<PathBuf>,
    task_out: Option<PathBuf>,
}

fn args() -> Result<Args, String> {
    let mut it = std::env::args_os().skip(1);
    let mut pos = Vec::new();
    let (mut names_out, mut same_names, mut task_out) = (None, None, None);
    while let Some(a) = it.next() {
        let mut value = || {
            it.next()
                .map(PathBuf::from)
                .ok_or(format!("{a:?} needs a file"))
        };
        match a.to_str() {
            Some("--names-out") => names_out = Some(value()?),
            Some("--same-names") => same_names = Some(value()?),
            Some("--task-out") => task_out = Some(value()?),
            _ => pos.push(a),
        }
    }
    let [model, checks, name, requests] = <[_; 4]>::try_from(pos)
        .map_err(|_| "usage: server-check MODEL_DIR CHECKS.toml NAME REQUESTS [--names-out F] [--same-names F] [--task-out F]")?;
    let requests = requests
        .to_str()
        .and_then(|r| r.parse().ok())
        .ok_or(format!("{requests:?}: not a count of requests"))?;
    let same_names = same_names.map(|p| read_shares(&p)).transpose()?;
    Ok(Args {
        model: model.into(),
        checks: checks.into(),
        run: Run {
            name: name.to_string_lossy().into_owned(),
            requests,
            same_names,
        },
        names_out,
        task_out,
    })
}

/// A `--names-out` file: a share, a tab and a name on each line.
fn read_shares(path: &Path) -> Result<BTreeMap<String, f64>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let line = |(i, l): (usize, &str)| {
        let bad = || {
            format!(
                "{}: line {}: expected a share, a tab and a name",
                path.display(),
                i + 1
            )
        };
        let (share, name) = l.split_once('\t').ok_or_else(bad)?;
        let share: f64 = share.parse().map_err(|_| bad())?;
        Ok((name.to_owned(), share))
    };
    text.lines().enumerate().map(line).collect()
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

fn main() -> ExitCode {
    let go = || -> Result<bool, String> {
        let a = args()?;
        let checks = Checks::read(&a.checks).map_err(|e| e.to_string())?;
        let model = scalpel_model::store::read_model(&a.model.join("model.json"))
            .map_err(|e| e.to_string())?;
        let graph = scalpel_model::store::read_graph(&a.model.join("graph.json"))
            .map_err(|e| e.to_string())?;
        let o = check(
            &graph,
            &model,
            &checks,
            &a.run,
            &mut std::io::stdout().lock(),
        )
        .map_err(|e| format!("cannot write: {e}"))?;
        if let Some(p) = &a.names_out {
            write(
                p,
                &(o.shares.iter())
                    .map(|(n, s)| format!("{s}\t{n}\n"))
                    .collect::<String>(),
            )?;
        }
        if let (Some(p), Some(t)) = (&a.task_out, &o.role_task) {
            write(p, t)?;
        }
        Ok(o.failures.is_empty())
    };
    match go() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("server-check: {e}");
            ExitCode::from(2)
        }
    }
}
