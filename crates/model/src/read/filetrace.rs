//! What one decoded file holds ([`FileTrace`]), and the consumer that takes a file's records
//! as they are decoded instead ([`FileSink`]).

use std::path::PathBuf;

use super::clock::Clock;
use super::error::ReadError;
use super::header::Header;
use super::maps::ModuleMap;
use super::types::{Calibration, Event, ObjectDef, Ready, Sample, ThreadName, Title};

/// Everything decoded from one file.
#[derive(Debug)]
pub struct FileTrace {
    /// The file.
    pub path: PathBuf,
    /// Its header.
    pub header: Header,
    /// Its length on disk.
    pub file_len: u64,
    /// Record bytes decoded (at most the committed length).
    pub decoded_len: u64,
    /// Events in file order.
    pub events: Vec<Event>,
    /// OBJECT records in file order.
    pub objects: Vec<ObjectDef>,
    /// CALIBRATION records in file order (the header's point is not included).
    pub calibrations: Vec<Calibration>,
    /// MAPS records.
    pub maps: Vec<ModuleMap>,
    /// Call stacks by id (return addresses, innermost first).
    pub stacks: std::collections::BTreeMap<u64, Vec<u64>>,
    /// The command line (CMDLINE record), lossy UTF-8.
    pub cmdline: Option<Vec<String>>,
    /// The process titles this file's thread noticed (TITLE records), in file order.
    pub titles: Vec<Title>,
    /// The executable path (EXE record).
    pub exe: Option<PathBuf>,
    /// THREAD_NAME records.
    pub thread_names: Vec<ThreadName>,
    /// SAMPLE records (on-CPU samples), in file order.
    pub samples: Vec<Sample>,
    /// The clock that turned this file's ticks into nanoseconds: its own calibration points, or
    /// after [`super::read_dir`] the line fitted over every TSC-clocked file of the trace.
    pub clock: Clock,
    /// Events the LOST records count.
    pub lost: u64,
    /// Records of kinds this reader does not know (skipped).
    pub unknown_records: u64,
    /// HELD records read (each gave two of `events`: an uncontended mutex lock and its unlock).
    pub held_records: u64,
    /// Problems found; decoding stopped at a [`ReadError::Damaged`] one.
    pub warnings: Vec<ReadError>,
}

/// A consumer of one file's records as they are decoded, for [`super::read_file_streaming`] and
/// [`super::read_dir_with`] (which decodes files in parallel, so its sinks must also be `Send`).
pub trait FileSink {
    /// One event, in file order. Its `ts_ns` and `dur_ns` are 0: the clock is known only at the
    /// end of the file (and for a directory, once every file is read). Convert its ticks later
    /// with [`FileTrace::clock`].
    fn event(&mut self, e: &Event);
    /// An OBJECT record, before any event that uses it.
    fn object(&mut self, _def: &ObjectDef) {}
    /// Whether the file's [`FileTrace::objects`] should keep every OBJECT record as well (what
    /// objects are connected to is read from there). A sink that needs none of them says no:
    /// a program whose objects outnumber the agent's table has one every few events.
    fn keeps_objects(&self) -> bool {
        true
    }
    /// A READY record: what the readiness wait just handed to [`FileSink::event`] reported.
    fn ready(&mut self, _ready: &Ready) {}
    /// An event past the end of a window of the trace (see [`super::Windows`]), in file order,
    /// after every event of the window: not part of the window (the next one holds it), shown
    /// so that the sink can learn how what the window cut goes on. Returns whether the sink
    /// wants the next one too; a few thousand at most are shown. The default wants none.
    fn beyond(&mut self, _e: &Event) -> bool {
        false
    }
    /// The file is decoded (its objects, stacks and warnings are complete): the place to reduce
    /// what [`FileSink::event`] kept. [`super::read_dir_with`] calls it on the worker thread
    /// that decoded the file.
    fn finish(&mut self, _file: &FileTrace) {}
}

impl FileSink for () {
    fn event(&mut self, _: &Event) {}
}
