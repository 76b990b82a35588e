//! One thread's mutex critical sections, followed event by event: which sections waited on a
//! condition, which signalled one (placed in the mutex's order), and which sit at a call site
//! where the thread took from a queue (see the parent module for what they are used for).

use scalpel_model::format::{ChanKind, Op};
use scalpel_model::graph::ChannelKind;

use crate::event::reads_bytes;
use crate::peeled::as_known_sites;
use crate::perobj::PerObj;

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

/// A section that neither waited nor signalled (kept per mutex, see [`Tracker`]'s `plain`).
#[derive(Clone, Copy)]
struct Plain {
    order: u64,
    leaf: u32,
    stack: u32,
}

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
    /// A condition wait whose release of the mutex this thread's events do not hold returned
    /// from this condition, and has not re-acquired the mutex (see [`Tracker::feed`]'s
    /// `CondRelock`).
    cut_wait: Option<u32>,
    /// The sections that waited or signalled, in the order they closed, and each one's place
    /// among every section the thread closed.
    sections: Vec<Section>,
    nth: Vec<u64>,
    /// Per mutex, the sections that neither waited nor signalled. They matter only where the
    /// thread waits on a condition with that mutex at their call site (see [`Tracker::finish`]),
    /// which only the end of the thread tells, and a thread makes them by the million (each of
    /// memcached's workers makes about 900,000 on mutexes it never waits with), so they are
    /// kept at a quarter of a [`Section`]'s size.
    plain: PerObj<Vec<Plain>>,
    /// How many sections the thread closed.
    closed: u64,
    /// The mutex of the last section closed, when that one is plain.
    last_plain: Option<u32>,
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

/// `EAGAIN` (Linux): a futex wait's result when the word no longer held the expected value.
const EAGAIN: i32 = 11;

impl Counter {
    /// What `op` on an object of channel kind `chan` does to a counter, `res` its result.
    pub(crate) fn of(op: Op, chan: Option<ChannelKind>, res: i32) -> Option<Counter> {
        use Op::*;
        let eventfd = chan.and_then(ChannelKind::known) == Some(ChanKind::Eventfd) && res > 0;
        match op {
            FutexWake | SemPost => Some(Counter::Give),
            // A wait that found the word changed never slept: what it counts was there already,
            // so the section after it took an item as one that never called the wait does.
            FutexWait if res == -EAGAIN => None,
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
                self.promote_last_plain();
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
                // The last four sections closed (a plain one has a recorded lock, so a site).
                let recent = self.closed.saturating_sub(4);
                let last = self.sections.iter_mut().zip(&self.nth).rev();
                for (x, _) in last.take_while(|&(_, &n)| n >= recent) {
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
                let cut = self.cut_wait.take();
                if let Some(h) = self.held.iter_mut().rev().find(|h| h.obj == s.obj) {
                    h.leaf = s.open_leaf;
                } else if let Some(c) = cut {
                    // A wait that began before the thread's first event here: a window of the
                    // trace that began while the thread waited holds the wait's return and
                    // re-lock, not its lock nor the release the wait made. Its section is a take
                    // that waited all the same: dropped, the item it popped went to the next
                    // take, and every take after it got the item before its own (nginx's
                    // thread pool, whose four idle workers wait across every boundary). Its
                    // lock's call site is taken to be that of the thread's next lock of the
                    // mutex, as for a lock that was counted, not recorded; where its wait began
                    // is not known.
                    self.held.push(Held {
                        obj: s.obj,
                        leaf: s.open_leaf,
                        stack: UNKNOWN_SITE,
                        waited: Some(c),
                        wait_from: None,
                        signals: Vec::new(),
                        pending: Vec::new(),
                    });
                }
            }
            CondWait | CondTimedwait | CondClockwait => match self.in_wait.take() {
                Some(m) => {
                    if let Some(h) = self.held.iter_mut().rev().find(|h| h.obj == m) {
                        h.waited = Some(s.obj);
                    }
                }
                None => self.cut_wait = Some(s.obj),
            },
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
                    self.close(Section {
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

    /// Keeps a closed section: in the per-mutex lists when it is plain.
    fn close(&mut self, x: Section) {
        let plain = x.waited.is_none() && x.wait_from.is_none() && x.signals.is_empty();
        if plain {
            let p = Plain {
                order: x.order,
                leaf: x.leaf,
                stack: x.stack,
            };
            self.plain.entry(x.obj).push(p);
            self.last_plain = Some(x.obj);
        } else {
            self.sections.push(x);
            self.nth.push(self.closed);
            self.last_plain = None;
        }
        self.closed += 1;
    }

    /// Moves the last section closed, when it is plain, to the sections kept whole: a counter's
    /// post right after it is about to make it a put.
    fn promote_last_plain(&mut self) {
        let Some(obj) = self.last_plain.take() else {
            return;
        };
        if let Some(p) = self.plain.get_mut(obj).and_then(Vec::pop) {
            self.sections.push(plain_section(obj, p));
            self.nth.push(self.closed - 1);
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
        self.nth = Vec::new();
        // Plain sections matter only on the mutexes of the sites known; in each mutex's order,
        // which is the thread's order among that mutex's sections.
        let mut plain = std::mem::take(&mut self.plain);
        for (obj, _) in known.chunk_by(|a, b| a.0 == b.0).map(|g| g[0]) {
            let list = plain.take(obj);
            v.extend(list.into_iter().map(|p| plain_section(obj, p)));
        }
        drop(plain);
        v.sort_by_key(|s| (s.obj, s.order));
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

/// A plain section of mutex `obj` as a section.
fn plain_section(obj: u32, p: Plain) -> Section {
    Section {
        obj,
        order: p.order,
        leaf: p.leaf,
        stack: p.stack,
        waited: None,
        wait_from: None,
        signals: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::{Step, Tracker};
    use scalpel_model::format::Op;

    const MUTEX: u32 = 1;
    const COND: u32 = 2;
    const SITE: u32 = 5;

    /// A section as the test compares it: order, leaf, site, condition waited on, wait's start.
    type Seen = (u64, u32, u32, Option<u32>, Option<u64>);

    fn step(op: Op, obj: u32, seq: u64, leaf: u32, stack: u32) -> Step {
        Step {
            op,
            obj,
            seq: Some(seq),
            res: 0,
            stack,
            open_leaf: leaf,
            counter: None,
        }
    }

    /// A window of the trace that began while a consumer waited on the queue's condition holds
    /// the wait's return, its re-lock and the unlock after, not the lock nor the release the
    /// wait made: that is a take that waited all the same, at the site of the thread's next
    /// lock of the mutex (nginx's thread pool, whose idle workers wait across every boundary:
    /// dropped, the item each popped went to the next take, and every take after it got the
    /// item before its own).
    #[test]
    fn a_wait_the_window_began_in_is_a_take_that_waited() {
        let mut t = Tracker::default();
        for s in [
            step(Op::CondWait, COND, 100, 0, 9),
            step(Op::CondRelock, MUTEX, 20, 1, 9),
            step(Op::MutexUnlock, MUTEX, 21, 1, 9),
            // The loop's next take: the lock at the dequeue site, a wait, the pop.
            step(Op::MutexLock, MUTEX, 30, 2, SITE),
            step(Op::CondUnlock, MUTEX, 31, 2, SITE),
            step(Op::CondWait, COND, 101, 3, 9),
            step(Op::CondRelock, MUTEX, 40, 3, 9),
            step(Op::MutexUnlock, MUTEX, 41, 3, 9),
        ] {
            t.feed(&s);
        }
        let got: Vec<Seen> = t
            .finish(&|_| None)
            .iter()
            .map(|s| (s.order, s.leaf, s.stack, s.waited, s.wait_from))
            .collect();
        assert_eq!(
            got,
            [
                (21, 1, SITE, Some(COND), None),
                (41, 3, SITE, Some(COND), Some(31)),
            ]
        );
    }
}
