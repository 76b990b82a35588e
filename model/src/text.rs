//! Text from a trace on a terminal: program-controlled strings (titles, thread names, paths,
//! command lines) are printed with their control characters escaped, so that a traced program
//! cannot write to the clipboard (OSC 52), retitle the window or clear the screen of whoever
//! reads its trace.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` is a control character a terminal may act on: C0 (tab and newline included),
/// DEL, and C1 (U+0080 to U+009F; `ESC [` has a one-character form there, U+009B).
fn is_control(c: char) -> bool {
    c.is_control()
}

/// `s` with every control character written as an escape: `\x1b` for C0 and DEL, `\u{9b}` for
/// C1. A backslash is left as it is, so escaping twice changes nothing: text already escaped
/// by one layer may pass through another.
pub fn escape_control(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_control) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match u32::from(c) {
            n if n < 0x80 && is_control(c) => {
                let _ = write!(out, "\\x{n:02x}");
            }
            n if is_control(c) => {
                let _ = write!(out, "\\u{{{n:x}}}");
            }
            _ => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_the_rest_kept() {
        assert!(matches!(escape_control("plain é ✓"), Cow::Borrowed(_)));
        let osc52 = "\u{1b}]52;c;aGk=\u{7}";
        assert_eq!(escape_control(osc52), "\\x1b]52;c;aGk=\\x07");
        assert_eq!(escape_control("a\tb\nc\u{7f}"), "a\\x09b\\x0ac\\x7f");
        assert_eq!(escape_control("\u{9b}2J"), "\\u{9b}2J");
        let once = escape_control(osc52).into_owned();
        assert_eq!(escape_control(&once), once);
        for c in (0u32..0x110000).filter_map(char::from_u32) {
            let e = escape_control(c.encode_utf8(&mut [0; 4])).into_owned();
            assert!(
                !e.chars().any(|c| c.is_control()),
                "{:x} -> {e:?}",
                u32::from(c)
            );
        }
    }
}
