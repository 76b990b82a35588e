//! Units for people, shared by every view: durations, byte counts and rates, shares, seconds.

/// A duration: `812 ns`, `3.4 us`, `3.41 ms`, `1.02 s`.
pub fn duration(ns: u64) -> String {
    let f = ns as f64;
    if ns < 1_000 {
        format!("{ns} ns")
    } else if ns < 1_000_000 {
        format!("{:.1} us", f / 1e3)
    } else if ns < 1_000_000_000 {
        format!("{:.2} ms", f / 1e6)
    } else {
        format!("{:.2} s", f / 1e9)
    }
}

/// A byte count or a rate in bytes: `1023 B`, `1.5 KiB`, `5.0 MiB`, up to TiB.
pub fn bytes(b: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b:.0} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// A share as a percentage: `12.5%`.
pub fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// A count with its noun, singular for one: `1 process`, `3 processes` (`plural` is the
/// plural form).
pub fn count(n: u64, singular: &str, plural: &str) -> String {
    format!("{n} {}", if n == 1 { singular } else { plural })
}

/// Nanoseconds as seconds with 9 decimals: `1.000000042`.
pub fn seconds(ns: u64) -> String {
    format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000)
}

/// `s` cut to `width` characters, the last one `…` when something was cut.
pub fn cut(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// `text` broken at spaces into lines of at most `width` characters, every line after the
/// first indented by `indent` spaces; a word longer than a line is cut.
pub fn wrap(text: &str, width: usize, indent: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let (mut line, mut len, mut words) = (String::new(), 0, 0);
    for word in text.split(' ') {
        let w = word.chars().count();
        if words > 0 && len + 1 + w > width {
            lines.push(cut(&line, width));
            (line, len, words) = (" ".repeat(indent), indent, 0);
        }
        if words > 0 {
            line.push(' ');
            len += 1;
        }
        line.push_str(word);
        len += w;
        words += 1;
    }
    lines.push(cut(&line, width));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapped_lines_break_at_spaces_and_keep_their_width() {
        let text = "top-level tasks by summed latency (instances that stand alone)";
        let lines = wrap(text, 24, 2);
        assert_eq!(
            lines,
            [
                "top-level tasks by",
                "  summed latency",
                "  (instances that stand",
                "  alone)"
            ]
        );
        assert!(lines.iter().all(|l| l.chars().count() <= 24));
        assert_eq!(wrap("short", 24, 2), ["short"]);
        assert_eq!(wrap("abcdefghij", 5, 0), ["abcd…"]);
        assert_eq!(cut("abcdef", 4), "abc…");
    }

    #[test]
    fn units_read_as_people_write_them() {
        assert_eq!(duration(812), "812 ns");
        assert_eq!(duration(3_412), "3.4 us");
        assert_eq!(duration(3_412_000), "3.41 ms");
        assert_eq!(duration(1_020_000_000), "1.02 s");
        assert_eq!(bytes(0.0), "0 B");
        assert_eq!(bytes(1023.0), "1023 B");
        assert_eq!(bytes(1536.0), "1.5 KiB");
        assert_eq!(bytes((5u64 << 20) as f64), "5.0 MiB");
        assert_eq!(bytes((3u64 << 40) as f64), "3.0 TiB");
        assert_eq!(pct(0.125), "12.5%");
        assert_eq!(seconds(1_000_000_042), "1.000000042");
        assert_eq!(count(1, "process", "processes"), "1 process");
        assert_eq!(count(0, "thread", "threads"), "0 threads");
    }
}
