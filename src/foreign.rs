//! PURE. Other memory tools' stores read into facts and the links between them, each from its
//! real on-disk format (docs/import.md says where each format is defined):
//! - Neo's fact files (`~/.neo/facts/facts_{global,org_<id>,project_<id>}.json`: `{"version",
//!   "facts": [...]}`): kinds, scopes (as area labels), confidence, provenance, creation times,
//!   `depends_on`, and supersession (`is_valid`, `superseded_by`, `invalidation_reason`);
//! - beads' issue export (`.beads/issues.jsonl`, one issue per line): closed issues with their
//!   resolution as decisions (bugs as failures), open ones as known unknowns, dependencies as
//!   links (`blocks` and `parent-child` as depends-on, `discovered-from` as derives-from,
//!   `related` as extends);
//! - CSV with a header row, columns named like the JSON Lines import's fields or mapped to them.
//!
//! Nothing here writes: the use case imports the facts level by level (a fact after the facts it
//! names) and then the supersessions.

use crate::record::validate::{fit_subject, tag_of};
use crate::record::{FactType, Timestamp};
use serde::Deserialize;
use std::collections::{BTreeMap, HashSet};

/// A fact read from another tool, named by that tool's id (`key`).
#[derive(Clone, Debug, PartialEq)]
pub struct ForeignFact {
    pub key: String,
    pub fact_type: FactType,
    pub subject: String,
    pub body: String,
    pub area: Option<String>,
    pub tags: Vec<String>,
    pub confidence: Option<f64>,
    pub provenance: Option<String>,
    /// When the other tool learned it.
    pub created_at: Option<Timestamp>,
    /// Keys of the facts this one depends on, extends, derives from.
    pub depends_on: Vec<String>,
    pub extends: Vec<String>,
    pub derives_from: Vec<String>,
}

/// A supersession the other tool recorded: `old` replaced by `new` (or outdated when `None`).
#[derive(Clone, Debug, PartialEq)]
pub struct ForeignLink {
    pub old: String,
    pub new: Option<String>,
    pub reason: String,
    pub at: Option<Timestamp>,
}

/// What was read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Foreign {
    pub facts: Vec<ForeignFact>,
    pub links: Vec<ForeignLink>,
    /// Entries left out, with why (`key: why`).
    pub left_out: Vec<String>,
}

/// Subject and body from a title and a text: the title as subject (cut to fit, the whole kept in
/// the body), the text as body.
fn subject_and_body(title: &str, text: &str) -> (String, String) {
    let (subject, cut) = fit_subject(title);
    let mut body = String::new();
    if cut {
        body.push_str(title.trim());
        body.push_str("\n\n");
    }
    body.push_str(text.trim());
    (subject, body.trim().to_string())
}

/// An RFC 3339 time (`2025-10-14T12:34:56.789-07:00`, `…Z`) as UTC seconds.
pub fn rfc3339(s: &str) -> Option<Timestamp> {
    let s = s.trim();
    let base = Timestamp::parse(&format!("{}Z", s.get(..19)?))?;
    let rest = &s[19..];
    let rest = rest.trim_start_matches(|c: char| c == '.' || c.is_ascii_digit());
    let offset = match rest {
        "" | "Z" | "z" => 0,
        o => {
            let sign = match o.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let (h, m) = o[1..].split_once(':')?;
            sign * (h.parse::<i64>().ok()? * 3600 + m.parse::<i64>().ok()? * 60)
        }
    };
    Some(Timestamp(base.0 - offset))
}

// ---- Neo ----

#[derive(Deserialize)]
struct NeoFile {
    facts: Vec<NeoFact>,
}

#[derive(Deserialize)]
struct NeoFact {
    id: String,
    #[serde(default)]
    subject: String,
    #[serde(default)]
    body: String,
    #[serde(default = "neo_pattern")]
    kind: String,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    domain: Option<String>,
    #[serde(default = "yes")]
    is_valid: bool,
    #[serde(default)]
    superseded_by: Option<String>,
    #[serde(default)]
    depends_on: Vec<String>,
    #[serde(default)]
    metadata: NeoMetadata,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    invalidation_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct NeoMetadata {
    #[serde(default)]
    created_at: Option<f64>,
    #[serde(default)]
    confidence: Option<f64>,
    #[serde(default)]
    provenance: Option<String>,
    #[serde(default)]
    event_time_end: Option<f64>,
}

fn neo_pattern() -> String {
    "pattern".into()
}

fn yes() -> bool {
    true
}

/// Neo's kind as a fact type: `known_unknown` is `known-unknown`; an `episode` (one event) is
/// kept as a pattern tagged `episode`.
fn neo_kind(kind: &str) -> Option<(FactType, Option<&'static str>)> {
    match kind {
        "episode" => Some((FactType::Pattern, Some("episode"))),
        k => FactType::from_word(&k.replace('_', "-")).map(|t| (t, None)),
    }
}

/// Read one of Neo's fact files (or a bare array of its facts).
pub fn neo(text: &str) -> Result<Foreign, String> {
    let facts: Vec<NeoFact> = match serde_json::from_str::<NeoFile>(text) {
        Ok(f) => f.facts,
        Err(first) => serde_json::from_str(text)
            .map_err(|_| format!("is not a Neo fact file ({{\"version\", \"facts\": [...]}}): {first}"))?,
    };
    let mut out = Foreign::default();
    let secs = |t: Option<f64>| t.filter(|t| t.is_finite() && *t > 0.0).map(|t| Timestamp(t as i64));
    let created: BTreeMap<&str, Option<Timestamp>> =
        facts.iter().map(|f| (f.id.as_str(), secs(f.metadata.created_at))).collect();
    for f in &facts {
        if f.subject.trim().is_empty() {
            out.left_out.push(format!("{}: no subject", f.id));
            continue;
        }
        let Some((fact_type, extra)) = neo_kind(&f.kind) else {
            out.left_out.push(format!("{}: kind {:?} has no fact type", f.id, f.kind));
            continue;
        };
        let mut tags: Vec<String> = f.tags.iter().filter_map(|t| tag_of(t)).collect();
        tags.extend(tag_of(&format!("neo:{}", f.id)));
        tags.extend(f.domain.as_deref().and_then(tag_of));
        tags.extend(extra.map(str::to_string));
        let (subject, body) = subject_and_body(&f.subject, &f.body);
        out.facts.push(ForeignFact {
            key: f.id.clone(),
            fact_type,
            subject,
            body,
            area: f.scope.clone().filter(|s| !s.trim().is_empty()),
            tags,
            confidence: f.metadata.confidence.filter(|c| (0.0..=1.0).contains(c)),
            provenance: f.metadata.provenance.clone(),
            created_at: secs(f.metadata.created_at),
            depends_on: f.depends_on.clone(),
            extends: Vec::new(),
            derives_from: Vec::new(),
        });
        if !f.is_valid {
            let reason = f.invalidation_reason.clone().filter(|r| !r.trim().is_empty());
            match f.superseded_by.as_deref().filter(|b| created.contains_key(b)) {
                Some(b) => out.links.push(ForeignLink {
                    old: f.id.clone(),
                    new: Some(b.to_string()),
                    reason: reason.unwrap_or_else(|| "superseded in Neo".into()),
                    at: created.get(b).copied().flatten().or(secs(f.metadata.event_time_end)),
                }),
                None => out.links.push(ForeignLink {
                    old: f.id.clone(),
                    new: None,
                    reason: reason.unwrap_or_else(|| "no longer valid in Neo".into()),
                    at: secs(f.metadata.event_time_end),
                }),
            }
        }
    }
    Ok(out)
}

// ---- beads ----

#[derive(Deserialize)]
struct Bead {
    id: String,
    title: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    design: String,
    #[serde(default)]
    acceptance_criteria: String,
    #[serde(default)]
    notes: String,
    #[serde(default)]
    status: String,
    #[serde(default)]
    priority: Option<i64>,
    #[serde(default)]
    issue_type: String,
    #[serde(default)]
    created_at: Option<String>,
    #[serde(default)]
    closed_at: Option<String>,
    #[serde(default)]
    close_reason: String,
    #[serde(default)]
    labels: Vec<String>,
    #[serde(default)]
    dependencies: Vec<BeadDependency>,
}

#[derive(Deserialize)]
struct BeadDependency {
    issue_id: String,
    depends_on_id: String,
    #[serde(rename = "type", default)]
    dep_type: String,
}

/// Read beads' issue export, one issue per line.
pub fn beads(text: &str) -> Result<Foreign, String> {
    let mut issues = Vec::new();
    for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let bead: Bead = serde_json::from_str(line).map_err(|e| format!("line {}: not a beads issue: {e}", n + 1))?;
        issues.push(bead);
    }
    let ids: HashSet<&str> = issues.iter().map(|b| b.id.as_str()).collect();
    let mut out = Foreign::default();
    for b in &issues {
        let closed = b.status == "closed";
        let fact_type = match (closed, b.issue_type.as_str()) {
            _ if b.status == "tombstone" => {
                out.left_out.push(format!("{}: deleted in beads", b.id));
                continue;
            }
            (true, "bug") => FactType::Failure,
            (true, _) => FactType::Decision,
            (false, _) => FactType::KnownUnknown,
        };
        let mut text = b.description.trim().to_string();
        for (label, part) in
            [("Design", &b.design), ("Acceptance criteria", &b.acceptance_criteria), ("Notes", &b.notes)]
        {
            if !part.trim().is_empty() {
                text.push_str(&format!("\n\n**{label}:** {}", part.trim()));
            }
        }
        if closed && !b.close_reason.trim().is_empty() {
            text.push_str(&format!("\n\n**Resolution:** {}", b.close_reason.trim()));
        }
        let (subject, body) = subject_and_body(&b.title, &text);
        let mut tags: Vec<String> = b.labels.iter().filter_map(|l| tag_of(l)).collect();
        tags.extend(tag_of(&format!("beads:{}", b.id)));
        tags.extend(tag_of(&b.issue_type));
        tags.extend(b.priority.map(|p| format!("p{p}")));
        let (mut depends_on, mut extends, mut derives_from) = (Vec::new(), Vec::new(), Vec::new());
        for d in b.dependencies.iter().filter(|d| d.issue_id == b.id && ids.contains(d.depends_on_id.as_str())) {
            let to = d.depends_on_id.clone();
            match d.dep_type.as_str() {
                "discovered-from" => derives_from.push(to),
                "related" => extends.push(to),
                _ => depends_on.push(to),
            }
        }
        let when = if closed { b.closed_at.as_deref() } else { None }.or(b.created_at.as_deref());
        out.facts.push(ForeignFact {
            key: b.id.clone(),
            fact_type,
            subject,
            body,
            area: None,
            tags,
            confidence: None,
            provenance: Some("observed".into()),
            created_at: when.and_then(rfc3339),
            depends_on,
            extends,
            derives_from,
        });
    }
    Ok(out)
}

// ---- CSV ----

/// Split CSV text into rows of fields (RFC 4180: quoted fields may hold commas, doubled quotes
/// and line breaks).
pub fn csv_rows(text: &str) -> Result<Vec<Vec<String>>, String> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    let mut line = 1;
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => {
                if c == '\n' {
                    line += 1;
                }
                field.push(c);
            }
            (false, '"') if field.is_empty() => quoted = true,
            (false, ',') => row.push(std::mem::take(&mut field)),
            (false, '\r') => {}
            (false, '\n') => {
                line += 1;
                row.push(std::mem::take(&mut field));
                if row.iter().any(|f| !f.is_empty()) {
                    rows.push(std::mem::take(&mut row));
                }
                row.clear();
            }
            (false, c) => field.push(c),
        }
    }
    if quoted {
        return Err(format!("a quoted field opened before line {line} is never closed"));
    }
    row.push(field);
    if row.iter().any(|f| !f.is_empty()) {
        rows.push(row);
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_with_offsets_and_fractions_are_utc_seconds() {
        assert_eq!(rfc3339("2025-10-14T12:00:00Z"), Timestamp::parse("2025-10-14T12:00:00Z"));
        assert_eq!(rfc3339("2025-10-14T05:00:00.123456-07:00"), Timestamp::parse("2025-10-14T12:00:00Z"));
        assert_eq!(rfc3339("2025-10-14T14:30:00+02:30"), Timestamp::parse("2025-10-14T12:00:00Z"));
        assert_eq!(rfc3339("yesterday"), None);
    }

    #[test]
    fn csv_fields_may_hold_commas_quotes_and_line_breaks() {
        let rows = csv_rows("type,subject,body\r\nconstraint,\"Never, ever\",\"line one\nsaid \"\"hi\"\"\"\n\n")
            .expect("parses");
        assert_eq!(
            rows,
            vec![vec!["type", "subject", "body"], vec!["constraint", "Never, ever", "line one\nsaid \"hi\""]]
        );
        assert!(csv_rows("a,\"b\n").is_err());
    }
}
