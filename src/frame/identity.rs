//! Step 1, identity: the markers heading a statement that say which note or item it is
//! (`[D1:3]`, a date, a list number, a speaker).

use super::tokens::{date_like, stem, trim};
use super::words::{LABELS, PRONOUNS};
use std::collections::BTreeSet;

/// Strip the markers that head a note into `identity`; returns the raw tokens left.
pub(super) fn strip_heading<'a>(mut raw: &'a [&'a str], identity: &mut BTreeSet<String>) -> &'a [&'a str] {
    loop {
        let Some(first) = raw.first() else { return raw };
        if first.starts_with('[') {
            // A bracketed marker, maybe over several tokens: `[D1:3]`, `[Session 2]`.
            let end = raw.iter().position(|t| t.contains(']')).unwrap_or(0);
            let marker: Vec<String> = raw[..=end].iter().map(|t| t.to_lowercase()).collect();
            let marker = marker.join(" ");
            identity.insert(marker.trim_matches(|c| c == '[' || c == ']' || c == ':').to_string());
            raw = &raw[end + 1..];
            continue;
        }
        let (t, end) = trim(first);
        let next_is_dash = raw.get(1).is_some_and(|n| matches!(*n, "-" | "--" | "—" | "–" | "|"));
        if date_like(t) && (end == Some(':') || next_is_dash) {
            identity.insert(t.to_lowercase());
            raw = &raw[if next_is_dash { 2 } else { 1 }..];
            continue;
        }
        // A list number: `3.`, `3)`.
        if (first.ends_with('.') || first.ends_with(')')) && !t.is_empty() && t.chars().all(|c| c.is_ascii_digit()) {
            identity.insert(format!("item {t}"));
            raw = &raw[1..];
            continue;
        }
        // A speaker or a label: one to three capitalised words, the last ending with a colon,
        // something after it, and no lowercase word among them ("Travel Policy: …" is a thing).
        if let Some(colon) = raw.iter().take(3).position(|t| t.ends_with(':')) {
            let words: Vec<&str> = raw[..=colon].iter().map(|t| trim(t).0).collect();
            let capitalised = words.iter().all(|w| {
                w.chars().next().is_some_and(char::is_uppercase)
                    && w.chars().all(|c| c.is_alphabetic() || c == '.' || c == '\'' || c == '-')
            });
            let lower: Vec<String> = words.iter().map(|w| w.to_lowercase()).collect();
            if colon == 0 && LABELS.contains(&lower[0].as_str()) && raw.len() > 1 {
                raw = &raw[1..];
                continue;
            }
            let attribute = lower.iter().any(|w| {
                let s = stem(w);
                ["polic", "deadlin", "term", "status", "resolution", "locat", "owner", "budget", "plan", "target"]
                    .iter()
                    .any(|a| s.starts_with(a))
            });
            // "MSRV: 1.36", "Cipher: 0.4": a headline with its value, not a speaker.
            let rest = &raw[colon + 1..];
            let value_only = rest.len() <= 4
                && rest.first().is_some_and(|t| {
                    let t = t.trim_start_matches(['`', 'v']);
                    t.chars().next().is_some_and(|c| c.is_ascii_digit())
                });
            if capitalised
                && !attribute
                && !value_only
                && raw.len() > colon + 1
                && lower.iter().all(|w| !PRONOUNS.contains(&w.as_str()))
            {
                identity.insert(format!("speaker {}", lower.join(" ")));
                raw = &raw[colon + 1..];
                continue;
            }
        }
        return raw;
    }
}
