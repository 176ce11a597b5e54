//! Corrections: marking records outdated, reverting a supersession, an outdated mark or a
//! forget (each by appending a record), and the history of a record or key.

use crate::api::memory::short_message;
use crate::api::memory::Memory;
use crate::api::write::AddOutcome;
use crate::api::write::WriteContext;
use crate::error::{Error, Result};
use crate::record::{Kind, Milli, Payload, RecordId, Retraction, Supersession, SupersessionMethod, Timestamp};
use crate::state::{Entry, Status};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

impl Memory {
    /// Mark a fact or attempt outdated, with no replacement: a supersession record without `new`.
    /// The original stays untouched; a second correction adds another record.
    pub fn outdated(&mut self, prefix: &str, reason: &str, ctx: &WriteContext) -> Result<AddOutcome> {
        let target = self.resolve("id", prefix)?;
        let entry = &self.state.entries[&target];
        if !matches!(entry.record.kind, Kind::Fact | Kind::Attempt) {
            return Err(Error::invalid_with_hint(
                "id",
                format!("{} is a {}; only facts and attempts can be outdated", target.short(), entry.record.kind),
                format!("`git neo revert` undoes a {}", entry.record.kind),
            ));
        }
        if let Some(by) = entry.retracted_by {
            return Err(Error::invalid_with_hint(
                "id",
                format!("{} is forgotten (by {})", target.short(), by.short()),
                format!("`git neo revert {}` first", by.short()),
            ));
        }
        let summary = entry.record.summary();
        let payload = Payload::Supersession(Supersession {
            old: target,
            old_scope: None,
            new: None,
            reason: reason.trim().to_string(),
            method: SupersessionMethod::Outdated,
            score: None,
        });
        let message = format!("neo: outdated {} \"{}\" ({{id}})", target.short(), short_message(&summary));
        self.write_checked(Kind::Supersession, payload, message, ctx)
    }

    /// Undo a supersession (or an outdated mark) or a forget by retracting it: an appended record,
    /// so the history keeps both. Returns the outcome and the records the undo restores.
    pub fn revert(
        &mut self,
        prefix: &str,
        reason: Option<&str>,
        ctx: &WriteContext,
    ) -> Result<(AddOutcome, Vec<RecordId>)> {
        let target = self.resolve("id", prefix)?;
        let entry = &self.state.entries[&target];
        let restores = match &entry.record.payload {
            Payload::Supersession(s) => vec![s.old],
            Payload::Retraction(r) => vec![r.target],
            _ => {
                return Err(Error::invalid_with_hint(
                    "id",
                    format!(
                        "{} is a {}; revert takes a supersession or retraction id",
                        target.short(),
                        entry.record.kind
                    ),
                    format!("see `git neo history {}`", target.short()),
                ))
            }
        };
        if let Some(by) = entry.retracted_by {
            return Err(Error::invalid(
                "id",
                format!("{} {} is already reverted (by {})", entry.record.kind, target.short(), by.short()),
            ));
        }
        let summary = entry.record.summary();
        let kind = entry.record.kind;
        let payload = Payload::Retraction(Retraction {
            target,
            reason: reason.map(str::trim).filter(|r| !r.is_empty()).unwrap_or("reverted").to_string(),
        });
        let message = format!("neo: revert {kind} {} \"{}\" ({{id}})", target.short(), short_message(&summary));
        let outcome = self.write_checked(Kind::Retraction, payload, message, ctx)?;
        Ok((outcome, restores))
    }
}

/// One step in a record's history.
#[derive(Clone, Debug, Serialize)]
pub struct HistoryEvent {
    pub at: Timestamp,
    pub id: RecordId,
    pub kind: Kind,
    /// `added`, `superseded`, `outdated`, `forgotten`, `reverted`, `outcome`.
    pub event: &'static str,
    pub summary: String,
    pub author: String,
    /// The record's own status now (a reverted supersession is `retracted`).
    pub status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<SupersessionMethod>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old: Option<RecordId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new: Option<RecordId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delta: Option<f64>,
}

/// The whole chain around a record or key.
#[derive(Clone, Debug, Serialize)]
pub struct History {
    /// What was asked for: an id or a key.
    pub query: String,
    /// The facts and attempts in the chain, oldest first, with their status now.
    pub records: Vec<RecordId>,
    pub events: Vec<HistoryEvent>,
}

impl Memory {
    /// Every record connected to `what` (an id prefix or a fact key) by supersession, and every
    /// supersession, retraction and outcome touching them, in fold order.
    pub fn history(&self, what: &str) -> Result<History> {
        let what = what.trim();
        let mut seeds: Vec<RecordId> = self
            .state
            .iter()
            .filter(|e| e.record.as_fact().is_some_and(|f| f.key.as_deref() == Some(what)))
            .map(|e| e.id)
            .collect();
        if seeds.is_empty() {
            let id = self.resolve("id", what).map_err(|e| match e {
                Error::NotFound { .. } | Error::Invalid(_) => Error::invalid_with_hint(
                    "id",
                    format!("{what:?} is neither a record id (prefix) nor the key of any fact"),
                    "see `git neo list --all`",
                ),
                other => other,
            })?;
            let e = &self.state.entries[&id];
            seeds.push(match &e.record.payload {
                Payload::Supersession(s) => s.old,
                Payload::Retraction(r) => self.root_target(r.target),
                Payload::Outcome(o) => o.target,
                _ => id,
            });
        }
        // Facts and attempts linked by supersession, in both directions.
        let mut links: BTreeMap<RecordId, Vec<RecordId>> = BTreeMap::new();
        for e in self.state.iter() {
            if let Payload::Supersession(s) = &e.record.payload {
                if let Some(new) = s.new {
                    links.entry(s.old).or_default().push(new);
                    links.entry(new).or_default().push(s.old);
                }
            }
        }
        let mut chain: BTreeSet<RecordId> = BTreeSet::new();
        let mut todo = seeds;
        while let Some(id) = todo.pop() {
            if chain.insert(id) {
                todo.extend(links.get(&id).into_iter().flatten().copied());
            }
        }
        // Records about the chain, and retractions of those (a revert of a supersession).
        let mut touching: BTreeSet<RecordId> = chain.clone();
        for e in self.state.iter() {
            let about = match &e.record.payload {
                Payload::Supersession(s) => chain.contains(&s.old) || s.new.is_some_and(|n| chain.contains(&n)),
                Payload::Outcome(o) => chain.contains(&o.target),
                _ => false,
            };
            if about {
                touching.insert(e.id);
            }
        }
        loop {
            let more: Vec<RecordId> = self
                .state
                .iter()
                .filter_map(|e| match &e.record.payload {
                    Payload::Retraction(r) if touching.contains(&r.target) && !touching.contains(&e.id) => Some(e.id),
                    _ => None,
                })
                .collect();
            if more.is_empty() {
                break;
            }
            touching.extend(more);
        }
        // Fold order, except that within one second a fact or attempt comes before the records
        // about it (they are usually written in the same commit).
        let mut events: Vec<HistoryEvent> =
            self.state.iter().filter(|e| touching.contains(&e.id)).map(|e| self.event(e)).collect();
        events.sort_by_key(|ev| (ev.at, !matches!(ev.kind, Kind::Fact | Kind::Attempt)));
        let records = self.state.iter().filter(|e| chain.contains(&e.id)).map(|e| e.id).collect();
        Ok(History { query: what.to_string(), records, events })
    }

    /// What a (chain of) retraction(s) ultimately targets.
    fn root_target(&self, mut id: RecordId) -> RecordId {
        for _ in 0..64 {
            match self.state.entries.get(&id).map(|e| &e.record.payload) {
                Some(Payload::Retraction(r)) => id = r.target,
                Some(Payload::Supersession(s)) => return s.old,
                Some(Payload::Outcome(o)) => return o.target,
                _ => break,
            }
        }
        id
    }

    fn event(&self, e: &Entry) -> HistoryEvent {
        let mut ev = HistoryEvent {
            at: e.record.created_at,
            id: e.id,
            kind: e.record.kind,
            event: "added",
            summary: e.record.summary(),
            author: e.record.author.clone(),
            status: e.status,
            reason: None,
            method: None,
            score: None,
            old: None,
            new: None,
            delta: None,
        };
        match &e.record.payload {
            Payload::Supersession(s) => {
                ev.event = if s.new.is_some() { "superseded" } else { "outdated" };
                ev.reason = Some(s.reason.clone());
                ev.method = Some(s.method);
                ev.score = s.score.map(Milli::as_f64);
                ev.old = Some(s.old);
                ev.new = s.new;
            }
            Payload::Retraction(r) => {
                let target_kind = self.state.entries.get(&r.target).map(|t| t.record.kind);
                ev.event = if matches!(target_kind, Some(Kind::Supersession | Kind::Retraction)) {
                    "reverted"
                } else {
                    "forgotten"
                };
                ev.reason = Some(r.reason.clone());
                ev.old = Some(r.target);
            }
            Payload::Outcome(o) => {
                ev.event = "outcome";
                ev.reason = Some(o.signal.clone());
                ev.delta = Some(o.delta.as_f64());
            }
            _ => {}
        }
        ev
    }
}

/// One automatic supersession, as the rule of today reads it (`git neo repair`).
#[derive(Clone, Debug, Serialize)]
pub struct Rechecked {
    /// The supersession record.
    pub id: RecordId,
    pub method: SupersessionMethod,
    pub old: RecordId,
    pub old_subject: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new: Option<RecordId>,
    pub new_subject: String,
    /// The reason the supersession gave when it was written.
    pub reason: String,
    /// Whether today's rule makes it too.
    pub holds: bool,
    /// What today's rule says of the pair.
    pub verdict: String,
}

/// What `git neo repair` found and did.
#[derive(Clone, Debug, Serialize)]
pub struct Repair {
    /// Every automatic supersession in effect (by the frame rule or by similarity).
    pub supersessions: Vec<Rechecked>,
    /// The ones reverted (or, in a dry run, that would be).
    pub reverted: usize,
    pub dry_run: bool,
    /// The commit that holds the reverts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
}

impl Memory {
    /// Re-read every automatic supersession still in effect with today's rule, and revert (one
    /// retraction each, all in one commit) those it would not make: a frame supersession the
    /// frame rule no longer makes, a similarity one between statements of different identities.
    /// Explicit and key supersessions are the writer's own and are left alone.
    pub fn repair(&mut self, ctx: &WriteContext) -> Result<Repair> {
        let dry_run = ctx.dry_run;
        let mut found = Vec::new();
        for e in self.state.iter() {
            let Payload::Supersession(s) = &e.record.payload else { continue };
            if !matches!(s.method, SupersessionMethod::Frame | SupersessionMethod::Similarity)
                || e.retracted_by.is_some()
            {
                continue;
            }
            let Some(new) = s.new else { continue };
            let summary = |id: &RecordId| self.state.entries.get(id).map(|e| e.record.summary()).unwrap_or_default();
            let (old_subject, new_subject) = (summary(&s.old), summary(&new));
            let (holds, verdict) = match s.method {
                // A failure or a review is an event: the frame rule replaces none (an older rule
                // did, reading "Review note on X: …" as a new value of "Review note on X").
                SupersessionMethod::Frame
                    if self
                        .state
                        .entries
                        .get(&s.old)
                        .and_then(|e| e.record.as_fact())
                        .is_some_and(|f| f.fact_type.is_event()) =>
                {
                    (false, "events are not states: a failure or a review is never an update".into())
                }
                SupersessionMethod::Frame => {
                    let c =
                        crate::frame::compare(&crate::frame::frame(&old_subject), &crate::frame::frame(&new_subject));
                    (c.relation == crate::frame::Relation::Update, c.why)
                }
                _ => {
                    let same =
                        crate::frame::rewording(&crate::frame::frame(&old_subject), &crate::frame::frame(&new_subject));
                    (same, if same { "a rewording".into() } else { "not a rewording: a neighbour".into() })
                }
            };
            found.push(Rechecked {
                id: e.id,
                method: s.method,
                old: s.old,
                old_subject,
                new: Some(new),
                new_subject,
                reason: s.reason.clone(),
                holds,
                verdict,
            });
        }
        let undo: Vec<&Rechecked> = found.iter().filter(|r| !r.holds).collect();
        let reverted = undo.len();
        let mut commit = None;
        if !dry_run && reverted > 0 {
            let records = undo
                .iter()
                .map(|r| crate::record::Record {
                    kind: Kind::Retraction,
                    payload: Payload::Retraction(Retraction {
                        target: r.id,
                        reason: format!("repair: the update rule no longer makes this supersession ({})", r.verdict),
                    }),
                    author: ctx.identity.author_field(),
                    created_at: ctx.now,
                    body: String::new(),
                })
                .collect();
            let message = format!(
                "neo: repair reverts {reverted} automatic supersession{}",
                if reverted == 1 { "" } else { "s" }
            );
            commit = self.write_all(records, message, ctx)?.commit;
        }
        Ok(Repair { supersessions: found, reverted, dry_run, commit })
    }
}
