//! PURE: the one way text a record or a ref supplies is made safe to show on a terminal.
//!
//! A record's fields, a tree entry's name, a commit message and a ref name can all come from a
//! stranger (a fork, a remote, a pull request). Written raw, an ESC sequence could move the cursor
//! or clear a line, a carriage return could overwrite what was printed, a line break could add a
//! fake line to `verify`'s report, and a bidi control or a zero-width character could make text
//! read differently from what is stored. Every front end passes such text through [`escape`] (one
//! line), and every line it prints through [`escape_output`]; what they make visible is
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
    escaped(s, false)
}

/// A whole line of output as the front end is about to write it: line breaks, tabs and the
/// colour sequences the front end itself paints (`ESC [ digits ; m`) kept, every other unsafe
/// character escaped. The last guard before a terminal: whatever a command forgot to pass through
/// [`escape`] still cannot move the cursor, overwrite a line or hide text.
pub fn escape_output(s: &str) -> Cow<'_, str> {
    escaped(s, true)
}

/// [`escape`], or with `output` [`escape_output`]: the one loop both take.
fn escaped(s: &str, output: bool) -> Cow<'_, str> {
    let kept = |c: char| output && (c == '\n' || c == '\t');
    // Most text is plain ASCII: checked byte by byte (in output, ESC is looked at by
    // `has_foreign_escape`, which lets the front end's own colours through).
    let clean = if s.is_ascii() {
        !s.bytes().any(|b| (b < 0x20 && !(output && matches!(b, b'\n' | b'\t' | 0x1b))) || b == 0x7f)
    } else {
        s.chars().all(|c| kept(c) || !unsafe_char(c) || (output && c == '\x1b'))
    };
    if clean && !(output && has_foreign_escape(s)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        let colour = if output && c == '\x1b' { sgr_len(rest) } else { 0 };
        if colour > 0 {
            out.push_str(&rest[..colour]);
            rest = &rest[colour..];
            continue;
        }
        if kept(c) || !unsafe_char(c) {
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
    fn output_keeps_its_lines_but_no_carriage_return() {
        assert_eq!(escape_output("a\n\tb\rc\x1b[31m\x1b[5;1H"), "a\n\tb\\rc\x1b[31m\\e[5;1H");
    }
}
