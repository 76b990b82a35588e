//! Call stacks in listings: each recorded return address symbolized through the module map the
//! process had when the event happened.

use std::io::{self, Write};

use scalpel_model::read::{Event, FileTrace, ModuleMap, ProcessTrace};

use scalpel_symbols::Symbolizer;

/// The newest module map of `p` taken at or before `ts_ns` (the oldest one if all are newer).
pub fn map_at(p: &ProcessTrace, ts_ns: u64) -> Option<&ModuleMap> {
    let maps = || p.files().flat_map(|f| f.maps.iter());
    let before = maps().filter(|m| m.ts_ns <= ts_ns).max_by_key(|m| m.ts_ns);
    before.or_else(|| maps().min_by_key(|m| m.ts_ns))
}

/// Writes the symbolized stack of `e`, one frame per line, when the event has one.
pub fn write_stack(
    out: &mut dyn Write,
    sym: &mut Symbolizer,
    p: &ProcessTrace,
    f: &FileTrace,
    e: &Event,
) -> io::Result<()> {
    let Some(frames) = e.stack.and_then(|id| f.stacks.get(&id)) else {
        return Ok(());
    };
    let map = map_at(p, e.ts_ns);
    for &pc in frames {
        match map {
            // A return address points after the call: look up the call instruction itself.
            Some(m) => writeln!(out, "        at {}", sym.frame(m, pc.saturating_sub(1)))?,
            None => writeln!(out, "        at [{pc:#x}] (no module map)")?,
        }
    }
    Ok(())
}
