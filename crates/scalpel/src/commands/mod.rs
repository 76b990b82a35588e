//! The subcommands: one module each, holding its arguments (`…Args`, clap's), their one
//! conversion into the library's terms (`options`), and `run` on those.

mod diff;
mod dump;
mod export;
mod flame;
mod infer;
mod record;
mod report;
#[cfg(feature = "tables")]
mod sql;
mod timeline;
mod top;
mod waitfor;
mod windows;

use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;
use scalpel_record::RecordOptions;

#[derive(Subcommand, Debug)]
pub(crate) enum Command {
    /// Run a command under the tracer agent, recording into a trace directory.
    Record(record::RecordArgs),
    /// Print the events of a trace directory.
    Dump(dump::DumpArgs),
    /// Print the summary of a trace directory (as `record` prints at the end).
    Summary(dump::SummaryArgs),
    /// Infer leaf tasks and the causal graph of a trace directory.
    Infer(infer::InferArgs),
    /// Show where the time went, top down: top-level tasks, then one task expanded.
    Top(top::TopArgs),
    /// Compare two runs task type by task type: which kind of task got slower or faster,
    /// whether beyond noise, and where its extra time went.
    Diff(diff::DiffArgs),
    /// Write a one-page HTML report: the model drawing, the rollups and drill-downs.
    Report(report::ReportArgs),
    /// Draw a flame graph: off-CPU time (every blocking call by its stack, optionally with the
    /// waker's stack), on-CPU samples, or both as wall-clock time; per thread or process, for
    /// everything or one task type.
    Flame(flame::FlameArgs),
    /// Find where the waiting ends: the wait-for graph between thread groups, disk, network,
    /// scheduler and timers, with waits passed down chains of waiters, and its knots.
    Waitfor(waitfor::WaitforArgs),
    /// Write a timeline Perfetto and chrome://tracing open: a track per thread, leaves and the
    /// waits inside them, causal edges as arrows, task instances across threads.
    Timeline(timeline::TimelineArgs),
    /// Write the stored graph or model as JSON for other tools: the whole document with every
    /// table inline, or one table (leaves, edges, occurrences, …) as JSON Lines.
    Export(export::ExportArgs),
    /// Query a model's tables with SQL (DataFusion, embedded): leaves, edges, task instances
    /// with their latencies and critical paths, waits, samples, machines.
    #[cfg(feature = "tables")]
    #[command(override_usage = "scalpel sql [OPTIONS] <PATH>... <QUERY>")]
    Sql(sql::SqlArgs),
}

/// What to do, in the library's terms: no clap type gets past [`Command::job`].
#[derive(Debug)]
pub(crate) enum Job {
    Record(RecordOptions),
    Dump(dump::Dump),
    Infer(infer::Infer),
    Top(top::Top),
    Report(report::Report),
    Diff(diff::Diff),
    Flame(flame::Flame),
    Waitfor(waitfor::Waitfor),
    Timeline(timeline::Timeline),
    Export(export::Export),
    #[cfg(feature = "tables")]
    Sql(sql::Sql),
}

impl Command {
    /// Converts the command line into the library's terms, once.
    pub(crate) fn job(self) -> Result<Job> {
        Ok(match self {
            Command::Record(a) => Job::Record(a.options()),
            Command::Dump(a) => Job::Dump(a.options()?),
            Command::Summary(a) => Job::Dump(a.options()),
            Command::Infer(a) => Job::Infer(a.options()?),
            Command::Top(a) => Job::Top(a.options()),
            Command::Report(a) => Job::Report(a.options()),
            Command::Diff(a) => Job::Diff(a.options()),
            Command::Flame(a) => Job::Flame(a.options()),
            Command::Waitfor(a) => Job::Waitfor(a.options()),
            Command::Timeline(a) => Job::Timeline(a.options()?),
            Command::Export(a) => Job::Export(a.options()?),
            #[cfg(feature = "tables")]
            Command::Sql(a) => Job::Sql(a.options()?),
        })
    }
}

impl Job {
    /// Runs the job; `record` exits with the recorded command's status.
    pub(crate) fn run(self) -> Result<ExitCode> {
        match self {
            Job::Record(opts) => return Ok(record::run(&opts)),
            Job::Dump(d) => dump::run(&d),
            Job::Infer(i) => infer::run(&i),
            Job::Top(t) => top::run(&t),
            Job::Report(r) => report::run(&r),
            Job::Diff(d) => diff::run(&d),
            Job::Flame(f) => flame::run(&f),
            Job::Waitfor(w) => waitfor::run(&w),
            Job::Timeline(t) => timeline::run(&t),
            Job::Export(e) => export::run(&e),
            #[cfg(feature = "tables")]
            Job::Sql(s) => sql::run(&s),
        }?;
        Ok(ExitCode::SUCCESS)
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use clap::Parser;
    use scalpel_record::DEFAULT_DIR;

    use super::*;
    use crate::Cli;

    fn parse(args: &[&str]) -> Result<Job> {
        let cli = Cli::try_parse_from(std::iter::once("scalpel").chain(args.iter().copied()))?;
        cli.command.job()
    }

    /// clap's own checks of the definitions (duplicate flags, defaults that do not parse,
    /// conflicting names), which otherwise run only when a user's arguments reach them.
    #[test]
    fn the_command_line_definitions_are_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn record_command_line() {
        let Job::Record(o) = parse(&["record", "--", "ls", "-l"]).unwrap() else {
            panic!()
        };
        assert_eq!(o.dir, PathBuf::from(DEFAULT_DIR));
        assert!(!o.force);
        assert_eq!(o.command, ["ls", "-l"]);
        let Job::Record(o) = parse(&["record", "-o", "d", "--force", "ls", "-l"]).unwrap() else {
            panic!()
        };
        assert_eq!((o.dir, o.force), (PathBuf::from("d"), true));
        assert_eq!(o.command, ["ls", "-l"]);
        assert!(parse(&["record"]).is_err());
        assert!(parse(&["record", "--bogus", "--", "ls"]).is_err());
    }

    #[test]
    fn diff_command_line() {
        let args = [
            "diff",
            "old",
            "new",
            "--alpha",
            "0.05",
            "--include",
            "pid:7",
        ];
        let Job::Diff(d) = parse(&args).unwrap() else {
            panic!()
        };
        assert_eq!(
            (d.old.path, d.new.path),
            (PathBuf::from("old"), PathBuf::from("new"))
        );
        assert_eq!(d.options.alpha, 0.05);
        assert_eq!(d.options.min_effect, 0.1);
        // The inference options apply to both runs.
        assert_eq!(d.old.pipeline.graph.include, d.new.pipeline.graph.include);
        assert_eq!(d.new.pipeline.graph.include.len(), 1);
        assert_eq!(d.format, diff::Format::Table);
        assert!(parse(&["diff", "old"]).is_err());
        let e = parse(&["diff", "a", "b", "--alpha", "1.5"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("probability"), "{e}");
        // The smallest move that counts: 20 µs unless told, in any unit.
        assert_eq!(d.options.min_shift_ns, 20_000);
        for (given, ns) in [
            ("1.5ms", 1_500_000),
            ("0", 0),
            ("250ns", 250),
            ("2s", 2e9 as u64),
        ] {
            let Job::Diff(d) = parse(&["diff", "a", "b", "--min-shift", given]).unwrap() else {
                panic!()
            };
            assert_eq!(d.options.min_shift_ns, ns, "{given}");
        }
        let e = parse(&["diff", "a", "b", "--min-shift", "3 weeks"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("duration such as 20us"), "{e}");
    }

    #[test]
    fn top_command_line_fits_a_width_or_shows_every_column() {
        let Job::Top(t) = parse(&["top", "m", "--width", "150"]).unwrap() else {
            panic!()
        };
        assert_eq!((t.table.width, t.table.wide), (150, false));
        let Job::Top(t) = parse(&["top", "m", "--wide"]).unwrap() else {
            panic!()
        };
        assert!(t.table.wide);
        // The terminal's width, or 120 columns when standard output is not a terminal.
        let Job::Top(t) = parse(&["top", "m"]).unwrap() else {
            panic!()
        };
        let expected = crate::output::terminal_width().unwrap_or(120);
        assert_eq!(t.table.width, expected);
        assert!(parse(&["top", "m", "--width", "60"]).is_err());
        assert!(parse(&["top", "m", "--wide", "--width", "130"]).is_err());
    }

    #[test]
    fn dump_command_line() {
        let args = [
            "dump",
            "d",
            "--merged",
            "--pid",
            "1",
            "--pid",
            "2",
            "--op",
            "mutex_lock",
        ];
        let Job::Dump(dump::Dump::Events { dir, opts }) = parse(&args).unwrap() else {
            panic!()
        };
        assert_eq!(dir, PathBuf::from("d"));
        assert!(opts.merged);
        assert_eq!(opts.pids, [1, 2]);
        assert_eq!(opts.ops, [scalpel_model::format::Op::MutexLock]);
        let e = parse(&["dump", "d", "--op", "lock"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("unknown operation `lock`") && e.contains("mutex_unlock"),
            "{e}"
        );
        assert!(matches!(
            parse(&["dump", "--summary", "d"]).unwrap(),
            Job::Dump(dump::Dump::Summary(_))
        ));
        assert!(matches!(
            parse(&["summary", "d"]).unwrap(),
            Job::Dump(dump::Dump::Summary(_))
        ));
        assert!(parse(&["dump", "d", "--limit", "x"]).is_err());
        assert!(parse(&["dump"]).is_err());
    }

    #[test]
    fn a_view_takes_its_source_and_options_in_the_librarys_terms() {
        let Job::Top(t) = parse(&["top", "m", "--expand", "req", "--limit", "0"]).unwrap() else {
            panic!()
        };
        assert_eq!(t.source.path, PathBuf::from("m"));
        assert_eq!((t.view.expand.as_deref(), t.view.limit), (Some("req"), 1));
        let e = parse(&["timeline", "m", "--from", "2", "--to", "1"]).unwrap_err();
        assert!(
            e.to_string().contains("--from must not be after --to"),
            "{e}"
        );
        let Job::Flame(f) = parse(&["flame", "m", "--wall"]).unwrap() else {
            panic!()
        };
        assert_eq!(f.time, flame::Time::Wall);
    }
}
