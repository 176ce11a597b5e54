//! Step 4, the object: what follows the predicate up to a reason clause, masked, and the
//! harvest of identities, values, names, cues and negations over every token.

use super::predicate::negation;
use super::tokens::{stem, Class, Tok};
use super::words::{AUXILIARIES, COPULAS, CUES, QUANTIFIERS, REASONS, STOP};
use super::Frame;

/// Step 1's harvest over every token: identities, values, names, cue words, negations and the
/// content words.
pub(super) fn read_words(out: &mut Frame, toks: &[Tok]) {
    for t in toks {
        match t.class {
            Class::Ident => {
                out.identity.insert(t.low.clone());
            }
            Class::Value => {
                out.values.insert(t.low.clone());
            }
            Class::Name => {
                out.names.insert(t.low.clone());
            }
            Class::Word => {
                if CUES.contains(&t.low.as_str()) {
                    out.cue = true;
                }
                let low = match t.low.as_str() {
                    "every" | "each" => "all",
                    other => other,
                };
                if negation(low) {
                    out.negations += 1;
                } else if (!STOP.contains(&low) || QUANTIFIERS.contains(&low))
                    && !COPULAS.contains(&low)
                    && !AUXILIARIES.contains(&low)
                    && low.chars().any(char::is_alphabetic)
                {
                    out.words.insert(stem(low));
                }
            }
        }
    }
}

/// Where what is said ends and the reason begins: after a semicolon, at "due to" or "because",
/// or at a comma that opens a clause of its own.
pub(super) fn reason_at(toks: &[Tok]) -> usize {
    let mut reason_at = toks.len();
    if let Some(p) = toks.iter().position(|t| t.end == Some(';')) {
        reason_at = p + 1;
    }
    if let Some(p) = toks.iter().position(|t| REASONS.contains(&t.low.as_str()) && t.class == Class::Word) {
        reason_at = reason_at.min(p);
    }
    // A comma that opens a clause of its own ("…, it's probably cheaper", "…, which is when …")
    // ends what is said: the rest is commentary, like a reason.
    if let Some(p) = toks.windows(2).position(|w| {
        w[0].end == Some(',')
            && matches!(w[1].low.as_str(), "it" | "it's" | "which" | "this" | "so" | "as" | "we" | "they" | "courtesy")
    }) {
        reason_at = reason_at.min(p + 1);
    }
    reason_at
}

pub(super) fn fill_object(out: &mut Frame, said: &[Tok]) {
    if out.object_mask.is_empty() && out.object_fillers.is_empty() {
        out.directed = said.first().is_some_and(|t| matches!(t.low.as_str(), "to" | "into" | "onto"));
    }
    for t in said {
        match t.class {
            Class::Value | Class::Name => {
                out.object_mask.push(if t.class == Class::Value { "<v>".into() } else { "<n>".into() });
                out.object_fillers.push(t.low.clone());
            }
            Class::Ident => out.object_mask.push("<id>".into()),
            Class::Word => {
                if !STOP.contains(&t.low.as_str())
                    && !CUES.contains(&t.low.as_str())
                    && t.low.chars().any(char::is_alphabetic)
                {
                    out.object_mask.push(stem(&t.low));
                }
            }
        }
    }
}
