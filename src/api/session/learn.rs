//! What a session learns from: curation of one scope and implicit feedback from recall
//! telemetry (their plans and records are `crate::api::learn`'s).

use crate::api::learn::curate::{
    answers, curation_message, keep_last_curation, outcome_keys, plan_records, CurateOptions, CurateReport,
    CuratedLesson, LESSONS_FILE, SYNTHESIS_NOTE,
};
use crate::api::learn::feedback::{self, FeedbackReport};
use crate::api::learn::feedback::{read_exchanges, Questions, Signal};
use crate::api::learn::telemetry::{self, Event};
use crate::api::session::Session;
use crate::config::CurateSettings;
use crate::curate::{self, Inputs};
use crate::error::Result;
use crate::record::{Kind, Payload, Record, RecordId};
use crate::scope::Scope;
use crate::state::Status;
use crate::store::WriteMode;
use std::collections::{BTreeSet, HashMap, HashSet};

impl Session {
    /// Curate the target scope (see the module docs), then, for the project, propose the
    /// lessons its failures and attempts show (`curate::lessons`).
    pub fn curate(&mut self, opts: CurateOptions) -> Result<CurateReport> {
        let mut report = self.curate_facts(opts)?;
        if self.target() == Scope::Project {
            report.lessons = self.curate_lessons(opts.dry_run)?;
        }
        Ok(report)
    }

    /// Propose each lesson `curate::lessons` finds, as its own record, to [`LESSONS_FILE`].
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
            let req = crate::api::learn::lessons::LessonRequest {
                file: LESSONS_FILE.to_string(),
                edit: crate::api::learn::lessons::LessonEdit::Append(c.text.clone()),
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
        // What a recall kept for after its answer is read too.
        self.flush_telemetry();
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
        let retrievals = crate::api::inspect::stats::retrievals(&events, Some(&scope_name));
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

impl Session {
    /// Read the telemetry for implicit feedback and write what is new (see the module docs).
    pub fn feedback(&mut self, dry_run: bool) -> Result<FeedbackReport> {
        // What a recall kept for after its answer is read too.
        self.flush_telemetry();
        let store = self.project_store()?;
        let settings = telemetry::Settings::from_config(&|k| store.config_value(k))?;
        let events = if settings.on { telemetry::read(&store.caches()) } else { Vec::new() };
        let questions = Questions::new(&events);
        self.feedback_from(&questions, &questions.stood(), dry_run, true)
    }

    /// [`Session::feedback`] on telemetry already read (`questions`, and the answers among them
    /// that [stood](Questions::stood)), with or without the per-run cap: a curation reads all the feedback there is in
    /// one commit, so its plan sees every signal (the daily cap per fact still holds).
    pub(in crate::api) fn feedback_from(
        &mut self,
        questions: &Questions<'_>,
        stood: &[usize],
        dry_run: bool,
        per_run_cap: bool,
    ) -> Result<FeedbackReport> {
        let store = self.project_store()?;
        let mut caps = store.outcome_caps()?;
        if !per_run_cap {
            caps.max_per_scan = usize::MAX;
        }
        let wc = if dry_run { None } else { Some(self.write_context(&store)?) };
        let memory = self.memory_of(&Scope::Project)?;
        let state = memory.state();
        let scored = |hex: &str| {
            let id = RecordId::from_hex(hex)?;
            let e = state.entries.get(&id)?;
            (e.record.kind == Kind::Fact && e.status == Status::Valid).then_some(id)
        };
        let (exchanges, found, spared) = read_exchanges(questions, stood, &scored);
        let existing: HashSet<&str> = state
            .iter()
            .filter_map(|e| match &e.record.payload {
                Payload::Outcome(o) => Some(o.key.as_str()),
                _ => None,
            })
            .collect();
        // Counted per record per UTC day, with what the memory already holds for that day.
        let mut per_day: HashMap<(RecordId, i64), u32> = HashMap::new();
        for e in state.iter() {
            if let Payload::Outcome(o) = &e.record.payload {
                if o.signal == Signal::Reasked.as_str() || o.signal == Signal::Helped.as_str() {
                    *per_day.entry((o.target, e.record.created_at.0.div_euclid(86_400))).or_default() += 1;
                }
            }
        }
        let mut report = FeedbackReport {
            exchanges,
            outcomes: Vec::new(),
            spared,
            dropped: 0,
            capped: false,
            dry_run,
            memory_commit: None,
        };
        let mut seen = HashSet::new();
        let mut new_count = 0;
        for mut f in found {
            f.new = !existing.contains(f.key.as_str()) && seen.insert(f.key.clone());
            if f.new {
                let n = per_day.entry((f.target, f.at.div_euclid(86_400))).or_default();
                if *n >= caps.max_per_record_per_day {
                    report.dropped += 1;
                    continue;
                }
                if new_count >= caps.max_per_scan {
                    report.dropped += 1;
                    report.capped = true;
                    continue;
                }
                *n += 1;
                new_count += 1;
            }
            report.outcomes.push(f);
        }
        if dry_run || new_count == 0 {
            return Ok(report);
        }
        let wc = wc.expect("made above unless a dry run");
        let by_id: HashMap<&str, &Event> = questions.events.iter().map(|e| (e.id.as_str(), e)).collect();
        let records: Vec<Record> = report
            .outcomes
            .iter()
            .filter(|f| f.new)
            .map(|f| memory.implicit_record(f, wc.identity.author_field(), &by_id))
            .collect();
        let n = records.len();
        let message = format!(
            "neo: implicit feedback from {exchanges} recall exchange{} ({n} outcome{})",
            if exchanges == 1 { "" } else { "s" },
            if n == 1 { "" } else { "s" }
        );
        report.memory_commit = memory.write_generated(records, message, &wc)?.commit;
        Ok(report)
    }
}
