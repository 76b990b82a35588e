//! Text from a traced program made safe for a terminal.
//!
//! Process titles, thread names, executable paths and symbol names are chosen by the program
//! that was traced. Printed raw, an escape sequence in one of them acts on the reader's
//! terminal: OSC 52 writes the clipboard, OSC 0 sets the window title, `ESC [2J` clears the
//! screen. Every such string is passed through [`escape_control`] (or, for a whole report that
//! keeps its own line breaks, [`escape_lines`] or an [`Escaping`] writer) before it reaches a
//! terminal.

use std::borrow::Cow;

/// Whether `c` is a control character: C0 (U+0000 to U+001F), DEL (U+007F) or C1 (U+0080 to
/// U+009F, which some terminals obey as 8-bit escapes).
fn is_control(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}')
}

/// `s` with every control character shown as `\xNN` (its code in two hex digits): no C0
/// control (tab and newline included), DEL or C1 control is left. Borrowed when there is none.
pub fn escape_control(s: &str) -> Cow<'_, str> {
    escape_where(s, is_control)
}

/// [`escape_control`] for text of several lines: its newlines are kept.
pub fn escape_lines(s: &str) -> Cow<'_, str> {
    escape_where(s, |c| c != '\n' && is_control(c))
}

fn escape_where(s: &str, escaped: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !s.chars().any(&escaped) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if escaped(c) {
            out.push_str(&format!("\\x{:02x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// A writer for a terminal: what passes through has its control characters escaped as
/// [`escape_lines`] does (newlines kept), so that a report written in pieces needs no escaping
/// at each piece. Bytes that are not UTF-8 pass unchanged but for C0, DEL and UTF-8's C1.
#[derive(Debug)]
pub struct Escaping<W: std::io::Write> {
    inner: W,
    /// A 0xC2 byte held back: with the next byte it may be a C1 control.
    held: bool,
}

impl<W: std::io::Write> Escaping<W> {
    /// Escapes what is written to `inner`.
    pub fn new(inner: W) -> Self {
        Escaping { inner, held: false }
    }
}

impl<W: std::io::Write> std::io::Write for Escaping<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut out = Vec::with_capacity(buf.len() + 8);
        for &b in buf {
            if std::mem::take(&mut self.held) {
                if (0x80..=0x9f).contains(&b) {
                    out.extend_from_slice(format!("\\x{b:02x}").as_bytes());
                    continue;
                }
                out.push(0xc2);
            }
            match b {
                0xc2 => self.held = true,
                b'\n' => out.push(b),
                0..=0x1f | 0x7f => out.extend_from_slice(format!("\\x{b:02x}").as_bytes()),
                _ => out.push(b),
            }
        }
        self.inner.write_all(&out)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if std::mem::take(&mut self.held) {
            self.inner.write_all(&[0xc2])?;
        }
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::{escape_control, escape_lines, Escaping};
    use std::io::Write;

    #[test]
    fn controls_are_escaped_and_the_rest_kept() {
        assert!(matches!(
            escape_control("nginx: worker"),
            std::borrow::Cow::Borrowed(_)
        ));
        assert_eq!(
            escape_control("a\u{1b}]52;c;eA==\u{7}b\u{7f}\u{9b}é\t\n"),
            "a\\x1b]52;c;eA==\\x07b\\x7f\\x9bé\\x09\\x0a"
        );
        assert_eq!(escape_lines("a\u{1b}[2J\nb\n"), "a\\x1b[2J\nb\n");
    }

    #[test]
    fn the_writer_escapes_across_writes() {
        let mut w = Escaping::new(Vec::new());
        // A C1 control split between two writes, then a Latin-1 letter split the same way.
        w.write_all(b"t\x1b]0;x\x07 \xc2").unwrap();
        w.write_all(b"\x9b1m \xc2").unwrap();
        w.write_all("\u{a0}é\n".as_bytes()[1..].as_ref()).unwrap();
        w.flush().unwrap();
        let text = String::from_utf8(w.inner).unwrap();
        assert_eq!(text, "t\\x1b]0;x\\x07 \\x9b1m \u{a0}é\n");
    }
}
