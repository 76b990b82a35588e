//! The causal graph of leaf tasks: the types the graph stage builds and `graph.json` serializes.
//!
//! Nodes are leaf task instances (one thread's run between two consecutive sync points) and
//! `external` nodes that stand for untraced peers of a channel. A node id below
//! `leaves.len()` is a leaf; id `leaves.len() + i` is `externals[i]`.
//!
//! # Time accounting
//!
//! A leaf runs from the return of the sync call that starts it to the entry of the sync call
//! that ends it (`start_ns..end_ns`). The time spent inside that ending call is the leaf's
//! `block_ns`: the wait belongs to the work that waited, not to the work the wakeup started.
//! Calls inside a leaf that do not cut it (mutex and rwlock operations, sleeps, file I/O) are
//! part of its span; their time is counted in `lock_ns`, `sleep_ns` and `other_ns`, so that
//! running time = `end_ns - start_ns - lock_ns - sleep_ns - other_ns`, and wall time from the
//! leaf's start to the next leaf's start = `end_ns - start_ns + block_ns`.
//!
//! Bytes follow the same rule: a read's bytes are input of the leaf that starts when the read
//! returns (it consumes them), a write's bytes are output of the leaf that the write ends.

use serde::{Deserialize, Serialize};

use crate::format::Op;
pub use crate::host::{ClockGrade, HostClock, HostInfo};
pub use crate::ids::{
    ExternalId, HostId, LeafId, LeafTypeId, Node, NodeId, ObjId, ProcessId, SiteId, ThreadId,
};
pub use crate::object::{Channel, ChannelKind, ObjectInfo, ObjectKind};

/// Version tag of the graph JSON. Bumped on any incompatible change.
pub const GRAPH_SCHEMA: &str = "scalpel-graph/5";

/// Why one node depends on another.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EdgeKind {
    /// Program order within a thread.
    Program,
    /// Program order where the thread goes back for new work (see `scalpel-graph`'s docs).
    ProgramWeak,
    /// `pthread_cond_signal` or `broadcast` to the wait it woke.
    Cond,
    /// `sem_post` to the `sem_wait` that took its token.
    Sem,
    /// A futex wake to a wait it released (futex words used as locks excluded).
    Futex,
    /// A write to the read that consumed its bytes (pipe, socket, unix socket, TCP, UDP), or to
    /// and from an external node.
    Stream,
    /// An eventfd write to the read that collected it.
    Eventfd,
    /// A write that nobody read to the readiness wait (epoll, poll, select) that reported its
    /// descriptor: an eventfd or pipe used only to wake an event loop.
    Ready,
    /// `connect` to the `accept` that took the connection.
    Connect,
    /// A connection accepted by one thread to the leaf of another thread that used it first:
    /// the accepted descriptor was handed over through memory (a queue), which no call shows.
    Handoff,
    /// An item put into a queue under a mutex (the producer's `cond_signal`) to the leaf of the
    /// consumer that took it without waiting (see `scalpel_graph`'s `queues`).
    Queue,
    /// A signal sent (`kill`, `tgkill`, `pthread_kill`, `sigqueue`, `raise`) to the target's next
    /// return from a blocking call.
    Signal,
    /// `pthread_create` to the new thread's first leaf.
    Create,
    /// A thread's last leaf to the `pthread_join` that waited for it.
    Join,
    /// `fork` to the child's first leaf.
    Fork,
    /// A call through a peer outside the trace, on a connection the program opened: its
    /// `connect` to its first write, and the last write of each request to the read that took
    /// the first bytes of the answer.
    Call,
}

impl EdgeKind {
    /// Every kind, in output order.
    pub const ALL: &'static [EdgeKind] = &[
        EdgeKind::Program,
        EdgeKind::ProgramWeak,
        EdgeKind::Cond,
        EdgeKind::Sem,
        EdgeKind::Futex,
        EdgeKind::Stream,
        EdgeKind::Eventfd,
        EdgeKind::Ready,
        EdgeKind::Connect,
        EdgeKind::Handoff,
        EdgeKind::Queue,
        EdgeKind::Signal,
        EdgeKind::Create,
        EdgeKind::Join,
        EdgeKind::Fork,
        EdgeKind::Call,
    ];

    /// The name used in JSON and summaries.
    pub fn name(self) -> &'static str {
        match self {
            EdgeKind::Program => "program",
            EdgeKind::ProgramWeak => "program_weak",
            EdgeKind::Cond => "cond",
            EdgeKind::Sem => "sem",
            EdgeKind::Futex => "futex",
            EdgeKind::Stream => "stream",
            EdgeKind::Eventfd => "eventfd",
            EdgeKind::Ready => "ready",
            EdgeKind::Connect => "connect",
            EdgeKind::Handoff => "handoff",
            EdgeKind::Queue => "queue",
            EdgeKind::Signal => "signal",
            EdgeKind::Create => "create",
            EdgeKind::Join => "join",
            EdgeKind::Fork => "fork",
            EdgeKind::Call => "call",
        }
    }

    /// Whether the edge stays within one thread.
    pub fn in_thread(self) -> bool {
        matches!(self, EdgeKind::Program | EdgeKind::ProgramWeak)
    }
}

crate::coded::coded! {
    /// An operation code that serializes as its name (`"cond_wait"`; `op#N` when unknown).
    OpName, Op, "op"
}

impl OpName {
    /// The operation, when this reader knows the code.
    #[inline]
    pub fn op(self) -> Option<Op> {
        self.known()
    }

    /// Its name, or `op#NN` for an unknown code.
    pub fn name(self) -> String {
        self.to_string()
    }
}

crate::ids::index_by! {
    LeafId => Leaf,
    ThreadId => ThreadInfo,
    ProcessId => ProcessInfo,
    LeafTypeId => LeafType,
    ExternalId => External,
}

impl std::ops::Index<ObjId> for [ObjectInfo] {
    type Output = ObjectInfo;
    #[inline]
    fn index(&self, id: ObjId) -> &ObjectInfo {
        &self[id.index()]
    }
}

impl std::ops::Index<ObjId> for Vec<ObjectInfo> {
    type Output = ObjectInfo;
    #[inline]
    fn index(&self, id: ObjId) -> &ObjectInfo {
        &self[id.index()]
    }
}

/// One process incarnation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessInfo {
    /// Process id.
    pub pid: u32,
    /// Incarnation (a new one per exec).
    pub incarnation: u32,
    /// The executable, when recorded.
    pub exe: Option<String>,
    /// The command line, when recorded.
    pub cmdline: Vec<String>,
    /// The title the process gave itself last, when it differs from its command line
    /// (PostgreSQL's `postgres: walwriter`, nginx's `nginx: worker process`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The machine it ran on (see [`Graph::hosts`]).
    #[serde(default, skip_serializing_if = "HostId::is_first")]
    pub host: HostId,
    /// CLOCK_REALTIME minus CLOCK_MONOTONIC on its machine when it started, ns: what puts its
    /// machine's times in Unix time. Absent when the trace does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unix_offset_ns: Option<i64>,
}

/// One thread (one trace file).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadInfo {
    /// Its process.
    pub process: ProcessId,
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// The thread's name.
    pub name: String,
    /// Its first leaf; its leaves are `first_leaf..first_leaf + leaves`.
    pub first_leaf: LeafId,
    /// How many leaves it has.
    pub leaves: u32,
}

impl ThreadInfo {
    /// Its leaves' ids, in order.
    pub fn leaf_ids(&self) -> impl ExactSizeIterator<Item = LeafId> + DoubleEndedIterator {
        (self.first_leaf.get()..self.first_leaf.get().saturating_add(self.leaves)).map(LeafId::new)
    }
}

/// One boundary of a leaf type: the sync call and where it was made.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct BoundaryInfo {
    /// The operation, absent at a thread's first or last leaf when no call marks it.
    pub op: Option<OpName>,
    /// The function that names the call site (the first frame that is not library code).
    pub function: Option<String>,
    /// The symbolized call stack, innermost first.
    pub frames: Vec<String>,
    /// A key of the call stack that does not depend on which symbols the machine has (0: no
    /// stack): the program's own frames by name, each run of frames in one shared library by
    /// the library's file name alone, each run of runtime frames (those naming skips) as one.
    /// A shared library's names come from debug files that one machine has and the next does
    /// not (`libc6-dbg` names `__libc_start_call_main` where `libc.so.6` alone has no name),
    /// and a runtime's internal names change with the toolchain, so task names keyed by them
    /// would change by machine.
    pub code_key: u64,
}

/// A leaf task type: leaves whose two boundaries have the same operations and stacks. A leaf
/// that begins where its thread went back for new work (after a weak program-order edge) is
/// typed by its end alone, and its type's `start` is empty.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeafType {
    /// Display name: the function that reached the ending sync point.
    pub name: String,
    /// The boundary that starts it.
    pub start: BoundaryInfo,
    /// The boundary that ends it.
    pub end: BoundaryInfo,
    /// Leaves of this type.
    pub count: u64,
}

/// The file and terminal bytes of one leaf: the part of its `bytes_in` and `bytes_out` moved by
/// calls within it on files and terminals rather than channels. Kept beside the leaves rather
/// than in them because most leaves have none (16 bytes a leaf that the graph stage would
/// otherwise hold for every leaf).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeafFile {
    /// The leaf.
    pub leaf: LeafId,
    /// Bytes read from files and terminals.
    pub bytes_in: u64,
    /// Bytes written to files and terminals.
    pub bytes_out: u64,
}

/// One leaf task instance. See the module docs for how its times add up.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Leaf {
    /// Its thread.
    pub thread: ThreadId,
    /// Its type.
    #[serde(rename = "type")]
    pub ty: LeafTypeId,
    /// When the call that starts it returned (CLOCK_MONOTONIC ns).
    pub start_ns: u64,
    /// When the call that ends it was entered.
    pub end_ns: u64,
    /// Time inside the ending call.
    pub block_ns: u64,
    /// The call that started it.
    pub start_op: Option<OpName>,
    /// The call that ended it.
    pub end_op: Option<OpName>,
    /// The object the ending call was on.
    pub end_obj: Option<ObjId>,
    /// Bytes read (by the call that started it, and by file reads within it: see
    /// [`Graph::leaf_files`]).
    pub bytes_in: u64,
    /// Bytes written (by the call that ended it, and by file writes within it).
    pub bytes_out: u64,
    /// Time waiting for mutexes and rwlocks within it.
    pub lock_ns: u64,
    /// Time sleeping within it.
    pub sleep_ns: u64,
    /// Time in other calls within it that do not cut leaves (file I/O, close …).
    pub other_ns: u64,
    /// Index, among its thread file's events, of the call that started it (of its first event
    /// when no call did).
    pub start_event: u32,
    /// Index of the call that ended it (of its last event when no call did).
    pub end_event: u32,
}

impl Leaf {
    /// A leaf of type `ty` on `thread` over `[start_ns, end_ns]`, with nothing else known: no
    /// boundary calls, object, bytes or blocked time, events 0. Fields are set after it.
    pub fn new(thread: ThreadId, ty: LeafTypeId, start_ns: u64, end_ns: u64) -> Leaf {
        Leaf {
            thread,
            ty,
            start_ns,
            end_ns,
            block_ns: 0,
            start_op: None,
            end_op: None,
            end_obj: None,
            bytes_in: 0,
            bytes_out: 0,
            lock_ns: 0,
            sleep_ns: 0,
            other_ns: 0,
            start_event: 0,
            end_event: 0,
        }
    }
}

/// A call inside a leaf that took time without cutting it: a mutex or rwlock wait, a sleep,
/// file I/O, fsync. Kept when it lasted at least [`INNER_MIN_NS`], so that a leaf's blocked
/// time can be traced to the call and the stack that spent it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InnerWait {
    /// The leaf it happened in.
    pub leaf: LeafId,
    /// The call.
    pub op: OpName,
    /// Its object (the lock, the file), if any.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub obj: Option<ObjId>,
    /// When it was entered (CLOCK_MONOTONIC ns).
    pub at_ns: u64,
    /// Time inside it.
    pub ns: u64,
    /// Its call stack.
    pub site: SiteId,
}

/// An on-CPU sample (`scalpel record --sample HZ`): where a thread was when its CPU-time timer
/// fired.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuSample {
    /// The thread.
    pub thread: ThreadId,
    /// When it was taken (CLOCK_MONOTONIC ns).
    pub at_ns: u64,
    /// The thread CPU time it stands for, ns: one or more periods of the timer.
    pub weight_ns: u64,
    /// Its stack, innermost frame first: the interrupted function, then its callers.
    pub site: SiteId,
    /// The thread was in the agent's own code (the cost of recording).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub in_agent: bool,
}

/// Inner calls shorter than this are folded into their leaf's totals only.
pub const INNER_MIN_NS: u64 = 1_000;

/// Which side of a channel an external node stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExternalRole {
    /// Bytes or connections that came from outside the trace.
    Source,
    /// Bytes or connections that nobody traced took.
    Sink,
}

/// An untraced peer of one channel.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct External {
    /// Source or sink.
    pub role: ExternalRole,
    /// The channel or endpoint.
    pub obj: ObjId,
}

/// What a call on a connection did, as another machine's trace would see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PeerOp {
    /// This end opened the connection (a `connect` no traced `accept` took).
    Connect,
    /// This end accepted it (an `accept` of a client outside the trace).
    Accept,
    /// Bytes this end sent that no traced read took.
    Write,
    /// Bytes this end received that no traced write produced.
    Read,
}

/// A transfer on a TCP connection between routable addresses whose other end is outside the
/// trace: the half of a message between machines that this machine's trace holds. Two
/// machines' graphs, built apart, are joined on these (the connection key, and a direction's
/// byte offsets) as one graph of both would join them with edges.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PeerTransfer {
    /// The leaf the call ended (a write, a connect) or began (a read, an accept).
    pub leaf: LeafId,
    /// The stream direction (a write, a read) or the endpoint (a connect, an accept) it went
    /// through, when the trace names one. (Always serialized: `graph.bin` is postcard, which
    /// cannot skip a field.)
    pub obj: Option<ObjId>,
    /// What it was.
    pub op: PeerOp,
    /// The key both ends and both directions of the connection share.
    pub connection: u64,
    /// The first byte's offset in its direction (0 for a connect or an accept).
    pub offset: u64,
    /// Bytes (0 for a connect or an accept).
    pub len: u64,
}

/// A causal edge between two nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Edge {
    /// The node that caused.
    pub from: NodeId,
    /// The node that depends on it.
    pub to: NodeId,
    /// Why.
    pub kind: EdgeKind,
    /// The object the notification went through, if any.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub obj: Option<ObjId>,
}

/// Contention on one mutex or rwlock: ordering that is kept as data, never as an edge.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockInfo {
    /// The lock.
    pub obj: ObjId,
    /// Acquisitions seen.
    pub acquisitions: u64,
    /// Acquisitions that waited at least the contention threshold.
    pub contended: u64,
    /// Total time waiting.
    pub wait_ns: u64,
    /// The longest wait.
    pub max_wait_ns: u64,
}

/// One contended acquisition: who waited, who held the lock, how long.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockWait {
    /// The lock.
    pub obj: ObjId,
    /// The leaf that waited.
    pub waiter: LeafId,
    /// The leaf whose release let it in, when traced.
    pub holder: Option<LeafId>,
    /// How long it waited.
    pub wait_ns: u64,
}

/// Things that did not pair up, by what they are.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unmatched {
    /// Condition waits that returned with no signal or broadcast found for them (spurious or
    /// timed-out wakeups, or a waker outside the trace).
    pub cond_waits: u64,
    /// Semaphore waits with no post left for them (the semaphore's initial value).
    pub sem_waits: u64,
    /// Futex waits that were woken but no wake was found for them.
    pub futex_waits: u64,
    /// Joins with no exit of the joined thread in the trace.
    pub joins: u64,
    /// Thread or child starts whose create or fork is not in the trace.
    pub starts: u64,
    /// Bytes read that no traced write produced (linked to external sources).
    pub external_bytes_in: u64,
    /// Bytes written that no traced read consumed (linked to external sinks).
    pub external_bytes_out: u64,
}

impl Unmatched {
    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: &Unmatched) {
        self.cond_waits += other.cond_waits;
        self.sem_waits += other.sem_waits;
        self.futex_waits += other.futex_waits;
        self.joins += other.joins;
        self.starts += other.starts;
        self.external_bytes_in += other.external_bytes_in;
        self.external_bytes_out += other.external_bytes_out;
    }
}

/// The whole instance graph.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Graph {
    /// [`GRAPH_SCHEMA`].
    pub schema: String,
    /// Process incarnations.
    pub processes: Vec<ProcessInfo>,
    /// Threads.
    pub threads: Vec<ThreadInfo>,
    /// Objects referred to by leaves, edges and locks.
    pub objects: Vec<ObjectInfo>,
    /// Leaf types.
    pub types: Vec<LeafType>,
    /// Leaf instances, grouped by thread, in time order within a thread.
    pub leaves: Vec<Leaf>,
    /// External nodes.
    pub externals: Vec<External>,
    /// Causal edges, sorted.
    pub edges: Vec<Edge>,
    /// Contention per lock.
    pub locks: Vec<LockInfo>,
    /// Contended acquisitions.
    pub lock_waits: Vec<LockWait>,
    /// Inner calls that took time (see [`InnerWait`]), in leaf order.
    #[serde(default)]
    pub inner_waits: Vec<InnerWait>,
    /// The call sites inner calls refer to (`op` is absent: the call is on the wait).
    #[serde(default)]
    pub sites: Vec<BoundaryInfo>,
    /// Per leaf, the CPU time its thread used from the leaf's start to the return of the call
    /// that ended it, ns. Empty unless the trace was recorded with CPU times; then as long as
    /// `leaves`, with `None` where a leaf's events carried none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub leaf_cpu_ns: Vec<Option<u64>>,
    /// The leaves that moved file or terminal bytes, sorted by leaf.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub leaf_files: Vec<LeafFile>,
    /// On-CPU samples, grouped by thread, in time order within a thread. Empty unless the trace
    /// was recorded with `--sample`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<CpuSample>,
    /// The sampling timer's period, ns of thread CPU time (0 without samples). A sample stands
    /// for a whole number of periods: more than one when the kernel merged expiries.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub sample_period_ns: u64,
    /// The transfers on connections between routable addresses whose other end is outside the
    /// trace, sorted (see [`PeerTransfer`]). Empty for a trace that made none, which is every
    /// trace of one machine talking to itself over loopback.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub peer_transfers: Vec<PeerTransfer>,
    /// What did not pair up.
    pub unmatched: Unmatched,
    /// The machines, when the graph was built from the traces of several (empty for one):
    /// their names and how their clocks were aligned. Every time in the graph is on the
    /// reference host's clock.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<HostInfo>,
}

impl Graph {
    /// A graph of these threads, leaf types, leaves and edges and nothing else (no processes,
    /// objects, externals, locks or inner waits).
    pub fn new(
        threads: Vec<ThreadInfo>,
        types: Vec<LeafType>,
        leaves: Vec<Leaf>,
        edges: Vec<Edge>,
    ) -> Graph {
        Graph {
            schema: GRAPH_SCHEMA.to_owned(),
            processes: Vec::new(),
            threads,
            objects: Vec::new(),
            types,
            leaves,
            externals: Vec::new(),
            edges,
            locks: Vec::new(),
            lock_waits: Vec::new(),
            inner_waits: Vec::new(),
            sites: Vec::new(),
            leaf_cpu_ns: Vec::new(),
            leaf_files: Vec::new(),
            samples: Vec::new(),
            sample_period_ns: 0,
            peer_transfers: Vec::new(),
            unmatched: Unmatched::default(),
            hosts: Vec::new(),
        }
    }

    /// The machine thread `thread` ran on (the first for a graph of one).
    pub fn host_of(&self, thread: ThreadId) -> HostId {
        self.threads
            .get(thread.index())
            .and_then(|t| self.processes.get(t.process.index()))
            .map_or_else(HostId::default, |p| p.host)
    }

    /// The leaf of `thread` that was running at `ns`: started by then, and its ending call not
    /// yet returned. Leaves of a thread are in time order, so this is a binary search.
    pub fn leaf_at(&self, thread: ThreadId, ns: u64) -> Option<LeafId> {
        let t = self.threads.get(thread.index())?;
        let first = t.first_leaf.index();
        let leaves = self.leaves.get(first..first + t.leaves as usize)?;
        let i = leaves
            .partition_point(|l| l.start_ns <= ns)
            .checked_sub(1)?;
        let l = &leaves[i];
        if ns > l.end_ns.saturating_add(l.block_ns) {
            return None;
        }
        u32::try_from(first + i).ok().map(LeafId::new)
    }

    /// The CPU time of leaf `leaf`, when the trace has it.
    pub fn leaf_cpu(&self, leaf: LeafId) -> Option<u64> {
        self.leaf_cpu_ns.get(leaf.index()).copied().flatten()
    }

    /// The file and terminal bytes (in, out) of leaf `leaf`.
    pub fn leaf_file(&self, leaf: LeafId) -> (u64, u64) {
        self.leaf_files
            .binary_search_by_key(&leaf, |f| f.leaf)
            .map_or((0, 0), |i| {
                let f = &self.leaf_files[i];
                (f.bytes_in, f.bytes_out)
            })
    }

    /// Whether node `id` is a leaf (else an external).
    pub fn is_leaf(&self, id: NodeId) -> bool {
        id.index() < self.leaves.len()
    }

    /// The leaf that node `id` is, if it is one.
    pub fn leaf_of(&self, id: NodeId) -> Option<LeafId> {
        self.is_leaf(id).then_some(LeafId::new(id.get()))
    }

    /// What node `id` stands for.
    pub fn node(&self, id: NodeId) -> Node {
        match self.leaf_of(id) {
            Some(l) => Node::Leaf(l),
            None => Node::External(ExternalId::at(id.index() - self.leaves.len())),
        }
    }

    /// The node of external `x`.
    pub fn external_node(&self, x: ExternalId) -> NodeId {
        NodeId::new(u32::try_from(self.leaves.len() + x.index()).unwrap_or(u32::MAX))
    }

    /// The external that node `id` stands for, if it is one.
    pub fn external(&self, id: NodeId) -> Option<&External> {
        id.index()
            .checked_sub(self.leaves.len())
            .and_then(|i| self.externals.get(i))
    }

    /// Leaf `l`.
    pub fn leaf(&self, l: LeafId) -> &Leaf {
        &self.leaves[l.index()]
    }

    /// The ids of all leaves, in order.
    pub fn leaf_ids(&self) -> impl ExactSizeIterator<Item = LeafId> + DoubleEndedIterator {
        (0..u32::try_from(self.leaves.len()).unwrap_or(u32::MAX)).map(LeafId::new)
    }
}

/// For `skip_serializing_if`: a zero that means "none".
fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// Merges sorted `b` into sorted `a` (duplicates kept), from the back in `a`'s own buffer, grown
/// exactly: `a` may be as long as all the edges, and must neither double nor be copied whole
/// into a second list. The graph stage's and the miner's.
pub fn merge_into<T: Ord + Copy>(a: &mut Vec<T>, b: &[T]) {
    let (mut i, mut j) = (a.len(), b.len());
    a.reserve_exact(j);
    a.extend_from_slice(b);
    let mut k = a.len();
    while j > 0 {
        k -= 1;
        if i > 0 && a[i - 1] > b[j - 1] {
            a[k] = a[i - 1];
            i -= 1;
        } else {
            a[k] = b[j - 1];
            j -= 1;
        }
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_from_the_back_gives_the_sorted_union() {
        let e = |from, to, kind| Edge {
            from: NodeId::new(from),
            to: NodeId::new(to),
            kind,
            obj: None,
        };
        let program: Vec<Edge> = (0..6).map(|i| e(i, i + 1, EdgeKind::Program)).collect();
        let other = vec![
            e(0, 9, EdgeKind::Cond),
            e(2, 3, EdgeKind::Program),
            e(4, 1, EdgeKind::Stream),
            e(7, 8, EdgeKind::Sem),
        ];
        for (a, b) in [
            (program.clone(), other.clone()),
            (Vec::new(), other.clone()),
            (program.clone(), Vec::new()),
        ] {
            let mut want: Vec<Edge> = a.iter().chain(&b).copied().collect();
            want.sort_unstable();
            let mut got = a;
            merge_into(&mut got, &b);
            assert_eq!(got, want);
        }
    }
}
