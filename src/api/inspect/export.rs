//! Export: every valid fact with its state, as JSON Lines that `git neo import` reads back (so
//! nobody is locked in, and a round trip writes nothing new) or as a markdown handbook grouped
//! by type.

use crate::api::memory::Memory;
use crate::markdown::md;
use crate::record::{FactType, Payload, RecordId, Timestamp};
use crate::state::{Entry, Status};
use serde::Serialize;
use std::fmt::Write;

/// One exported fact: the fields `git neo import` takes (so the line imports as it is), then its
/// state, which import reads and ignores.
#[derive(Clone, Debug, Serialize)]
pub struct ExportedFact {
    #[serde(rename = "type")]
    pub fact_type: FactType,
    pub subject: String,
    pub body: String,
    /// The area label (the record's `scope` field; `scope` is the import field's name).
    pub scope: String,
    pub tags: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The confidence it was written with.
    pub confidence: f64,
    pub provenance: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<String>,
    /// `PATH` or `PATH:START-END`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub anchors: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub valid_from: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub valid_to: Option<String>,
    pub id: RecordId,
    pub status: Status,
    /// Its confidence now, after outcomes.
    pub current_confidence: f64,
    pub successes: u32,
    pub author: String,
    pub created_at: Timestamp,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub needs_review: Vec<String>,
}

/// The export of one entry, if it is a fact.
fn exported(e: &Entry) -> Option<ExportedFact> {
    let Payload::Fact(f) = &e.record.payload else { return None };
    Some(ExportedFact {
        fact_type: f.fact_type,
        subject: f.subject.clone(),
        body: e.record.body.clone(),
        scope: f.scope.clone(),
        tags: f.tags.clone(),
        key: f.key.clone(),
        confidence: f.confidence.as_f64(),
        provenance: f.provenance.to_string(),
        depends_on: f.depends_on.iter().map(|d| d.to_hex()).collect(),
        anchors: f.anchors.iter().map(|a| a.spec()).collect(),
        valid_from: f.valid_from.map(|t| t.to_string()),
        valid_to: f.valid_to.map(|t| t.to_string()),
        id: e.id,
        status: e.status,
        current_confidence: e.confidence.as_f64(),
        successes: e.successes,
        author: e.record.author.clone(),
        created_at: e.record.created_at,
        needs_review: e.needs_review.iter().map(|r| r.to_string()).collect(),
    })
}

impl Memory {
    /// Every valid fact, oldest first.
    pub fn export(&self) -> Vec<ExportedFact> {
        self.state().iter().filter(|e| e.status == Status::Valid).filter_map(exported).collect()
    }

    /// The valid facts as a handbook: a section per type (constraints first), the most
    /// confident first within each, with keys, tags, anchors and bodies.
    pub fn export_markdown(&self, title: &str) -> String {
        let facts = self.export();
        let mut s = String::new();
        let _ = writeln!(s, "# {}\n", md(title));
        let _ = writeln!(
            s,
            "_{} facts, exported from git-neo memory. Confidence moves with what later commits did; ids name the \
             records (`git neo show <id>`)._\n",
            facts.len()
        );
        for &t in FactType::ALL.iter() {
            let mut of_type: Vec<&ExportedFact> = facts.iter().filter(|f| f.fact_type == t).collect();
            if of_type.is_empty() {
                continue;
            }
            of_type.sort_by(|a, b| b.current_confidence.total_cmp(&a.current_confidence).then(a.id.cmp(&b.id)));
            let _ = writeln!(s, "## {}\n", heading(t));
            for f in of_type {
                let _ =
                    write!(s, "- **{}** `{}` (confidence {:.2}", md(&f.subject), f.id.short(), f.current_confidence);
                if let Some(k) = &f.key {
                    let _ = write!(s, ", key `{}`", md(k));
                }
                if !f.tags.is_empty() {
                    let _ = write!(
                        s,
                        ", tags {}",
                        f.tags.iter().map(|t| format!("`{}`", md(t))).collect::<Vec<_>>().join(" ")
                    );
                }
                s.push(')');
                s.push('\n');
                if !f.anchors.is_empty() {
                    let _ = writeln!(
                        s,
                        "  - about: {}",
                        f.anchors.iter().map(|a| format!("`{}`", md(a))).collect::<Vec<_>>().join(", ")
                    );
                }
                for r in &f.needs_review {
                    let _ = writeln!(s, "  - needs review: {}", md(r));
                }
                for l in f.body.trim_end().lines() {
                    let _ = writeln!(s, "  {l}");
                }
            }
            s.push('\n');
        }
        s
    }
}

/// A type's section heading in the handbook.
fn heading(t: FactType) -> &'static str {
    match t {
        FactType::Constraint => "Constraints (always apply)",
        FactType::Architecture => "Architecture",
        FactType::Pattern => "Patterns",
        FactType::Review => "Review notes",
        FactType::Decision => "Decisions",
        FactType::KnownUnknown => "Known unknowns",
        FactType::Failure => "Failures (what did not work)",
    }
}
