//! The readers waiting on a stream when its next bytes are written, and which of them those
//! bytes wake first.

/// Which of several readers waiting on a channel its bytes wake.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wake {
    /// Every waiter is woken and the first to run takes the bytes (a socket's readers wait
    /// side by side), so the one that returned first took them.
    All,
    /// One waiter is woken, the one that began waiting first (Linux's pipes, since 5.5, queue
    /// their readers and wake them one at a time): the first to start took them, unless a
    /// reader that entered before it returned found them first. A reader woken for bytes
    /// another took is out of the queue until it runs and finds none: for [`REQUEUE_NS`] it
    /// goes after the readers still waiting, then back to its place.
    Oldest,
}

/// How long a pipe's reader robbed of the bytes that woke it is taken to stay out of the
/// queue: the time a woken thread may wait for a CPU on a busy machine, a scheduler period
/// (CFS's is 6 ms × (1 + log2 of the CPUs), 12 ms on two). In generated pools recorded on a
/// loaded machine, a worker robbed and given the next bytes 68 µs later was still out (a reader
/// that queued after it took them), one robbed 9 ms before still out, and one given bytes 43 ms
/// later back in its place; 4 ms cost 13 of 156 requests of one program, 10 to 30 ms none.
pub(in crate::streamorder) const REQUEUE_NS: u64 = 12_000_000;

/// One waiting read: its time (return for [`Wake::All`], start for [`Wake::Oldest`]), offset
/// as recorded, index in its run, and when it was last robbed.
#[derive(Clone, Copy)]
struct Waiter {
    time: u64,
    off: u64,
    read: usize,
    robbed_at: Option<u64>,
}

/// The waiting reads of one run. Few readers wait on one stream at once, so a scan is enough.
pub(in crate::streamorder) struct Waiting {
    wake: Wake,
    list: Vec<Waiter>,
}

impl Waiting {
    pub(in crate::streamorder) fn new(wake: Wake) -> Self {
        Waiting {
            wake,
            list: Vec::new(),
        }
    }

    pub(in crate::streamorder) fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Adds read `read` of the run, whose call ran from `start` to `end`.
    pub(in crate::streamorder) fn push(&mut self, start: u64, end: u64, off: u64, read: usize) {
        let time = match self.wake {
            Wake::All => end,
            Wake::Oldest => start,
        };
        self.list.push(Waiter {
            time,
            off,
            read,
            robbed_at: None,
        });
    }

    /// Forgets the reads placed already.
    pub(in crate::streamorder) fn retain(&mut self, done: &[bool]) {
        self.list.retain(|w| !done[w.read]);
    }

    /// Whether any waiting read satisfies `f`.
    pub(in crate::streamorder) fn any(&self, f: impl Fn(usize) -> bool) -> bool {
        self.list.iter().any(|w| f(w.read))
    }

    /// Takes out the read that bytes written at `at` wake first.
    pub(in crate::streamorder) fn take_woken(&mut self, at: u64) -> Option<usize> {
        let out = |w: &Waiter| {
            w.robbed_at
                .is_some_and(|t| at.saturating_sub(t) < REQUEUE_NS)
        };
        let k = (0..self.list.len()).min_by_key(|&k| {
            let w = &self.list[k];
            (out(w), w.time, w.off, w.read)
        })?;
        Some(self.list.swap_remove(k).read)
    }

    /// Puts `read` back, robbed at `at` of the bytes that woke it (a pipe's reader leaves the
    /// queue when woken; a socket's stays).
    pub(in crate::streamorder) fn put_back(
        &mut self,
        read: usize,
        span: (u64, u64),
        off: u64,
        at: u64,
    ) {
        self.push(span.0, span.1, off, read);
        if self.wake == Wake::Oldest {
            if let Some(last) = self.list.last_mut() {
                last.robbed_at = Some(at);
            }
        }
    }
}
