//! Record payload decoding: applies each record to the per-file state (object table, sequence
//! numbers, clock) and fills in a [`FileTrace`].

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use super::clock::Clock;
use super::error::ReadError;
use super::filetrace::FileTrace;
use super::header::Header;
use super::identity::Identity;
use super::maps::ModuleMap;
use super::types::{Calibration, Event, ObjectDef, ObjectRef, Ready, ReadyForm, Sample};
use super::types::{ThreadName, Title};
use crate::format::{hdr, ready, rec, sample, ObjKind, Op, MAX_STACK_FRAMES};
use crate::record::RawEvent;
use crate::wire::{Dec, DecError};

mod ahead;
mod objtable;
pub(crate) use ahead::MAX_AHEAD;
use objtable::ObjTable;

/// Where decoded events go: kept in [`FileTrace::events`], or handed to a caller's sink one by
/// one and dropped (see [`super::decode_file_with`]).
pub(crate) type Sink<'s> = Option<&'s mut dyn super::filetrace::FileSink>;

/// Per-file decoding state.
pub(crate) struct State<'p, 's> {
    path: &'p Path,
    sink: Sink<'s>,
    ticks: u64,
    /// The thread's CPU time at the last event that carried one (the sum of their deltas).
    cpu: u64,
    /// Object index -> (kind, key, last absolute sequence number).
    table: ObjTable,
    undefined_refs: u64,
    first_undefined: u64,
    warned_index0: bool,
    /// The last record applied was an event (a READY record belongs to it).
    after_event: bool,
    /// Mutexes with a `mutex_counted` event from the header's counts table as it is now (its
    /// generation): their entries in the table were written out already.
    counted_now: HashSet<u64>,
    /// A windowed read stops before the first event that returned at or after these ticks
    /// (`u64::MAX`: it reads to the end).
    stop_at: u64,
    /// It did stop there.
    pub(crate) stopped: bool,
    /// The bound objects' definitions, kept only by a windowed read: the next window hands
    /// them to its sink before its first record.
    defs: Option<HashMap<u64, ObjectDef>>,
    pub(crate) out: FileTrace,
    /// Past a window's end (see [`ahead`]): whether the sink wants the next event too.
    ahead: Option<bool>,
}

/// Where a windowed read of a file stopped, and the decoding state there: the next window
/// resumes from it as if it had decoded everything before (see [`super::windows`]).
#[derive(Clone, Debug, Default)]
pub struct FileCursor {
    /// The data offset (from the end of the header) of the first record not read.
    pub(crate) pos: usize,
    ticks: u64,
    cpu: u64,
    table: ObjTable,
    defs: HashMap<u64, ObjectDef>,
    counted_now: HashSet<u64>,
    warned_index0: bool,
    /// The file was read to its end: nothing is left for a later window.
    pub(crate) done: bool,
}

impl FileCursor {
    /// The cursor of a file an earlier window read to its end.
    pub(crate) fn past_end() -> FileCursor {
        FileCursor {
            done: true,
            ..FileCursor::default()
        }
    }
}

/// A record kind's name for messages.
pub(crate) fn rec_name(kind: u8) -> String {
    let s = match kind {
        rec::EVENT => "EVENT",
        rec::OBJECT => "OBJECT",
        rec::CALIBRATION => "CALIBRATION",
        rec::MAPS => "MAPS",
        rec::CMDLINE => "CMDLINE",
        rec::THREAD_NAME => "THREAD_NAME",
        rec::LOST => "LOST",
        rec::STACK => "STACK",
        rec::OBJECT_RESET => "OBJECT_RESET",
        rec::EXE => "EXE",
        rec::READY => "READY",
        rec::TITLE => "TITLE",
        rec::SAMPLE => "SAMPLE",
        rec::HELD => "HELD",
        _ => return format!("kind {kind}"),
    };
    s.to_string()
}

pub(crate) fn dec_what(e: DecError) -> &'static str {
    match e {
        DecError::Eof => "the data ended early",
        DecError::Overlong => "a varint is overlong",
    }
}

impl<'p, 's> State<'p, 's> {
    pub(crate) fn new(path: &'p Path, header: Header, file_len: u64, sink: Sink<'s>) -> Self {
        let clock = Clock::new(&header, &[]);
        State {
            path,
            sink,
            ticks: header.clock0,
            cpu: 0,
            table: ObjTable::default(),
            undefined_refs: 0,
            first_undefined: 0,
            warned_index0: false,
            after_event: false,
            counted_now: HashSet::new(),
            stop_at: u64::MAX,
            stopped: false,
            defs: None,
            ahead: None,
            out: FileTrace {
                path: path.to_path_buf(),
                header,
                file_len,
                decoded_len: 0,
                events: Vec::new(),
                objects: Vec::new(),
                calibrations: Vec::new(),
                maps: Vec::new(),
                stacks: Default::default(),
                cmdline: None,
                titles: Vec::new(),
                exe: None,
                thread_names: Vec::new(),
                samples: Vec::new(),
                clock,
                lost: 0,
                unknown_records: 0,
                held_records: 0,
                warnings: Vec::new(),
            },
        }
    }

    /// Hands a new binding to the sink, and keeps it in the file's objects unless the sink
    /// needs none.
    fn bound(&mut self, def: ObjectDef) {
        let keep = match self.sink.as_mut() {
            Some(sink) => {
                sink.object(&def);
                sink.keeps_objects()
            }
            None => true,
        };
        if keep {
            self.out.objects.push(def);
        }
    }

    /// Makes this a windowed read: it stops before the first event at or after `stop_at`
    /// ticks, and keeps what [`State::cursor`] needs.
    pub(crate) fn windowed(&mut self, stop_at: u64) {
        self.stop_at = stop_at;
        self.defs = Some(HashMap::new());
    }

    /// Takes up decoding where `c` left it, handing the objects bound there to the sink first
    /// (in index order, so that every window's sink sees them alike).
    pub(crate) fn resume(&mut self, c: &FileCursor) {
        self.ticks = c.ticks;
        self.cpu = c.cpu;
        self.table = c.table.clone();
        self.counted_now = c.counted_now.clone();
        self.warned_index0 = c.warned_index0;
        let mut defs: Vec<&ObjectDef> = c.defs.values().collect();
        defs.sort_unstable_by_key(|d| d.index);
        if let Some(sink) = self.sink.as_mut() {
            for d in &defs {
                sink.object(d);
            }
        }
        // The window's file names them too: what they are connected to (a stream's endpoints)
        // is read from the file's objects.
        self.out.objects.extend(defs.into_iter().cloned());
        self.defs = Some(c.defs.clone());
    }

    /// The state at data offset `pos`, for the next window.
    pub(crate) fn cursor(&self, pos: usize) -> FileCursor {
        FileCursor {
            pos,
            ticks: self.ticks,
            cpu: self.cpu,
            table: self.table.clone(),
            defs: self.defs.clone().unwrap_or_default(),
            counted_now: self.counted_now.clone(),
            warned_index0: self.warned_index0,
            done: false,
        }
    }

    /// Whether a windowed read stops at an event that began `dt` ticks after the last one and
    /// lasted `dur`: at the first that returned at or after the boundary. By return, not by
    /// start: a wait that began before the boundary and was woken after it goes with what woke
    /// it, and with the rest of the call (a condition wait's re-lock) that follows it.
    fn stops_at(&mut self, dt: u64, dur: u64) -> bool {
        if self.defs.is_none() {
            return false;
        }
        self.stopped = self.ticks.saturating_add(dt).saturating_add(dur) >= self.stop_at;
        self.stopped
    }

    pub(crate) fn damaged(&mut self, offset: u64, expected: String) {
        let path = self.path.to_path_buf();
        let e = ReadError::Damaged {
            path,
            offset,
            expected,
        };
        self.out.warnings.push(e);
    }

    pub(crate) fn inconsistent(&mut self, offset: u64, problem: String) {
        let path = self.path.to_path_buf();
        let e = ReadError::Inconsistent {
            path,
            offset,
            problem,
        };
        self.out.warnings.push(e);
    }

    /// Applies one record; `at` is its absolute offset.
    pub(crate) fn record(&mut self, kind: u8, payload: &[u8], at: u64) -> Result<(), DecError> {
        let after_event = std::mem::replace(&mut self.after_event, kind == rec::EVENT);
        let mut d = Dec::new(payload);
        match kind {
            rec::READY => self.ready(&mut d, at, after_event)?,
            rec::EVENT => {
                let raw = RawEvent::decode_payload(&mut d)?;
                if !self.stops_at(raw.dt, raw.dur) {
                    self.event(raw, at);
                }
            }
            rec::HELD => match RawEvent::decode_payload(&mut d)?.split_held() {
                Some((lock, _)) if self.stops_at(lock.dt, lock.dur) => {}
                Some((lock, unlock)) => {
                    self.out.held_records += 1;
                    self.event(lock, at);
                    self.event(unlock, at);
                }
                None => self.inconsistent(
                    at,
                    "a HELD record that is not a mutex_lock or mutex_trylock with an object, a \
                     sequence delta and an unlock sequence delta of at least 1; ignored"
                        .into(),
                ),
            },
            rec::OBJECT => {
                let index = d.varint()?;
                let kind = d.u8()?;
                let key = d.varint()?;
                let identity = Identity::decode(kind, d.rest())?;
                if index == 0 {
                    if !self.warned_index0 {
                        self.warned_index0 = true;
                        self.inconsistent(
                            at,
                            "an OBJECT record defines index 0 (ignored, and so is any later one)"
                                .into(),
                        );
                    }
                } else {
                    // A (re)definition starts a new table entry, whose last sequence number is 0.
                    self.table.insert(index, (kind, key, 0));
                    let def = ObjectDef {
                        index,
                        kind,
                        key,
                        identity,
                    };
                    if let Some(defs) = self.defs.as_mut() {
                        defs.insert(index, def.clone());
                    }
                    self.bound(def);
                }
            }
            rec::CALIBRATION => {
                let ticks = d.varint()?;
                let mono_ns = d.varint()?;
                // Why optional: earlier agents wrote two fields.
                let width = if d.remaining() > 0 {
                    Some(d.varint()?)
                } else {
                    None
                };
                self.out.calibrations.push(Calibration {
                    ticks,
                    mono_ns,
                    width,
                    offset: at,
                });
            }
            rec::MAPS => {
                let ticks = d.varint()?;
                self.out.maps.push(ModuleMap::parse(ticks, d.rest()));
            }
            rec::CMDLINE => self.out.cmdline = Some(split_args(d.rest())),
            rec::TITLE => {
                let ticks = d.varint()?;
                let args = split_args(d.rest());
                self.out.titles.push(Title { ticks, args });
            }
            rec::THREAD_NAME => {
                let ticks = d.varint()?;
                let name = String::from_utf8_lossy(d.rest()).into_owned();
                self.out.thread_names.push(ThreadName {
                    ticks,
                    ts_ns: 0,
                    name,
                });
            }
            rec::SAMPLE => {
                let ticks = d.varint()?;
                let period_ns = d.varint()?;
                let overruns = d.varint()?;
                let stack = d.varint()?;
                let flags = d.u8()?;
                self.out.samples.push(Sample {
                    ticks,
                    period_ns,
                    overruns,
                    stack,
                    in_agent: flags & sample::IN_AGENT != 0,
                });
            }
            rec::LOST => self.out.lost = self.out.lost.saturating_add(d.varint()?),
            rec::OBJECT_RESET => {
                self.table.clear();
                if let Some(defs) = self.defs.as_mut() {
                    defs.clear();
                }
            }
            rec::EXE => {
                use std::os::unix::ffi::OsStrExt;
                self.out.exe = Some(PathBuf::from(std::ffi::OsStr::from_bytes(d.rest())));
            }
            rec::STACK => {
                let id = d.varint()?;
                let n = d.varint()?;
                // Each frame takes at least a byte: a count larger than the payload is damage.
                if n > d.remaining() as u64 {
                    return Err(DecError::Eof);
                }
                if n > MAX_STACK_FRAMES as u64 {
                    let problem = format!(
                        "a STACK record of {n} frames (the agent writes at most \
                         {MAX_STACK_FRAMES}); ignored"
                    );
                    self.inconsistent(at, problem);
                    return Ok(());
                }
                let mut frames = Vec::with_capacity(usize::try_from(n).unwrap_or(0));
                let mut pc = 0u64;
                for i in 0..n {
                    pc = if i == 0 {
                        d.varint()?
                    } else {
                        pc.wrapping_add(d.ivarint()?.cast_unsigned())
                    };
                    frames.push(pc);
                }
                if id == 0 {
                    self.inconsistent(at, "a STACK record defines id 0; ignored".into());
                } else {
                    self.out.stacks.insert(id, frames);
                }
            }
            _ => self.out.unknown_records += 1,
        }
        Ok(())
    }

    /// A READY record: the list of the event just before it.
    fn ready(&mut self, d: &mut Dec<'_>, at: u64, after_event: bool) -> Result<(), DecError> {
        let form = ReadyForm::from_code(d.u8()?);
        let reported = d.varint()?;
        let listed = d.varint()?;
        // Each value takes at least a byte: a count larger than the payload is damage.
        if listed > d.remaining() as u64 {
            return Err(DecError::Eof);
        }
        if listed > ready::MAX_LISTED as u64 || listed > reported || !after_event {
            let problem = if after_event {
                format!(
                    "a READY record lists {listed} of {reported} descriptors (the agent lists at \
                     most {} and never more than it reports); ignored",
                    ready::MAX_LISTED
                )
            } else {
                "a READY record that follows no event; ignored".to_string()
            };
            self.inconsistent(at, problem);
            return Ok(());
        }
        let mut values = Vec::with_capacity(ready::MAX_LISTED);
        for _ in 0..listed {
            values.push(d.varint()?);
        }
        let r = Ready {
            form,
            reported,
            values,
        };
        match self.sink.as_mut() {
            Some(sink) => sink.ready(&r),
            None => {
                if let Some(e) = self.out.events.last_mut() {
                    e.ready = Some(Box::new(r));
                }
            }
        }
        Ok(())
    }

    fn event(&mut self, raw: RawEvent, at: u64) {
        self.ticks = self.ticks.wrapping_add(raw.dt);
        let cpu_ns = raw.cpu.map(|d| {
            self.cpu = self.cpu.wrapping_add(d);
            self.cpu
        });
        let entry = raw.obj.and_then(|i| self.table.get_mut(i).map(|e| (i, e)));
        if raw.obj.is_some() && entry.is_none() && self.ahead.is_none() {
            if self.undefined_refs == 0 {
                self.first_undefined = at;
            }
            self.undefined_refs += 1;
        }
        // Without its object, a delta has no base: the event keeps no sequence number.
        let (obj, seq) = match entry {
            Some((index, (kind, key, last))) => {
                let r = ObjectRef {
                    kind: *kind,
                    key: *key,
                    index,
                };
                let seq = raw.seq_delta.map(|delta| {
                    *last = last.wrapping_add(delta.cast_unsigned());
                    *last
                });
                (Some(r), seq)
            }
            None => (None, None),
        };
        if raw.op == Op::MutexCounted as u8
            && raw.aux2 == Some(u64::from(self.out.header.counts_gen()))
        {
            if let Some(o) = &obj {
                self.counted_now.insert(o.key);
            }
        }
        let event = Event {
            op: Op::from_u8(raw.op),
            op_code: raw.op,
            ticks: self.ticks,
            ts_ns: 0,
            dur_ticks: raw.dur,
            dur_ns: 0,
            obj,
            seq,
            result: raw.result,
            fd: raw.fd,
            offset: raw.offset,
            aux: raw.aux,
            aux2: raw.aux2,
            stack: raw.stack,
            cpu_ns,
            file_offset: at,
            ready: None,
        };
        match self.sink.as_mut() {
            Some(sink) if self.ahead.is_some() => self.ahead = Some(sink.beyond(&event)),
            Some(sink) => sink.event(&event),
            None => self.out.events.push(event),
        }
    }

    /// The counts the header's table holds that no `mutex_counted` event of the file wrote out
    /// (see [`hdr::COUNT_KEYS`]: the thread was killed, or another thread ended the process,
    /// before it wrote them): read as `mutex_counted` events at the file's last time, `at` the
    /// end of its records.
    pub(crate) fn header_counts(&mut self, at: u64) {
        let claimed = self.out.header.counts_len();
        if self.out.header.counts.is_empty() {
            return;
        }
        if claimed as usize > hdr::COUNT_SLOTS {
            self.inconsistent(
                hdr::COUNTS_STATE as u64,
                format!(
                    "the counts table says it holds {claimed} entries, more than its {} slots; \
                     reading those",
                    hdr::COUNT_SLOTS
                ),
            );
        }
        let gen = u64::from(self.out.header.counts_gen());
        let pending: Vec<(u64, u64)> = self
            .out
            .header
            .counts
            .iter()
            .copied()
            .filter(|&(key, count)| key != 0 && count != 0 && !self.counted_now.contains(&key))
            .collect();
        let mutex = ObjKind::Mutex.code();
        for (key, count) in pending {
            // The mutex's latest definition in this file, or a new one (its pairs were all
            // counted, so no event named it).
            let known = self
                .table
                .iter()
                .filter(|(_, &(kind, k, _))| kind == mutex && k == key)
                .map(|(i, _)| i)
                .max();
            let index = match known {
                Some(i) => i,
                None => {
                    let Some(i) = self.table.max_index().map_or(Some(1), |m| m.checked_add(1))
                    else {
                        continue;
                    };
                    self.table.insert(i, (mutex, key, 0));
                    let def = ObjectDef {
                        index: i,
                        kind: mutex,
                        key,
                        identity: Identity::None,
                    };
                    self.bound(def);
                    i
                }
            };
            let raw = RawEvent {
                op: Op::MutexCounted as u8,
                obj: Some(index),
                aux: Some(count),
                aux2: Some(gen),
                ..RawEvent::default()
            };
            self.event(raw, at);
        }
    }

    pub(crate) fn finish(mut self) -> FileTrace {
        if self.undefined_refs > 0 {
            let n = self.undefined_refs;
            let problem = format!("{n} event(s) name an object index no OBJECT record defined");
            self.inconsistent(self.first_undefined, problem);
        }
        let mut out = self.out;
        let clock = Clock::new(&out.header, &out.calibrations);
        out.apply_clock(&clock);
        out
    }
}

/// NUL-separated arguments (a final NUL ends the last one), lossy UTF-8.
fn split_args(raw: &[u8]) -> Vec<String> {
    let raw = raw.strip_suffix(&[0]).unwrap_or(raw);
    if raw.is_empty() {
        return Vec::new();
    }
    raw.split(|&b| b == 0)
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect()
}

impl FileTrace {
    /// Recomputes every nanosecond time of this file with `clock`, and keeps it as the file's
    /// clock.
    pub fn apply_clock(&mut self, clock: &Clock) {
        self.clock = clock.clone();
        for e in &mut self.events {
            clock.time(e);
        }
        for m in &mut self.maps {
            m.ts_ns = clock.ns(m.ticks);
        }
        for t in &mut self.thread_names {
            t.ts_ns = clock.ns(t.ticks);
        }
    }
}
