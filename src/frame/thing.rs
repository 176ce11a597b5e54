//! Step 3, the thing: the subject phrase with its modifiers and value-free qualifiers, or for a
//! statement that opens with its verb, its object; the content words of a phrase.

use super::object::fill_object;
use super::predicate::verb_stem;
use super::tokens::{stem, Class, Tok};
use super::words::{CONDITIONS, PREPOSITIONS, PRONOUNS, SLOT_SYNONYMS, STOP};
use super::{Frame, Predicate};
use std::collections::BTreeSet;

/// Content of a span of tokens: names and stemmed words, stop words and values left out.
pub(super) fn content(toks: &[Tok], values: &mut BTreeSet<String>) -> Vec<String> {
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
pub(super) fn qualifiers(toks: &[Tok], all: bool) -> (Vec<Tok>, Vec<Tok>) {
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

/// Steps 3 and 4 once the predicate is read: the thing (the subject phrase with its qualifiers
/// and conditions; for "I" or "we", the action and what it acts on) and the object.
pub(super) fn read_thing(mut out: Frame, subject: &[Tok], object: &[Tok]) -> Frame {
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
pub(super) fn action_thing(verb: &str, said: &[Tok], quals: &[Tok]) -> Vec<String> {
    let mut scratch = BTreeSet::new();
    let words: Vec<Tok> = said.iter().filter(|t| t.class == Class::Word).cloned().collect();
    let mut about = content(&words, &mut scratch);
    about.extend(content(quals, &mut scratch));
    if about.is_empty() {
        return Vec::new();
    }
    std::iter::once(verb_stem(verb)).chain(about).collect()
}
