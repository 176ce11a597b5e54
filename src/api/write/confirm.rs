//! Use case: `git neo confirm`. A person checked a fact against the code at HEAD. The check is an
//! ordinary record (an outcome with signal `confirmed` and no delta, reviewable like any other):
//! the fold clears the fact's earlier anchor flags and takes the confirmation's anchors as the
//! fact's from then on, and outcome detection tracks them from the commit confirmed.
//!
//! Anchors the person names are taken as given (they must exist at HEAD). Without any, each
//! anchor is carried to where the code is now: followed through edits and renames, and where its
//! lines were rewritten, widened to the lines that replaced them (the answer says which, so the
//! person can check those lines).

use crate::api::memory::short_message;
use crate::api::memory::Memory;
use crate::api::write::AddOutcome;
use crate::api::write::WriteContext;
use crate::error::{Error, Result};
use crate::outcomes::diff;
use crate::record::{Anchor, Kind, Milli, Outcome, Payload, Problems, Record};
use crate::state::{Status, CONFIRMED};
use crate::store::ObjectId;
use serde::Serialize;

/// Where one anchor went.
#[derive(Clone, Debug, Serialize)]
pub struct Moved {
    /// The anchor before (`PATH:START-END`; empty when the person named a new one).
    pub from: String,
    /// The anchor now.
    pub to: String,
    /// `named` (given by the person), `unchanged`, `followed` (edits or a rename moved it) or
    /// `widened` (its lines were rewritten: it now spans the lines that replaced them).
    pub how: &'static str,
}

/// What `confirm` wrote.
#[derive(Clone, Debug, Serialize)]
pub struct Confirmation {
    #[serde(flatten)]
    pub outcome: AddOutcome,
    pub anchors: Vec<Moved>,
    /// The commit checked.
    pub commit: String,
}

impl Memory {
    /// Record that a person checked fact `prefix` at HEAD, re-anchoring it at `anchors`
    /// (`PATH[:START-END]`), or where its anchors are now when none are named.
    pub fn confirm(
        &mut self,
        prefix: &str,
        anchors: &[String],
        reason: Option<&str>,
        ctx: &WriteContext,
    ) -> Result<Confirmation> {
        let target = self.resolve("id", prefix)?;
        let entry = &self.state.entries[&target];
        if entry.record.kind != Kind::Fact {
            return Err(Error::invalid(
                "id",
                format!("{} is a {}; only facts are confirmed", target.short(), entry.record.kind),
            ));
        }
        if entry.status != Status::Valid {
            return Err(Error::invalid_with_hint(
                "id",
                format!("{} is {}", target.short(), entry.status.as_str()),
                format!("confirm the fact that holds now (`git neo history {}`)", target.short()),
            ));
        }
        let head = self.store.head_commit()?.ok_or_else(|| {
            Error::invalid("id", "there is no commit to check the fact against; commit the code first")
        })?;
        let summary = entry.record.summary();
        let current: Vec<Anchor> = entry.anchors().to_vec();
        let mut problems = Vec::new();
        let mut moved = Vec::new();
        if anchors.is_empty() {
            for a in &current {
                match self.follow(a, head)? {
                    Some((to, how)) => moved.push(Moved { from: a.spec(), to: to.spec(), how }),
                    None => problems.push(
                        crate::record::Problem::new("anchor", format!("{} is not at HEAD any more", a.path))
                            .with_hint("name where the code is now with --anchor PATH[:START-END]"),
                    ),
                }
            }
        } else {
            for s in anchors {
                if let Some(a) = self.anchor(s, "anchor", &mut problems)? {
                    moved.push(Moved { from: String::new(), to: a.spec(), how: "named" });
                }
            }
        }
        if !problems.is_empty() {
            return Err(Error::Invalid(Problems(problems)));
        }
        let payload = Payload::Outcome(Outcome {
            target,
            signal: CONFIRMED.to_string(),
            delta: Milli(0),
            commits: vec![head.to_string()],
            paths: moved.iter().map(|m| m.to.clone()).collect(),
            // Each check is its own evidence, even of the same commit.
            key: format!("{}:{head}:{CONFIRMED}:{}", target.to_hex(), ctx.now.0),
        });
        let body = reason.map(str::trim).filter(|r| !r.is_empty()).map(|r| format!("{r}\n")).unwrap_or_default();
        let record =
            Record { kind: Kind::Outcome, payload, author: ctx.identity.author_field(), created_at: ctx.now, body };
        let message = format!("neo: confirmed {} \"{}\" ({{id}})", target.short(), short_message(&summary));
        let outcome = self.write(record, message, ctx)?;
        Ok(Confirmation { outcome, anchors: moved, commit: head.to_string() })
    }

    /// Where anchor `a` (taken at its commit) is at `head`, and how it got there; `None` when
    /// its file is gone.
    fn follow(&self, a: &Anchor, head: ObjectId) -> Result<Option<(Anchor, &'static str)>> {
        let at = |path: String, lines: Option<(u32, u32)>| Anchor {
            path,
            lines: lines.map(|(start, end)| crate::record::LineRange { start, end }),
            blob: None,
            commit: Some(head.to_string()),
        };
        let lines = a.lines.map(|l| (l.start, l.end));
        let from = a.commit.as_deref().and_then(|h| ObjectId::from_hex(h.as_bytes()).ok());
        let from = match from {
            Some(f) if f != head && self.store.has_commit(f)? => f,
            // Taken at HEAD (or at a commit this clone lacks): as it is, if the file is there.
            _ => {
                return Ok(self.store.blob_at(head, &a.path)?.map(|_| (at(a.path.clone(), lines), "unchanged")));
            }
        };
        let changes = diff::changes(&self.store, Some(self.store.tree_of(from)?), self.store.tree_of(head)?)?;
        let Some(change) = changes.iter().find(|c| c.old_path.as_deref() == Some(a.path.as_str())) else {
            // Not changed since: unchanged, if it existed then.
            return Ok(self.store.blob_at(head, &a.path)?.map(|_| (at(a.path.clone(), lines), "unchanged")));
        };
        let Some(path) = change.new_path.clone() else { return Ok(None) };
        Ok(Some(match lines {
            None => (at(path, None), "followed"),
            Some((s, e)) => match diff::follow_lines(s, e, &change.hunks) {
                Some(l) => (at(path, Some(l)), "followed"),
                None => (at(path, Some(diff::widen_lines(s, e, &change.hunks))), "widened"),
            },
        }))
    }
}
