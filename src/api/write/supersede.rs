//! Supersession on write: deciding, when a fact is written, which current facts it replaces, and
//! writing it together with its supersession records.
//!
//! When a fact is added, the facts it supersedes are found in this order:
//! 1. every id given explicitly (`--supersedes`, `--updates`), which must be a current fact;
//! 2. every current fact with the same `key` and scope (structural and exact);
//! 3. only when neither found anything: the most similar current fact of the same type and scope,
//!    when its cosine similarity reaches the type's threshold (`git config neo.supersede.<type>`,
//!    default [`DEFAULT_THRESHOLD`]). The similarity comes from the caller (who owns the model);
//!    without a model this step is skipped and the outcome says why.
//!
//! Facts the new one `extends` or `derives` from are never candidates: a fact that builds on
//! another does not replace it. Every supersession is its own record, written in the same commit
//! as the new fact, so a reader never sees one without the other.

use crate::api::memory::short_message;
use crate::api::memory::Memory;
use crate::api::write::plan::{Planned, Valid};
use crate::api::write::AddOutcome;
use crate::api::write::AddRequest;
use crate::api::write::WriteContext;
use crate::error::{Error, Result};
use crate::record::{Kind, Milli, Payload, Problem, Problems, Record, RecordId, Supersession, SupersessionMethod};
use crate::state::Status;
use serde::Serialize;

/// How many of the nearest candidates similarity supersession compares exactly.
pub const SIMILARITY_SHORTLIST: usize = 8;

/// Candidates whose indexed vector scores more than this under the type's supersession threshold
/// are not compared on subject and body: the type, scope and tags they share with the new fact
/// in the indexed text only raise the indexed score. Measured with the real model on every
/// same-type pair of the recall fixture (303): the subject-and-body score was always at least
/// 0.052 below the indexed one, so a margin of 0.05 leaves room to spare
/// (`supersede::the_indexed_score_never_falls_far_below_the_subject_and_body_score`).
pub const SIMILARITY_MARGIN: f32 = 0.05;

/// The cosine similarity at which a fact of the same type and scope is superseded, by default.
pub const DEFAULT_THRESHOLD: f32 = 0.85;

pub use crate::api::write::updates::{PossibleUpdate, UPDATE_CANDIDATES};

/// The frame rule's decision for `fact` over the valid facts about the same thing that
/// `is_candidate` admits, newest first: the updates it applies (none when `frame_on` is false),
/// and the possible updates it returns to the writer (sure updates among them when off).
pub(crate) fn frame_step(
    state: &crate::state::State,
    fact: &crate::record::Fact,
    is_candidate: &dyn Fn(&RecordId) -> bool,
    frame_on: bool,
) -> (Vec<PossibleUpdate>, Vec<PossibleUpdate>) {
    let (mut sure, mut maybe) = (Vec::new(), Vec::new());
    if fact.fact_type.is_event() {
        return (sure, maybe);
    }
    for id in state.same_thing(fact).into_iter().rev() {
        let entry = &state.entries[&id];
        let old = entry.record.summary();
        if !is_candidate(&id) {
            // The same thing in another area: areas are kept apart (as keys and similarity keep
            // them), so it is never replaced automatically; the writer is told it exists.
            let other_area = entry.record.as_fact().filter(|f| f.scope != fact.scope).map(|f| f.scope.clone());
            if let (Some(area), (_, Some(mut u))) =
                (other_area, crate::api::write::updates::judge(id, &old, &fact.subject))
            {
                u.why = format!("the same thing in area {area:?} ({}); areas are kept apart", u.why);
                maybe.push(u);
            }
            continue;
        }
        match crate::api::write::updates::judge(id, &old, &fact.subject) {
            (crate::frame::Relation::Update, Some(u)) if frame_on => sure.push(u),
            (crate::frame::Relation::Update | crate::frame::Relation::MaybeUpdate, Some(u)) => maybe.push(u),
            _ => {}
        }
    }
    (sure, maybe)
}

/// Confidence a replacement gains over the fact it replaces (unless given one explicitly).
pub const CARRY_OVER_BONUS: Milli = Milli(50);

/// What the caller's similarity search answered.
pub enum Similarity {
    /// Cosine similarity of the new fact to (some of) the candidates, compared on subject and
    /// body (missing ones cannot reach the threshold); and the nearest candidates by the recall
    /// index, best first, with their indexed scores (upper bounds of their exact ones), at most
    /// [`UPDATE_CANDIDATES`]: the frame rule's candidates, and the report.
    Scores { exact: Vec<(RecordId, f32)>, ranked: Vec<(RecordId, f32)> },
    /// No similarity could be computed; the reason is shown to the user.
    Unavailable(String),
}

/// Which records the new fact may replace by similarity (current facts of its type and scope that
/// it does not build on). A test rather than a list: the index's nearest few are checked against
/// it, so a write does not pay for listing every fact of the memory.
pub type CandidateFn<'a> = dyn Fn(&RecordId) -> bool + 'a;

/// How far planning an add got: the whole plan, or up to the similarity step, which the
/// caller measures ([`Memory::finish_add`]).
#[allow(clippy::large_enum_variant)]
pub enum AddStep {
    Planned(AddPlan),
    NeedsSimilarity(PendingAdd),
}

/// An add planned up to the similarity step: the new fact, checked, and what the rest of the
/// plan needs.
pub struct PendingAdd {
    valid: Valid,
    fact: crate::record::Fact,
    reason: Option<String>,
    /// Carry the confidence of what it replaces over (the writer gave none).
    carry: bool,
}

impl PendingAdd {
    /// The new fact's record, which the similarity search compares.
    pub fn record(&self) -> &Record {
        self.valid.record()
    }

    /// The new fact.
    pub fn fact(&self) -> &crate::record::Fact {
        &self.fact
    }
}

/// One fact a new fact replaces.
#[derive(Clone, Debug, Serialize)]
pub struct PlannedSupersession {
    pub old: RecordId,
    /// The scope `old` lives in when it is another than the one written to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_scope: Option<String>,
    pub subject: String,
    pub method: SupersessionMethod,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    pub reason: String,
}

impl PlannedSupersession {
    /// `old` (its summary `subject`) replaced by `method`, for `reason`, in the scope written to.
    pub fn new(old: RecordId, subject: String, method: SupersessionMethod, reason: String) -> PlannedSupersession {
        PlannedSupersession { old, old_scope: None, subject, method, score: None, reason }
    }

    /// The same, with the score that decided it (similarity).
    pub fn scored(self, score: f64) -> PlannedSupersession {
        PlannedSupersession { score: Some(score), ..self }
    }

    /// The same, `old` living in `scope` (another than the one written to).
    pub fn in_scope(self, scope: String) -> PlannedSupersession {
        PlannedSupersession { old_scope: Some(scope), ..self }
    }
}

/// Whether similarity-based supersession ran, and what it found.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum SimilarityCheck {
    /// An explicit id, a key match or `--no-supersede` decided; similarity was not needed.
    NotNeeded,
    /// No current fact of the same type and scope to compare with.
    NoCandidates,
    /// Compared; `best` is the most similar candidate (superseded when `score >= threshold`).
    /// When no candidate came near enough to be compared exactly, `best` is the nearest by the
    /// recall index and `indexed_score` its indexed score (type, scope and tags included, so an
    /// upper bound of `score`).
    Checked {
        #[serde(skip_serializing_if = "Option::is_none")]
        best: Option<RecordId>,
        #[serde(skip_serializing_if = "Option::is_none")]
        score: Option<f64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        indexed_score: Option<f64>,
        threshold: f64,
    },
    /// Could not compare (no model): nothing was superseded by similarity.
    Skipped { why: String },
}

/// What adding a fact would do; [`Memory::apply_add`] does it.
#[derive(Clone, Debug)]
pub struct AddPlan {
    /// The new fact, checked.
    pub record: Valid,
    pub id: RecordId,
    /// An identical valid fact already stored (and whether it is a pending proposal).
    pub duplicate_of: Option<(RecordId, bool)>,
    pub supersedes: Vec<PlannedSupersession>,
    /// The records of the first `checked.len()` of `supersedes`, checked while planning;
    /// supersessions a caller adds after planning (across scopes) are checked when applied.
    pub checked: Vec<Valid>,
    pub similarity: SimilarityCheck,
    /// Current facts the new one may update, below the automatic rules (the writer decides).
    pub possible_updates: Vec<PossibleUpdate>,
    /// Every candidate the frame rule judged, superseded or not (for evaluation).
    pub judged: Vec<PossibleUpdate>,
}

fn rounded(score: f32) -> f64 {
    (f64::from(score) * 1000.0).round() / 1000.0
}

impl Memory {
    /// Decide what adding `req` would do, without writing: the record (with its confidence carried
    /// over from what it replaces), a duplicate if there is one, and the facts it supersedes, by
    /// explicit id, by key and by the frame rule. When the similarity step is reached with at
    /// least one candidate, the plan stops there ([`AddStep::NeedsSimilarity`]): the caller
    /// measures it (loading its model only then) and hands the result to [`Memory::finish_add`].
    pub fn plan_add(&self, req: &AddRequest, ctx: &WriteContext) -> Result<AddStep> {
        let mut problems = Vec::new();
        let valid = self.build_fact(req, ctx, &mut problems)?;
        let mut explicit = self.explicit_targets(req, &mut problems);
        let (Some(mut valid), true) = (valid, problems.is_empty()) else {
            return Err(Error::Invalid(Problems(problems)));
        };
        explicit.sort();
        explicit.dedup();

        let fact = valid.record().as_fact().expect("build_fact builds a fact").clone();
        let body = valid.record().body.clone();
        let duplicate =
            self.state.duplicate_of(&fact, &body).map(|id| (id, false)).or_else(|| {
                self.proposals.as_ref().and_then(|p| p.state.duplicate_of(&fact, &body)).map(|id| (id, true))
            });
        // Re-adding a stored fact with a key it lacks records the key: the fact is written again
        // with it, replacing the keyless copy (an ordinary, reviewable supersession), so the next
        // fact with that key replaces it.
        let attach_key = duplicate.filter(|d| {
            !d.1 && !req.no_supersede
                && fact.key.is_some()
                && self.state.entries[&d.0].record.as_fact().and_then(|f| f.key.as_ref()) != fact.key.as_ref()
        });
        let duplicate = duplicate.filter(|_| attach_key.is_none());
        if let Some(dup) = duplicate {
            return self.plan_duplicate(valid, dup, &explicit, req, ctx).map(AddStep::Planned);
        }

        let mut planned: Vec<PlannedSupersession> = Vec::new();
        let reason = req.reason.as_deref().map(str::trim).filter(|r| !r.is_empty());
        for id in &explicit {
            planned.push(PlannedSupersession::new(
                *id,
                self.state.entries[id].record.summary(),
                SupersessionMethod::Explicit,
                reason.unwrap_or("replaced explicitly").to_string(),
            ));
        }
        let mut similarity = SimilarityCheck::NotNeeded;
        let mut possible_updates = Vec::new();
        if let Some((old, _)) = attach_key {
            let e = &self.state.entries[&old];
            planned.push(PlannedSupersession::new(
                old,
                e.record.summary(),
                SupersessionMethod::Key,
                format!(
                    "the same fact added again with key `{}`: the key is recorded",
                    fact.key.as_deref().unwrap_or_default()
                ),
            ));
            if req.confidence.is_none() {
                valid = valid.with_confidence(Milli(e.confidence.0.clamp(0, 1000)));
            }
        }
        if !req.no_supersede {
            planned.extend(self.by_key(&fact, &explicit, attach_key.map(|a| a.0), reason));
            if planned.is_empty() {
                if self.state.entries.keys().any(|id| self.is_candidate(&fact, id)) {
                    let carry = req.confidence.is_none();
                    let reason = reason.map(str::to_string);
                    return Ok(AddStep::NeedsSimilarity(PendingAdd { valid, fact, reason, carry }));
                }
                similarity = SimilarityCheck::NoCandidates;
                possible_updates = self.frame_updates(&fact, reason, &mut planned)?;
            }
        }
        let carry = req.confidence.is_none() && attach_key.is_none();
        self.conclude(valid, planned, similarity, possible_updates, carry, ctx).map(AddStep::Planned)
    }

    /// The rest of an add's plan once the caller measured the similarity `pending` asked for: a
    /// supersession by similarity, else the frame rule's.
    pub fn finish_add(&self, pending: PendingAdd, similarity: Similarity, ctx: &WriteContext) -> Result<AddPlan> {
        let PendingAdd { valid, fact, reason, carry } = pending;
        let mut planned = Vec::new();
        let check = self.by_similarity(&fact, reason.as_deref(), similarity, &mut planned)?;
        let mut possible_updates = Vec::new();
        if planned.is_empty() {
            possible_updates = self.frame_updates(&fact, reason.as_deref(), &mut planned)?;
        }
        self.conclude(valid, planned, check, possible_updates, carry, ctx)
    }

    /// Whether the new `fact` may replace `id` by similarity or the frame rule: a current fact of
    /// its type and area that it neither links to nor depends on.
    pub fn is_candidate(&self, fact: &crate::record::Fact, id: &RecordId) -> bool {
        self.state.entries.get(id).is_some_and(|e| {
            e.status == Status::Valid
                && e.record.kind == Kind::Fact
                && e.record.as_fact().is_some_and(|f| f.fact_type == fact.fact_type && f.scope == fact.scope)
                && !fact.relations.iter().any(|r| r.id == *id)
                && !fact.depends_on.contains(id)
        })
    }

    /// Updates nobody labelled: the frame rule, on the current facts about the same thing
    /// (structural, no model: every way in decides the same). The sure ones join `planned`; the
    /// possible ones are returned for the writer.
    fn frame_updates(
        &self,
        fact: &crate::record::Fact,
        reason: Option<&str>,
        planned: &mut Vec<PlannedSupersession>,
    ) -> Result<Vec<PossibleUpdate>> {
        let is_candidate = |id: &RecordId| self.is_candidate(fact, id);
        let (sure, maybe) = frame_step(&self.state, fact, &is_candidate, self.store.frame_updates()?);
        planned.extend(sure.into_iter().map(|u| {
            let why = reason.map(str::to_string).unwrap_or_else(|| u.reason());
            PlannedSupersession::new(u.id, u.subject.clone(), SupersessionMethod::Frame, why)
        }));
        Ok(maybe)
    }

    /// The plan from what was decided: the replacement's confidence carried over from the best
    /// of what it replaces (`carry`: when the writer gave none), and the supersession records,
    /// checked.
    fn conclude(
        &self,
        mut valid: Valid,
        planned: Vec<PlannedSupersession>,
        similarity: SimilarityCheck,
        possible_updates: Vec<PossibleUpdate>,
        carry: bool,
        ctx: &WriteContext,
    ) -> Result<AddPlan> {
        // The replacement starts where the best of what it replaces stood, plus a little.
        if carry && !planned.is_empty() {
            let carried = planned.iter().map(|p| self.state.entries[&p.old].confidence.0).max().unwrap_or(0);
            valid = valid.with_confidence(Milli((carried + CARRY_OVER_BONUS.0).min(1000)));
        }
        let id = valid.id();
        let checked = self.checked_supersessions(&planned, id, ctx)?;
        let judged = possible_updates.clone();
        Ok(AddPlan {
            record: valid,
            id,
            duplicate_of: None,
            supersedes: planned,
            checked,
            similarity,
            possible_updates,
            judged,
        })
    }

    /// The plan when `req` is already stored (`dup`: its id, and whether it waits in review):
    /// nothing new is written but the supersessions it names, which confirm an update after the
    /// fact (a possible update the first write returned, or a conflict recall showed).
    fn plan_duplicate(
        &self,
        record: Valid,
        dup: (RecordId, bool),
        explicit: &[RecordId],
        req: &AddRequest,
        ctx: &WriteContext,
    ) -> Result<AddPlan> {
        let id = dup.0;
        // Already stored: naming what it replaces confirms an update after the fact (a
        // possible update the first write returned, or a conflict recall showed).
        let reason = req.reason.as_deref().map(str::trim).filter(|r| !r.is_empty());
        let confirmed: Vec<PlannedSupersession> = explicit
            .iter()
            .filter(|old| **old != id && !dup.1)
            .map(|old| {
                PlannedSupersession::new(
                    *old,
                    self.state.entries[old].record.summary(),
                    SupersessionMethod::Explicit,
                    reason.unwrap_or("replaced explicitly").to_string(),
                )
            })
            .collect();
        let checked = self.checked_supersessions(&confirmed, id, ctx)?;
        Ok(AddPlan {
            record,
            id,
            duplicate_of: Some(dup),
            supersedes: confirmed,
            checked,
            similarity: SimilarityCheck::NotNeeded,
            possible_updates: Vec::new(),
            judged: Vec::new(),
        })
    }

    /// The key step: the current facts of the same area holding `fact`'s key (those named
    /// explicitly, and the copy a key is attached to, aside).
    fn by_key(
        &self,
        fact: &crate::record::Fact,
        explicit: &[RecordId],
        attached: Option<RecordId>,
        reason: Option<&str>,
    ) -> Vec<PlannedSupersession> {
        let Some(key) = &fact.key else { return Vec::new() };
        self.state
            .iter()
            .filter(|e| e.status == Status::Valid && e.record.kind == Kind::Fact)
            .filter_map(|e| e.record.as_fact().map(|f| (e, f)))
            .filter(|(e, f)| {
                f.key.as_deref() == Some(key.as_str())
                    && f.scope == fact.scope
                    && !explicit.contains(&e.id)
                    && attached.is_none_or(|a| a != e.id)
            })
            .map(|(e, f)| {
                let why = reason.map(str::to_string).unwrap_or_else(|| format!("same key `{key}`"));
                PlannedSupersession::new(e.id, f.subject.clone(), SupersessionMethod::Key, why)
            })
            .collect()
    }

    /// The facts `req.supersedes` names, each a current fact of this memory (every other is a
    /// problem naming why).
    fn explicit_targets(&self, req: &AddRequest, problems: &mut Vec<Problem>) -> Vec<RecordId> {
        let mut explicit: Vec<RecordId> = Vec::new();
        for prefix in &req.supersedes {
            let Some(id) = self.resolve_into("supersedes", prefix, problems) else { continue };
            let e = &self.state.entries[&id];
            match (e.record.kind, e.status) {
                (Kind::Fact, Status::Valid) => explicit.push(id),
                (Kind::Fact, Status::Retracted) => problems.push(
                    Problem::new("supersedes", format!("{} is forgotten", id.short()))
                        .with_hint("`git neo revert` its retraction first, or add without it"),
                ),
                (Kind::Fact, status) => problems.push(Problem::new(
                    "supersedes",
                    format!(
                        "{} is already {}{}; supersede what replaced it instead",
                        id.short(),
                        status.as_str(),
                        e.superseded_by.first().map(|n| format!(" (by {})", n.short())).unwrap_or_default()
                    ),
                )),
                (kind, _) => problems.push(
                    Problem::new(
                        "supersedes",
                        format!(
                            "{} is a{} {kind}, not a fact",
                            id.short(),
                            if kind == Kind::Attempt || kind == Kind::Outcome { "n" } else { "" }
                        ),
                    )
                    .with_hint("use `git neo outdated` to correct it"),
                ),
            }
        }
        explicit
    }

    /// The similarity step on what the caller measured: the best candidate at or above the
    /// type's threshold is replaced when it is a rewording of the new fact (the same identity,
    /// names, values and negations); the check says what was found either way.
    fn by_similarity(
        &self,
        fact: &crate::record::Fact,
        reason: Option<&str>,
        similarity: Similarity,
        planned: &mut Vec<PlannedSupersession>,
    ) -> Result<SimilarityCheck> {
        let threshold = self.store.supersede_threshold(fact.fact_type, DEFAULT_THRESHOLD)?;
        Ok(match similarity {
            Similarity::Unavailable(why) => SimilarityCheck::Skipped { why },
            Similarity::Scores { exact: scores, ranked } => {
                // Similarity replaces only a rewording: the same identity (turn markers, ticket
                // or step numbers), names, values and negations, most words shared. A high
                // cosine alone is a neighbour as often.
                let new_frame = crate::frame::frame(&fact.subject);
                let same_identity = |id: &RecordId| {
                    let old = crate::frame::frame(&self.state.entries[id].record.summary());
                    crate::frame::rewording(&old, &new_frame)
                };
                let best = scores
                    .iter()
                    .filter(|(id, _)| self.is_candidate(fact, id))
                    .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
                    .copied();
                if let Some((id, score)) = best.filter(|(id, s)| *s >= threshold && same_identity(id)) {
                    let why = reason.map(str::to_string).unwrap_or_else(|| {
                        format!("similar {} in scope {} (cosine {:.3})", fact.fact_type, fact.scope, score)
                    });
                    planned.push(
                        PlannedSupersession::new(
                            id,
                            self.state.entries[&id].record.summary(),
                            SupersessionMethod::Similarity,
                            why,
                        )
                        .scored(rounded(score.min(1.0))),
                    );
                }
                let nearest = ranked.first().copied();
                let nearest = nearest.filter(|_| best.is_none());
                SimilarityCheck::Checked {
                    best: best.map(|b| b.0).or(nearest.map(|n| n.0)),
                    score: best.map(|b| rounded(b.1.min(1.0))),
                    indexed_score: nearest.map(|n| rounded(n.1.min(1.0))),
                    threshold: rounded(threshold),
                }
            }
        })
    }

    /// The supersession records `planned` would write, checked once (a `--reason` is the
    /// writer's text): the first that fails is the error.
    fn checked_supersessions(
        &self,
        planned: &[PlannedSupersession],
        new: RecordId,
        ctx: &WriteContext,
    ) -> Result<Vec<Valid>> {
        let mut checked = Vec::with_capacity(planned.len());
        for p in planned {
            let mut problems = Vec::new();
            match Valid::check(self.supersession_record(p, new, ctx), ctx.now, &mut problems)? {
                Some(valid) => checked.push(valid),
                None => return Err(Error::Invalid(Problems(problems))),
            }
        }
        Ok(checked)
    }

    /// The supersession records of `plan` naming `new`: those checked while planning as they
    /// are, the rest (added after planning) to be checked when applied.
    fn supersession_plan(&self, plan: &AddPlan, new: RecordId, ctx: &WriteContext) -> Vec<Planned> {
        let checked = plan.checked.iter().cloned().map(Planned::Valid);
        let rest = plan.supersedes[plan.checked.len().min(plan.supersedes.len())..]
            .iter()
            .map(|p| Planned::New(self.supersession_record(p, new, ctx)));
        checked.chain(rest).collect()
    }

    pub(in crate::api) fn supersession_record(
        &self,
        p: &PlannedSupersession,
        new: RecordId,
        ctx: &WriteContext,
    ) -> Record {
        Record {
            kind: Kind::Supersession,
            payload: Payload::Supersession(Supersession {
                old: p.old,
                old_scope: p.old_scope.clone(),
                new: Some(new),
                reason: p.reason.clone(),
                method: p.method,
                score: p.score.and_then(Milli::from_f64),
            }),
            author: ctx.identity.author_field(),
            created_at: ctx.now,
            body: String::new(),
        }
    }

    /// Write what [`Memory::plan_add`] decided: the fact and its supersessions, in one commit.
    pub fn apply_add(&mut self, plan: AddPlan, ctx: &WriteContext) -> Result<AddOutcome> {
        if let (Some((id, _)), false) = (plan.duplicate_of, plan.supersedes.is_empty()) {
            // The fact is stored already: only the supersessions that confirm it are written.
            let olds: Vec<String> = plan.supersedes.iter().map(|p| p.old.short()).collect();
            let message = format!("neo: {} supersedes {}", id.short(), olds.join(", "));
            let records = self.supersession_plan(&plan, id, ctx);
            let mut outcome = self.write_planned(records, message, ctx)?;
            outcome.id = id;
            outcome.path = Record::path(Kind::Fact, &id);
            outcome.deduplicated = true;
            outcome.superseded = plan.supersedes;
            return Ok(outcome);
        }
        if let Some((id, proposed)) = plan.duplicate_of {
            return Ok(AddOutcome {
                id,
                deduplicated: true,
                proposed,
                shared: None,
                commit: None,
                path: Record::path(Kind::Fact, &id),
                superseded: Vec::new(),
                similarity: None,
                possible_updates: Vec::new(),
                judged: Vec::new(),
                dry_run: ctx.dry_run,
                plan: None,
            });
        }
        if let Some(existing) = self.state.entries.get(&plan.id) {
            if existing.status != Status::Valid {
                return Err(Error::invalid(
                    "subject",
                    format!(
                        "this is byte for byte record {}, which was forgotten or replaced ({}); add it again a second later or change its text",
                        plan.id.short(),
                        existing.status.as_str()
                    ),
                ));
            }
        }
        let fact = plan.record.record().as_fact().expect("plans hold facts");
        let mut message = format!("neo: add {} {} \"{}\"", fact.fact_type, "{id}", short_message(&fact.subject));
        if !plan.supersedes.is_empty() {
            let olds: Vec<String> =
                plan.supersedes.iter().map(|p| format!("{} ({})", p.old.short(), p.method)).collect();
            message.push_str(&format!("\n\nSupersedes {}.\n", olds.join(", ")));
        }
        let mut records = vec![Planned::Valid(plan.record.clone())];
        records.extend(self.supersession_plan(&plan, plan.id, ctx));
        let mut outcome = self.write_planned(records, message, ctx)?;
        outcome.superseded = plan.supersedes;
        outcome.similarity = Some(plan.similarity);
        outcome.possible_updates = plan.possible_updates;
        outcome.judged = plan.judged;
        Ok(outcome)
    }
}

#[cfg(test)]
mod tests {
    use crate::api::memory::Memory;
    use crate::api::write::plan::CHECKS;
    use crate::api::write::AddRequest;
    use crate::api::write::WriteContext;
    use crate::record::Timestamp;
    use crate::store::{Identity, Store, StoreOptions};

    fn checks() -> usize {
        CHECKS.with(std::cell::Cell::get)
    }

    /// Each record an add writes is checked once: the fact before the model is asked anything,
    /// its supersession while planning, and neither again when the plan is applied.
    #[test]
    fn an_add_checks_each_record_it_writes_once() {
        let dir = crate::store::test_repo();
        let mut memory =
            Memory::load(Store::discover(dir.path(), StoreOptions::default()).expect("store")).expect("load");
        let ctx = WriteContext::new(
            Identity { name: "Ada".into(), email: "ada@example.com".into() },
            Timestamp(1_780_000_000),
        );
        let fact = |subject: &str| AddRequest {
            fact_type: "decision".into(),
            subject: subject.into(),
            key: Some("database/engine".into()),
            ..AddRequest::default()
        };

        let before = checks();
        let first = memory.add(&fact("The database is Postgres"), &ctx).expect("first");
        assert!(first.superseded.is_empty());
        assert_eq!(checks() - before, 1, "one record, checked once");

        let before = checks();
        let second = memory.add(&fact("The database is MySQL"), &ctx).expect("second");
        assert_eq!(second.superseded.len(), 1, "the key replaces the first");
        assert_eq!(checks() - before, 2, "the fact and its supersession, each checked once");

        // A request with a problem is refused by that one check, before anything is planned.
        let before = checks();
        let long = "x".repeat(crate::record::validate::MAX_BODY_BYTES + 1);
        let bad = AddRequest { body: long, ..fact("Too long a body") };
        assert!(matches!(memory.add(&bad, &ctx), Err(crate::error::Error::Invalid(_))));
        assert_eq!(checks() - before, 1);
    }
}
