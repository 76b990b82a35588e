//! `scalpel dump --merged` without loading the trace: every selected file decoded again on a
//! thread of its own, which hands its events over in chunks, and the streams merged by time in
//! the order the loaded dump sorts them.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{self, Write};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

use scalpel_model::read::{Event, FileSink, FileTrace, ProcessTrace, Ready};

use super::dump::{dump, DumpOptions, DumpStats, Filter};
use super::events::{event_line, Identities};
use super::stacks::write_stack;
use super::streamed::{reread, DumpDir};
use scalpel_symbols::Symbolizer;

impl DumpDir {
    /// [`DumpDir::write`] merged by time: every selected file is decoded again on a thread of
    /// its own, which hands its events over in chunks, and the streams are merged in the loaded
    /// dump's order (time, pid, tid, file, position). A trace whose clock or whose files'
    /// readings go back in time (damage) is not in time order file by file: it is loaded and
    /// sorted instead.
    pub(super) fn write_merged(
        &self,
        opts: &DumpOptions,
        out: &mut dyn Write,
    ) -> io::Result<DumpStats> {
        let ordered = self
            .trace
            .files()
            .all(|(_, f)| f.clock.is_monotonic() && !self.tally(f).went_back);
        if !ordered {
            let trace =
                scalpel_model::read::read_dir(&self.trace.path).map_err(io::Error::other)?;
            return dump(&trace, opts, out);
        }
        let filter = Filter::new(opts);
        let ids = self.trace.identities();
        let first = self.first_ts();
        let limit = opts.limit.unwrap_or(usize::MAX);
        let files: Vec<(&ProcessTrace, &FileTrace)> = self
            .trace
            .files()
            .filter(|&(p, f)| filter.file(p, f) && self.tally(f).events > 0)
            .collect();
        std::thread::scope(|scope| {
            let mut streams = Vec::with_capacity(files.len());
            for &(_, f) in &files {
                let (tx, rx) = sync_channel(1);
                let filter = &filter;
                let ids = &ids;
                std::thread::Builder::new()
                    .name("dump-decode".into())
                    .stack_size(DECODER_STACK)
                    .spawn_scoped(scope, move || {
                        let mut c = Chunking {
                            filter,
                            ids,
                            f,
                            chunk: Vec::with_capacity(CHUNK),
                            tx,
                            stopped: false,
                            last_kept: false,
                        };
                        let r = reread(f, &mut c);
                        match r {
                            Ok(()) => c.send(),
                            Err(e) => {
                                let _ = c.tx.send(Err(e));
                            }
                        }
                    })?;
                streams.push(Stream {
                    rx,
                    chunk: Vec::new().into_iter(),
                    index: 0,
                });
            }
            // The next event of every stream, smallest first.
            let mut heap = BinaryHeap::new();
            for (n, s) in streams.iter_mut().enumerate() {
                if let Some(e) = s.next()? {
                    heap.push(Reverse(Head::new(n, &files, e, s.index)));
                }
            }
            let mut stats = DumpStats::default();
            let mut sym = Symbolizer::new();
            while let Some(Reverse(h)) = heap.pop() {
                if stats.events == limit {
                    stats.truncated = true;
                    break;
                }
                let (p, f) = files[h.n];
                writeln!(out, "{}", event_line(first, p, f, &h.event, &ids))?;
                if opts.stacks {
                    write_stack(out, &mut sym, p, f, &h.event)?;
                }
                stats.events += 1;
                let s = &mut streams[h.n];
                if let Some(e) = s.next()? {
                    heap.push(Reverse(Head::new(h.n, &files, e, s.index)));
                }
            }
            stats.module_warnings = sym.warnings().to_vec();
            // The receivers go before the scope waits for the decoders, so that a decoder
            // blocked on a full channel (the limit was reached) gets an error and ends.
            drop(streams);
            Ok(stats)
        })
    }
}

/// Events per chunk a decoder hands over, and chunks in flight per file: memory is about
/// 2 × CHUNK events for every file being merged.
const CHUNK: usize = 512;
/// A decoder thread's stack: decoding does not recurse.
const DECODER_STACK: usize = 256 << 10;

/// The stream of one file's selected events, in file order.
struct Stream {
    rx: Receiver<io::Result<Vec<Event>>>,
    chunk: std::vec::IntoIter<Event>,
    /// Events taken so far (the position of the last one, plus one).
    index: usize,
}

impl Stream {
    fn next(&mut self) -> io::Result<Option<Event>> {
        loop {
            if let Some(e) = self.chunk.next() {
                self.index += 1;
                return Ok(Some(e));
            }
            match self.rx.recv() {
                Ok(chunk) => self.chunk = chunk?.into_iter(),
                Err(_) => return Ok(None),
            }
        }
    }
}

/// A stream's next event, ordered as the loaded dump sorts: time, pid, tid, file, position.
struct Head {
    key: (u64, u32, u32, usize, usize),
    n: usize,
    event: Event,
}

impl Head {
    fn new(n: usize, files: &[(&ProcessTrace, &FileTrace)], event: Event, index: usize) -> Head {
        let (p, f) = files[n];
        Head {
            key: (event.ts_ns, p.pid, f.header.tid, n, index),
            n,
            event,
        }
    }
}

impl PartialEq for Head {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

impl Eq for Head {}

impl PartialOrd for Head {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Head {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key.cmp(&other.key)
    }
}

/// A decoder's sink for the merge: the selected events, with their times, in chunks. The last
/// event is held until the next record is known (a READY record belongs to it).
struct Chunking<'a> {
    filter: &'a Filter<'a>,
    ids: &'a Identities<'a>,
    f: &'a FileTrace,
    chunk: Vec<Event>,
    tx: SyncSender<io::Result<Vec<Event>>>,
    /// The merge stopped taking events: decode on without keeping any.
    stopped: bool,
    /// The event decoded last was kept (it is the chunk's last).
    last_kept: bool,
}

impl Chunking<'_> {
    /// Hands the chunk over, the held last event included.
    fn send(&mut self) {
        if !self.stopped && !self.chunk.is_empty() {
            let chunk = std::mem::replace(&mut self.chunk, Vec::with_capacity(CHUNK));
            self.stopped = self.tx.send(Ok(chunk)).is_err();
        }
        self.chunk.clear();
    }
}

impl FileSink for Chunking<'_> {
    fn event(&mut self, e: &Event) {
        if self.stopped {
            return;
        }
        if self.chunk.len() > CHUNK {
            // All but the last, which a READY record may still belong to.
            let last = self.chunk.pop();
            self.send();
            self.chunk.extend(last);
        }
        self.last_kept = self.filter.event(e, self.ids);
        if self.last_kept {
            let mut e = e.clone();
            self.f.clock.time(&mut e);
            self.chunk.push(e);
        }
    }

    fn ready(&mut self, r: &Ready) {
        // Only the event just decoded has it, when it was kept.
        if let Some(e) = self.chunk.last_mut().filter(|_| self.last_kept) {
            e.ready = Some(Box::new(r.clone()));
        }
    }
}
