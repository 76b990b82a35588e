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
//!   (`edges::handoff_weak`);
//! - what an epoll instance watches is what `epoll_ctl` registered on it, in whatever window:
//!   the registrations still standing at a window's end are kept (`ready::reports` reads them).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use ahash::AHashMap;
use scalpel_model::format::ObjKind;

use crate::event::{KindOf, ObjName, HAS_SEQ};
use crate::leaves::{Bound, WindowEdge};
use crate::ready::{self, Close, Ctl};
use scalpel_model::read::{ProcessSinks, TraceDir};

use crate::sink::ThreadSink;
use crate::weak::LoopHead;

/// What a window of a trace passes on to the next, in two parts: what reading a window takes
/// ([`ReadCarry`]) and what the passes over its leaves take ([`PassCarry`]). Apart because
/// reading window k + 1 needs only what reading window k left, so it can go on while window k's
/// passes run (see [`WindowCarry::split`]).
#[derive(Debug, Default)]
pub struct WindowCarry {
    reading: ReadCarry,
    passes: PassCarry,
}

impl WindowCarry {
    /// Its two parts, to be used side by side.
    pub fn split(&mut self) -> (&mut ReadCarry, &mut PassCarry) {
        (&mut self.reading, &mut self.passes)
    }

    /// Calls left out of matching so far (see [`PassCarry::crossed`]).
    pub fn crossed(&self) -> u64 {
        self.passes.crossed
    }
}

/// What reading a window takes from the windows read before it: each thread's loop head, found
/// in the window where the thread began (see `weak::weak_boundaries`), and the start of the
/// leaf the last window's end cut, by thread file.
#[derive(Debug, Default)]
pub struct ReadCarry {
    heads: HashMap<PathBuf, LoopHead>,
    /// By thread file: the call that started the leaf the last window's end cut.
    starts: HashMap<PathBuf, WindowEdge>,
}

/// What the passes over a window's leaves take from the windows built before it: loop-head
/// verdicts, standing `epoll_ctl` registrations, and each object's highest sequence number so
/// far (see [`PassCarry::drop_paired_before`]).
#[derive(Debug, Default)]
pub struct PassCarry {
    /// By thread (pid, tid): whether its loop-head guess was found taken at (see
    /// `edges::handoff_weak`).
    verdicts: AHashMap<(u32, u32), bool>,
    /// The `epoll_ctl` registrations standing at the last window's end, by (process, epoll
    /// instance, user data): the latest few, oldest first, each with the stream it names (a
    /// later one whose descriptor was closed leaves the one before it standing).
    regs: AHashMap<(u32, u64, u64), Vec<(Ctl, ObjName)>>,
    seqs: AHashMap<ObjName, u64>,
    /// Calls left out of matching because their partner was in an earlier window.
    crossed: u64,
}

impl PassCarry {
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

    /// This window's registrations (`ctls`, objects numbered as `names`) after those that
    /// earlier windows made and that still stand, for `ready::reports`; then keeps those that
    /// still stand at this window's end (no later registration of the same data, descriptor
    /// not closed after it: `closes`).
    pub(crate) fn registrations(
        &mut self,
        ctls: Vec<Ctl>,
        closes: &[Close],
        names: &[ObjName],
    ) -> Vec<Ctl> {
        let index: AHashMap<ObjName, u32> = names
            .iter()
            .enumerate()
            .map(|(i, &n)| (n, i as u32))
            .collect();
        let mut all: Vec<Ctl> = self
            .regs
            .values()
            .flatten()
            .filter_map(|&(c, name)| {
                Some(Ctl {
                    obj: *index.get(&name)?,
                    ..c
                })
            })
            .collect();
        all.sort_unstable_by_key(|c| (c.process, c.epoll, c.data, c.at));
        let mut mine = ctls;
        mine.sort_unstable_by_key(|c| (c.process, c.epoll, c.data, c.at));
        for c in &mine {
            let Some(&name) = names.get(c.obj as usize) else {
                continue;
            };
            let regs = self.regs.entry((c.process, c.epoll, c.data)).or_default();
            regs.push((*c, name));
            if regs.len() > ready::LOOK_BACK {
                regs.remove(0);
            }
        }
        let closed = |c: &Ctl| {
            closes
                .iter()
                .any(|k| k.0 == c.process && k.1 == c.fd && k.2 >= c.at)
        };
        for regs in self.regs.values_mut() {
            regs.retain(|(c, _)| !closed(c));
        }
        self.regs.retain(|_, regs| !regs.is_empty());
        all.extend(mine);
        all
    }

    /// The loop-head verdicts of the windows so far, for the next to read and add to.
    pub(crate) fn head_verdicts(&mut self) -> &mut AHashMap<(u32, u32), bool> {
        &mut self.verdicts
    }
}

impl ReadCarry {
    /// The loop head found for the thread file at `path` in the window where it began.
    pub(crate) fn head(&self, path: &Path) -> Option<LoopHead> {
        self.heads.get(path).cloned()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::LocalObj;
    use scalpel_model::graph::ObjectKind;

    fn name(key: u64) -> ObjName {
        LocalObj {
            kind: ObjectKind::from_code(ObjKind::Stream as u8),
            key,
            chan: None,
            channel: 0,
            shared: false,
        }
        .name(0)
    }

    fn ctl(at: u64, obj: u32, fd: u32) -> Ctl {
        Ctl {
            at,
            epoll: 7,
            data: 42,
            obj,
            fd,
            process: 0,
        }
    }

    #[test]
    fn a_registration_stands_in_later_windows_until_its_descriptor_is_closed() {
        let mut carry = PassCarry::default();
        // Window 0: the eventfd (key 100, object 0) registered under data 42, then a test
        // socket (key 200, object 1) under the same data, closed at once.
        let first = [name(100), name(200)];
        let got = carry.registrations(vec![ctl(10, 0, 5), ctl(20, 1, 6)], &[(0, 6, 30, 0)], &first);
        assert_eq!(got.len(), 2);
        // Window 1 numbers its objects otherwise: the eventfd is object 3 there.
        let second = [name(300), name(301), name(302), name(100)];
        let got = carry.registrations(Vec::new(), &[], &second);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!((got[0].obj, got[0].fd, got[0].at), (3, 5, 10));
        // Window 2 closes the eventfd: nothing stands after it.
        carry.registrations(Vec::new(), &[(0, 5, 50, 0)], &second);
        assert!(carry.registrations(Vec::new(), &[], &second).is_empty());
    }
}
