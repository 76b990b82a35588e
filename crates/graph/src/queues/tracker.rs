//! One thread's mutex critical sections, followed event by event: which sections waited on a
//! condition, which signalled one (placed in the mutex's order), and which sit at a call site
//! where the thread took from a queue (see the parent module for what they are used for).

use scalpel_model::format::{ChanKind, Op};
use scalpel_model::graph::ChannelKind;

use crate::event::reads_bytes;
use crate::peeled::as_known_sites;

/// A mutex critical section that may put or take (global indices after assembly).
#[derive(Clone, Debug)]
pub(crate) struct Section {
    /// The mutex.
    pub obj: u32,
    /// Sequence number of the unlock that ended it: the section's place in the mutex's order.
    pub order: u64,
    /// The leaf in which the last acquisition (the lock, or a condition wait's re-lock) returned:
    /// where the taker popped.
    pub leaf: u32,
    /// The lock call's stack (file-local id: compared within one thread only).
    pub stack: u32,
    /// The condition it waited on (the last one), if any.
    pub waited: Option<u32>,
    /// Where its last wait began in the mutex's order: the sequence number of the release the
    /// wait made. The taker found the queue empty there.
    pub wait_from: Option<u64>,
    /// `cond_signal`s made while holding it: (condition, the leaf the signal ended, the
    /// sequence number of the mutex's next release after it: the signal's place in the
    /// mutex's order, which is earlier than the section's when a wait follows it).
    pub signals: Vec<(u32, u32, u64)>,
}

/// The call site of a section whose lock was counted, not recorded (see `Tracker::feed`).
const UNKNOWN_SITE: u32 = u32::MAX;

/// A mutex one thread holds.
struct Held {
    obj: u32,
    leaf: u32,
    stack: u32,
    waited: Option<u32>,
    wait_from: Option<u64>,
    /// Signals whose place in the mutex's order is known: at a release.
    signals: Vec<(u32, u32, u64)>,
    /// Signals made since the last release: placed at the next one.
    pending: Vec<(u32, u32)>,
}

/// Follows one thread's mutex sections.
#[derive(Default)]
pub(crate) struct Tracker {
    held: Vec<Held>,
    /// A condition wait released this mutex and has not re-acquired it.
    in_wait: Option<u32>,
    sections: Vec<Section>,
    /// Per condition signal: (condition, [`ANY_MUTEX`]), then (condition, mutex) for each
    /// mutex held at the time.
    signal_holds: Vec<(u32, u32)>,
    /// The last call closed a section that held no other mutex: a futex wake right after it
    /// notifies what the section put.
    just_unlocked: bool,
    /// The last call was a futex wait on this word: a lock right after it takes what the wait
    /// was for.
    just_waited: Option<u32>,
}

/// In [`Tracker`]'s signal holds: the row that counts the signal itself.
pub(crate) const ANY_MUTEX: u32 = u32::MAX;

/// One event as the tracker needs it.
pub(crate) struct Step {
    /// The operation.
    pub op: Op,
    /// Its object (file-local), or `NO_OBJ`.
    pub obj: u32,
    /// Its sequence number, when it has one.
    pub seq: Option<u64>,
    /// The call's result.
    pub res: i32,
    /// The call's stack id.
    pub stack: u32,
    /// The leaf open after the event (or the next one to open).
    pub open_leaf: u32,
    /// What the event does to a counter of items (a futex word, a semaphore, an eventfd).
    pub counter: Option<Counter>,
}

/// An event on a counter of items kept beside a queue's mutex.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Counter {
    /// Adds to it: a futex wake, a `sem_post`, an eventfd write.
    Give,
    /// Takes from it, or waits to: a futex wait, a successful `sem_wait`, an eventfd read.
    Take,
}

impl Counter {
    /// What `op` on an object of channel kind `chan` does to a counter, `res` its result.
    pub(crate) fn of(op: Op, chan: Option<ChannelKind>, res: i32) -> Option<Counter> {
        use Op::*;
        let eventfd = chan.and_then(ChannelKind::known) == Some(ChanKind::Eventfd) && res > 0;
        match op {
            FutexWake | SemPost => Some(Counter::Give),
            FutexWait => Some(Counter::Take),
            SemWait | SemTimedwait | SemClockwait | SemTrywait if res == 0 => Some(Counter::Take),
            _ if eventfd => reads_bytes(op).map(|r| if r { Counter::Take } else { Counter::Give }),
            _ => None,
        }
    }
}

impl Tracker {
    /// Takes the thread's next event.
    pub(crate) fn feed(&mut self, s: &Step) {
        use Op::*;
        let (unlocked, waited) = (self.just_unlocked, self.just_waited);
        self.just_unlocked = false;
        self.just_waited = None;
        // A queue whose items are counted outside the mutex (a futex word, a semaphore, an
        // eventfd): the post right after a put's section is that section's signal, and the
        // section right after a take from the counter is a take that waited for it.
        match s.counter {
            Some(Counter::Give) if unlocked => {
                if let Some(last) = self.sections.last_mut() {
                    last.signals
                        .push((s.obj, s.open_leaf.saturating_sub(1), last.order));
                    self.signal_holds.push((s.obj, ANY_MUTEX));
                }
                return;
            }
            Some(Counter::Take) => {
                self.just_waited = Some(s.obj);
                return;
            }
            _ => {}
        }
        match s.op {
            MutexLock | MutexTrylock | MutexTimedlock | MutexClocklock if s.res == 0 => {
                for x in self.sections.iter_mut().rev().take(4) {
                    if x.obj == s.obj && x.stack == UNKNOWN_SITE {
                        x.stack = s.stack;
                    }
                }
                self.held.push(Held {
                    obj: s.obj,
                    leaf: s.open_leaf,
                    stack: s.stack,
                    waited: waited.filter(|_| self.held.is_empty()),
                    wait_from: None,
                    signals: Vec::new(),
                    pending: Vec::new(),
                });
            }
            CondUnlock => {
                self.in_wait = Some(s.obj);
                if let (Some(h), Some(order)) =
                    (self.held.iter_mut().rev().find(|h| h.obj == s.obj), s.seq)
                {
                    let placed = h.pending.drain(..).map(|(c, l)| (c, l, order));
                    h.signals.extend(placed);
                    h.wait_from = Some(order);
                }
                if !self.held.iter().any(|h| h.obj == s.obj) {
                    // Its lock was not recorded: counted (`record --locks count`) before this
                    // wait made the mutex a condition's. The section is known from here; its
                    // lock's call site is taken to be that of the thread's next lock of the
                    // mutex (a consumer's loop locks at one site), until then unknown.
                    self.held.push(Held {
                        obj: s.obj,
                        leaf: s.open_leaf,
                        stack: UNKNOWN_SITE,
                        waited: None,
                        wait_from: s.seq,
                        signals: Vec::new(),
                        pending: Vec::new(),
                    });
                }
            }
            CondRelock => {
                if let Some(h) = self.held.iter_mut().rev().find(|h| h.obj == s.obj) {
                    h.leaf = s.open_leaf;
                }
            }
            CondWait | CondTimedwait | CondClockwait => {
                if let Some(m) = self.in_wait.take() {
                    if let Some(h) = self.held.iter_mut().rev().find(|h| h.obj == m) {
                        h.waited = Some(s.obj);
                    }
                }
            }
            // The signal ended the leaf before the open one.
            CondSignal => {
                if let Some(h) = self.held.last_mut() {
                    h.pending.push((s.obj, s.open_leaf.saturating_sub(1)));
                }
                // Which mutexes were held (kept apart from the sections, which a thread makes by
                // the million, so that they do not grow).
                self.signal_holds.push((s.obj, ANY_MUTEX));
                let holds = self.held.iter().map(|h| (s.obj, h.obj));
                self.signal_holds.extend(holds);
            }
            MutexUnlock => {
                let Some(i) = self.held.iter().rposition(|h| h.obj == s.obj) else {
                    return;
                };
                let mut h = self.held.remove(i);
                if let Some(order) = s.seq {
                    let placed = h.pending.drain(..).map(|(c, l)| (c, l, order));
                    h.signals.extend(placed);
                    self.sections.push(Section {
                        obj: h.obj,
                        order,
                        leaf: h.leaf,
                        stack: h.stack,
                        waited: h.waited,
                        wait_from: h.wait_from,
                        signals: h.signals,
                    });
                    self.just_unlocked = self.held.is_empty();
                }
            }
            _ => {}
        }
    }

    /// The signal holds (see the field), taken.
    pub(crate) fn take_signal_holds(&mut self) -> Vec<(u32, u32)> {
        std::mem::take(&mut self.signal_holds)
    }

    /// The sections that may matter: those that signalled or waited, and those at a call site
    /// where the thread waited on some condition with the same mutex, or at a loop's peeled
    /// copy of such a site (`peeled`: the first take, made before the worker ever waited, when
    /// its item was there already). `frames` gives a stack id's return addresses.
    pub(crate) fn finish<'a>(&mut self, frames: &dyn Fn(u32) -> Option<&'a [u64]>) -> Vec<Section> {
        let mut known: Vec<(u32, u32)> = self
            .sections
            .iter()
            .filter(|s| s.waited.is_some())
            .map(|s| (s.obj, s.stack))
            .collect();
        known.sort_unstable();
        known.dedup();
        let mut v = std::mem::take(&mut self.sections);
        let calls: Vec<(u32, u32)> = v.iter().map(|s| (s.obj, s.stack)).collect();
        for (s, site) in v.iter_mut().zip(as_known_sites(&calls, &known, frames)) {
            s.stack = site;
        }
        v.retain(|s| {
            s.waited.is_some()
                || !s.signals.is_empty()
                || known.binary_search(&(s.obj, s.stack)).is_ok()
        });
        v
    }
}
