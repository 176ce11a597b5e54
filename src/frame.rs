//! The frame of a fact: PURE. What a statement is about (its names) and what it says about it (its
//! values), read from the words alone, so an update that nobody labelled can be told from a
//! neighbour: "Mobile Team allocated to Project Phoenix" and "Mobile Team reallocated to Project
//! Alpha" share a name and a frame and differ in a value; "Max 20% discount without VP approval"
//! and "30% discount approved for Wayne Enterprises" share words but no name.
//!
//! Tokens are read left to right, split on whitespace and trimmed of edge punctuation:
//! - a **value** has a digit and no letter-hyphen prefix (`15%`, `$50,000`, `2026`, `18th`,
//!   `net-30`, `v2`), or is a month or a weekday: it is masked as `<v>`;
//! - a **name** is a capitalised word inside a sentence, or one opening it when another follows
//!   ("Backend Squad") or it has an inner capital ("DashMap"); a plain capitalised word opening a
//!   sentence ("It", "Tantivy", "Seattle") may or may not name something, so it counts as
//!   neither name nor word (common openers such as "Use", "Never", "Max" are words); also an
//!   acronym of at most four capitals, an identifier (`INC-9012`, `#4521`) or quoted text: it is
//!   masked as `<n>`; consecutive name words form one name;
//! - anything else is a **word**, lowercased; words of five capitals or more ("CANCELLED") are
//!   ordinary words written loudly.
//!
//! The frame is the masked text's content words (function words dropped, a past participle's
//! "re-" dropped, each cut to its first five letters, so "approved" and "approval" meet, and
//! "reallocated" and "allocated").

use std::collections::BTreeSet;

/// A statement read as names, values and the words around them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Frame {
    /// The text with values as `<v>` and names as `<n>` (for a reviewer).
    pub masked: String,
    /// Names, lowercased, consecutive name words joined by a space.
    pub names: BTreeSet<String>,
    /// The first name read: what the statement is about, most often (its subject).
    pub first_name: Option<String>,
    /// The ambiguous capitalised word the statement opens with, if any ("Idempotency keys are
    /// stored in Redis": then Redis is not what it is about).
    pub opening: Option<String>,
    /// Values, lowercased.
    pub values: BTreeSet<String>,
    /// Content words of the masked text, cut to five letters.
    pub words: BTreeSet<String>,
    /// It says that something changed ("moved", "cancelled", "now", "no longer") or denies
    /// something ("not", "never"): see [`CUES`].
    pub cue: bool,
    /// It reads as code (braces or a line comment), not as a statement.
    pub code: bool,
}

/// Words with which a statement says it changes or denies something.
pub const CUES: &[&str] = &[
    "canceled",
    "cancelled",
    "changed",
    "deprecated",
    "decreased",
    "delayed",
    "dropped",
    "escalated",
    "extended",
    "increased",
    "instead",
    "lowered",
    "migrated",
    "moved",
    "never",
    "no",
    "not",
    "now",
    "postponed",
    "raised",
    "reallocated",
    "reassigned",
    "removed",
    "renamed",
    "replaced",
    "rescheduled",
    "rescinded",
    "reverted",
    "revoked",
    "switched",
    "switching",
    "updated",
];

const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];
const DAYS: [&str; 7] = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"];

/// Capitalised words that open a sentence without naming anything.
const OPENERS: &[&str] = &[
    "a", "all", "always", "an", "any", "as", "avoid", "do", "don't", "each", "every", "for", "if", "in", "keep",
    "make", "max", "min", "never", "no", "not", "on", "only", "our", "prefer", "run", "some", "the", "this", "to",
    "use", "we", "when", "with",
];

/// Function words: they carry no frame.
const STOP: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "has", "have", "in", "into", "is", "it", "its",
    "of", "on", "or", "so", "that", "the", "their", "then", "there", "this", "to", "was", "were", "will", "with",
];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Value,
    Name,
    Word,
    /// A plain capitalised word opening a sentence ("It", "Tantivy", "Seattle"): a name or not,
    /// the words alone cannot tell, so it counts as neither.
    Opening,
}

fn classify(token: &str, sentence_start: bool, next_capitalised: bool) -> Class {
    let lower = token.to_lowercase();
    let letters = token.chars().filter(|c| c.is_alphabetic()).count();
    let upper = token.chars().filter(|c| c.is_uppercase()).count();
    let has_digit = token.chars().any(|c| c.is_ascii_digit());
    if token.starts_with('#') && has_digit {
        return Class::Name;
    }
    if has_digit {
        // `INC-9012`, `SR-3456`: a prefix of capitals before a hyphen names a thing.
        let prefix: String = token.chars().take_while(|c| c.is_alphabetic()).collect();
        let identifier =
            prefix.len() >= 2 && prefix.chars().all(|c| c.is_uppercase()) && token[prefix.len()..].starts_with('-');
        return if identifier { Class::Name } else { Class::Value };
    }
    if MONTHS.contains(&lower.as_str()) || DAYS.contains(&lower.as_str()) {
        return Class::Value;
    }
    if token.starts_with('"') || token.starts_with('\'') || token.starts_with('`') {
        return Class::Name;
    }
    let capitalised = token.chars().next().is_some_and(char::is_uppercase);
    if letters >= 2 && upper == letters {
        return if letters <= 4 { Class::Name } else { Class::Word };
    }
    if !capitalised {
        return Class::Word;
    }
    let inner_capital = token.chars().skip(1).any(char::is_uppercase);
    if !sentence_start || inner_capital {
        Class::Name
    } else if OPENERS.contains(&lower.as_str()) {
        Class::Word
    } else if next_capitalised {
        Class::Name
    } else {
        Class::Opening
    }
}

fn stem(word: &str) -> String {
    // "reallocated" and "allocated", "rescheduled" and "scheduled" say the same thing changed.
    let word = match word.strip_prefix("re") {
        Some(rest) if word.len() > 6 && word.ends_with("ed") => rest,
        _ => word,
    };
    word.chars().take(5).collect()
}

/// Read `text` as a [`Frame`].
pub fn frame(text: &str) -> Frame {
    let raw: Vec<&str> = text.split_whitespace().collect();
    let trim = |t: &str| -> String {
        t.trim_matches(|c: char| matches!(c, ',' | ';' | ':' | '.' | '!' | '?' | '(' | ')' | '[' | ']')).to_string()
    };
    let mut out = Frame::default();
    let mut masked: Vec<String> = Vec::new();
    let mut name: Vec<String> = Vec::new();
    let mut sentence_start = true;
    out.code = text.contains(['{', '}']) || text.contains("//");
    for (i, t) in raw.iter().enumerate() {
        let token = trim(t);
        if CUES.contains(&token.to_lowercase().as_str()) {
            out.cue = true;
        }
        // "Backend Squad": a capitalised word followed by another, in the same phrase, is a name.
        let next_capitalised = !t.ends_with([',', ';', ':', '.', '!', '?'])
            && raw.get(i + 1).is_some_and(|n| trim(n).chars().next().is_some_and(char::is_uppercase));
        let class = if token.is_empty() { Class::Word } else { classify(&token, sentence_start, next_capitalised) };
        if class != Class::Name && !name.is_empty() {
            out.add_name(name.join(" "));
            name.clear();
        }
        match class {
            Class::Value => {
                out.values.insert(token.to_lowercase());
                masked.push("<v>".into());
            }
            Class::Name => {
                if name.is_empty() {
                    masked.push("<n>".into());
                }
                name.push(token.to_lowercase());
                // Punctuation ends a name: "Building A, Room 302" names two things.
                if t.ends_with([',', ';', ':', '.', '!', '?', ')']) {
                    out.add_name(name.join(" "));
                    name.clear();
                }
            }
            Class::Opening => {
                if out.first_name.is_none() && out.opening.is_none() {
                    out.opening = Some(token.to_lowercase());
                }
                masked.push(token.to_lowercase());
            }
            Class::Word => {
                let lower = token.to_lowercase();
                if !lower.is_empty() {
                    masked.push(lower.clone());
                    if !STOP.contains(&lower.as_str()) && lower.chars().any(char::is_alphabetic) {
                        out.words.insert(stem(&lower));
                    }
                }
            }
        }
        sentence_start = t.ends_with(['.', '!', '?', ';', ':']);
    }
    if !name.is_empty() {
        out.add_name(name.join(" "));
    }
    out.masked = masked.join(" ");
    out
}

impl Frame {
    fn add_name(&mut self, name: String) {
        self.first_name.get_or_insert_with(|| name.clone());
        self.names.insert(name);
    }
}

/// The key a slot names: `"Mobile Team / project"` -> `"mobile team / project"` (subject and
/// predicate, each lowercased with its spaces collapsed), or what is wrong with it.
pub fn slot_key(slot: &str) -> Result<String, String> {
    let parts: Vec<String> =
        slot.split('/').map(|p| p.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()).collect();
    match parts.as_slice() {
        [subject, predicate] if !subject.is_empty() && !predicate.is_empty() => Ok(format!("{subject} / {predicate}")),
        _ => Err(format!(
            "{slot:?} is not a slot; write it as \"subject / predicate\", such as \"mobile team / project\""
        )),
    }
}

/// How two frames compare.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// Both statements are about the same thing: their first names are the same, and so is the
    /// ambiguous word they open with, if either does.
    pub same_subject: bool,
    /// Names both mention.
    pub shared_names: Vec<String>,
    /// Jaccard overlap of the content words (0 when neither has any).
    pub word_overlap: f32,
    /// Values of the old statement the new one does not repeat, and the new one's own.
    pub old_values: Vec<String>,
    pub new_values: Vec<String>,
    /// Names of the old statement the new one does not repeat, and the new one's own.
    pub old_names: Vec<String>,
    pub new_names: Vec<String>,
}

impl Comparison {
    /// Whether a value of one statement is missing from the other.
    pub fn values_changed(&self) -> bool {
        !self.old_values.is_empty() || !self.new_values.is_empty()
    }

    /// Whether a name of one statement is missing from the other.
    pub fn names_changed(&self) -> bool {
        !self.old_names.is_empty() || !self.new_names.is_empty()
    }
}

/// Compare the frame of an old statement with a new one's.
pub fn compare(old: &Frame, new: &Frame) -> Comparison {
    let union = old.words.union(&new.words).count();
    let both = old.words.intersection(&new.words).count();
    Comparison {
        same_subject: old.first_name.is_some() && old.first_name == new.first_name && old.opening == new.opening,
        shared_names: old.names.intersection(&new.names).cloned().collect(),
        word_overlap: if union == 0 { 0.0 } else { both as f32 / union as f32 },
        old_values: old.values.difference(&new.values).cloned().collect(),
        new_values: new.values.difference(&old.values).cloned().collect(),
        old_names: old.names.difference(&new.names).cloned().collect(),
        new_names: new.names.difference(&old.names).cloned().collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(t: &str) -> Vec<String> {
        frame(t).names.into_iter().collect()
    }

    #[test]
    fn names_values_and_words_are_told_apart() {
        let f = frame("Mobile Team reallocated to Project Alpha");
        assert_eq!(f.masked, "<n> reallocated to <n>");
        assert_eq!(names("Mobile Team reallocated to Project Alpha"), ["mobile team", "project alpha"]);
        let f = frame("Purchase Order #4521 CANCELLED due to budget freeze");
        assert_eq!(f.names.iter().collect::<Vec<_>>(), ["purchase order #4521"]);
        assert!(f.words.contains("cance"));
        let f = frame("Platform Upgrade deadline moved to January 20, 2026");
        assert_eq!(f.values.iter().collect::<Vec<_>>(), ["20", "2026", "january"]);
        assert_eq!(f.masked, "<n> deadline moved to <v> <v> <v>");
        assert_eq!(names("INC-9012 status changed: escalated to tier 2"), ["inc-9012"]);
        assert!(frame("INC-9012 status changed: escalated to tier 2").values.contains("2"));
        assert!(frame("INC-9012 status changed: escalated to tier 2").cue);
        assert!(frame("do not renew CloudPro").cue && !frame("DashMap gladly accepts contributions!").cue);
        assert!(frame("struct Foo { name: String }").code && !frame("Use Postgres 15").code);
        // An opening verb is not a name; an opening proper noun is.
        assert_eq!(names("Use Postgres 15 for the main database"), ["postgres"]);
        // A plain capitalised opening word may or may not be a name: neither, but remembered.
        assert_eq!(names("Seattle office, Building A, Room 302"), ["building a", "room"]);
        assert_eq!(frame("Seattle office, Building A, Room 302").opening.as_deref(), Some("seattle"));
        assert_eq!(frame("It makes it possible to compress integers").first_name, None);
        assert_eq!(names("DashMap puts great effort into performance"), ["dashmap"]);
        assert_eq!(names("Max 20% discount without VP approval"), ["vp"]);
    }

    #[test]
    fn a_slot_normalises_into_a_key() {
        assert_eq!(slot_key("  Mobile   Team /Project ").as_deref(), Ok("mobile team / project"));
        assert!(slot_key("mobile team").is_err());
        assert!(slot_key("a / b / c").is_err());
        assert!(slot_key(" / project").unwrap_err().contains("subject / predicate"));
    }

    #[test]
    fn comparison_finds_shared_names_and_changed_values() {
        let old = frame("Government Contract terms: net-30, standard pricing");
        let new = frame("Government Contract terms updated: net-60, volume discount 10%");
        let c = compare(&old, &new);
        assert_eq!(c.shared_names, ["government contract"]);
        assert!(c.same_subject);
        // Redis in both, but one is about idempotency keys and the other about a failover.
        let redis = compare(
            &frame("Idempotency keys are stored in Redis for 24 hours"),
            &frame("A Redis failover lost idempotency keys"),
        );
        assert!(!redis.same_subject && redis.shared_names == ["redis"]);
        assert_eq!(c.old_values, ["net-30"]);
        assert_eq!(c.new_values, ["10%", "net-60"]);
        assert!(c.values_changed() && !c.names_changed());
        let moved =
            compare(&frame("Data Team reallocated to Project Alpha"), &frame("Data Team reallocated to Project Beta"));
        assert_eq!(
            (moved.old_names, moved.new_names),
            (vec!["project alpha".to_string()], vec!["project beta".to_string()])
        );
        let same = compare(&old, &old);
        assert!(!same.values_changed() && (same.word_overlap - 1.0).abs() < 1e-6);
        assert_eq!(compare(&frame("no words"), &frame("")).word_overlap, 0.0);
    }
}
