//! The per-file reduction: each thread file's events cut into leaves while the file is decoded
//! (see [`super::leaves`]), so that no event outlives its decoding.

use scalpel_model::graph::{ChannelKind, ObjectKind, OpName};
use std::sync::Arc;

use ahash::{AHashMap, AHashSet};
use scalpel_model::format::{ObjKind, Op};
use scalpel_model::read::{Event, FileSink, FileTrace, Identity, ObjectDef, Ready};

use super::event::{Ev, LocalObj, ObjName, HAS_SEQ, HAS_X, NO_OBJ};
use super::leaves::{Cutter, ThreadOut, WindowEdge};
use super::ready::Ctl;
use super::weak::LoopHead;

/// Cuts one file's events into leaves as they are decoded; nothing per event is kept.
pub(super) struct ThreadSink {
    index: AHashMap<(ObjectKind, u64), u32>,
    /// The file's object index (OBJECT records) to local object, so that an event's object
    /// costs no hashing.
    by_file_index: Vec<u32>,
    objs: Vec<LocalObj>,
    cut: Cutter,
    /// Futex words and semaphores used as locks (see [`super::futexlocks`]).
    lock_words: Option<Arc<AHashSet<ObjName>>>,
    /// The index of the file's process, which names its process-scoped objects.
    process: usize,
    /// The object of the last event (for the READY record that may follow it).
    last_obj: u32,
    /// Events seen.
    pub events: u64,
    /// The result, once the file is finished.
    pub out: Option<ThreadOut>,
}

impl Default for ThreadSink {
    fn default() -> Self {
        ThreadSink::new(false)
    }
}

fn sat_i32(v: i64) -> i32 {
    v.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32
}

/// The auxiliary value the graph keeps for `op`, when the event has no stream offset.
fn aux_of(op: Option<Op>, e: &Event) -> Option<u64> {
    match op? {
        Op::FutexWait => e.aux2,
        Op::MutexCounted => e.aux,
        Op::Poll | Op::Ppoll | Op::Select | Op::Pselect => e.aux,
        Op::Accept | Op::Accept4 | Op::Connect => e.aux,
        // Its own handle, which `pthread_kill` names.
        Op::ThreadStart => e.aux,
        // The target; `kill(pid, 0)` sends nothing and keeps none, so it does not cut.
        op if super::event::sends(op) => e.aux.filter(|_| e.aux2 != Some(0)),
        _ => None,
    }
}

/// The graph's view of event `e`, whose object is the sink's `obj`.
fn ev_of(e: &Event, obj: u32) -> Ev {
    let x = e.offset.or_else(|| aux_of(e.op, e));
    let mut flags = 0;
    if e.seq.is_some() {
        flags |= HAS_SEQ;
    }
    if x.is_some() {
        flags |= HAS_X;
    }
    Ev {
        ticks: e.ticks,
        dur: e.dur_ticks,
        seq: e.seq.unwrap_or(0),
        x: x.unwrap_or(0),
        obj,
        res: sat_i32(e.result.unwrap_or(0)),
        stack: u32::try_from(e.stack.unwrap_or(0)).unwrap_or(0),
        op: OpName::from_code(e.op_code),
        flags,
        cpu: e.cpu_ns,
    }
}

impl ThreadSink {
    /// A sink; `lock_cuts`: mutex and rwlock calls cut leaves too (`--cut-at-locks`).
    pub(super) fn new(lock_cuts: bool) -> Self {
        ThreadSink {
            index: AHashMap::new(),
            by_file_index: Vec::new(),
            objs: Vec::new(),
            cut: Cutter::new(lock_cuts),
            lock_words: None,
            process: 0,
            last_obj: NO_OBJ,
            events: 0,
            out: None,
        }
    }

    /// A sink for a file of process `process` that treats the futex words in `lock_words` as
    /// locks, and the events at `latch` (indices in file order, sorted) as latch wake-ups (see
    /// [`super::latches`]).
    pub(super) fn with_lock_words(
        lock_words: Arc<AHashSet<ObjName>>,
        process: usize,
        lock_cuts: bool,
        latch: Vec<u32>,
    ) -> Self {
        let mut cut = Cutter::new(lock_cuts);
        cut.latch_wakeups(latch);
        ThreadSink {
            lock_words: Some(lock_words),
            process,
            cut,
            ..ThreadSink::new(lock_cuts)
        }
    }

    /// Takes the thread's loop head as an earlier window of the trace found it.
    pub(super) fn known_head(&mut self, head: Option<LoopHead>) {
        self.cut.known_head(head);
    }

    /// The thread's call that started the leaf an earlier window of the trace cut.
    pub(super) fn known_start(&mut self, start: Option<WindowEdge>) {
        self.cut.known_start(start);
    }

    /// The local object the file's object index `index` is bound to, if an OBJECT record bound
    /// it.
    fn known_obj(&self, index: u64) -> Option<u32> {
        let i = usize::try_from(index).ok()?;
        self.by_file_index.get(i).copied().filter(|&l| l != NO_OBJ)
    }

    /// Whether event `e`, on local object `obj`, is lock traffic on a futex word or semaphore
    /// used as a lock (see [`super::futexlocks`]).
    fn lock_word(&self, e: &Event, obj: u32) -> bool {
        // Only futex and semaphore calls can be lock traffic; other events skip the lookup.
        let traffic = e.op.is_some_and(|op| super::event::lock_op(op.into()));
        match (&self.lock_words, self.objs.get(obj as usize)) {
            (Some(words), Some(o)) if traffic => words.contains(&o.name(self.process)),
            _ => false,
        }
    }

    fn intern(
        &mut self,
        kind: ObjectKind,
        key: u64,
        chan: Option<ChannelKind>,
        channel: u64,
        shared: bool,
    ) -> u32 {
        let next = self.objs.len() as u32;
        let i = *self.index.entry((kind, key)).or_insert_with(|| {
            self.objs.push(LocalObj {
                kind,
                key,
                chan: None,
                channel: 0,
                shared: false,
            });
            next
        });
        let o = &mut self.objs[i as usize];
        if o.chan.is_none() {
            o.chan = chan;
        }
        if o.channel == 0 {
            o.channel = channel;
        }
        o.shared |= shared;
        i
    }
}

impl FileSink for ThreadSink {
    fn object(&mut self, def: &ObjectDef) {
        let chan = match &def.identity {
            Identity::Stream { chan, .. } | Identity::Endpoint { chan, .. } => {
                Some(ChannelKind::from_code(*chan))
            }
            _ => None,
        };
        let channel = match &def.identity {
            Identity::Stream { channel_key, .. } => *channel_key,
            _ => 0,
        };
        let shared = matches!(def.identity, Identity::Shared);
        let kind = ObjectKind::from_code(def.kind);
        let local = self.intern(kind, def.key, chan, channel, shared);
        // Indices are small and dense (the agent numbers them from 1); a wild one is only
        // looked up by key.
        if let Ok(i) = usize::try_from(def.index) {
            if i < (1 << 20) {
                if self.by_file_index.len() <= i {
                    self.by_file_index.resize(i + 1, NO_OBJ);
                }
                self.by_file_index[i] = local;
            }
        }
    }

    fn event(&mut self, e: &Event) {
        self.events += 1;
        let obj = match e.obj {
            Some(o) => match self.known_obj(o.index) {
                Some(local) => local,
                None => self.intern(ObjectKind::from_code(o.kind), o.key, None, 0, false),
            },
            None => NO_OBJ,
        };
        let ev = ev_of(e, obj);
        match (e.op, e.fd.and_then(|f| u32::try_from(f).ok())) {
            (Some(Op::EpollCtl), Some(fd)) => {
                if let (Some(epoll), Some(data)) = (e.aux, e.aux2) {
                    self.cut.ctl(Ctl {
                        at: e.ticks,
                        epoll,
                        data,
                        obj,
                        fd,
                        process: 0,
                    });
                }
            }
            (Some(Op::Close), Some(fd)) if e.result == Some(0) => {
                self.cut.closed(fd, e.ticks, e.aux.unwrap_or(0))
            }
            _ => {}
        }
        self.last_obj = obj;
        let lock_word = self.lock_word(e, obj);
        self.cut.feed(&ev, self.objs.get(obj as usize), lock_word);
    }

    fn beyond(&mut self, e: &Event) -> bool {
        // Only what is known already: an event past the window adds no object.
        let obj = e
            .obj
            .and_then(|o| {
                let kind = ObjectKind::from_code(o.kind);
                self.known_obj(o.index)
                    .or_else(|| self.index.get(&(kind, o.key)).copied())
            })
            .unwrap_or(NO_OBJ);
        let lock_word = self.lock_word(e, obj);
        self.cut
            .beyond(&ev_of(e, obj), self.objs.get(obj as usize), lock_word)
    }

    fn ready(&mut self, r: &Ready) {
        // epoll names its instance as the wait's object; poll and select have none.
        let epoll = match self.objs.get(self.last_obj as usize) {
            Some(o) if o.kind.is(ObjKind::Epoll) => o.key,
            _ => 0,
        };
        self.cut.ready(r, epoll);
    }

    fn finish(&mut self, file: &FileTrace) {
        let cut = std::mem::replace(&mut self.cut, Cutter::new(false));
        let objs = std::mem::take(&mut self.objs);
        self.index = AHashMap::new();
        self.out = Some(cut.finish(objs, file));
    }
}
