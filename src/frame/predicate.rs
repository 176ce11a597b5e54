//! Step 2, the predicate: the first verb of a clause (a copula or auxiliary, a known verb, or a
//! past participle), its verb group, and statements that open with their verb.

use super::object::fill_object;
use super::thing::{action_thing, content, qualifiers};
use super::tokens::{stem, Class, Tok};
use super::words::{AUXILIARIES, CHANGES, COPULAS, EVENTS, NOT_VERBS, PREPOSITIONS, STATUS, VERBS};
use super::{Frame, Predicate};
use std::collections::BTreeSet;

pub(super) fn verb_stem(low: &str) -> String {
    // "reallocated" and "allocated", "rescheduled" and "scheduled": one predicate.
    let low = match low.strip_prefix("re") {
        Some(rest) if low.len() > 6 && low.ends_with("ed") => rest,
        _ => low,
    };
    stem(low)
}

pub(super) fn is_participle(t: &Tok) -> bool {
    t.class == Class::Word
        && t.low.len() >= 5
        && t.low.ends_with("ed")
        && !NOT_VERBS.contains(&t.low.as_str())
        && t.low.chars().all(|c| c.is_alphabetic())
}

pub(super) fn is_verb(t: &Tok) -> bool {
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
pub(super) fn find_verb(clause: &[Tok]) -> Option<usize> {
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

pub(super) fn negation(low: &str) -> bool {
    matches!(low, "not" | "never" | "no" | "don't" | "doesn't" | "cannot" | "can't" | "won't" | "isn't" | "aren't")
}

/// The verb group from the verb at `v`: the auxiliaries, negations, adverbs and participles after
/// it, and what they make of the verb.
pub(super) struct VerbGroup {
    /// Where the group ends (what follows is the object).
    pub(super) end: usize,
    pub(super) negated: bool,
    /// The verb the group settles on (a copula or auxiliary gives way to the verb after it).
    pub(super) verb: String,
    pub(super) participle: Option<String>,
}

pub(super) fn verb_group(clause: &[Tok], v: usize) -> VerbGroup {
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
pub(super) fn verb_first(mut out: Frame, head: &str, v: usize, clause: &[Tok], object: &[Tok]) -> Frame {
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
