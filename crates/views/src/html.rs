//! What the HTML pages share: escaping text for them.

/// `s` with the characters HTML gives a meaning escaped, for text and attribute values.
pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
