//! Programs with known truth, generated from a seed: a C server of a random architecture (a thread
//! per connection, an event loop, a pool fed through one of five hand-offs whose workers answer or
//! report back to the event loop that answers, a pipeline of bounded queues, a process per
//! connection), with random transports, pipelined requests, calls to a backend, slow paths that
//! wait for a group commit, a global lock as an interpreter's, and noise threads; each records its
//! requests' truth. [`run`] builds one, records it under its load, infers its model and scores it:
//! the share of requests that are exactly one occurrence of one task type, and the types that cover
//! 95% of the leaves. `scripts/corpus.sh` runs any number of seeds; the tests run a fixed set.

mod emit;
mod feeder;
mod run;
mod spec;

pub use emit::program;
pub use run::{build, record, run, score, GenError, Outcome};
pub use spec::{Arch, Handoff, Spec};
