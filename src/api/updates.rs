//! Updates nobody labelled: the frame rule that supersedes a current fact when a new one says
//! something else about the same thing, without a key or an id, and the near misses it returns to
//! the writer (`possible_updates`) to confirm with `--supersedes`.
//!
//! Cosine similarity alone cannot tell an update from a neighbour ("Mobile Team allocated to
//! Project Phoenix" -> "Mobile Team reallocated to Project Alpha" scores below the similarity
//! threshold, while two different facts about one system often score above it). The rule reads
//! both statements' frames ([`crate::frame`]) and decides on three things at once, for the
//! nearest current facts of the same type and scope by the recall index:
//! - **the same thing**: the same first name (the subject, most often: "Mobile Team ..."), or,
//!   without a shared name at all, the same content words around entirely different names and
//!   values ("Seattle office, Building A" -> "Portland office, Building C"); a name shared
//!   elsewhere is not enough ("Idempotency keys are stored in Redis" is not updated by "A Redis
//!   failover lost idempotency keys");
//! - **something else said about it**: a value, a name or a word of the old statement is gone;
//!   and, with the same subject, what is said of it is recognisably the same question: most
//!   content words shared, a change word in the new statement ([`crate::frame::CUES`]: "moved",
//!   "cancelled", "not" …), or values on both sides that differ ("DashMap puts great effort into
//!   performance" is not updated by "DashMap gladly accepts contributions");
//! - **prose**: a statement that reads as code (braces, a line comment) is left to similarity;
//! - **close enough by the model**: the indexed cosine (type, scope and tags included) reaches the
//!   rule's floor, so a shared name in two unrelated sentences is not enough.
//!
//! The thresholds were chosen on the StateBench train split (`cargo bench --bench statebench`)
//! and the recall fixture's distinct facts, never on dev; docs/supersession.md has the table.

use crate::frame::{compare, frame};
use crate::record::RecordId;
use serde::Serialize;

/// How many of the nearest current facts of the same type and scope the rule looks at.
pub const UPDATE_CANDIDATES: usize = 8;

/// With the same subject: the indexed cosine an update reaches at least.
pub const NAMED_FLOOR: f32 = 0.55;

/// With the same subject, the content-word overlap that says the same is being said of it (short
/// of it, the new statement needs a change word, or values on both sides that differ).
pub const NAMED_OVERLAP: f32 = 0.5;

/// Without a shared name: the content-word overlap and the indexed cosine an update reaches.
pub const UNNAMED_OVERLAP: f32 = 0.6;
pub const UNNAMED_FLOOR: f32 = 0.6;

/// Candidates reported back to the writer as possible updates: an indexed cosine at least this.
pub const POSSIBLE_FLOOR: f32 = 0.5;

/// A current fact the new one may update: its frame compared with the new fact's.
#[derive(Clone, Debug, Serialize)]
pub struct PossibleUpdate {
    pub id: RecordId,
    pub subject: String,
    /// Indexed cosine similarity to the new fact.
    pub cosine: f64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shared_names: Vec<String>,
    /// Overlap of the content words around the names and values (0 to 1).
    pub word_overlap: f64,
    /// The old fact's values and names the new one drops, and the new one's own.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub old_values: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub new_values: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub old_names: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub new_names: Vec<String>,
    /// Both statements with names and values masked (`<n>`, `<v>`).
    pub frames: [String; 2],
}

fn round(v: f32) -> f64 {
    (f64::from(v) * 1000.0).round() / 1000.0
}

/// Judge whether `new` updates `old` (subjects), given their indexed cosine.
pub fn judge(id: RecordId, old: &str, new: &str, cosine: f32) -> (bool, PossibleUpdate) {
    let (of, nf) = (frame(old), frame(new));
    let c = compare(&of, &nf);
    let words_changed = of.words != nf.words;
    let said_else = c.values_changed() || c.names_changed() || words_changed;
    // What is said of it changed: the words around the names mostly agree, the statement says it
    // changes something, or both carry values and they differ.
    let predicate = c.word_overlap >= NAMED_OVERLAP
        || nf.cue
        || (!of.values.is_empty() && !nf.values.is_empty() && c.values_changed());
    let update = said_else
        && !of.code
        && !nf.code
        && if c.same_subject {
            predicate && cosine >= NAMED_FLOOR
        } else if c.shared_names.is_empty() {
            // Entirely different names and values in the same words.
            let all_differ =
                !of.names.is_empty() && of.names.is_disjoint(&nf.names) && of.values.is_disjoint(&nf.values);
            all_differ && c.word_overlap >= UNNAMED_OVERLAP && cosine >= UNNAMED_FLOOR
        } else {
            false
        };
    let judged = PossibleUpdate {
        id,
        subject: old.to_string(),
        cosine: round(cosine),
        shared_names: c.shared_names,
        word_overlap: round(c.word_overlap),
        old_values: c.old_values,
        new_values: c.new_values,
        old_names: c.old_names,
        new_names: c.new_names,
        frames: [of.masked, nf.masked],
    };
    (update, judged)
}

impl PossibleUpdate {
    /// Why the rule superseded it, for the supersession record a reviewer reads.
    pub fn reason(&self) -> String {
        let mut changed = Vec::new();
        if !self.old_values.is_empty() || !self.new_values.is_empty() {
            changed.push(format!("values [{}] -> [{}]", self.old_values.join(", "), self.new_values.join(", ")));
        }
        if !self.old_names.is_empty() || !self.new_names.is_empty() {
            changed.push(format!("names [{}] -> [{}]", self.old_names.join(", "), self.new_names.join(", ")));
        }
        let values = if changed.is_empty() { "wording changed".to_string() } else { changed.join("; ") };
        let about = if self.shared_names.is_empty() {
            format!("same words (overlap {:.2}) around other names", self.word_overlap)
        } else {
            format!("same {}", self.shared_names.join(", "))
        };
        format!(
            "update noticed by its frame: {about}; {values}; \"{}\" -> \"{}\"; indexed cosine {:.3}",
            self.frames[0], self.frames[1], self.cosine
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
    fn an_update_needs_the_same_thing_something_else_said_and_the_model_close_enough() {
        let (yes, why) =
            judge(id(), "Mobile Team allocated to Project Phoenix", "Mobile Team reallocated to Project Alpha", 0.67);
        assert!(yes, "{why:?}");
        assert_eq!(why.shared_names, ["mobile team"]);
        assert!(why.reason().contains("same mobile team"), "{}", why.reason());
        // The same subject, something else entirely said of it.
        assert!(
            !judge(id(), "DashMap puts great effort into performance", "DashMap gladly accepts contributions!", 0.68).0
        );
        assert!(!judge(id(), "struct Foo { id: u32, name: String }", "struct Foo { name: String }", 0.7).0);
        // A name shared, but not the subject.
        assert!(
            !judge(
                id(),
                "Idempotency keys are stored in Redis for 24 hours",
                "A Redis failover lost idempotency keys",
                0.65
            )
            .0
        );
        // The same name, too far apart by the model.
        assert!(!judge(id(), "Mobile Team allocated to Project Phoenix", "Mobile Team lunch is on Friday", 0.3).0);
        assert!(judge(id(), "Data Team reallocated to Project Alpha", "Data Team reallocated to Project Beta", 0.85).0);
        // Nothing else said: a restatement is not an update (de-duplication and similarity own it).
        assert!(
            !judge(id(), "Backend Squad allocated to Project Beta", "Backend Squad allocated to Project Beta", 0.99).0
        );
        // No shared name: the same words around entirely different names and values.
        let (yes, _) =
            judge(id(), "Seattle office, Building A, Room 302", "Portland office, Building C, Conference Room 1", 0.7);
        assert!(yes);
        // No shared name and a shared value: a rule and an event about a discount, not an update.
        assert!(!judge(id(), "Max 15% discount without VP approval", "15% discount approved for Umbrella Corp", 0.7).0);
    }
}
