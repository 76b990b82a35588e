//! `scalpel-ballista`: one node of a Ballista cluster, a scheduler or an executor, for running
//! `scalpel sql --engine ballista://HOST:PORT` on more than this process.
//!
//! Scope: Ballista's own scheduler and executor, started from its libraries with the options a
//! cluster of a few machines needs (addresses, ports, a working directory, how many tasks an
//! executor runs at once), and `scalpel-sql`'s own functions (`clock_fit`) registered on both,
//! since the plans name them. Why not Ballista's binaries: they are built with their own
//! features, so installing them builds DataFusion and Arrow once more, optimized (longer than
//! the whole of Scalpel's build); these share the workspace's.
//!
//! Non-goals: any scheduling or transport of our own (all of it is Ballista's), object stores
//! other than the local file system, and the scheduler's REST API and metrics.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{anyhow, Context, Result};
use ballista_core::registry::BallistaFunctionRegistry;
use ballista_core::utils::default_session_builder;
use ballista_executor::executor_process::{start_executor_process, ExecutorProcessConfig};
use ballista_scheduler::cluster::BallistaCluster;
use ballista_scheduler::config::SchedulerConfig;
use ballista_scheduler::scheduler_process::start_server;
use clap::{Parser, Subcommand};
use datafusion::execution::{FunctionRegistry, SessionState};
use datafusion::prelude::SessionConfig;

/// One node of a Ballista cluster on this machine's file system.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    node: Node,
    /// Print Ballista's progress messages (an executor's registration, its tasks), not only
    /// its warnings and errors.
    #[arg(short, long, global = true)]
    verbose: bool,
}

#[derive(Subcommand, Debug)]
enum Node {
    /// The scheduler: plans a query's stages and hands their tasks to the executors.
    Scheduler {
        /// The address to listen on, which executors and clients reach it by.
        #[arg(long, default_value = "127.0.0.1")]
        bind: String,
        /// The port for executors and clients (`ballista://BIND:PORT`).
        #[arg(long, default_value_t = 50050)]
        port: u16,
    },
    /// An executor: registers with the scheduler, runs the tasks it is given and serves their
    /// results.
    Executor {
        /// The scheduler's address.
        #[arg(long, value_name = "HOST:PORT")]
        scheduler: String,
        /// The address to listen on, which the scheduler and clients reach it by.
        #[arg(long, default_value = "127.0.0.1")]
        bind: String,
        /// The port that serves task results (Arrow Flight).
        #[arg(long, default_value_t = 50051)]
        port: u16,
        /// The port the scheduler sends tasks to.
        #[arg(long, default_value_t = 50052)]
        grpc_port: u16,
        /// Where task results are written (default: a new temporary directory).
        #[arg(long)]
        work_dir: Option<PathBuf>,
        /// How many tasks run at once (default: the number of cores).
        #[arg(long)]
        concurrent_tasks: Option<usize>,
    },
}

/// Ballista's messages, which it writes through `log`, on standard error.
struct Stderr;

impl log::Log for Stderr {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }

    fn log(&self, r: &log::Record<'_>) {
        eprintln!("{} {}: {}", r.level(), r.target(), r.args());
    }

    fn flush(&self) {}
}

static LOGGER: Stderr = Stderr;

fn main() -> Result<()> {
    let cli = Cli::parse();
    log::set_logger(&LOGGER).map_err(|e| anyhow!("{e}"))?;
    log::set_max_level(if cli.verbose {
        log::LevelFilter::Info
    } else {
        log::LevelFilter::Warn
    });
    // Why a large stack: DataFusion plans and serializes plans recursively, and Ballista's
    // own scheduler runs with 32 MiB per thread for the same reason.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(32 << 20)
        .build()?;
    rt.block_on(run(cli.node))
}

async fn run(node: Node) -> Result<()> {
    match node {
        Node::Scheduler { bind, port } => scheduler(bind, port).await,
        Node::Executor {
            scheduler,
            bind,
            port,
            grpc_port,
            work_dir,
            concurrent_tasks,
        } => {
            let (host, sport) = host_port(&scheduler)?;
            let mut c = ExecutorProcessConfig {
                external_host: Some(bind.clone()),
                bind_host: bind,
                port,
                grpc_port,
                scheduler_host: host,
                scheduler_port: sport,
                // Executors may be started before their scheduler listens.
                scheduler_connect_timeout_seconds: 30,
                ..ExecutorProcessConfig::default()
            };
            if let Some(n) = concurrent_tasks {
                anyhow::ensure!(n > 0, "--concurrent-tasks must be at least 1");
                c.vcores = n;
            }
            if let Some(dir) = work_dir {
                let s = dir
                    .to_str()
                    .with_context(|| format!("{}: not UTF-8", dir.display()))?;
                c.work_dir = Some(s.to_owned());
            }
            c.override_function_registry = Some(Arc::new(registry()));
            start_executor_process(Arc::new(c))
                .await
                .with_context(|| format!("the executor for the scheduler at {scheduler}"))
        }
    }
}

async fn scheduler(bind: String, port: u16) -> Result<()> {
    let addr = format!("{bind}:{port}");
    let sock = addr
        .parse()
        .with_context(|| format!("{addr}: not an address and port to listen on"))?;
    let config = SchedulerConfig {
        external_host: bind.clone(),
        bind_host: bind,
        bind_port: port,
        override_session_builder: Some(Arc::new(session)),
        ..SchedulerConfig::default()
    };
    let cluster = BallistaCluster::new_from_config(&config).await?;
    start_server(cluster, sock, Arc::new(config))
        .await
        .with_context(|| format!("the scheduler on {addr}"))
}

/// The scheduler's sessions: Ballista's, with `scalpel-sql`'s own functions, so that it can
/// plan a query that calls them (the client sends the plan with the function by name).
fn session(config: SessionConfig) -> datafusion::common::Result<SessionState> {
    let mut state = default_session_builder(config)?;
    state.register_udaf(Arc::new(scalpel_sql::clock_fit()))?;
    Ok(state)
}

/// The executors' functions: Ballista's and `scalpel-sql`'s own, which the plans they are sent
/// name.
fn registry() -> BallistaFunctionRegistry {
    let mut r = BallistaFunctionRegistry::default();
    r.aggregate_functions.insert(
        scalpel_sql::CLOCK_FIT.to_owned(),
        Arc::new(scalpel_sql::clock_fit()),
    );
    r
}

/// `HOST:PORT`, the port a number from 1 to 65535.
fn host_port(s: &str) -> Result<(String, u16)> {
    let (host, port) = s
        .rsplit_once(':')
        .filter(|(h, _)| !h.is_empty())
        .ok_or_else(|| anyhow!("{s:?}: expected HOST:PORT"))?;
    let port = port
        .parse::<u16>()
        .ok()
        .filter(|p| *p != 0)
        .ok_or_else(|| anyhow!("{s:?}: the port is not a number from 1 to 65535"))?;
    Ok((host.to_owned(), port))
}
