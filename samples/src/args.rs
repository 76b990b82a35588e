//! The command line the closed-loop Rust samples share: `[COUNT] [--window W]`.

/// Parses `[COUNT] [--window W]` from the process's arguments, with the given defaults. On a
/// bad argument (or a window of 0) prints `usage` and exits with status 2.
pub fn count_and_window(usage: &str, count: u64, window: u64) -> (u64, u64) {
    let (mut count, mut window) = (count, window);
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let parsed = if a == "--window" {
            it.next().and_then(|w| w.parse().ok()).map(|w| window = w)
        } else {
            a.parse().ok().map(|n| count = n)
        };
        if parsed.is_none() || window == 0 {
            eprintln!("usage: {usage} (W at least 1); bad argument {a:?}");
            std::process::exit(2);
        }
    }
    (count, window)
}
