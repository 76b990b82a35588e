//! The library's option enums as the command line offers them: each wrapper derives clap's
//! `ValueEnum` (names and the help shown for each value) and converts into the library's enum
//! once, where the arguments are read. The library's enums know nothing of clap.

use scalpel_record::{LockMode, StackCache};
use scalpel_views::export::{ExportFormat, Table};

/// A `ValueEnum` wrapper of a library enum with the same variants, and its conversion.
macro_rules! wraps {
    ($cli:ident => $lib:ident { $($(#[doc = $doc:literal])* $variant:ident),+ $(,)? }) => {
        #[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
        pub(crate) enum $cli {
            $($(#[doc = $doc])* $variant),+
        }

        impl From<$cli> for $lib {
            fn from(c: $cli) -> $lib {
                match c {
                    $($cli::$variant => $lib::$variant),+
                }
            }
        }
    };
}

wraps!(CliLockMode => LockMode {
    /// Every lock and unlock is an event with its time, order and stack.
    Record,
    /// Uncontended pairs on private mutexes that no condition variable waits with are only
    /// counted, per mutex and leaf: several times cheaper on lock-heavy servers; those sections'
    /// times, order and stacks are lost (and `--cut-at-locks` cannot cut there).
    Count,
});

wraps!(CliStackCache => StackCache {
    /// Answer repeated stacks from the cache after checking their stack slots.
    On,
    /// Walk every stack in full.
    Off,
    /// Walk every stack and count how often the cache would have disagreed (for testing).
    Check,
});

wraps!(CliTable => Table {
    /// The whole causal graph, every table inline (`scalpel-graph/5`).
    Graph,
    /// The whole model, every occurrence inline (`scalpel-model/1`).
    Model,
    /// Leaf instances (`id` is the leaf id the other tables use).
    Leaves,
    /// Causal edges between nodes (a node id past the last leaf is an external).
    Edges,
    /// Contended lock acquisitions.
    LockWaits,
    /// Calls inside leaves that took time.
    InnerWaits,
    /// On-CPU samples.
    Samples,
    /// Leaves that moved file or terminal bytes.
    LeafFiles,
    /// Each leaf's CPU time (recorded with `--cpu-time`).
    LeafCpu,
    /// Every task type's occurrences (`type`, `index`, the occurrence's fields).
    Occurrences,
    /// Each leaf's parent occurrence.
    LeafParent,
    /// The machines of a graph built from several, with their clocks' alignment (none for a
    /// graph of one machine).
    Hosts,
    /// Transfers with peers outside the trace on connections between routable addresses:
    /// the halves of messages another machine's trace may hold.
    PeerTransfers,
});

wraps!(CliExportFormat => ExportFormat {
    /// One JSON document (the default for `graph` and `model`; rows as one array).
    Json,
    /// One JSON object per line (the default for row tables).
    Jsonl,
    /// The model's task instances as OpenTelemetry traces (OTLP/JSON, a trace a line), for a
    /// Collector's `otlpjsonfile` receiver, Jaeger or Tempo.
    Otlp,
    /// Every table as a Parquet dataset in the directory `-o` names, partitioned by machine
    /// and time window, for DataFusion, DuckDB, pyarrow or Spark (`scalpel sql` queries it).
    Parquet,
});

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    /// Each value's name on the command line is the library's own name for what it converts
    /// to, and every library value is offered.
    fn same_names<C, L>(library: &[L])
    where
        C: ValueEnum + Copy + Into<L>,
        L: Copy + PartialEq + std::fmt::Debug + std::fmt::Display,
    {
        let offered: Vec<L> = C::value_variants().iter().map(|&c| c.into()).collect();
        assert_eq!(offered, library);
        for c in C::value_variants() {
            let shown = c.to_possible_value().expect("not hidden");
            assert_eq!(shown.get_name(), (*c).into().to_string());
        }
    }

    #[test]
    fn the_command_line_names_are_the_librarys() {
        same_names::<CliLockMode, LockMode>(LockMode::ALL);
        same_names::<CliStackCache, StackCache>(StackCache::ALL);
        same_names::<CliTable, Table>(Table::ALL);
        same_names::<CliExportFormat, ExportFormat>(ExportFormat::ALL);
    }
}
