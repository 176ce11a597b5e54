//! `git neo curate`: one scope's memory kept under its cap and free of stale, unhelpful and
//! duplicated facts, by appending records (the plan is `crate::curate`; this module gathers
//! its inputs: settings, telemetry, near-duplicate pairs from the recall index, what is already
//! held or waiting in review; then writes the plan in one commit through the normal write path,
//! so `neo.mode=review` makes it a proposal).

use crate::api::learn::feedback::FeedbackReport;
use crate::api::learn::telemetry;
use crate::config::CurateSettings;
use crate::curate::{Plan, DEMOTE, DEMOTE_SIGNAL};
use crate::record::{Kind, Milli, Outcome, Payload, Record, RecordId, Supersession, SupersessionMethod, Timestamp};
use serde::Serialize;
use std::collections::{BTreeSet, HashMap};

/// How a curation runs.
#[derive(Clone, Copy, Debug, Default)]
pub struct CurateOptions {
    /// Plan and report, write nothing.
    pub dry_run: bool,
    /// Constraints may be pruned and evicted too.
    pub include_constraints: bool,
}

/// What a curation did (or, in a dry run, would do).
#[derive(Clone, Debug, Serialize)]
pub struct CurateReport {
    pub scope: String,
    pub at: Timestamp,
    pub dry_run: bool,
    /// True when the records went to the review-mode proposals.
    pub proposed: bool,
    /// Implicit feedback read first (project scope only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub feedback: Option<FeedbackReport>,
    #[serde(flatten)]
    pub plan: Plan,
    /// How synthesised facts were made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub synthesis_note: Option<String>,
    /// Records written (or that would be).
    pub records: usize,
    /// Steps left out because the same change already waits in review.
    pub pending_in_review: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_commit: Option<String>,
    /// Lessons proposed from what keeps going wrong (project scope, unless `neo.lessons.mode`
    /// is off), each its own record; in a dry run, those that would be.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lessons: Vec<CuratedLesson>,
}

/// A lesson curation proposed.
#[derive(Clone, Debug, Serialize)]
pub struct CuratedLesson {
    /// The lesson record (none in a dry run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<RecordId>,
    pub file: String,
    pub text: String,
    pub because: Vec<RecordId>,
    pub reason: String,
    /// `neo.lessons.mode=auto` applied it to the work tree.
    pub applied: bool,
    /// Why it was not proposed (the file cannot take a lesson: a symlink, too large, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

/// The file curation's lessons go to.
pub const LESSONS_FILE: &str = "AGENTS.md";

/// What no-model synthesis does, said in every report that merged something.
pub const SYNTHESIS_NOTE: &str =
    "no language model writes the merged text: each synthesised fact is its cluster's most \
central member, with the others' distinct tags and anchors and the highest confidence";

/// How often each fact of `scope` led an answer that stood, and when it last did.
pub(crate) fn answers(
    events: &[telemetry::Event],
    stood: &[usize],
    scope: &str,
) -> (HashMap<RecordId, usize>, HashMap<RecordId, i64>) {
    let mut answered: HashMap<RecordId, usize> = HashMap::new();
    let mut last_answered: HashMap<RecordId, i64> = HashMap::new();
    for &i in stood {
        let e = &events[i];
        let Some(r) = e.results.iter().find(|r| r.relevant()) else { continue };
        if let Some(id) = RecordId::from_hex(&r.id).filter(|_| r.scope == scope) {
            *answered.entry(id).or_default() += 1;
            let t = last_answered.entry(id).or_insert(e.at);
            *t = (*t).max(e.at);
        }
    }
    (answered, last_answered)
}

/// The commit message of a curation (its records are git-neo's own: the write path reports one
/// that does not validate as a bug, not as the person's input).
pub(crate) fn curation_message(report: &CurateReport) -> String {
    let p = &report.plan;
    let merged: usize = p.synthesized.iter().map(|s| s.members.len()).sum();
    format!(
        "neo: curate {}: {} demoted, {} pruned, {} synthesised from {merged}, {} evicted ({} -> {} current facts, cap {})",
        report.scope,
        p.demoted.len(),
        p.pruned.len(),
        p.synthesized.len(),
        p.evicted.len(),
        p.before,
        p.after,
        p.cap
    )
}

/// Keep what this curation did for `git neo report`: bookkeeping in the clone's cache, never the
/// truth (that is the memory ref), so a failure to write it is not an error.
pub(crate) fn keep_last_curation(project: &crate::store::Store, report: &CurateReport) {
    let path = project.caches().last_curation();
    if let (Ok(bytes), Some(dir)) = (serde_json::to_vec_pretty(report), path.parent()) {
        let _ = std::fs::create_dir_all(dir);
        let _ = std::fs::write(&path, bytes);
    }
}

pub(crate) fn outcome_keys(state: &crate::state::State) -> BTreeSet<String> {
    state
        .iter()
        .filter_map(|e| match &e.record.payload {
            Payload::Outcome(o) => Some(o.key.clone()),
            _ => None,
        })
        .collect()
}

/// The records that carry out `plan`, all dated `now`.
pub(crate) fn plan_records(plan: &Plan, settings: &CurateSettings, author: &str, now: Timestamp) -> Vec<Record> {
    let record =
        |kind, payload, body: String| Record { kind, payload, author: author.to_string(), created_at: now, body };
    let mut out = Vec::new();
    for d in &plan.demoted {
        out.push(record(
            Kind::Outcome,
            Payload::Outcome(Outcome {
                target: d.id,
                signal: DEMOTE_SIGNAL.into(),
                delta: DEMOTE,
                commits: Vec::new(),
                paths: Vec::new(),
                key: d.key.clone(),
            }),
            format!(
                "Returned by recall {} times without a success (`neo.curate.demoteAfter` is {}).\n",
                d.retrievals, settings.demote_after
            ),
        ));
    }
    for r in plan.pruned.iter().chain(&plan.evicted) {
        out.push(record(
            Kind::Supersession,
            Payload::Supersession(Supersession {
                old: r.id,
                old_scope: None,
                new: None,
                reason: r.reason.clone(),
                method: SupersessionMethod::Curation,
                score: Milli::from_f64(r.score.clamp(0.0, 1.0)),
            }),
            String::new(),
        ));
    }
    for s in &plan.synthesized {
        let fact = record(Kind::Fact, Payload::Fact(s.fact.clone()), s.body.clone());
        let (id, _) = fact.encode();
        out.push(fact);
        for m in &s.members {
            out.push(record(
                Kind::Supersession,
                Payload::Supersession(Supersession {
                    old: *m,
                    old_scope: None,
                    new: Some(id),
                    reason: format!(
                        "curate: merged with {} near-duplicate{} (cosine {:.2} or more) into a synthesised fact",
                        s.members.len() - 1,
                        if s.members.len() == 2 { "" } else { "s" },
                        s.min_cosine.min(1.0)
                    ),
                    method: SupersessionMethod::Curation,
                    score: Milli::from_f64(f64::from(s.min_cosine).clamp(0.0, 1.0)),
                }),
                String::new(),
            ));
        }
    }
    out
}
