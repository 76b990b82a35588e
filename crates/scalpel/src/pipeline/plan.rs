//! How large the windows of a trace are under a memory limit, from the memory inference was
//! measured to take (`docs/BENCHMARKS.md`), and the limit kept when the user gives none.

use std::path::Path;

use super::room::MemoryRoom;

/// The most memory inferring a trace whole takes per byte of its files, measured (written
/// traces of short leaves: 9.9; memcached: 2.7; `docs/BENCHMARKS.md`), rounded up.
pub const PEAK_PER_TRACE_BYTE: u64 = 10;

/// The most memory a window takes per event it holds, measured the same way (110 bytes on
/// written traces of short leaves), rounded up.
pub const PEAK_PER_EVENT: u64 = 128;

/// The least memory limit windows are tried with: windows of 131,072 events.
pub const MIN_MEMORY: u64 = 16 << 20;

/// The fewest events a window is given so that another can be mined beside it: windows of the
/// least memory limit.
const MIN_WINDOW_EVENTS: u64 = MIN_MEMORY / PEAK_PER_EVENT;

/// The most events a window holds, whatever the limit allows: 2^23, about 8.4 million.
///
/// Why: a window's stages cost more per event the more events it holds. Each large array is a
/// fresh mapping whose pages the kernel zeroes (`scalpel_model::memory`), the miner's and the
/// rollups' hash tables outgrow the caches, and the rules are learned on one window's worth
/// of events on one core before any window is mined. On a written trace of 10^8 events,
/// windows of 4.2M and 8.4M events took 94–100 s, of 12.6M 109 s, of 16.8M 119 s and of 25M
/// 144 s (`docs/BENCHMARKS.md`, session 67). Smaller windows cost boundaries, whose
/// differences `windows.json` counts, so the cap is where the time stopped falling.
pub const MAX_WINDOW_EVENTS: u64 = 1 << 23;

/// Windows mined side by side. A constant, not the number of worker threads, so that the windows
/// and so the model depend on the memory limit alone (with fewer threads the windows of a batch
/// take turns); two, because each window more in memory shrinks every window and the sample the
/// rules are learned on, and each window's stages use the other threads already (the rollups).
const AT_ONCE: u64 = 2;

/// How a trace is cut into windows under a memory limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowPlan {
    /// Events a window holds: the limit's share of each window mined at once, at most
    /// [`MAX_WINDOW_EVENTS`].
    pub events_per_window: u64,
    /// Windows mined side by side: [`AT_ONCE`], or one where two windows would hold fewer than
    /// 131,072 events each.
    pub at_once: usize,
}

impl WindowPlan {
    /// The windows that a trace gets under a memory limit of `limit` bytes.
    pub fn for_limit(limit: u64) -> WindowPlan {
        let whole = limit / PEAK_PER_EVENT;
        let at_once = AT_ONCE.min(whole / MIN_WINDOW_EVENTS).max(1);
        WindowPlan {
            events_per_window: (whole / at_once).min(MAX_WINDOW_EVENTS),
            at_once: at_once as usize,
        }
    }
}

/// The memory limit when none is given: half the machine's memory or of its control group's
/// limit, whichever is less, and no more than the address-space limit allows
/// ([`MemoryRoom::default_limit`]; half of 16 GiB where nothing can be read).
pub fn default_memory_limit() -> u64 {
    MemoryRoom::of_this_process()
        .default_limit()
        .max(MIN_MEMORY)
}

/// The bytes of the trace files in `dir` (the process directories' files, as much of each as
/// the disk holds; what cannot be listed counts nothing).
pub fn trace_bytes(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    // What the file holds on disk: a sparse file's holes hold no records.
    let sizes = |d: &Path| -> u64 {
        std::fs::read_dir(d).map_or(0, |rd| {
            rd.flatten()
                .filter_map(|e| e.metadata().ok())
                .filter(|m| m.is_file())
                .map(|m| m.len().min(m.blocks().saturating_mul(512)))
                .sum()
        })
    };
    std::fs::read_dir(dir).map_or(0, |rd| {
        rd.flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| sizes(&e.path()))
            .sum()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_take_the_limits_share_up_to_the_cap() {
        // Under 32 MiB: one window at a time, all of the limit's events.
        let small = WindowPlan::for_limit(MIN_MEMORY);
        assert_eq!((small.events_per_window, small.at_once), (131_072, 1));
        // 1 GiB: two windows of half its events each, under the cap.
        let mid = WindowPlan::for_limit(1 << 30);
        assert_eq!((mid.events_per_window, mid.at_once), (1 << 22, 2));
        // 2 GiB is the cap's own share; 12 GiB would give 50M events a window.
        for limit in [2u64 << 30, 12 << 30, u64::MAX] {
            let big = WindowPlan::for_limit(limit);
            assert_eq!((big.events_per_window, big.at_once), (MAX_WINDOW_EVENTS, 2));
        }
    }
}
