//! The frame of a statement: PURE. Which thing a statement is about, what it says of it, and the
//! values it gives, read from the words alone, so an update that nobody labelled can be told from
//! a neighbour. A false supersession hides a true fact from every reader, so the reading is strict:
//! where it is unsure it says "not the same thing", never "the same".
//!
//! A statement is read in four steps (docs/supersession.md has the worked examples):
//! 1. **Identity.** Markers that name *which* note or item a statement is: a bracketed marker
//!    heading it (`[D1:3]`, `[2024-05-01]`), a date or time heading it (`2024-05-01:`), a list
//!    number (`3.`), a speaker prefix (`Caroline:`), and identifiers anywhere (`#412`, `INC-101`,
//!    `PR 88`, `Step 1`, `Decision 2`, `decision number 2`, `Migration 0042`, commit or record
//!    ids). They are never values: two statements whose identities differ are about different
//!    things, whatever else they share.
//! 2. **Predicate.** The first verb (a copula or auxiliary, a known verb, or a past participle),
//!    or the colon of a headline (`API Migration deadline: January 15`). A statement that opens
//!    with its verb (`approved purchase of Office Equipment`, `do not renew CloudPro`) is about
//!    its object. A statement with no verb (`Seattle office, Building A`) has no predicate and is
//!    never read as an update.
//! 3. **Thing.** The whole subject phrase before the predicate with its modifiers ("billing
//!    service", "PR reviews"), plus the value-free prepositional phrases that qualify it after the
//!    object ("in the core repo"); determiners dropped, words stemmed. A name in the object
//!    position ("uses Postgres 14") is part of what is said, not of what it is about. A pronoun
//!    subject ("I", "it", "we") names no thing.
//! 4. **Object.** What follows the predicate, up to a reason clause (`; budget freeze`,
//!    `due to …`, `because …`), masked: values as `<v>` (numbers, amounts, percentages, versions,
//!    dates, months, weekdays, number words with their units) and names as `<n>` (capitalised
//!    words inside a sentence, acronyms, quoted text).
//!
//! [`compare`] then says whether a new statement *updates* an old one (sure enough to supersede
//! automatically) or only *may* (the same thing and the same predicate, something else said: the
//! writer decides, and recall flags the pair as a conflict).

use std::collections::BTreeSet;

/// How a statement says what it says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Predicate {
    /// No verb: a fragment ("Seattle office, Building A, Room 302").
    None,
    /// `Thing: value` (a headline).
    Headline,
    /// `is`, `are`, `was`, … optionally followed by a participle ("is rebuilt"): the stems of
    /// the words after the copula that belong to the verb group.
    Copula(String),
    /// A status word (approved, cancelled, revoked, resolved, escalated, …) or a negated action
    /// ("do not renew"): the statement sets the thing's state.
    Status(String),
    /// Any other verb, by its stem (a past participle's "re-" dropped: "reallocated" and
    /// "allocated" are one predicate).
    Verb(String),
}

/// A statement read as identity, thing, predicate and object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// The text with values as `<v>` and names as `<n>` (for a reviewer).
    pub masked: String,
    /// Identity markers, lowercased (`d1:3`, `#412`, `speaker caroline`, `step 1`).
    pub identity: BTreeSet<String>,
    /// The thing the statement is about: stemmed words and lowercased names of the subject phrase
    /// and its qualifiers, in order; empty when the subject is a pronoun or missing.
    pub thing: Vec<String>,
    /// Values inside the subject phrase ("25%" in "25% discount approved for …").
    pub thing_values: BTreeSet<String>,
    pub predicate: Predicate,
    /// The object with values and names masked and words stemmed (change words left out).
    pub object_mask: Vec<String>,
    /// The object's values and names, lowercased.
    pub object_fillers: Vec<String>,
    /// What is said opens with "to" or "into" ("allocated to Project Phoenix", "points to the
    /// replica"): the predicate takes one target, so a new target replaces the old one.
    pub directed: bool,
    /// The reason clause's words, stemmed.
    pub reason: Vec<String>,
    /// Values anywhere in the statement, lowercased.
    pub values: BTreeSet<String>,
    /// Names anywhere in the statement, lowercased.
    pub names: BTreeSet<String>,
    /// It says that something changed ("moved", "now", "instead", "updated", "no longer"): see
    /// [`CUES`].
    pub cue: bool,
    /// It reads as code (braces or a line comment), not as a statement.
    pub code: bool,
    /// Content words of the whole statement, stemmed (names and values apart).
    pub words: BTreeSet<String>,
    /// How many negations it holds ("not", "never", "no", "cannot" …).
    pub negations: usize,
    /// It asks rather than states (a question mark, or an auxiliary or question word first).
    pub question: bool,
    /// It reports that its thing's value changed ("was upgraded to 8", "Bump the MSRV to 1.61",
    /// "switched from Jenkins to GitHub Actions"): an update of a statement of that thing's
    /// state. See [`CHANGES`].
    pub change: bool,
    /// The change is told as an event: in the passive ("was upgraded to"), opening with its verb
    /// ("Bump the MSRV to"), or by an amount ("MSRV bumped to"). A changelog's lines: each its
    /// own event, never replaced by the next report (told with a subject, "the deadline moved to
    /// January 20", a change is a state like any other).
    pub report: bool,
}

/// Words that say how many: a rewording keeps them ("any" is not "all").
const QUANTIFIERS: &[&str] = &["all", "any", "some", "only", "always", "never", "often", "sometimes"];

/// Words with which a statement says that what it states replaces something.
pub const CUES: &[&str] = &[
    "changed",
    "instead",
    "longer",
    "migrated",
    "moved",
    "now",
    "reallocated",
    "reassigned",
    "renamed",
    "replaced",
    "rescheduled",
    "switched",
    "updated",
];

/// Verbs that say the thing's value moved: with the same thing, they answer the old statement's
/// headline or copula ("deadline: January 15" -> "deadline moved to January 20").
const CHANGE_VERBS: &[&str] =
    &["changed", "moved", "rescheduled", "switched", "updated", "migrated", "postponed", "delayed", "extended"];

/// Words that set a thing's state.
const STATUS: &[&str] = &[
    "accepted",
    "approved",
    "blocked",
    "canceled",
    "cancelled",
    "closed",
    "completed",
    "confirmed",
    "declined",
    "denied",
    "deprecated",
    "escalated",
    "granted",
    "merged",
    "opened",
    "paused",
    "pending",
    "postponed",
    "rejected",
    "reopened",
    "rescinded",
    "resolved",
    "revoked",
    "suspended",
    "withdrawn",
];

/// Nouns that, followed by a number, name an item rather than give a value ("Step 1", "PR 88").
const ID_NOUNS: &[&str] = &[
    "adr",
    "bug",
    "build",
    "case",
    "chapter",
    "commit",
    "day",
    "decision",
    "entry",
    "epic",
    "example",
    "exercise",
    "figure",
    "incident",
    "issue",
    "item",
    "job",
    "lesson",
    "meeting",
    "message",
    "migration",
    "milestone",
    "note",
    "number",
    "no",
    "page",
    "part",
    "phase",
    "pr",
    "question",
    "record",
    "request",
    "rfc",
    "round",
    "rule",
    "section",
    "session",
    "sprint",
    "step",
    "story",
    "table",
    "task",
    "test",
    "ticket",
    "turn",
];

/// Attribute nouns that name one slot under different words.
const SLOT_SYNONYMS: &[(&str, &str)] = &[("resolution", "status"), ("state", "status"), ("stage", "status")];

/// Heading words that label a note without naming its speaker ("Note: …").
const LABELS: &[&str] = &[
    "fyi",
    "important",
    "note",
    "reminder",
    "summary",
    "tip",
    "todo",
    "update",
    "warning",
    "answer",
    "question",
    "fact",
    "decision",
    "constraint",
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
const NUMBER_WORDS: &[&str] = &[
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
    "twenty", "thirty", "forty", "fifty", "hundred", "thousand", "once", "twice", "single", "double", "half",
];
/// Units that belong to the number before them ("18 months", "30 seconds").
const UNITS: &[&str] = &[
    "%", "percent", "ms", "s", "sec", "secs", "second", "seconds", "minute", "minutes", "min", "mins", "hour", "hours",
    "h", "day", "days", "week", "weeks", "month", "months", "year", "years", "kb", "mb", "gb", "tb", "kib", "mib",
    "gib", "times", "x", "utc", "am", "pm",
];

/// Copulas and auxiliaries: a verb group starts here.
const COPULAS: &[&str] = &[
    "is", "are", "was", "were", "be", "been", "am", "isn't", "aren't", "wasn't", "weren't", "remains", "remain",
    "stays", "becomes", "became",
];
const AUXILIARIES: &[&str] = &[
    "can",
    "cannot",
    "can't",
    "could",
    "should",
    "shouldn't",
    "must",
    "mustn't",
    "will",
    "won't",
    "would",
    "wouldn't",
    "may",
    "might",
    "shall",
    "does",
    "doesn't",
    "do",
    "don't",
    "did",
    "didn't",
    "has",
    "have",
    "had",
    "hasn't",
    "haven't",
];
/// Common verbs that do not end in "-ed": enough to find the predicate of most short statements.
const VERBS: &[&str] = &[
    "accept", "accepts", "add", "adds", "allow", "allows", "apply", "applies", "ate", "avoid", "avoids", "began",
    "belong", "belongs", "bought", "brought", "build", "builds", "built", "call", "calls", "came", "come", "comes",
    "connect", "connects", "contain", "contains", "cost", "costs", "create", "creates", "deploy", "deploys", "depend",
    "depends", "did", "drive", "drives", "eat", "eats", "enjoy", "enjoys", "expect", "expects", "feel", "feels",
    "felt", "find", "finds", "found", "gave", "get", "gets", "give", "gives", "go", "goes", "going", "got", "handle",
    "handles", "hate", "hates", "help", "helps", "hold", "holds", "include", "includes", "keep", "keeps", "kept",
    "know", "knows", "lead", "leads", "learn", "learns", "left", "let", "lets", "like", "likes", "listen", "listens",
    "live", "lives", "lost", "love", "loves", "made", "make", "makes", "mean", "means", "meet", "meets", "met", "need",
    "needs", "own", "owns", "paid", "pay", "pays", "play", "plays", "point", "points", "prefer", "prefers", "provide",
    "provides", "put", "puts", "puts", "ran", "read", "reads", "rebuilt", "release", "releases", "renew", "renews",
    "require", "requires", "return", "returns", "run", "runs", "said", "saw", "say", "says", "see", "sees", "sell",
    "sells", "send", "sends", "sent", "serve", "serves", "set", "sets", "ship", "ships", "show", "shows", "sit",
    "sits", "start", "starts", "stay", "store", "stores", "support", "supports", "take", "takes", "target", "targets",
    "teach", "teaches", "tell", "tells", "think", "thinks", "thought", "told", "took", "use", "uses", "want", "wants",
    "went", "work", "works", "write", "writes", "wrote",
];
/// Verbs that report an event (a changelog's, a commit's): an event happened, it states no value
/// that a later event could replace, so a statement opening with one is about no thing.
const EVENTS: &[&str] = &[
    "add",
    "added",
    "adds",
    "bump",
    "bumped",
    "bumps",
    "fix",
    "fixed",
    "fixes",
    "implement",
    "implemented",
    "improve",
    "improved",
    "introduce",
    "introduced",
    "refactor",
    "refactored",
    "release",
    "released",
    "remove",
    "removed",
    "rewrite",
    "rewrote",
    "upgrade",
    "upgraded",
    "document",
    "documented",
    "merge",
    "merged",
    "revert",
    "reverted",
    "expose",
    "exposed",
    "allow",
    "allowed",
    "support",
    "supported",
    "enable",
    "enabled",
    "disable",
    "disabled",
    "rename",
    "renamed",
    "replace",
    "replaced",
    "deprecate",
    "deprecated",
    "drop",
    "dropped",
    "make",
    "made",
    "update",
    "updated",
    "change",
    "changed",
    "move",
    "moved",
    "switch",
    "switched",
    "clarify",
    "clarified",
    "reduce",
    "reduced",
    "speed",
    "simplify",
    "simplified",
    "avoid",
    "avoided",
    "restore",
    "restored",
    "mention",
];

/// Verbs that report a change by an amount: events, each its own.
const REPORTS: &[&str] = &["increased", "decreased", "raised", "lowered", "bumped", "reduced", "doubled", "halved"];

/// Verbs that report that a thing's value changed, in every form a statement, a changelog or a
/// commit uses them: with the thing named, the report updates a statement of its state.
const CHANGES: &[&str] = &[
    "bump",
    "bumped",
    "bumps",
    "change",
    "changed",
    "changes",
    "decrease",
    "decreased",
    "downgrade",
    "downgraded",
    "extended",
    "increase",
    "increased",
    "lower",
    "lowered",
    "migrate",
    "migrated",
    "move",
    "moved",
    "moves",
    "postponed",
    "raise",
    "raised",
    "raises",
    "reallocated",
    "reassigned",
    "reduce",
    "reduced",
    "rename",
    "renamed",
    "renames",
    "rescheduled",
    "switch",
    "switched",
    "switches",
    "transferred",
    "update",
    "updated",
    "updates",
    "upgrade",
    "upgraded",
    "upgrades",
    "doubled",
    "halved",
    "repointed",
];

/// Words that open a condition: what follows is part of what the statement is about ("returns
/// stale data when a batch exceeds ten thousand rows" is about that case).
const CONDITIONS: &[&str] = &["when", "whenever", "if", "unless", "while", "once"];

/// Words ending in "-ed" that are not verbs.
const NOT_VERBS: &[&str] =
    &["bed", "embed", "feed", "hundred", "need", "red", "seed", "shed", "speed", "shared", "based", "related", "used"];

/// Subjects that name no thing of their own.
const PRONOUNS: &[&str] = &[
    "i",
    "we",
    "you",
    "he",
    "she",
    "it",
    "they",
    "this",
    "that",
    "these",
    "those",
    "there",
    "which",
    "who",
    "what",
    "everyone",
    "someone",
    "something",
    "everything",
    "nothing",
    "me",
    "us",
    "them",
];

/// Words a thing or an object is read without.
const STOP: &[&str] = &[
    "a",
    "an",
    "and",
    "as",
    "at",
    "by",
    "for",
    "from",
    "in",
    "into",
    "of",
    "on",
    "or",
    "so",
    "the",
    "their",
    "then",
    "this",
    "that",
    "these",
    "those",
    "to",
    "with",
    "its",
    "our",
    "my",
    "your",
    "his",
    "her",
    "per",
    "within",
    "across",
    "under",
    "inside",
    "during",
    "between",
    "via",
    "all",
    "every",
    "each",
    "now",
    "still",
    "also",
    "always",
    "usually",
    "currently",
    "longer",
    "just",
    "already",
    "only",
    "often",
    "sometimes",
];

/// Prepositions that open a phrase qualifying the thing ("in the core repo").
const PREPOSITIONS: &[&str] =
    &["in", "on", "at", "for", "of", "within", "across", "under", "inside", "from", "during", "between", "via"];

/// Words that open a reason clause: what follows says why, not what.
const REASONS: &[&str] = &["because", "since", "due"];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Value,
    Name,
    Word,
    Ident,
}

#[derive(Clone, Debug)]
struct Tok {
    /// Lowercased, edge punctuation trimmed.
    low: String,
    class: Class,
    /// Punctuation the raw token ended with.
    end: Option<char>,
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

fn has_digit(s: &str) -> bool {
    s.chars().any(|c| c.is_ascii_digit())
}

/// A hex id of at least 7 characters with a digit and a letter (a commit or record id).
fn hex_id(s: &str) -> bool {
    s.len() >= 7
        && s.chars().all(|c| c.is_ascii_hexdigit())
        && s.chars().any(|c| c.is_ascii_digit())
        && s.chars().any(|c| c.is_ascii_alphabetic())
}

/// `INC-101`, `CASE-5678`, `#412`, `gh-12`: an identifier token.
fn identifier(raw: &str) -> bool {
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

fn is_value(low: &str) -> bool {
    let singular = low.strip_suffix('s').unwrap_or(low);
    (has_digit(low) && !hex_id(low))
        || MONTHS.contains(&low)
        || DAYS.contains(&low)
        || DAYS.contains(&singular)
        || NUMBER_WORDS.contains(&low)
        || low.starts_with('$')
}

fn trim(t: &str) -> (&str, Option<char>) {
    let end = t.chars().last().filter(|c| matches!(c, ',' | ';' | ':' | '.' | '!' | '?'));
    let s = t.trim_matches(|c: char| {
        matches!(c, ',' | ';' | ':' | '.' | '!' | '?' | '(' | ')' | '[' | ']' | '"' | '\'' | '`' | '*' | '_')
    });
    (s, end)
}

/// A date or time that can head a note: `2024-05-01`, `2024/05/01`, `12:30`, `05/01`.
fn date_like(s: &str) -> bool {
    let digits = s.chars().filter(|c| c.is_ascii_digit()).count();
    digits >= 3 && s.chars().all(|c| c.is_ascii_digit() || matches!(c, '-' | '/' | ':' | '.' | 'T' | 'Z'))
}

/// Strip the markers that head a note into `identity`; returns the raw tokens left.
fn strip_heading<'a>(mut raw: &'a [&'a str], identity: &mut BTreeSet<String>) -> &'a [&'a str] {
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

fn classify(raw: &str, low: &str, sentence_start: bool, next_capitalised: bool) -> Class {
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

fn is_known_word(low: &str) -> bool {
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

fn tokens(raw: &[&str]) -> Vec<Tok> {
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

fn verb_stem(low: &str) -> String {
    // "reallocated" and "allocated", "rescheduled" and "scheduled": one predicate.
    let low = match low.strip_prefix("re") {
        Some(rest) if low.len() > 6 && low.ends_with("ed") => rest,
        _ => low,
    };
    stem(low)
}

fn is_participle(t: &Tok) -> bool {
    t.class == Class::Word
        && t.low.len() >= 5
        && t.low.ends_with("ed")
        && !NOT_VERBS.contains(&t.low.as_str())
        && t.low.chars().all(|c| c.is_alphabetic())
}

fn is_verb(t: &Tok) -> bool {
    t.class == Class::Word
        && (COPULAS.contains(&t.low.as_str())
            || AUXILIARIES.contains(&t.low.as_str())
            || VERBS.contains(&t.low.as_str())
            || STATUS.contains(&t.low.as_str())
            || is_participle(t))
}

/// The main verb of a clause: its first copula or auxiliary, unless a participle or status word
/// comes before it ("Purchase Order #4521 approved for …"); without either, the first known verb
/// that does not follow a determiner ("the deploy target" names a target).
fn find_verb(clause: &[Tok]) -> Option<usize> {
    let word = |t: &Tok| t.class == Class::Word;
    // An imperative or a changelog line opens with its verb ("Use …", "Bump …", "Added …").
    if clause.first().is_some_and(|t| {
        word(t)
            && (VERBS.contains(&t.low.as_str())
                || EVENTS.contains(&t.low.as_str())
                || STATUS.contains(&t.low.as_str())
                || CHANGES.contains(&t.low.as_str()))
    }) {
        return Some(0);
    }
    let copula = clause
        .iter()
        .position(|t| word(t) && (COPULAS.contains(&t.low.as_str()) || AUXILIARIES.contains(&t.low.as_str())));
    // Another participle opening the clause qualifies what follows ("packed fact 12"); so does
    // one inside a noun phrase that a copula follows ("the minimum supported Rust version is").
    let colon = clause.iter().position(|t| t.end == Some(':'));
    let adjective = |i: usize| {
        copula.or(colon).is_some_and(|c| c > i + 1)
            && clause.get(i + 1).is_some_and(|n| {
                n.class == Class::Name
                    || (n.class == Class::Word
                        && !PREPOSITIONS.contains(&n.low.as_str())
                        && !matches!(n.low.as_str(), "to" | "by" | "into" | "as" | "and" | "or"))
            })
    };
    let participle = clause
        .iter()
        .enumerate()
        .position(|(i, t)| word(t) && i > 0 && (is_participle(t) || STATUS.contains(&t.low.as_str())) && !adjective(i));
    match (copula, participle) {
        (Some(c), Some(p)) => return Some(c.min(p)),
        (Some(c), None) => return Some(c),
        (None, Some(p)) => return Some(p),
        (None, None) => {}
    }
    clause.iter().enumerate().position(|(i, t)| {
        word(t)
            && (VERBS.contains(&t.low.as_str()) || (i > 0 && CHANGES.contains(&t.low.as_str())))
            && !(i > 0
                && matches!(
                    clause[i - 1].low.as_str(),
                    "the" | "a" | "an" | "this" | "that" | "our" | "my" | "your" | "its" | "their"
                ))
    })
}

fn negation(low: &str) -> bool {
    matches!(low, "not" | "never" | "no" | "don't" | "doesn't" | "cannot" | "can't" | "won't" | "isn't" | "aren't")
}

/// Content of a span of tokens: names and stemmed words, stop words and values left out.
fn content(toks: &[Tok], values: &mut BTreeSet<String>) -> Vec<String> {
    let mut out = Vec::new();
    for t in toks {
        match t.class {
            Class::Value => {
                values.insert(t.low.clone());
            }
            Class::Ident => {}
            // Stemmed like words, so that a name quoted in one statement (`windows`) and
            // capitalised at the start of another (Windows) is the same thing.
            Class::Name => out.push(stem(&t.low)),
            Class::Word => {
                if !STOP.contains(&t.low.as_str()) && t.low.chars().any(char::is_alphabetic) {
                    let s = stem(&t.low);
                    let s = SLOT_SYNONYMS.iter().find(|(w, _)| stem(w) == s).map(|(_, to)| to.to_string()).unwrap_or(s);
                    out.push(s);
                }
            }
        }
    }
    out
}

/// Split an object span into what is said and the value-free prepositional phrases after it that
/// qualify the thing ("one approval | in the docs repo"). With `all`, a value-free phrase anywhere
/// qualifies (a status statement: "approved | for Umbrella Corp").
fn qualifiers(toks: &[Tok], all: bool) -> (Vec<Tok>, Vec<Tok>) {
    let mut said = Vec::new();
    let mut quals = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let t = &toks[i];
        if PREPOSITIONS.contains(&t.low.as_str()) && t.class == Class::Word && (all || i > 0) {
            let end = toks[i + 1..]
                .iter()
                .position(|u| PREPOSITIONS.contains(&u.low.as_str()) && u.class == Class::Word)
                .map(|p| i + 1 + p)
                .unwrap_or(toks.len());
            let phrase = &toks[i..end];
            if phrase.iter().all(|u| u.class != Class::Value) && phrase.len() > 1 {
                quals.extend_from_slice(phrase);
            } else {
                said.extend_from_slice(phrase);
            }
            i = end;
        } else {
            said.push(t.clone());
            i += 1;
        }
    }
    (said, quals)
}

impl Frame {
    /// A frame with nothing read yet but what the whole text says: a question, code.
    fn empty(text: &str) -> Frame {
        Frame {
            masked: String::new(),
            identity: BTreeSet::new(),
            thing: Vec::new(),
            thing_values: BTreeSet::new(),
            predicate: Predicate::None,
            object_mask: Vec::new(),
            object_fillers: Vec::new(),
            reason: Vec::new(),
            directed: false,
            values: BTreeSet::new(),
            names: BTreeSet::new(),
            cue: false,
            words: BTreeSet::new(),
            negations: 0,
            question: text.trim_end().ends_with('?'),
            change: false,
            report: false,
            code: text.contains(['{', '}'])
                || text.contains("//")
                || text.contains("=>")
                || text.contains("::")
                || (text.contains('<') && text.contains('>'))
                || text.contains("()"),
        }
    }
}

/// Step 1's harvest over every token: identities, values, names, cue words, negations and the
/// content words.
fn read_words(out: &mut Frame, toks: &[Tok]) {
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
fn reason_at(toks: &[Tok]) -> usize {
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

/// Read `text` as a [`Frame`].
pub fn frame(text: &str) -> Frame {
    let first_line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let raw: Vec<&str> = first_line.split_whitespace().collect();
    let mut out = Frame::empty(text);
    let rest = strip_heading(&raw, &mut out.identity);
    let mut toks = tokens(rest);
    if let Some(first) = toks.first() {
        let w = first.low.as_str();
        out.question |= AUXILIARIES.contains(&w)
            || COPULAS.contains(&w)
            || matches!(w, "who" | "what" | "when" | "where" | "why" | "how" | "which");
    }
    read_words(&mut out, &toks);
    out.masked = toks
        .iter()
        .map(|t| match t.class {
            Class::Value => "<v>".to_string(),
            Class::Name => "<n>".to_string(),
            Class::Ident => "<id>".to_string(),
            Class::Word => t.low.clone(),
        })
        .collect::<Vec<_>>()
        .join(" ");
    // Only the first sentence is read for the frame; later ones are part of what is said.
    if let Some(end) = toks.iter().position(|t| matches!(t.end, Some('.' | '!' | '?'))) {
        toks.truncate(end + 1);
    }
    let reason_at = reason_at(&toks);
    let (clause, reason) = toks.split_at(reason_at);
    let mut scratch = BTreeSet::new();
    out.reason = content(reason, &mut scratch);

    // The predicate: the first verb, or a headline's colon before it.
    let verb_at = find_verb(clause);
    // A headline's colon makes a slot only when what follows is a value (a date, a number, a
    // status word, a name), not a clause with a subject and a verb of its own ("Review note on
    // src/db/cache.py: inventory sync reorders items" is about the inventory sync).
    let colon_at = clause.iter().position(|t| t.end == Some(':')).filter(|&c| c + 1 < clause.len()).filter(|&c| {
        let after = &clause[c + 1..];
        let first = &after[0];
        matches!(first.class, Class::Value | Class::Name)
            || STATUS.contains(&first.low.as_str())
            || (after.len() <= 3 && find_verb(after).is_none())
    });
    let (subject, object): (&[Tok], &[Tok]);
    match (colon_at, verb_at) {
        (Some(c), v) if v.is_none_or(|v| v >= c) => {
            // `Thing: value`, or `Thing updated: value` (a change word before the colon).
            let subject_end = match v {
                Some(v) if v >= 1 => v,
                _ => c + 1,
            };
            subject = &clause[..subject_end];
            object = &clause[c + 1..];
            out.predicate = Predicate::Headline;
        }
        (_, Some(v)) => {
            let copula = COPULAS.contains(&clause[v].low.as_str());
            let VerbGroup { end: group_end, mut negated, verb, participle } = verb_group(clause, v);
            let status = STATUS.contains(&verb.as_str()) || participle.as_deref().is_some_and(|p| STATUS.contains(&p));
            if v == 0 && clause.first().is_some_and(|t| negation(&t.low)) {
                negated = true;
            }
            let head = participle.clone().unwrap_or(verb.clone());
            // "The MSRV was increased to 1.71", "MSRV bumped to 1.85", "The CI pipeline switched
            // from Jenkins to GitHub Actions": a report that the thing's value changed. It updates
            // a statement of the thing's state, never another report (each is its own event).
            out.change = CHANGES.contains(&head.as_str()) && !negated;
            out.report = out.change && ((copula && participle.is_some()) || v == 0 || REPORTS.contains(&head.as_str()));
            // "The bug was fixed", "Support was added": a report of another event, about no thing
            // that a later statement replaces.
            let passive_event = copula && participle.as_deref().is_some_and(|p| EVENTS.contains(&p)) && !out.change;
            if passive_event || (REPORTS.contains(&head.as_str()) && !out.change) {
                fill_object(&mut out, &clause[group_end..]);
                return out;
            }
            out.predicate = if out.change {
                Predicate::Verb(verb_stem(&head))
            } else if status {
                Predicate::Status(stem(&head))
            } else if negated && copula && participle.is_none() {
                // "is not an emotion I like": a negated description, compared as a description.
                Predicate::Copula("not".into())
            } else if negated {
                Predicate::Status(format!("not {}", verb_stem(&head)))
            } else if copula && participle.is_none() {
                Predicate::Copula(String::new())
            } else if copula {
                Predicate::Copula(verb_stem(&head))
            } else {
                Predicate::Verb(verb_stem(&head))
            };
            // Subject: everything before the verb (negations and auxiliaries left out).
            let subject_end = clause[..v]
                .iter()
                .rposition(|t| !negation(&t.low) && !AUXILIARIES.contains(&t.low.as_str()))
                .map(|p| p + 1)
                .unwrap_or(0);
            subject = &clause[..subject_end];
            object = &clause[group_end..];
            if subject.iter().all(|t| matches!(t.class, Class::Word) && negation(&t.low) || t.low == "do") {
                return verb_first(out, &head, v, clause, object);
            }
        }
        _ => {
            // A fragment: no predicate, nothing said about a thing that an update could change.
            let mut vals = BTreeSet::new();
            out.thing = content(clause, &mut vals);
            out.thing_values = vals;
            return out;
        }
    }
    read_thing(out, subject, object)
}

/// The verb group from the verb at `v`: the auxiliaries, negations, adverbs and participles after
/// it, and what they make of the verb.
struct VerbGroup {
    /// Where the group ends (what follows is the object).
    end: usize,
    negated: bool,
    /// The verb the group settles on (a copula or auxiliary gives way to the verb after it).
    verb: String,
    participle: Option<String>,
}

fn verb_group(clause: &[Tok], v: usize) -> VerbGroup {
    let mut group_end = v + 1;
    let mut negated = v > 0 && negation(&clause[v - 1].low);
    let mut verb = clause[v].low.clone();
    let mut participle: Option<String> = None;
    while let Some(t) = clause.get(group_end) {
        let adverb = matches!(t.low.as_str(), "now" | "still" | "also" | "always" | "longer" | "usually");
        if negation(&t.low) {
            negated = true;
        } else if is_verb(t) && t.class == Class::Word {
            if AUXILIARIES.contains(&verb.as_str()) || COPULAS.contains(&verb.as_str()) {
                verb = t.low.clone();
            }
            if is_participle(t) || STATUS.contains(&t.low.as_str()) || VERBS.contains(&t.low.as_str()) {
                participle = Some(t.low.clone());
            }
        } else if !adverb {
            break;
        }
        group_end += 1;
    }
    VerbGroup { end: group_end, negated, verb, participle }
}

/// A statement that opens with its verb ("Bump the MSRV to 1.61", "approved purchase of X", "do
/// not renew X", "Added support for X"): about what it acts on (and the action itself unless it
/// only sets a state), or an event about no thing.
fn verb_first(mut out: Frame, head: &str, v: usize, clause: &[Tok], object: &[Tok]) -> Frame {
    if v == 0 && out.change {
        // "Bump the MSRV to 1.61", "Upgrade Elasticsearch to 8": a change of what it
        // acts on, up to where the new value is said ("to", "from", "with", a value).
        let np_end = object
            .iter()
            .position(|t| {
                t.class == Class::Value
                    || (t.class == Class::Word
                        && matches!(t.low.as_str(), "to" | "from" | "with" | "into" | "by" | "as"))
            })
            .unwrap_or(object.len());
        let mut vals = BTreeSet::new();
        out.thing = content(&object[..np_end], &mut vals);
        out.thing_values = vals;
        if np_end == 0 && object.first().is_some_and(|t| t.low == "to") {
            // "Update to windows-sys 0.59", "Upgrade to Unicode 15": the thing is
            // what follows "to", up to its value.
            let end = object.iter().skip(1).position(|t| t.class == Class::Value).map_or(object.len(), |p| p + 1);
            out.thing = content(&object[1..end], &mut BTreeSet::new());
            fill_object(&mut out, &object[end..]);
            return out;
        }
        fill_object(&mut out, &object[np_end..]);
        return out;
    }
    if v == 0 && EVENTS.contains(&clause[0].low.as_str()) && !STATUS.contains(&clause[0].low.as_str()) {
        // "Added support for X", "Fix the parser": an event, about no thing.
        fill_object(&mut out, object);
        return out;
    }
    // Verb first ("approved purchase of X", "do not renew X"): the statement is about
    // what it acts on, and the action itself unless it only sets a state.
    let (said, quals) = qualifiers(object, false);
    let mut vals = BTreeSet::new();
    if matches!(out.predicate, Predicate::Verb(_) | Predicate::Copula(_)) {
        // "Use Postgres 15 for the main database": about the main database; Postgres
        // 15 is what is said.
        out.thing = action_thing(head, &said, &quals);
        fill_object(&mut out, &said);
    } else {
        let np_end = said.iter().position(|t| t.class == Class::Value).unwrap_or(said.len());
        let np_end = if np_end == 0 { said.len() } else { np_end };
        let mut thing = Vec::new();
        if !STATUS.contains(&head) {
            thing.push(verb_stem(head));
        }
        thing.extend(content(&said[..np_end], &mut vals));
        thing.extend(content(&quals, &mut vals));
        out.thing = thing;
        fill_object(&mut out, &said[np_end..]);
        // Values of a verb-first status statement are what is said of it ("approved
        // 18 months renewal"), not part of what it is about.
        out.object_fillers.extend(vals);
    }
    out
}

/// Steps 3 and 4 once the predicate is read: the thing (the subject phrase with its qualifiers
/// and conditions; for "I" or "we", the action and what it acts on) and the object.
fn read_thing(mut out: Frame, subject: &[Tok], object: &[Tok]) -> Frame {
    let status = matches!(out.predicate, Predicate::Status(_));
    // A condition is part of the thing: two statements under different conditions are about
    // different cases ("returns stale data when a batch exceeds ten thousand rows").
    let cond_at = object
        .iter()
        .position(|t| t.class == Class::Word && CONDITIONS.contains(&t.low.as_str()))
        .unwrap_or(object.len());
    let (object, condition) = object.split_at(cond_at);
    // "uses functions instead of macros": what is replaced is said, not what the statement is
    // about (the word itself is a change cue, read above).
    let kept: Vec<Tok>;
    let object = match object.iter().position(|t| t.class == Class::Word && t.low == "instead") {
        Some(p) => {
            // Up to the next phrase that qualifies the thing again ("… instead of Redux for
            // state management").
            let end = object[p..]
                .iter()
                .skip(2)
                .position(|t| t.class == Class::Word && t.low != "of" && PREPOSITIONS.contains(&t.low.as_str()))
                .map_or(object.len(), |q| p + 2 + q);
            kept = object[..p].iter().chain(&object[end..]).cloned().collect();
            &kept[..]
        }
        None => object,
    };
    let (said, quals) = qualifiers(object, status);
    let mut thing_values = BTreeSet::new();
    let mut thing = content(subject, &mut thing_values);
    let mut condition_values = BTreeSet::new();
    let condition = content(condition, &mut condition_values);
    // "We always release …": adverbs and determiners aside, is the subject a pronoun?
    let core: Vec<&Tok> = subject.iter().filter(|t| !STOP.contains(&t.low.as_str())).collect();
    let pronoun = core.len() == 1 && PRONOUNS.contains(&core[0].low.as_str());
    let person = core.len() == 1 && matches!(core[0].low.as_str(), "i" | "we" | "you");
    if person {
        // "We release with blue-green deploys on Fridays": the writer's (or the team's) own
        // practice, about the action and what it acts on, like an imperative.
        thing = match &out.predicate {
            // "We upgraded the search cluster to Elasticsearch 8": about the search cluster.
            Predicate::Verb(_) if out.change => {
                let np_end = said
                    .iter()
                    .position(|t| {
                        t.class != Class::Word
                            || matches!(t.low.as_str(), "to" | "from" | "with" | "into" | "by" | "as")
                    })
                    .unwrap_or(said.len());
                let thing = content(&said[..np_end], &mut BTreeSet::new());
                fill_object(&mut out, &said[np_end..]);
                out.thing = thing;
                out.thing_values = thing_values;
                return out;
            }
            Predicate::Verb(v) | Predicate::Copula(v) if !v.is_empty() => action_thing(v, &said, &quals),
            _ => Vec::new(),
        };
    } else if thing.is_empty() && !pronoun && thing_values.iter().any(|v| v.chars().any(char::is_alphabetic)) {
        // A subject that is one name with a digit in it ("sha2 uses …", "h2 supports …").
        thing = thing_values.iter().filter(|v| v.chars().any(char::is_alphabetic)).cloned().collect();
        thing_values.retain(|v| !v.chars().any(char::is_alphabetic));
    } else if pronoun || thing.is_empty() {
        thing.clear();
    } else {
        thing.extend(content(&quals, &mut thing_values));
    }
    if !thing.is_empty() {
        thing.extend(condition);
        thing_values.extend(condition_values);
    }
    out.thing = thing;
    out.thing_values = thing_values;
    fill_object(&mut out, &said);
    out
}

/// What an action is about: the verb, the words (not the names or values) of what it acts on,
/// and the phrases that qualify it; empty unless something beside the verb is named.
fn action_thing(verb: &str, said: &[Tok], quals: &[Tok]) -> Vec<String> {
    let mut scratch = BTreeSet::new();
    let words: Vec<Tok> = said.iter().filter(|t| t.class == Class::Word).cloned().collect();
    let mut about = content(&words, &mut scratch);
    about.extend(content(quals, &mut scratch));
    if about.is_empty() {
        return Vec::new();
    }
    std::iter::once(verb_stem(verb)).chain(about).collect()
}

fn fill_object(out: &mut Frame, said: &[Tok]) {
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

impl Frame {
    /// What the statement is about as one string: its identity and its thing, the key under which
    /// statements about the same thing meet (`None` when it names no thing, or has no predicate).
    pub fn thing_key(&self) -> Option<String> {
        if self.thing.is_empty() || self.predicate == Predicate::None || self.code {
            return None;
        }
        let mut thing = self.thing.clone();
        thing.sort();
        thing.dedup();
        let ids: Vec<&str> = self.identity.iter().map(String::as_str).collect();
        Some(format!("{}|{}", ids.join(","), thing.join(" ")))
    }

    /// The predicate as a reviewer reads it.
    pub fn predicate_text(&self) -> String {
        match &self.predicate {
            Predicate::None => "(none)".into(),
            Predicate::Headline => "(headline) :".into(),
            Predicate::Copula(p) if p.is_empty() => "is".into(),
            Predicate::Copula(p) => format!("is {p}"),
            Predicate::Status(s) => format!("status ({s})"),
            Predicate::Verb(v) => v.clone(),
        }
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

/// Whether `new` can be a rewording of `old`, so that similarity alone may replace it: the same
/// identity, neither code, the same names, values and negations, both asking or both stating, and
/// the same content words (stemmed; function words, copulas and auxiliaries aside, "every" and
/// "each" read as "all"). "All timestamps are stored in UTC" and "Store every timestamp as UTC"
/// are one statement; a high cosine without these is a neighbour ("the divisor is known at compile
/// time" / "… unknown …", "copy-on-write memory maps" / "read-only memory maps", "a bad husband" /
/// "a bad wife").
pub fn rewording(old: &Frame, new: &Frame) -> bool {
    old.identity == new.identity
        && !old.code
        && !new.code
        && old.names == new.names
        && old.values == new.values
        && old.negations == new.negations
        && old.question == new.question
        && !old.words.is_empty()
        && old.words == new.words
}

/// How a new statement relates to an old one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Relation {
    /// About different things (or the same thing, but nothing comparable said).
    Unrelated,
    /// The same thing and the same predicate, something else said, but not surely an update:
    /// the writer decides (a possible update), recall flags the pair.
    MaybeUpdate,
    /// Surely an update: the same thing, the same predicate, and the new statement replaces the
    /// value (only values or names differ, a change word says so, or a state was set anew).
    Update,
}

/// How two frames compare, with what matched for a reviewer.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    pub relation: Relation,
    /// The thing both are about, when it is the same.
    pub thing: Option<String>,
    /// The predicate both share, when they do.
    pub predicate: Option<String>,
    /// What the old statement said of it, and the new one (values and names; or the object).
    pub old_values: Vec<String>,
    pub new_values: Vec<String>,
    /// Why the relation is what it is, in a few words.
    pub why: String,
}

fn predicates_meet(old: &Frame, new: &Frame) -> Option<bool> {
    // Some(true): the same predicate; Some(false): the new one's change verb answers the old one's
    // slot; None: they do not meet.
    use Predicate::*;
    match (&old.predicate, &new.predicate) {
        (None, _) | (_, None) => Option::None,
        // Two negations meet only on the same verb ("does not define" is not "does not have").
        (Status(a), Status(b)) if a.starts_with("not ") && b.starts_with("not ") => (a == b).then_some(true),
        (Status(_), Status(_)) => Some(true),
        (Headline, Headline) => Some(true),
        (Copula(a), Copula(b)) if a == b => Some(true),
        (Headline, Copula(b)) | (Copula(b), Headline) if b.is_empty() => Some(true),
        (Verb(a), Verb(b)) if a == b => Some(true),
        (Headline | Copula(_) | Verb(_) | Status(_), Verb(b) | Copula(b))
            if CHANGE_VERBS.iter().any(|c| verb_stem(c) == *b) =>
        {
            Some(false)
        }
        _ => Option::None,
    }
}

/// Compare the frame of an old statement with a new one's.
pub fn compare(old: &Frame, new: &Frame) -> Comparison {
    let mut c = Comparison {
        relation: Relation::Unrelated,
        thing: None,
        predicate: None,
        old_values: old.object_fillers.clone(),
        new_values: new.object_fillers.clone(),
        why: String::new(),
    };
    if old.identity != new.identity {
        c.why = "different identities".into();
        return c;
    }
    if old.code || new.code {
        c.why = "reads as code".into();
        return c;
    }
    let (Some(ok), Some(nk)) = (old.thing_key(), new.thing_key()) else {
        c.why = "no thing named".into();
        return c;
    };
    if ok != nk {
        c.why = "different things".into();
        return c;
    }
    if !old.thing_values.is_empty() && !new.thing_values.is_empty() && old.thing_values != new.thing_values {
        c.why = "different values in the subject".into();
        return c;
    }
    c.thing = Some(ok.split('|').nth(1).unwrap_or_default().to_string());
    if old.report || (new.change && (new.report || !old.change)) {
        return changed(old, new, c);
    }
    // "Logs are kept for 30 days" -> "Logs are no longer kept": the same verb, now denied.
    if let (Predicate::Copula(a) | Predicate::Verb(a), Predicate::Status(b)) = (&old.predicate, &new.predicate) {
        if !a.is_empty() && b.strip_prefix("not ").is_some_and(|b| b == verb_stem(a) || b == a.as_str()) {
            c.predicate = Some(format!("{} -> {}", old.predicate_text(), new.predicate_text()));
            (c.relation, c.why) = if new.cue {
                (Relation::Update, "no longer so".into())
            } else {
                (Relation::MaybeUpdate, "the same verb, now denied".into())
            };
            return c;
        }
    }
    let Some(same) = predicates_meet(old, new) else {
        c.why = "different predicates".into();
        return c;
    };
    c.predicate =
        Some(if same { new.predicate_text() } else { format!("{} -> {}", old.predicate_text(), new.predicate_text()) });
    let object_same = old.object_mask == new.object_mask && old.object_fillers == new.object_fillers;
    let said_else = !object_same || old.predicate != new.predicate || old.reason != new.reason;
    if !said_else {
        c.why = "nothing else said".into();
        return c;
    }
    let status = matches!((&old.predicate, &new.predicate), (Predicate::Status(_), Predicate::Status(_)));
    // Only values differ ("Postgres 14" -> "Postgres 15"), or only names, where the predicate takes
    // one value (a copula, a headline, a target: "is Heroku" -> "is Fly.io", "allocated to
    // Project Phoenix" -> "… Project Alpha"); "uses Postgres" -> "uses Redis" may be a second
    // dependency, not a replacement.
    let fillers = |f: &Frame, values: bool| -> Vec<String> {
        f.object_mask
            .iter()
            .filter(|m| m.starts_with('<') && m.as_str() != "<id>")
            .zip(&f.object_fillers)
            .filter(|(m, _)| (m.as_str() == "<v>") == values)
            .map(|(_, v)| v.clone())
            .collect()
    };
    let values_only = fillers(old, false) == fillers(new, false) && fillers(old, true) != fillers(new, true);
    let single_valued =
        matches!(old.predicate, Predicate::Copula(_) | Predicate::Headline) || (old.directed && new.directed);
    let names_only = fillers(old, true) == fillers(new, true) && fillers(old, false) != fillers(new, false);
    let minimal_pair = old.object_mask == new.object_mask && (values_only || (names_only && single_valued));
    c.relation = if status {
        c.why = "a state set anew".into();
        Relation::Update
    } else if !same && !object_same {
        c.why = "a change verb for the same thing".into();
        Relation::Update
    } else if same && minimal_pair && !old.object_mask.is_empty() {
        c.why = "only values or names differ".into();
        Relation::Update
    } else if same && new.cue && !object_same {
        c.why = "a change word".into();
        Relation::Update
    } else {
        c.why = "something else said of the same thing".into();
        Relation::MaybeUpdate
    };
    c
}

/// A report that a thing's value changed, compared with a statement about the same thing: an
/// update of a state ("runs Elasticsearch 7" -> "was upgraded to Elasticsearch 8"), sure when the
/// report's new value answers the old one (they share a name, the old predicate holds one value,
/// or both are values and the report names nothing new), otherwise a possible update. Two reports
/// are two events, and a statement after a report is not read against it.
fn changed(old: &Frame, new: &Frame, mut c: Comparison) -> Comparison {
    if old.report {
        // Two reports that differ only in their values ("Bump the MSRV to 1.38", "… to 1.61")
        // may be one value set twice: the writer is asked; anything else is another event.
        let values_only = new.report
            && old.object_mask == new.object_mask
            && old.object_mask.iter().any(|m| m == "<v>")
            && old.object_fillers != new.object_fillers;
        (c.relation, c.why) = if values_only {
            (Relation::MaybeUpdate, "two reports of a change, another value".into())
        } else {
            (Relation::Unrelated, "a report of a change is its own event".into())
        };
        return c;
    }
    c.predicate = Some(format!("{} -> {}", old.predicate_text(), new.predicate_text()));
    let has = |f: &Frame, m: &str| f.object_mask.iter().any(|x| x == m);
    let names = |f: &Frame| -> Vec<String> {
        f.object_mask
            .iter()
            .zip(&f.object_fillers)
            .filter(|(m, _)| m.as_str() == "<n>")
            .map(|(_, v)| v.clone())
            .collect()
    };
    let shared = new.object_fillers.iter().any(|f| old.object_fillers.contains(f));
    let single = matches!(&old.predicate, Predicate::Copula(p) if p.is_empty())
        || old.predicate == Predicate::Headline
        || old.directed;
    let nothing_new_named = names(new).iter().all(|n| names(old).contains(n));
    let values = has(old, "<v>") && has(new, "<v>") && nothing_new_named;
    (c.relation, c.why) = if new.object_fillers.is_empty() {
        (Relation::MaybeUpdate, "a change reported, no new value said".into())
    } else if shared {
        (Relation::Update, "a change of the value it states".into())
    } else if single || values {
        (Relation::Update, "a change verb for the same thing".into())
    } else {
        (Relation::MaybeUpdate, "a change of the same thing, maybe of something else said of it".into())
    };
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(old: &str, new: &str) -> Relation {
        compare(&frame(old), &frame(new)).relation
    }

    #[test]
    fn identity_is_not_a_value() {
        assert_eq!(frame("[D1:3] Caroline: I went to a support group yesterday").identity.len(), 2);
        for (a, b) in [
            ("[D1:3] Caroline: I went to a support group yesterday", "[D1:9] Caroline: I went to a pottery class"),
            ("decision number 1 about the caching layer", "decision number 2 about the caching layer"),
            ("Step 1: run the migrations", "Step 2: run the migrations again"),
            ("#412 is blocked by the flaky test", "#413 is blocked by the flaky test"),
            ("INC-101 status: resolved", "INC-102 status: open"),
            ("PR 88 needs one approval", "PR 89 needs two approvals"),
            ("Migration 0042 adds the users table", "Migration 0043 adds the orders table"),
            ("2024-05-01: the deploy target is Heroku", "2024-06-01: the deploy target is Fly.io"),
            ("Melanie: my favourite colour is blue", "Caroline: my favourite colour is green"),
        ] {
            assert_eq!(rel(a, b), Relation::Unrelated, "{a} / {b}: {:?}", compare(&frame(a), &frame(b)));
        }
    }

    #[test]
    fn the_same_thing_means_the_whole_subject() {
        for (a, b) in [
            ("The billing service uses Postgres 14", "The analytics service uses Postgres 14"),
            ("PR reviews need two approvals in the core repo", "PR reviews need one approval in the docs repo"),
            ("The search index is rebuilt every night at 02:00 UTC", "The sitemap is rebuilt every night at 03:00 UTC"),
            ("Idempotency keys are stored in Redis for 24 hours", "A Redis failover lost idempotency keys"),
            ("The transaction service runs on port 8080", "The transport service runs on port 9090"),
            ("Seattle office, Building A, Room 302", "Portland office, Building C, Conference Room 1"),
            ("Copyright (c) 2020 Jane Doe", "Copyright (c) 2015 John Roe"),
            ("It makes it possible to compress integers", "It makes it easy to parse JSON"),
            ("The billing service uses Postgres 14", "The billing service uses Redis 7"),
            ("The billing service uses Postgres", "The billing service uses Redis"),
            ("We use tokio 1.0", "We use serde 1.0"),
            ("I went to a support group yesterday", "I went to a pottery class yesterday"),
            ("WASI P1/P2 does not define a default temporary directory", "WASI P1/P2 does not have file permissions."),
            ("The MSRV is increased to 1.85.", "The MSRV is increased to 1.71."),
            ("packed fact 1", "packed fact 2"),
            (
                "Sadness is not an emotion that I like to experience.",
                "Sadness is not an emotion that I would like to experience.",
            ),
            ("MSRV was increased to 1.71 to support windows-sys v0.61.", "MSRV was updated to 1.74"),
        ] {
            assert_ne!(rel(a, b), Relation::Update, "{a} / {b}: {:?}", compare(&frame(a), &frame(b)));
        }
        assert_eq!(frame("The billing service uses Postgres 14").thing, [stem("billing"), stem("services")]);
        assert_eq!(frame("The billing service uses Postgres 14").object_mask, ["<n>", "<v>"]);
    }

    #[test]
    fn updates_of_one_thing_are_recognised() {
        for (a, b) in [
            ("Mobile Team allocated to Project Phoenix", "Mobile Team reallocated to Project Alpha"),
            ("Purchase Order #4521 approved for $50,000", "Purchase Order #4521 CANCELLED due to budget freeze"),
            ("approved 18 months renewal for Acme Supplies", "do not renew Acme Supplies; pending legal review"),
            ("CASE-5678 resolution: resolved with workaround", "CASE-5678 status changed: escalated to tier 2"),
            ("CASE-5678 status changed: escalated to tier 2", "CASE-5678 status changed: escalated to tier 3"),
            (
                "Government Contract terms: net-30, standard pricing",
                "Government Contract terms updated: net-60, volume discount 10%",
            ),
            ("API Migration deadline: January 15, 2026", "API Migration deadline moved to January 20, 2026"),
            ("Travel Policy: 3 days per week maximum", "Travel Policy updated: updated policy v2"),
            ("25% discount approved for Umbrella Corp", "discount for Umbrella Corp revoked; margin requirements"),
            (
                "approved purchase of Software License for $25000",
                "purchase of Software License cancelled; duplicate request",
            ),
            ("discount for Initech revoked; policy violation", "discount for Initech revoked; VP rescinded approval"),
            ("The deploy target is Heroku", "The deploy target is Fly.io"),
            ("The billing service uses Postgres 14", "The billing service uses Postgres 15"),
            (
                "The search index is rebuilt every night at 02:00 UTC",
                "The search index is rebuilt every night at 03:00 UTC",
            ),
            ("The billing service uses Postgres 14", "The billing service now uses Redis"),
            ("We release with blue green deploys on Fridays", "We release with blue green deploys on Thursdays"),
            ("We always release with blue green deploys on Fridays", "We release with blue green deploys on Mondays"),
            ("The replica points to db-1.internal", "The replica points to db-2.internal"),
        ] {
            assert_eq!(rel(a, b), Relation::Update, "{a} / {b}: {:?} {:?}", frame(a), frame(b));
        }
    }

    #[test]
    fn updates_in_plain_language_are_caught() {
        for (a, b, want) in [
            (
                "The search cluster runs Elasticsearch 7",
                "The search cluster was upgraded to Elasticsearch 8",
                Relation::Update,
            ),
            (
                "The API quota is 1000 requests per minute",
                "The API quota was raised to 5000 requests per minute",
                Relation::Update,
            ),
            ("The kickoff meeting starts on March 3", "The kickoff meeting was moved to March 10", Relation::Update),
            (
                "Background jobs go to the default queue",
                "Background jobs now go to the priority queue",
                Relation::Update,
            ),
            (
                "The CI pipeline uses Jenkins",
                "The CI pipeline switched from Jenkins to GitHub Actions",
                Relation::Update,
            ),
            ("The MSRV is 1.56", "Bump the MSRV to 1.61", Relation::Update),
            (
                "The minimum supported Rust version is 1.60",
                "The minimum supported Rust version was bumped to 1.70",
                Relation::Update,
            ),
            ("The frontend is deployed to Netlify", "The frontend was moved to Vercel", Relation::Update),
            ("Logs are kept for 30 days", "Logs are no longer kept", Relation::Update),
            (
                "The payments service is called paysvc",
                "The payments service was renamed to billing-core",
                Relation::MaybeUpdate,
            ),
            (
                "The search cluster runs on 3 nodes",
                "The search cluster was upgraded to Elasticsearch 8",
                Relation::MaybeUpdate,
            ),
        ] {
            assert_eq!(rel(a, b), want, "{a} / {b}: {:?}", compare(&frame(a), &frame(b)));
        }
    }

    #[test]
    fn events_and_cases_are_not_states() {
        for (a, b) in [
            ("The search cluster was upgraded to Elasticsearch 8", "The search cluster runs Elasticsearch 9"),
            // A clause after a headline's colon is a statement of its own.
            (
                "Review note on src/db/cache.py: inventory sync reorders items after pagination",
                "Review note on src/db/cache.py: email renderer emits duplicate events",
            ),
            // A condition is part of the thing.
            (
                "The CLI argument parser returns stale data when a batch exceeds ten thousand rows",
                "The CLI argument parser returns HTTP 500 instead of 404 when the network flaps briefly",
            ),
            ("The importer skips rows if the header is missing", "The importer skips rows if the file is empty"),
        ] {
            assert_eq!(rel(a, b), Relation::Unrelated, "{a} / {b}: {:?}", compare(&frame(a), &frame(b)));
        }
        // Two reports of a change are two events: never replaced, at most asked about.
        for (a, b) in [
            ("Bump the MSRV to 1.61", "Bump the MSRV to 1.70"),
            ("The MSRV was raised to 1.61", "The MSRV was raised to 1.70"),
            ("Bump the MSRV to 1.61", "Bump serde to 1.0.200"),
        ] {
            assert_ne!(rel(a, b), Relation::Update, "{a} / {b}: {:?}", compare(&frame(a), &frame(b)));
        }
        // Told with a subject, a change is a state: the next one replaces it.
        assert_eq!(
            rel("API Migration deadline moved to January 20, 2026", "API Migration deadline moved to January 31, 2026"),
            Relation::Update
        );
        // A value after the colon still makes a slot.
        assert_eq!(rel("Feature freeze: March 3", "Feature freeze: March 10"), Relation::Update);
    }

    #[test]
    fn the_same_thing_with_something_else_said_is_for_the_writer() {
        for (a, b) in [
            ("The billing service uses Postgres 14", "The billing service uses a read replica"),
            ("DashMap puts great effort into performance", "DashMap puts little effort into performance"),
        ] {
            assert_eq!(rel(a, b), Relation::MaybeUpdate, "{a} / {b}: {:?}", compare(&frame(a), &frame(b)));
        }
        assert_eq!(
            rel("DashMap puts great effort into performance", "DashMap gladly accepts contributions!"),
            Relation::Unrelated
        );
        assert_eq!(rel("struct Foo { id: u32 }", "struct Foo { name: String }"), Relation::Unrelated);
        assert_eq!(
            rel("Backend Squad allocated to Project Beta", "Backend Squad allocated to Project Beta"),
            Relation::Unrelated
        );
    }

    #[test]
    fn only_a_rewording_may_be_replaced_by_similarity() {
        let r = |a: &str, b: &str| rewording(&frame(a), &frame(b));
        assert!(r("All timestamps are stored in UTC", "Store every timestamp as UTC"));
        assert!(!r(
            "You may have noticed that when the divisor is known at compile time, your compiler transforms it",
            "Unfortunately if the divisor is unknown at compile time, the compiler cannot use this trick."
        ));
        assert!(!r("[x] copy-on-write memory maps", "[x] read-only memory maps"));
        assert!(!r(
            "AHash is intended for use in in-memory hashmaps",
            "aHash is not recommended for use other than in-memory maps"
        ));
        assert!(!r("The DateTime type is timezone-aware", "The Local timezone works with the DateTime type"));
        assert!(!r("[D1:3] Ann: I am doing well", "[D1:5] Ann: I am doing well"));
        assert!(!r("Use Postgres 15 for the main database", "Use PostgreSQL 16 for the main database"));
        assert!(!r("True if any of the selectors is true", "True if all of the selectors are true"));
        assert!(!r("Complex is better than complicated.", "Simple is better than complex."));
        assert!(!r("you are a bad husband", "you are a bad wife"));
        assert!(!r("You are jealous", "Are you jealous"));
        assert!(!r("i have read many books.", "have you read many books"));
        assert!(r("Do you feel emotions", "Do you feel emotions?"));
    }

    #[test]
    fn stems_meet_without_meeting_neighbours() {
        assert_eq!(stem("approval"), stem("approved"));
        assert_eq!(stem("approve"), stem("approved"));
        assert_eq!(stem("services"), stem("service"));
        assert_eq!(stem("renewal"), stem("renew"));
        assert_eq!(stem("cancelled"), stem("cancel"));
        assert_ne!(stem("transaction"), stem("transport"));
        assert_ne!(stem("config"), stem("confirm"));
    }

    #[test]
    fn a_slot_normalises_into_a_key() {
        assert_eq!(slot_key("  Mobile   Team /Project ").as_deref(), Ok("mobile team / project"));
        assert!(slot_key("mobile team").is_err());
        assert!(slot_key("a / b / c").is_err());
        assert!(slot_key(" / project").unwrap_err().contains("subject / predicate"));
    }
}
