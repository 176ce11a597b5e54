//! PURE. Markdown helpers shared by every renderer (recall, change sets): escaping user text so a
//! subject cannot inject links, HTML or formatting into what an agent or reviewer reads.

/// Escape text for inline markdown, so subjects cannot inject links, HTML or formatting.
pub fn md(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if "\\`*_[]<>#|~!".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}
