//! Text from a traced program made safe for a terminal.
//!
//! Process titles, thread names, executable paths and symbol names are chosen by the program
//! that was traced. Printed raw, an escape sequence in one of them acts on the reader's
//! terminal: OSC 52 writes the clipboard, OSC 0 sets the window title, `ESC [2J` clears the
//! screen. Every such string is passed through [`escape_control`] before it reaches a terminal.

use std::borrow::Cow;

/// Whether `c` is a control character: C0 (U+0000 to U+001F), DEL (U+007F) or C1 (U+0080 to
/// U+009F, which some terminals obey as 8-bit escapes).
fn is_control(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}')
}

/// `s` with every control character shown as `\xNN` (its code in two hex digits): no C0
/// control (tab and newline included), DEL or C1 control is left. Borrowed when there is none.
pub fn escape_control(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_control) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if is_control(c) {
            out.push_str(&format!("\\x{:02x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::escape_control;

    #[test]
    fn controls_are_escaped_and_the_rest_kept() {
        assert!(matches!(escape_control("nginx: worker"), std::borrow::Cow::Borrowed(_)));
        assert_eq!(
            escape_control("a\u{1b}]52;c;eA==\u{7}b\u{7f}\u{9b}é\t\n"),
            "a\\x1b]52;c;eA==\\x07b\\x7f\\x9bé\\x09\\x0a"
        );
    }
}
