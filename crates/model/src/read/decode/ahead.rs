//! The events just past a window's end, shown to the sink without being part of the window (see
//! `FileSink::beyond`). A window ends each thread in the middle of what it was doing; the call
//! that ends the thread's open work in the whole trace is in the next window, and the sink may
//! want to know it (the graph types a cut leaf by it). Only events are shown (of a HELD record,
//! its lock and then its unlock); an OBJECT record only updates the index table, so that the
//! events after it name their object; nothing else is applied. The next window reads all of it
//! again from the cursor saved at the boundary, so nothing here changes what a window holds.

use super::State;
use crate::format::rec;
use crate::record::RawEvent;
use crate::wire::Dec;

/// The most records read past a window's end in one file: the sink looks for one call, and a
/// thread that makes thousands of calls that are not it is rare enough to leave unknown.
pub(crate) const MAX_AHEAD: usize = 4096;

impl State<'_, '_> {
    /// Enters the mode: from now on, events go to the sink's `beyond` and warnings are not
    /// kept (the next window reads these records and reports what is wrong with them).
    pub(crate) fn begin_ahead(&mut self) {
        self.ahead = Some(true);
    }

    /// Applies one record past the window's end; false once the sink wants no more events, or
    /// at a record that does not decode.
    pub(crate) fn record_ahead(&mut self, kind: u8, payload: &[u8], at: u64) -> bool {
        let mut d = Dec::new(payload);
        match kind {
            rec::EVENT => match RawEvent::decode_payload(&mut d) {
                Ok(raw) => self.event(raw, at),
                Err(_) => return false,
            },
            rec::HELD => match RawEvent::decode_payload(&mut d)
                .ok()
                .and_then(|r| r.split_held())
            {
                Some((lock, unlock)) => {
                    self.event(lock, at);
                    if self.ahead == Some(true) {
                        self.event(unlock, at);
                    }
                }
                None => return false,
            },
            rec::OBJECT => {
                let (Ok(index), Ok(kind), Ok(key)) = (d.varint(), d.u8(), d.varint()) else {
                    return false;
                };
                if index != 0 {
                    self.table.insert(index, (kind, key, 0));
                }
            }
            _ => {}
        }
        self.ahead == Some(true)
    }
}
