//! Use case: memory changes as a semantic changelog (`git neo diff`, `git neo log --markdown`),
//! rendered as markdown fit for a pull-request comment, or as data for `--json`.
//!
//! A change set is computed from two memory trees: the record files the newer one adds, read and
//! grouped by what they mean (facts by type, attempts, supersessions, corrections, forgets,
//! confidence changes). Anything that is not an addition is listed separately and flagged: git-neo
//! never makes such changes, so a reviewer should ask why.

use crate::error::Result;
use crate::markdown::md;
use crate::record::{Milli, Payload, Record, RecordId};
use crate::state::{self, State};
use crate::store::ObjectId;
use crate::store::{Store, TreeChange, TreeEntry};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;

/// A fact that was added.
#[derive(Clone, Debug, Serialize)]
pub struct FactAdded {
    pub id: RecordId,
    #[serde(rename = "type")]
    pub fact_type: String,
    pub subject: String,
    pub scope: String,
    pub confidence: Milli,
}

/// An attempt that was recorded.
#[derive(Clone, Debug, Serialize)]
pub struct AttemptAdded {
    pub id: RecordId,
    pub task: String,
    pub action: String,
    pub result: String,
}

/// A record replaced by another (or, without `new`, marked outdated).
#[derive(Clone, Debug, Serialize)]
pub struct Superseded {
    pub id: RecordId,
    pub old: RecordId,
    pub old_summary: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new: Option<RecordId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_summary: Option<String>,
    pub reason: String,
    pub method: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<Milli>,
}

/// A record that was forgotten.
#[derive(Clone, Debug, Serialize)]
pub struct Forgotten {
    pub id: RecordId,
    pub target: RecordId,
    pub target_summary: String,
    pub reason: String,
}

/// A confidence change from an outcome.
#[derive(Clone, Debug, Serialize)]
pub struct ConfidenceChange {
    pub id: RecordId,
    pub target: RecordId,
    pub target_summary: String,
    pub signal: String,
    pub delta: Milli,
    /// The target's confidence just before and just after this step (each step of a range has
    /// its own; `None` when the target is not a fact this memory holds).
    pub before: Option<Milli>,
    pub after: Option<Milli>,
    pub commits: Vec<String>,
    /// Each commit's subject line, in the order of `commits` (empty when this clone lacks it).
    pub subjects: Vec<String>,
}

/// Everything a range of memory history changed.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Changes {
    pub from: Option<String>,
    pub to: String,
    pub facts: Vec<FactAdded>,
    pub attempts: Vec<AttemptAdded>,
    pub superseded: Vec<Superseded>,
    pub corrected: Vec<Superseded>,
    pub forgotten: Vec<Forgotten>,
    pub confidence: Vec<ConfidenceChange>,
    /// Documents ingested (new, or a new version of one).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub documents: Vec<DocumentAdded>,
    /// Lesson patches proposed to the agents' instruction files, each with its diff.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lessons: Vec<LessonAdded>,
    /// Changes that are not additions of record files (never made by git-neo).
    pub other_changes: Vec<TreeChange>,
}

/// A lesson patch proposed in the range.
#[derive(Clone, Debug, Serialize)]
pub struct LessonAdded {
    pub id: RecordId,
    pub file: String,
    pub change: String,
    pub reason: String,
    /// The unified diff it would apply (empty when the body holds none).
    pub diff: String,
}

/// A document ingested in the range.
#[derive(Clone, Debug, Serialize)]
pub struct DocumentAdded {
    pub id: RecordId,
    pub path: String,
    pub title: String,
    pub sections: usize,
}

fn state_at(store: &Store, commit: Option<ObjectId>) -> Result<State> {
    let Some(c) = commit else { return Ok(State::default()) };
    let snap = store.load_commits(&[c])?;
    Ok(state::fold(snap.records.into_iter().map(|r| (r.id, r.record))))
}

fn summary(state: &State, id: &RecordId) -> String {
    state.entries.get(id).map(|e| e.record.summary()).unwrap_or_else(|| "(not in this memory)".into())
}

/// The changes between memory commits `from` (None: the empty memory) and `to`.
pub fn changes(store: &Store, from: Option<ObjectId>, to: ObjectId) -> Result<Changes> {
    let old_tree = from.map(|c| store.tree_of(c)).transpose()?;
    let new_tree = store.tree_of(to)?;
    let mut added = Vec::new();
    let mut other_changes = Vec::new();
    let (entries, _) = store.entries_of_tree(new_tree)?;
    let by_path: BTreeMap<&str, &TreeEntry> = entries.iter().map(|e| (e.path.as_str(), e)).collect();
    for change in store.diff_trees(old_tree, Some(new_tree))? {
        match (change.change, by_path.get(change.path.as_str())) {
            ("added", Some(e)) => added.push((*e).clone()),
            ("added", None) if change.path == "FORMAT" => {}
            _ => other_changes.push(change),
        }
    }
    let (records, _) = store.read_entries(&added)?;
    let before = state_at(store, from)?;
    let after = state_at(store, Some(to))?;
    let mut out =
        Changes { from: from.map(|c| c.to_string()), to: to.to_string(), other_changes, ..Changes::default() };
    let mut sorted: Vec<(RecordId, Record)> = records.into_iter().map(|r| (r.id, r.record)).collect();
    sorted.sort_by_key(|a| (a.1.created_at, a.0));
    let mut running: HashMap<RecordId, Milli> = HashMap::new();
    let mut subject_of: HashMap<String, String> = HashMap::new();
    for (id, r) in sorted {
        match &r.payload {
            Payload::Fact(f) => out.facts.push(FactAdded {
                id,
                fact_type: f.fact_type.to_string(),
                subject: f.subject.clone(),
                scope: f.scope.clone(),
                confidence: f.confidence,
            }),
            Payload::Attempt(a) => out.attempts.push(AttemptAdded {
                id,
                task: a.task.clone(),
                action: a.action.clone(),
                result: a.check.result.to_string(),
            }),
            Payload::Supersession(s) => {
                let item = Superseded {
                    id,
                    old: s.old,
                    old_summary: summary(&after, &s.old),
                    new: s.new,
                    new_summary: s.new.map(|n| summary(&after, &n)),
                    reason: s.reason.clone(),
                    method: s.method.to_string(),
                    score: s.score,
                };
                if s.new.is_some() {
                    out.superseded.push(item);
                } else {
                    out.corrected.push(item);
                }
            }
            Payload::Retraction(x) => out.forgotten.push(Forgotten {
                id,
                target: x.target,
                target_summary: summary(&after, &x.target),
                reason: x.reason.clone(),
            }),
            Payload::Lesson(l) => out.lessons.push(LessonAdded {
                id,
                file: l.file.clone(),
                change: l.change.to_string(),
                reason: l.reason.clone(),
                diff: crate::lesson::diff_of_body(&r.body).unwrap_or_default().to_string(),
            }),
            Payload::Source(d) => out.documents.push(DocumentAdded {
                id,
                path: d.path.clone(),
                title: d.title.clone(),
                sections: d.sections.len(),
            }),
            Payload::Outcome(o) => {
                // Each step from the confidence the one before it left, as the fold adds them
                // (in time order, clamped to 0..1), starting where the range found the target.
                let start =
                    || {
                        before.entries.get(&o.target).map(|e| e.confidence).or_else(|| {
                            after.entries.get(&o.target).and_then(|e| e.record.as_fact()).map(|f| f.confidence)
                        })
                    };
                let step_before = match running.get(&o.target) {
                    Some(c) => Some(*c),
                    None => start(),
                };
                let step_after = step_before.map(|b| Milli((b.0 + o.delta.0).clamp(0, 1000)));
                if let Some(a) = step_after {
                    running.insert(o.target, a);
                }
                // A scan's outcomes share their commits: each is read once.
                let mut subjects = Vec::new();
                for c in &o.commits {
                    if !subject_of.contains_key(c) {
                        let subject = match ObjectId::from_hex(c.as_bytes()) {
                            Ok(id) => store.commit_subject(id)?.unwrap_or_default(),
                            Err(_) => String::new(),
                        };
                        subject_of.insert(c.clone(), subject);
                    }
                    subjects.push(subject_of[c].clone());
                }
                out.confidence.push(ConfidenceChange {
                    id,
                    target: o.target,
                    target_summary: summary(&after, &o.target),
                    signal: o.signal.clone(),
                    delta: o.delta,
                    before: step_before,
                    after: step_after,
                    commits: o.commits.clone(),
                    subjects,
                })
            }
        }
    }
    Ok(out)
}

fn signed(m: Milli) -> String {
    if m.0 >= 0 {
        format!("+{m}")
    } else {
        m.to_string()
    }
}

impl Changes {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.facts.is_empty()
            && self.attempts.is_empty()
            && self.superseded.is_empty()
            && self.corrected.is_empty()
            && self.forgotten.is_empty()
            && self.confidence.is_empty()
            && self.lessons.is_empty()
            && self.other_changes.is_empty()
    }

    /// A one-line count of what changed.
    pub fn headline(&self) -> String {
        let mut parts = Vec::new();
        let mut count = |n: usize, one: &str, many: &str| {
            if n > 0 {
                parts.push(format!("{n} {}", if n == 1 { one } else { many }));
            }
        };
        count(self.facts.len(), "fact added", "facts added");
        count(self.attempts.len(), "attempt", "attempts");
        count(self.documents.len(), "document ingested", "documents ingested");
        count(self.superseded.len(), "supersession", "supersessions");
        count(self.corrected.len(), "correction", "corrections");
        count(self.forgotten.len(), "forget", "forgets");
        count(self.confidence.len(), "confidence change", "confidence changes");
        count(self.lessons.len(), "lesson proposed", "lessons proposed");
        count(self.other_changes.len(), "change that is not an addition", "changes that are not additions");
        if parts.is_empty() {
            "no changes".into()
        } else {
            parts.join(" · ")
        }
    }

    /// The change set as markdown sections, headed at `level` (2 gives `##`).
    pub fn to_markdown(&self, level: usize) -> String {
        let h = |n: usize| "#".repeat(n);
        let mut s = String::new();
        let _ = writeln!(s, "**{}**\n", self.headline());
        if !self.facts.is_empty() {
            let _ = writeln!(s, "{} Facts added\n", h(level));
            let mut by_type: BTreeMap<&str, Vec<&FactAdded>> = BTreeMap::new();
            for f in &self.facts {
                by_type.entry(f.fact_type.as_str()).or_default().push(f);
            }
            for (t, facts) in by_type {
                let _ = writeln!(s, "{} {t}\n", h(level + 1));
                for f in facts {
                    let _ = writeln!(
                        s,
                        "- `{}` {} _(scope {}, confidence {})_",
                        f.id.short(),
                        md(&f.subject),
                        md(&f.scope),
                        f.confidence
                    );
                }
                s.push('\n');
            }
        }
        if !self.documents.is_empty() {
            let _ = writeln!(s, "{} Documents ingested\n", h(level));
            for d in &self.documents {
                let _ =
                    writeln!(s, "- `{}` {} (`{}`, {} sections)", d.id.short(), md(&d.title), md(&d.path), d.sections);
            }
            s.push('\n');
        }
        if !self.attempts.is_empty() {
            let _ = writeln!(s, "{} Attempts recorded\n", h(level));
            for a in &self.attempts {
                let _ =
                    writeln!(s, "- `{}` task {}: {} (check {})", a.id.short(), md(&a.task), md(&a.action), a.result);
            }
            s.push('\n');
        }
        if !self.superseded.is_empty() {
            let _ = writeln!(s, "{} Superseded\n", h(level));
            for x in &self.superseded {
                let score = x.score.map(|v| format!(", score {v}")).unwrap_or_default();
                let _ = writeln!(
                    s,
                    "- `{}` {} → `{}` {}: {} _({}{score})_",
                    x.old.short(),
                    md(&x.old_summary),
                    x.new.map(|n| n.short()).unwrap_or_default(),
                    md(x.new_summary.as_deref().unwrap_or("")),
                    md(&x.reason),
                    x.method
                );
            }
            s.push('\n');
        }
        if !self.corrected.is_empty() {
            let _ = writeln!(s, "{} Marked outdated\n", h(level));
            for x in &self.corrected {
                let _ = writeln!(s, "- `{}` {}: {}", x.old.short(), md(&x.old_summary), md(&x.reason));
            }
            s.push('\n');
        }
        if !self.forgotten.is_empty() {
            let _ = writeln!(s, "{} Forgotten\n", h(level));
            for x in &self.forgotten {
                let _ = writeln!(s, "- `{}` {}: {}", x.target.short(), md(&x.target_summary), md(&x.reason));
            }
            s.push('\n');
        }
        if !self.lessons.is_empty() {
            let _ = writeln!(s, "{} Lessons proposed to the instruction files\n", h(level));
            for x in &self.lessons {
                let _ = writeln!(s, "- `{}` {} ({}): {}\n", x.id.short(), md(&x.file), x.change, md(&x.reason));
                // Every diff line starts with ' ', '+' or '-': none can close the fence.
                let shown: String = x.diff.lines().map(|l| format!("{}\n", crate::display::escape(l))).collect();
                let _ = writeln!(s, "```diff\n{shown}```\n");
            }
        }
        self.confidence_markdown(&mut s, &h(level));
        if !self.other_changes.is_empty() {
            let _ = writeln!(s, "{} ⚠ Changes that are not additions\n", h(level));
            let _ = writeln!(s, "git-neo only ever adds records; run `git neo verify` on this range.\n");
            for c in &self.other_changes {
                let _ = writeln!(s, "- {} `{}`", c.change, c.path);
            }
            s.push('\n');
        }
        let trimmed = s.trim_end().to_string();
        format!("{trimmed}\n")
    }

    /// The confidence changes section: each step from where the one before left the target,
    /// with the commits that were its evidence.
    fn confidence_markdown(&self, s: &mut String, heading: &str) {
        if self.confidence.is_empty() {
            return;
        }
        let _ = writeln!(s, "{heading} Confidence changes\n");
        for x in &self.confidence {
            let range = match (x.before, x.after) {
                (Some(b), Some(a)) => format!(" ({b} → {a})"),
                (None, Some(a)) => format!(" (now {a})"),
                _ => String::new(),
            };
            let commits = if x.commits.is_empty() {
                String::new()
            } else {
                let named: Vec<String> = x
                    .commits
                    .iter()
                    .enumerate()
                    .map(|(i, c)| match x.subjects.get(i).filter(|s| !s.is_empty()) {
                        Some(subject) => format!("`{}` \"{}\"", &c[..c.len().min(12)], md(subject)),
                        None => format!("`{}`", &c[..c.len().min(12)]),
                    })
                    .collect();
                format!(", from {}", named.join(", "))
            };
            let _ = writeln!(
                s,
                "- `{}` {}: {} {}{range}{commits}",
                x.target.short(),
                md(&x.target_summary),
                signed(x.delta),
                md(&x.signal)
            );
        }
        s.push('\n');
    }
}
