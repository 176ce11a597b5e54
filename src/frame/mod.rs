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
//! `compare` then says whether a new statement *updates* an old one (sure enough to supersede
//! automatically) or only *may* (the same thing and the same predicate, something else said: the
//! writer decides, and recall flags the pair as a conflict).

mod compare;
mod identity;
mod object;
mod predicate;
mod thing;
mod tokens;
mod words;

pub use compare::{compare, rewording, Comparison, Relation};
pub use tokens::stem;
pub use words::CUES;

use identity::strip_heading;
use object::{fill_object, read_words, reason_at};
use predicate::{find_verb, negation, verb_first, verb_group, verb_stem, VerbGroup};
use std::collections::BTreeSet;
use thing::{content, read_thing};
use tokens::{tokens, Class, Tok};
use words::{AUXILIARIES, CHANGES, COPULAS, EVENTS, REPORTS, STATUS};

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
    /// state. See `CHANGES`.
    pub change: bool,
    /// The change is told as an event: in the passive ("was upgraded to"), opening with its verb
    /// ("Bump the MSRV to"), or by an amount ("MSRV bumped to"). A changelog's lines: each its
    /// own event, never replaced by the next report (told with a subject, "the deadline moved to
    /// January 20", a change is a state like any other).
    pub report: bool,
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

#[cfg(test)]
mod tests;
