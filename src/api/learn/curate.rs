//! `git neo curate`: one scope's memory kept under its cap and free of stale, unhelpful and
//! duplicated facts, by appending records (the plan is `crate::curate`; this module gathers
//! its inputs: settings, telemetry, near-duplicate pairs from the recall index, what is already
//! held or waiting in review; then writes the plan in one commit through the normal write path,
//! so `neo.mode=review` makes it a proposal).

use crate::api::feedback::{self, FeedbackReport};
use crate::api::{telemetry, Session};
use crate::config::CurateSettings;
use crate::curate::{self, Inputs, Plan, DEMOTE, DEMOTE_SIGNAL};
use crate::error::Result;
use crate::record::{Kind, Milli, Outcome, Payload, Record, RecordId, Supersession, SupersessionMethod, Timestamp};
use crate::scope::Scope;
use crate::state::Status;
use crate::store::WriteMode;
use serde::Serialize;
use std::collections::{BTreeSet, HashMap, HashSet};

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

impl Session {
    /// Curate the target scope (see the module docs), then, for the project, propose the
    /// lessons its failures and attempts show ([`curate::lessons`]).
    pub fn curate(&mut self, opts: CurateOptions) -> Result<CurateReport> {
        let mut report = self.curate_facts(opts)?;
        if self.target() == Scope::Project {
            report.lessons = self.curate_lessons(opts.dry_run)?;
        }
        Ok(report)
    }

    /// Propose each lesson [`curate::lessons`] finds, as its own record, to [`LESSONS_FILE`].
    fn curate_lessons(&mut self, dry_run: bool) -> Result<Vec<CuratedLesson>> {
        let memory = self.memory()?;
        if memory.lessons_mode()? == crate::config::LessonsMode::Off || memory.store().work_dir().is_none() {
            return Ok(Vec::new());
        }
        // Every reason a lesson already gives, taken, waiting or turned down.
        let given: BTreeSet<String> =
            memory.state().iter().filter_map(|e| e.record.as_lesson()).map(|l| l.reason.clone()).collect();
        let candidates = curate::lessons(memory.state(), &given);
        let mut out = Vec::new();
        for c in candidates {
            let req = crate::api::lessons::ProposeRequest {
                file: LESSONS_FILE.to_string(),
                edit: crate::api::lessons::Edit::Append(c.text.clone()),
                because: c.because.clone(),
                reason: Some(c.reason.clone()),
            };
            let mut lesson = CuratedLesson {
                id: None,
                file: req.file.clone(),
                text: c.text,
                because: c.because,
                reason: c.reason,
                applied: false,
                skipped: None,
            };
            if !dry_run {
                match self.propose_lesson(&req) {
                    Ok(p) => {
                        lesson.id = Some(p.outcome.id);
                        lesson.applied = p.applied.is_some();
                    }
                    // The rest of curation stands; the report says why this one did not.
                    Err(e) if e.category() == crate::error::Category::User => lesson.skipped = Some(e.to_string()),
                    Err(e) => return Err(e),
                }
            }
            out.push(lesson);
        }
        Ok(out)
    }

    fn curate_facts(&mut self, opts: CurateOptions) -> Result<CurateReport> {
        let scope = self.target();
        let project = self.project_store()?;
        let settings = CurateSettings::from_config(&|k| project.config_value(k))?;
        let tel = telemetry::Settings::from_config(&|k| project.config_value(k))?;
        let events = if tel.on { telemetry::read(&project.caches()) } else { Vec::new() };
        let questions = feedback::Questions::new(&events);
        let stood = questions.stood();
        // All the feedback there is, first and in one commit, so the plan sees every signal and a
        // second curation right after finds nothing new.
        let feedback = if scope == Scope::Project {
            Some(self.feedback_from(&questions, &stood, opts.dry_run, false)?)
        } else {
            None
        };
        let scope_name = scope.to_string();
        let retrievals = crate::api::stats::retrievals(&events, Some(&scope_name));
        let (answered, last_answered) = answers(&events, &stood, &scope_name);
        let now = self.now();

        // Facts that may be merged: current, not constraints, not protected.
        let mergeable: HashSet<RecordId> = self
            .memory_of(&scope)?
            .state()
            .iter()
            .filter(|e| e.status == Status::Valid)
            .filter(|e| {
                e.record.as_fact().is_some_and(|f| {
                    f.fact_type != crate::record::FactType::Constraint && !curate::protected(f, &settings)
                })
            })
            .map(|e| e.id)
            .collect();
        let near = self.near_pairs(&scope, settings.synthesize, &|id| mergeable.contains(&id))?;

        let store = self.store_of(&scope)?;
        let wc = if opts.dry_run { None } else { Some(self.write_context(&store)?) };
        let review = store.write_mode() == WriteMode::Review;
        let memory = self.memory_of(&scope)?;
        let mut held_keys: BTreeSet<String> = outcome_keys(memory.state());
        // In review mode, what an earlier curation proposed and nobody approved yet is not
        // proposed again.
        let mut pending: HashSet<RecordId> = HashSet::new();
        if review {
            let proposals = memory.ensure_proposals()?;
            held_keys.extend(outcome_keys(proposals.state()));
            for e in proposals.state().iter() {
                if let Payload::Supersession(s) = &e.record.payload {
                    pending.insert(s.old);
                }
            }
        }
        let inputs = Inputs {
            now,
            settings: &settings,
            cap: settings.cap(scope.default_area()),
            include_constraints: opts.include_constraints,
            retrievals: &retrievals,
            answered: &answered,
            last_answered: &last_answered,
            near: near.as_deref(),
            held_keys: &held_keys,
        };
        let mut plan = curate::plan(memory.state(), &inputs);
        let before = plan.pruned.len() + plan.evicted.len() + plan.synthesized.len();
        plan.pruned.retain(|r| !pending.contains(&r.id));
        plan.evicted.retain(|r| !pending.contains(&r.id));
        plan.synthesized.retain(|s| !s.members.iter().any(|m| pending.contains(m)));
        let pending_in_review = before - (plan.pruned.len() + plan.evicted.len() + plan.synthesized.len());

        let author = wc.as_ref().map(|w| w.identity.author_field()).unwrap_or_default();
        let records = plan_records(&plan, &settings, &author, now);
        let mut report = CurateReport {
            scope: scope_name,
            at: now,
            dry_run: opts.dry_run,
            proposed: false,
            feedback,
            synthesis_note: (!plan.synthesized.is_empty()).then(|| SYNTHESIS_NOTE.to_string()),
            records: records.len(),
            pending_in_review,
            memory_commit: None,
            plan,
            lessons: Vec::new(),
        };
        if opts.dry_run {
            return Ok(report);
        }
        if records.is_empty() {
            // A run that found nothing to change is still the last curation the report shows.
            keep_last_curation(&project, &report);
            return Ok(report);
        }
        let message = curation_message(&report);
        let wc = wc.expect("made above unless a dry run");
        let outcome = memory.write_generated(records, message, &wc)?;
        report.proposed = outcome.proposed;
        report.memory_commit = outcome.commit;
        keep_last_curation(&project, &report);
        Ok(report)
    }
}

/// How often each fact of `scope` led an answer that stood, and when it last did.
fn answers(
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
fn curation_message(report: &CurateReport) -> String {
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
fn keep_last_curation(project: &crate::store::Store, report: &CurateReport) {
    let path = project.caches().last_curation();
    if let (Ok(bytes), Some(dir)) = (serde_json::to_vec_pretty(report), path.parent()) {
        let _ = std::fs::create_dir_all(dir);
        let _ = std::fs::write(&path, bytes);
    }
}

fn outcome_keys(state: &crate::state::State) -> BTreeSet<String> {
    state
        .iter()
        .filter_map(|e| match &e.record.payload {
            Payload::Outcome(o) => Some(o.key.clone()),
            _ => None,
        })
        .collect()
}

/// The records that carry out `plan`, all dated `now`.
fn plan_records(plan: &Plan, settings: &CurateSettings, author: &str, now: Timestamp) -> Vec<Record> {
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
