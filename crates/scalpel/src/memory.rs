//! Memory limits as the command line states them: whether this process can keep one, and
//! sizes in the words its messages use.

use anyhow::{bail, Result};
use scalpel::pipeline::{MemoryRoom, ADDRESS_SPACE_FIXED, ADDRESS_SPACE_PER_BYTE, MIN_MEMORY};

/// Refuses a memory limit this process cannot have: more than its control group allows, or more
/// than its address-space limit leaves room for (an allocation past it would abort the run).
/// `given`: the user gave it (`--memory`), or it is the default.
pub(crate) fn within_room(limit: u64, given: bool, room: &MemoryRoom) -> Result<()> {
    let named = if given {
        format!("--memory {}", mib(limit))
    } else {
        format!("the least memory limit ({})", mib(limit))
    };
    if let Some((cgroup, file)) = &room.cgroup {
        if limit > *cgroup {
            bail!(
                "{named}: more than this process's control group may use ({} in {}); give \
                 --memory {} or less",
                mib(*cgroup),
                file.display(),
                mib(*cgroup)
            );
        }
    }
    if let (Some(space), Some(left)) = (room.address_space, room.space_left()) {
        let most = left / ADDRESS_SPACE_PER_BYTE;
        if limit > most {
            let mapped = room.mapped.unwrap_or(0);
            let needs = mapped + ADDRESS_SPACE_FIXED + limit * ADDRESS_SPACE_PER_BYTE;
            let smaller = if most >= MIN_MEMORY {
                format!("give --memory {} or less, or ", mib_down(most))
            } else {
                String::new()
            };
            bail!(
                "{named}: the address-space limit (ulimit -v) is {}; this process maps {} \
                 before inferring, and inference about {} more and {ADDRESS_SPACE_PER_BYTE} \
                 bytes for each byte it holds: {smaller}raise the limit to {}",
                mib(space),
                mib(mapped),
                mib(ADDRESS_SPACE_FIXED),
                mib(needs)
            );
        }
    }
    Ok(())
}

/// `bytes` in MiB, for messages.
pub(crate) fn mib(bytes: u64) -> String {
    format!("{} MiB", bytes.div_ceil(1 << 20))
}

/// `bytes` in whole MiB rounded down, for a limit to give that must fit.
pub(crate) fn mib_down(bytes: u64) -> String {
    format!("{} MiB", bytes >> 20)
}
