//! The trace reader: typed decoding of files and directories.
//!
//! [`read_file`] decodes one file, [`read_dir`] a whole trace directory. Damage past a file's
//! header never fails a read: decoding stops at the first bad record and the problem is kept as
//! a warning next to the data decoded before it.

mod clock;
mod decode;
mod dir;
mod error;
mod file;
mod filetrace;
mod header;
mod host;
mod identity;
mod knots;
mod maps;
mod types;
mod windows;

pub use clock::{Clock, Shift};
pub use decode::FileCursor;
pub use dir::{
    read_dir, read_dir_with, EventRef, ProcessSinks, ProcessTrace, RecordingLosses, TraceDir,
};
pub use error::ReadError;
pub use file::{decode_file, read_file, read_file_streaming};
pub use filetrace::{FileSink, FileTrace};
pub use header::{Header, MIN_HEADER_SIZE};
pub use host::HostIdentity;
pub use identity::{chan_name, obj_kind_name, put_varint, Endpoint, Identity};
pub use maps::{MapEntry, ModuleMap};
pub use types::Title;
pub use types::{Calibration, Event, ObjectDef, ObjectRef, Ready, ReadyForm, Sample, ThreadName};
pub use windows::{Windows, SAMPLE_EVERY};
