//! What a window of a trace read in windows passes on to the next (see
//! `scalpel_model::read::Windows`): what a window cannot decide from its own events because it
//! begins in the middle of what the trace began earlier. Each item is a principle that holds for
//! any program, not a server's habit:
//! - a thread's loop head is a property of its code, found from the thread's start
//!   (`weak::weak_boundaries`), so a thread keeps the head of the window it began in;
//! - calls paired in order of sequence number whose number an earlier window passed belong to
//!   pairs that window began, so they are not paired again;
//! - a leaf the boundary cuts is one leaf of the whole trace, so its piece in the next window
//!   starts, for its type, at the call that started it (`leaves::window`);
//! - a thread's loop-head guess is tested where the thread takes hand-offs, which may be an
//!   earlier window than the one that serves its connection, so the verdict is kept
//!   (`edges::handoff_weak`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use ahash::AHashMap;
use scalpel_model::format::ObjKind;

use crate::event::{KindOf, ObjName, HAS_SEQ};
use crate::leaves::{Bound, WindowEdge};
use scalpel_model::read::{ProcessSinks, TraceDir};

use crate::sink::ThreadSink;
use crate::weak::LoopHead;

/// What a window of a trace passes on to the next: each thread's loop head, found in the
/// window where the thread began (see `weak::weak_boundaries`), by thread file; and each
/// object's highest sequence number so far (see [`WindowCarry::drop_paired_before`]).
#[derive(Debug, Default)]
pub struct WindowCarry {
    heads: HashMap<PathBuf, LoopHead>,
    /// By thread file: the call that started the leaf the last window's end cut.
    starts: HashMap<PathBuf, WindowEdge>,
    /// By thread (pid, tid): whether its loop-head guess was found taken at (see
    /// `edges::handoff_weak`).
    verdicts: AHashMap<(u32, u32), bool>,
    seqs: AHashMap<ObjName, u64>,
    /// Calls left out of matching because their partner was in an earlier window.
    crossed: u64,
}

impl WindowCarry {
    /// Calls left out of matching so far because their partner was in an earlier window (a
    /// post that returned after a boundary, whose wait returned before it).
    pub fn crossed(&self) -> u64 {
        self.crossed
    }

    /// Leaves out of `bounds` (this window's cuts) the calls on an object matched in order of
    /// sequence number (conditions, semaphores, futex words, joins, spawns) whose number is at
    /// most the highest an earlier window saw: they come before what the earlier windows
    /// matched, so their partner was there. Kept, a post whose wait returned before the
    /// boundary would be paired with the next wait, and every wait after it with the post
    /// before its own. Then raises each object's highest number to this window's.
    pub(crate) fn drop_paired_before(
        &mut self,
        bounds: &mut Vec<Bound>,
        kinds: &[KindOf],
        names: &[ObjName],
    ) {
        let in_order = |b: &Bound| {
            b.flags & HAS_SEQ != 0
                && kinds
                    .get(b.obj as usize)
                    .and_then(|k| k.0.known())
                    .is_some_and(|k| {
                        matches!(
                            k,
                            ObjKind::Cond
                                | ObjKind::Sem
                                | ObjKind::Futex
                                | ObjKind::Thread
                                | ObjKind::Spawn
                        )
                    })
        };
        let name = |b: &Bound| names.get(b.obj as usize).copied();
        let mut highest: AHashMap<ObjName, u64> = AHashMap::new();
        let before = bounds.len();
        bounds.retain(|b| {
            if !in_order(b) {
                return true;
            }
            let Some(n) = name(b) else { return true };
            let h = highest.entry(n).or_insert(0);
            *h = (*h).max(b.seq);
            self.seqs.get(&n).is_none_or(|&m| b.seq > m)
        });
        self.crossed += (before - bounds.len()) as u64;
        for (n, h) in highest {
            let m = self.seqs.entry(n).or_insert(h);
            *m = (*m).max(h);
        }
    }

    pub(crate) fn head(&self, path: &Path) -> Option<LoopHead> {
        self.heads.get(path).cloned()
    }

    /// The loop-head verdicts of the windows so far, for the next to read and add to.
    pub(crate) fn head_verdicts(&mut self) -> &mut AHashMap<(u32, u32), bool> {
        &mut self.verdicts
    }

    /// The call that started the leaf of the thread file at `path` the last window's end cut.
    pub(crate) fn start(&self, path: &Path) -> Option<WindowEdge> {
        self.starts.get(path).copied()
    }

    /// Keeps the loop heads a window's reading (`trace`, and the `sinks` that cut its threads)
    /// found for the threads that had none yet, and the starts of the leaves its end cut.
    pub(crate) fn keep(&mut self, trace: &TraceDir, sinks: &[ProcessSinks<ThreadSink>]) {
        for (p, s) in trace.processes.iter().zip(sinks) {
            for (f, s) in p.threads.iter().zip(&s.threads) {
                let Some(out) = s.out.as_ref() else { continue };
                if let Some(h) = out.weak.head_site.clone() {
                    self.heads.entry(f.path.clone()).or_insert(h);
                }
                // A thread idle through the whole window is still in the leaf an earlier
                // window's end cut.
                if s.events == 0 {
                    continue;
                }
                match out.cut_start {
                    Some(start) => self.starts.insert(f.path.clone(), start),
                    None => self.starts.remove(&f.path),
                };
            }
        }
    }
}
