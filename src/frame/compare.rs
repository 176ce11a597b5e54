//! Whether a new statement updates an old one (sure enough to supersede), only may (the writer
//! decides), or is about something else; and rewordings of one statement.

use super::predicate::verb_stem;
use super::words::CHANGE_VERBS;
use super::{Frame, Predicate};

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

pub(super) fn predicates_meet(old: &Frame, new: &Frame) -> Option<bool> {
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
pub(super) fn changed(old: &Frame, new: &Frame, mut c: Comparison) -> Comparison {
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
