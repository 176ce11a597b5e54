//! Tokens: each word of a statement classified as an identity marker, a value, a name or a word
//! (with its stem), the shapes of identifiers and values, and the words the lists know.

use super::predicate::negation;
use super::words::{
    AUXILIARIES, COPULAS, DAYS, EVENTS, ID_NOUNS, MONTHS, NUMBER_WORDS, PRONOUNS, STATUS, STOP, UNITS, VERBS,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Class {
    Value,
    Name,
    Word,
    Ident,
}

#[derive(Clone, Debug)]
pub(super) struct Tok {
    /// Lowercased, edge punctuation trimmed.
    pub(super) low: String,
    pub(super) class: Class,
    /// Punctuation the raw token ended with.
    pub(super) end: Option<char>,
}

/// A light English stemmer: enough that "approval", "approved" and "approve" meet, and
/// "services" and "service", without letting "transaction" meet "transport".
pub fn stem(word: &str) -> String {
    let mut w = word.trim_end_matches("'s").to_string();
    if w.len() <= 3 {
        return w;
    }
    for (suffix, keep) in [("ies", "y"), ("sses", "ss")] {
        if let Some(base) = w.strip_suffix(suffix) {
            w = format!("{base}{keep}");
        }
    }
    if w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us") && !w.ends_with("is") && w.len() > 3 {
        w.pop();
    }
    for suffix in ["ing", "ed", "al", "ment", "ly"] {
        if let Some(base) = w.strip_suffix(suffix) {
            if base.chars().count() >= 3 {
                w = base.to_string();
                break;
            }
        }
    }
    if w.ends_with('e') && w.len() > 3 {
        w.pop();
    }
    // A doubled final consonant left by a suffix ("cancelled", "planned").
    let b = w.as_bytes();
    if b.len() > 3 && b[b.len() - 1] == b[b.len() - 2] && !b"aeiou".contains(&b[b.len() - 1]) {
        w.pop();
    }
    w
}

pub(super) fn has_digit(s: &str) -> bool {
    s.chars().any(|c| c.is_ascii_digit())
}

/// A hex id of at least 7 characters with a digit and a letter (a commit or record id).
pub(super) fn hex_id(s: &str) -> bool {
    s.len() >= 7
        && s.chars().all(|c| c.is_ascii_hexdigit())
        && s.chars().any(|c| c.is_ascii_digit())
        && s.chars().any(|c| c.is_ascii_alphabetic())
}

/// `INC-101`, `CASE-5678`, `#412`, `gh-12`: an identifier token.
pub(super) fn identifier(raw: &str) -> bool {
    if raw.starts_with('#') && raw.len() > 1 && raw[1..].chars().all(|c| c.is_ascii_digit()) {
        return true;
    }
    let prefix: String = raw.chars().take_while(|c| c.is_ascii_alphabetic()).collect();
    let rest = &raw[prefix.len()..];
    (prefix.len() >= 2
        && prefix.chars().all(|c| c.is_ascii_uppercase())
        && rest.starts_with('-')
        && rest.len() > 1
        && rest[1..].chars().all(|c| c.is_ascii_alphanumeric())
        && has_digit(rest))
        || (prefix.len() >= 2
            && prefix.chars().all(|c| c.is_ascii_uppercase())
            && rest.starts_with('#')
            && rest.len() > 1
            && rest[1..].chars().all(|c| c.is_ascii_digit()))
        || hex_id(raw)
}

pub(super) fn is_value(low: &str) -> bool {
    let singular = low.strip_suffix('s').unwrap_or(low);
    (has_digit(low) && !hex_id(low))
        || MONTHS.contains(&low)
        || DAYS.contains(&low)
        || DAYS.contains(&singular)
        || NUMBER_WORDS.contains(&low)
        || low.starts_with('$')
}

pub(super) fn trim(t: &str) -> (&str, Option<char>) {
    let end = t.chars().last().filter(|c| matches!(c, ',' | ';' | ':' | '.' | '!' | '?'));
    let s = t.trim_matches(|c: char| {
        matches!(c, ',' | ';' | ':' | '.' | '!' | '?' | '(' | ')' | '[' | ']' | '"' | '\'' | '`' | '*' | '_')
    });
    (s, end)
}

/// A date or time that can head a note: `2024-05-01`, `2024/05/01`, `12:30`, `05/01`.
pub(super) fn date_like(s: &str) -> bool {
    let digits = s.chars().filter(|c| c.is_ascii_digit()).count();
    digits >= 3 && s.chars().all(|c| c.is_ascii_digit() || matches!(c, '-' | '/' | ':' | '.' | 'T' | 'Z'))
}

pub(super) fn classify(raw: &str, low: &str, sentence_start: bool, next_capitalised: bool) -> Class {
    if identifier(raw) {
        return Class::Ident;
    }
    if is_value(low) {
        return Class::Value;
    }
    let letters = raw.chars().filter(|c| c.is_alphabetic()).count();
    let upper = raw.chars().filter(|c| c.is_uppercase()).count();
    if letters >= 2 && upper == letters {
        // Acronyms name things; words of five capitals or more are ordinary words written loudly.
        return if letters <= 4 { Class::Name } else { Class::Word };
    }
    let capitalised = raw.chars().next().is_some_and(char::is_uppercase);
    if !capitalised {
        return Class::Word;
    }
    let inner_capital = raw.chars().skip(1).any(char::is_uppercase);
    // "Use Postgres 15 …", "Never call …": a verb or a common word opening a sentence is a word.
    if sentence_start && !inner_capital && (is_known_word(low)) {
        return Class::Word;
    }
    if !sentence_start || inner_capital || next_capitalised {
        Class::Name
    } else {
        Class::Word
    }
}

pub(super) fn is_known_word(low: &str) -> bool {
    VERBS.contains(&low)
        || EVENTS.contains(&low)
        || STATUS.contains(&low)
        || COPULAS.contains(&low)
        || AUXILIARIES.contains(&low)
        || STOP.contains(&low)
        || PRONOUNS.contains(&low)
        || negation(low)
        || matches!(
            low,
            "max" | "min" | "keep" | "prefer" | "avoid" | "always" | "only" | "some" | "any" | "if" | "when"
        )
}

pub(super) fn tokens(raw: &[&str]) -> Vec<Tok> {
    let mut out: Vec<Tok> = Vec::with_capacity(raw.len());
    let mut sentence_start = true;
    for (i, r) in raw.iter().enumerate() {
        let quoted = r.starts_with(['"', '\'', '`']);
        let (t, end) = trim(r);
        if t.is_empty() {
            if let (Some(e), Some(last)) = (end, out.last_mut()) {
                last.end = Some(e);
            }
            continue;
        }
        let low = t.to_lowercase();
        let next_capitalised =
            end.is_none() && raw.get(i + 1).is_some_and(|n| trim(n).0.chars().next().is_some_and(char::is_uppercase));
        let class = if quoted { Class::Name } else { classify(t, &low, sentence_start, next_capitalised) };
        // "18 months", "30 seconds", "15 %": the unit belongs to its number.
        if class != Class::Ident
            && UNITS.contains(&low.as_str())
            && out.last().is_some_and(|p| p.class == Class::Value && p.end.is_none())
        {
            if let Some(p) = out.last_mut() {
                p.low = format!("{} {low}", p.low);
                p.end = end;
            }
            sentence_start = matches!(end, Some('.' | '!' | '?'));
            continue;
        }
        // "Step 1", "PR 88", "decision number 2", "Migration 0042": the number names an item.
        if class == Class::Value && has_digit(&low) {
            if let Some(p) = out.last_mut() {
                if p.end.is_none() && ID_NOUNS.contains(&p.low.as_str()) {
                    p.low = format!("{} {}", p.low, low.trim_start_matches('#'));
                    p.class = Class::Ident;
                    p.end = end;
                    sentence_start = matches!(end, Some('.' | '!' | '?'));
                    continue;
                }
            }
        }
        out.push(Tok { low, class, end });
        sentence_start = matches!(end, Some('.' | '!' | '?'));
    }
    // "Project Phoenix", "Building A": consecutive name words are one name.
    let mut merged: Vec<Tok> = Vec::with_capacity(out.len());
    for t in out {
        match merged.last_mut() {
            Some(p) if p.class == Class::Name && t.class == Class::Name && p.end.is_none() => {
                p.low = format!("{} {}", p.low, t.low);
                p.end = t.end;
            }
            _ => merged.push(t),
        }
    }
    let mut out = merged;
    // "decision number 2": fold the noun into the identifier.
    let mut i = 0;
    while i + 1 < out.len() {
        if out[i + 1].class == Class::Ident
            && out[i + 1].low.starts_with("number ")
            && ID_NOUNS.contains(&out[i].low.as_str())
            && out[i].end.is_none()
        {
            let id = format!("{} {}", out[i].low, out[i + 1].low);
            out[i + 1].low = id;
            out.remove(i);
        }
        i += 1;
    }
    out
}
