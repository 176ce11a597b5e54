//! Updates nobody labelled: the frame rule that supersedes a current fact when a new one says
//! something else about the same thing, without a key or an id, and the near misses it returns to
//! the writer (`possible_updates`) to confirm with `--supersedes`.
//!
//! A false supersession hides a true fact from every clone; a missed update leaves two current
//! facts that recall flags as a conflict. So the rule is structural and strict, and the same for
//! every way a fact arrives (add, MCP, import, promote, curation): it reads both statements'
//! frames ([`crate::frame`]) and supersedes only when
//! - both have the **same identity** (no turn marker, speaker, ticket or step number differs),
//! - the **same thing**: the whole subject phrase with its qualifiers ("the billing service",
//!   "PR reviews in the core repo"), never one shared name,
//! - the **same predicate** (or the new one's change verb answers the old one's headline or copula:
//!   "deadline: January 15" -> "deadline moved to January 20"),
//! - and the new statement **replaces the value**: only values or names differ in what is said,
//!   a change word says so ("now uses Redis"), or a state is set anew ("approved" -> "cancelled").
//!
//! The same thing and the same predicate with something else said is a *possible* update: it is
//! returned to the writer and never applied. Everything else is silent. No cosine takes part: the
//! decision needs no model, so an import decides exactly as an add does. docs/supersession.md has
//! the rule, its examples and the measured figures.

use crate::frame::{compare, frame, Frame, Relation};
use crate::record::RecordId;
use serde::Serialize;

/// How many of the nearest current facts the similarity step reports (the recall index's).
pub const UPDATE_CANDIDATES: usize = 8;

/// A current fact the new one may update: what the frames matched.
#[derive(Clone, Debug, Serialize)]
pub struct PossibleUpdate {
    pub id: RecordId,
    pub subject: String,
    /// The thing both are about (stemmed words and names).
    pub thing: String,
    /// The predicate both share.
    pub predicate: String,
    /// What the old fact said of it (values and names), and the new one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub old_values: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub new_values: Vec<String>,
    /// Why the rule read it so.
    pub why: String,
    /// Both statements with names and values masked (`<n>`, `<v>`, `<id>`).
    pub frames: [String; 2],
}

/// Judge whether the statement `new` updates `old` (subjects): the relation and, unless they are
/// unrelated, what matched.
pub fn judge(id: RecordId, old: &str, new: &str) -> (Relation, Option<PossibleUpdate>) {
    judge_framed(id, old, &frame(old), &frame(new))
}

/// [`judge`] with both statements framed already (`old` is the old fact's subject).
pub fn judge_framed(id: RecordId, old: &str, of: &Frame, nf: &Frame) -> (Relation, Option<PossibleUpdate>) {
    let c = compare(of, nf);
    if c.relation == Relation::Unrelated {
        return (Relation::Unrelated, None);
    }
    let judged = PossibleUpdate {
        id,
        subject: old.to_string(),
        thing: c.thing.unwrap_or_default(),
        predicate: c.predicate.unwrap_or_default(),
        old_values: c.old_values,
        new_values: c.new_values,
        why: c.why,
        frames: [of.masked.clone(), nf.masked.clone()],
    };
    (c.relation, Some(judged))
}

impl PossibleUpdate {
    /// Why the rule superseded it, for the supersession record a reviewer reads: the thing, the
    /// predicate and the values that matched.
    pub fn reason(&self) -> String {
        format!(
            "update noticed by its frame: same thing \"{}\", same predicate \"{}\"; [{}] -> [{}]; {}; \"{}\" -> \"{}\"",
            self.thing,
            self.predicate,
            self.old_values.join(", "),
            self.new_values.join(", "),
            self.why,
            self.frames[0],
            self.frames[1]
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id() -> RecordId {
        RecordId::from_hex(&"ab".repeat(32)).expect("hex")
    }

    #[test]
    fn an_update_names_what_matched() {
        let (rel, why) =
            judge(id(), "Mobile Team allocated to Project Phoenix", "Mobile Team reallocated to Project Alpha");
        assert_eq!(rel, Relation::Update);
        let why = why.expect("judged");
        assert_eq!(why.thing, "mobile team");
        let reason = why.reason();
        assert!(reason.contains("same thing \"mobile team\""), "{reason}");
        assert!(reason.contains("[project phoenix] -> [project alpha]"), "{reason}");
        let (rel, why) = judge(id(), "The billing service uses Postgres 14", "The analytics service uses Postgres 14");
        assert_eq!((rel, why.is_none()), (Relation::Unrelated, true));
        let (rel, _) = judge(id(), "The billing service uses Postgres 14", "The billing service uses a read replica");
        assert_eq!(rel, Relation::MaybeUpdate);
    }
}
