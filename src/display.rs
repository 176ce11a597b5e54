//! PURE: the one way text a record or a ref supplies is made safe to show on a terminal.
//!
//! A record's fields, a tree entry's name, a commit message and a ref name can all come from a
//! stranger (a fork, a remote, a pull request). Written raw, an ESC sequence could move the cursor
//! or clear a line, a carriage return could overwrite what was printed, a line break could add a
//! fake line to `verify`'s report, and a bidi control or a zero-width character could make text
//! read differently from what is stored. Every front end passes such text through [`escape`] (one
//! line) or [`escape_text`] (a multi-line body) before printing it; what they make visible is
//! written as a Rust-style escape (`\e`, `\r`, `\n`, `\u{202e}`), so the reader sees that it is
//! there and what it is.

use std::borrow::Cow;

/// Whether `c` is unsafe to print as itself: a control character (C0, DEL, C1), a line or
/// paragraph separator, or a Unicode format character (bidi controls, zero-width characters,
/// tag characters, the soft hyphen).
fn unsafe_char(c: char) -> bool {
    c.is_control() || matches!(c, '\u{2028}' | '\u{2029}') || crate::record::validate::is_format_char(c)
}

fn push_escaped(out: &mut String, c: char) {
    match c {
        '\x1b' => out.push_str("\\e"),
        '\r' => out.push_str("\\r"),
        '\n' => out.push_str("\\n"),
        '\t' => out.push_str("\\t"),
        c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
    }
}

/// `s` on one line, every unsafe character written as an escape (line breaks and tabs too). Text
/// with nothing unsafe is returned as it is, without copying.
pub fn escape(s: &str) -> Cow<'_, str> {
    let clean = if s.is_ascii() { !s.bytes().any(|b| b < 0x20 || b == 0x7f) } else { !s.chars().any(unsafe_char) };
    if clean {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if unsafe_char(c) {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `s` as lines: line breaks and tabs kept, every other unsafe character escaped (a carriage
/// return too, so no line can overwrite another).
pub fn escape_text(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| c != '\n' && c != '\t' && unsafe_char(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c != '\n' && c != '\t' && unsafe_char(c) {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// A whole line of output as the front end is about to write it: line breaks, tabs and the
/// colour sequences the front end itself paints (`ESC [ digits ; m`) kept, every other unsafe
/// character escaped. The last guard before a terminal: whatever a command forgot to pass through
/// [`escape`] still cannot move the cursor, overwrite a line or hide text.
pub fn escape_output(s: &str) -> Cow<'_, str> {
    let safe = |c: char| c == '\n' || c == '\t' || !unsafe_char(c);
    // Most output is plain ASCII: checked byte by byte (ESC is looked at by `has_foreign_escape`).
    let clean = if s.is_ascii() {
        !s.bytes().any(|b| (b < 0x20 && !matches!(b, b'\n' | b'\t' | 0x1b)) || b == 0x7f)
    } else {
        s.chars().all(|c| safe(c) || c == '\x1b')
    };
    if clean && !has_foreign_escape(s) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        if c == '\x1b' {
            let n = sgr_len(rest);
            if n > 0 {
                out.push_str(&rest[..n]);
                rest = &rest[n..];
                continue;
            }
        }
        if safe(c) {
            out.push(c);
        } else {
            push_escaped(&mut out, c);
        }
        rest = &rest[c.len_utf8()..];
    }
    Cow::Owned(out)
}

/// The length of a colour sequence `ESC [ (digits|;)* m` at the start of `s`, or 0.
fn sgr_len(s: &str) -> usize {
    let b = s.as_bytes();
    if b.len() < 3 || b[0] != 0x1b || b[1] != b'[' {
        return 0;
    }
    let body = b[2..].iter().take_while(|c| c.is_ascii_digit() || **c == b';').count();
    if b.get(2 + body) == Some(&b'm') {
        3 + body
    } else {
        0
    }
}

fn has_foreign_escape(s: &str) -> bool {
    s.match_indices('\x1b').any(|(i, _)| sgr_len(&s[i..]) == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_controls_are_made_visible() {
        let hostile = "facts/ab/x\x1b[2K\rline\nFAKE: all good\u{202e}dlrow\u{200b}\u{e0041}\u{ad}\u{85}";
        let shown = escape(hostile);
        assert_eq!(shown, "facts/ab/x\\e[2K\\rline\\nFAKE: all good\\u{202e}dlrow\\u{200b}\\u{e0041}\\u{ad}\\u{85}");
        assert!(!shown.chars().any(unsafe_char), "{shown}");
        assert!(matches!(escape("plain text, ü and 日本"), Cow::Borrowed(_)));
    }

    #[test]
    fn output_keeps_its_own_colours_and_escapes_the_rest() {
        let line = "\x1b[33mabc123\x1b[0m x\x1b[2K\ry\u{202e}z\nnext";
        assert_eq!(escape_output(line), "\x1b[33mabc123\x1b[0m x\\e[2K\\ry\\u{202e}z\nnext");
        assert!(matches!(escape_output("\x1b[1;31mred\x1b[0m\n"), Cow::Borrowed(_)));
    }

    #[test]
    fn text_keeps_its_lines_but_no_carriage_return() {
        assert_eq!(escape_text("a\n\tb\rc\x1b[31m"), "a\n\tb\\rc\\e[31m");
    }
}
