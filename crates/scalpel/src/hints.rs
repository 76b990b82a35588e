//! What the command line adds to the libraries' errors and warnings: which flag to change. The
//! libraries say what went wrong in their own terms (their options, their data) and name no
//! flag; the flags are this program's, so the hints that name them live here, one per kind of
//! error, found by type wherever it sits in the error's chain.

use scalpel::pipeline::Warning;
use scalpel_graph::{GraphError, GraphWarning};
use scalpel_record::RecordError;
use scalpel_views::export::ExportError;
use scalpel_views::graphviz::DrawError;

/// The hint for the first error in `e`'s chain that has one.
pub(crate) fn for_error(e: &anyhow::Error) -> Option<&'static str> {
    e.chain().find_map(for_cause)
}

/// The hint for one error or warning, if the command line has one for its kind.
pub(crate) fn for_cause(e: &(dyn std::error::Error + 'static)) -> Option<&'static str> {
    if let Some(e) = e.downcast_ref::<GraphError>() {
        return match e {
            GraphError::Strict { .. } => {
                Some("refused because of --strict; without it the analysis uses what is valid")
            }
            GraphError::NothingKept { .. } => {
                Some("check the filters given to --include and --exclude against `scalpel summary`")
            }
            _ => None,
        };
    }
    if let Some(Warning::Graph(w)) = e.downcast_ref::<Warning>() {
        return for_cause(w);
    }
    if let Some(GraphWarning::CountedLocks { .. }) = e.downcast_ref::<GraphWarning>() {
        return Some(
            "recorded with `scalpel record --locks count`: --cut-at-locks cuts only at the \
             pairs recorded",
        );
    }
    if let Some(e) = e.downcast_ref::<DrawError>() {
        return match e {
            DrawError::TooBig { .. } | DrawError::TimedOut(_) => {
                Some("draw less with --depth, --task or --min-count")
            }
            DrawError::Empty => Some("lower --min-count"),
            _ => None,
        };
    }
    if let Some(ExportError::NotRows(_)) = e.downcast_ref::<ExportError>() {
        return Some("use --format json");
    }
    if let Some(e) = e.downcast_ref::<RecordError>() {
        return match e {
            RecordError::NoCommand | RecordError::EmptyCommand => {
                Some("usage: scalpel record [-o DIR] -- CMD ARGS...")
            }
            RecordError::NotEmpty(_) => Some("use --force to replace an earlier trace"),
            RecordError::NotATrace(..) => Some("--force only replaces an earlier trace"),
            _ => None,
        };
    }
    None
}
