//! The write path: fact requests built into validated records (every problem at once, each naming
//! its field), write modes (auto, review, off), init. Every write ends in the one `apply` of
//! `plan` (the filter, de-duplication, the compare-and-swap commit, the state update).
//!
//! Beneath it, every use case that writes records: supersession on write (`supersede`, with the
//! frame rule for unlabelled updates in `updates`), corrections (`correct`), batched and foreign
//! imports (`import`), documents as sources (`ingest`), the history rewrite (`purge`) and review
//! mode's proposals (`proposals`).

pub mod confirm;
pub(crate) mod correct;
pub(crate) mod import;
pub mod ingest;
pub mod plan;
pub(crate) mod proposals;
pub(crate) mod purge;
pub(crate) mod supersede;
/// The margin similarity supersession compares exactly within (measured; a test keeps it true).
pub use supersede::SIMILARITY_MARGIN;
pub mod updates;

use crate::api::memory::short_message;
use crate::api::memory::Memory;
use crate::api::write::supersede::{PlannedSupersession, SimilarityCheck};
use crate::error::{Error, Result};
use crate::record::{
    self, canonical, Anchor, Fact, FactType, Kind, LineRange, Milli, Payload, Problem, Problems, Provenance, Record,
    RecordId, Relation, RelationType, Retraction, Timestamp,
};
use crate::store::WriteMode;

/// The initial confidence for a provenance when none is given: what the code's structure shows is
/// surest, what someone observed is likely, what was inferred is a hypothesis.
pub fn default_confidence(p: Provenance) -> Milli {
    match p {
        Provenance::Structural => Milli(800),
        Provenance::Observed => Milli(700),
        Provenance::Inferred => Milli(500),
    }
}

/// Who is writing, when, and whether for real: the session fills it (the identity from its
/// options or git config, the time from its clock, `dry_run` from [`crate::api::Session::dry_run`]);
/// tests fix all three. The store takes only the identity and the time.
#[derive(Clone, Debug)]
pub struct WriteContext {
    pub identity: crate::store::Identity,
    pub now: crate::record::Timestamp,
    /// Decide and render every write, commit none (`--dry-run`).
    pub dry_run: bool,
}

impl WriteContext {
    /// `identity` writing at `now`, for real.
    pub fn new(identity: crate::store::Identity, now: crate::record::Timestamp) -> WriteContext {
        WriteContext { identity, now, dry_run: false }
    }
}

/// A request to add a fact. Strings are parsed and validated here so that every problem is
/// reported at once, each naming its field.
#[derive(Clone, Debug, Default)]
pub struct AddRequest {
    pub fact_type: String,
    pub subject: String,
    pub body: String,
    /// A free-form area label (the record's `scope` field); default: the memory's scope name.
    pub area: Option<String>,
    pub tags: Vec<String>,
    pub key: Option<String>,
    /// What the fact is about as `subject / predicate`; normalised into the key.
    pub slot: Option<String>,
    pub confidence: Option<f64>,
    pub provenance: Option<String>,
    /// Id prefixes of facts this one depends on.
    pub depends_on: Vec<String>,
    /// `PATH` or `PATH:START-END`, relative to the repository root.
    pub anchors: Vec<String>,
    pub valid_from: Option<String>,
    pub valid_to: Option<String>,
    /// Id prefixes of facts this one replaces explicitly (`--supersedes`, `--updates`).
    pub supersedes: Vec<String>,
    /// Id prefixes of facts this one extends (both stay valid, linked).
    pub extends: Vec<String>,
    /// Id prefixes of the sources this fact is inferred from.
    pub derives_from: Vec<String>,
    /// Do not supersede anything by key or similarity.
    pub no_supersede: bool,
    /// Why it supersedes what it supersedes (default: the method's own wording).
    pub reason: Option<String>,
    /// A code snippet the fact recommends (outcome detection looks for it in later commits).
    pub suggestion: Option<String>,
    /// When the fact was learned, for an import that keeps another tool's times (default: now).
    pub created_at: Option<Timestamp>,
    /// Sections of ingested documents the fact cites: `<source id>#<heading>` or `PATH#heading`.
    pub sources: Vec<String>,
}

/// What `add` did.
#[derive(Clone, Debug, serde::Serialize)]
pub struct AddOutcome {
    pub id: RecordId,
    /// True when an identical valid fact already existed and its id was returned; nothing was
    /// written, except the supersessions it was asked to confirm (`superseded`).
    pub deduplicated: bool,
    /// True when the record went to the review-mode proposals ref instead of the memory ref.
    pub proposed: bool,
    /// For a write to the org memory: how it was shared (`pushed to <url>`, or the proposal
    /// branch it waits in for review).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shared: Option<String>,
    /// The new commit on the memory ref, when something was written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    pub path: String,
    /// Facts this one superseded, written in the same commit.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub superseded: Vec<PlannedSupersession>,
    /// Whether similarity-based supersession ran, and if not, why (facts only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub similarity: Option<SimilarityCheck>,
    /// Current facts this one may update, below the automatic rules: confirm with `--supersedes`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub possible_updates: Vec<updates::PossibleUpdate>,
    /// Every candidate the frame rule judged (for evaluation; not part of the output).
    #[serde(skip)]
    pub judged: Vec<updates::PossibleUpdate>,
    /// True when this was a dry run and nothing was written.
    pub dry_run: bool,
    /// In a dry run, the plan that was not applied: its ref, expected tip, commits and records.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<plan::PlanView>,
}

impl AddOutcome {
    pub(super) fn written(id: RecordId, kind: Kind, commit: Option<String>) -> AddOutcome {
        AddOutcome {
            id,
            deduplicated: false,
            proposed: false,
            shared: None,
            commit,
            path: Record::path(kind, &id),
            superseded: Vec::new(),
            similarity: None,
            possible_updates: Vec::new(),
            judged: Vec::new(),
            dry_run: false,
            plan: None,
        }
    }
}

/// What `init` did.
#[derive(Clone, Debug, serde::Serialize)]
pub struct InitOutcome {
    pub ref_name: String,
    pub created: bool,
    pub tip: String,
}

/// Parse `PATH[:START-END]`.
fn parse_anchor_spec(spec: &str, field: &str, problems: &mut Vec<Problem>) -> Option<(String, Option<LineRange>)> {
    let (path, lines) = match Anchor::split_spec(spec) {
        Ok(split) => split,
        Err(why) => {
            problems.push(Problem::new(field, why));
            return None;
        }
    };
    let before = problems.len();
    record::validate::check_repo_path(problems, field, path);
    (problems.len() == before).then(|| (path.to_string(), lines))
}

impl Memory {
    fn anchor(&self, spec: &str, field: &str, problems: &mut Vec<Problem>) -> Result<Option<Anchor>> {
        let Some((path, lines)) = parse_anchor_spec(spec, field, problems) else { return Ok(None) };
        let head = self.store.head_commit()?;
        let mut blob = self.store.blob_at_head(&path)?;
        if blob.is_none() {
            if let Some(work) = self.store.work_dir() {
                if let Ok(bytes) = std::fs::read(work.join(&path)) {
                    blob = Some(self.store.hash_blob(&bytes)?);
                }
            }
        }
        if blob.is_none() {
            problems.push(Problem::new(
                field,
                format!("{path} does not exist at HEAD or in the work tree; anchor to a file that exists"),
            ));
            return Ok(None);
        }
        Ok(Some(Anchor { path, lines, blob: blob.map(|b| b.to_string()), commit: head.map(|h| h.to_string()) }))
    }

    /// A citation from `<source id>#<heading>` or `PATH#heading`: the current source of that id or
    /// path, and one of its section headings (as the document spells it).
    fn citation(&self, spec: &str, field: &str, problems: &mut Vec<Problem>) -> Option<crate::record::Citation> {
        let Some((what, heading)) = spec.trim().rsplit_once('#').filter(|(w, h)| !w.is_empty() && !h.trim().is_empty())
        else {
            problems.push(Problem::new(
                field,
                format!("{spec:?} is not SOURCE#HEADING; name a source id or a document's path, then # and a heading"),
            ));
            return None;
        };
        let looks_like_id = what.len() >= record::id::MIN_PREFIX_LEN && what.chars().all(|c| c.is_ascii_hexdigit());
        let id = if looks_like_id {
            self.resolve_into(field, what, problems)?
        } else {
            let path = what.trim_start_matches("./");
            let found = self.state.iter().find(|e| {
                e.status == crate::state::Status::Valid && e.record.as_source().is_some_and(|s| s.path == path)
            });
            match found {
                Some(e) => e.id,
                None => {
                    problems.push(
                        Problem::new(field, format!("no ingested document is at {path:?}"))
                            .with_hint(format!("run `git neo ingest {path}` first")),
                    );
                    return None;
                }
            }
        };
        let entry = &self.state.entries[&id];
        let Some(source) = entry.record.as_source() else {
            problems.push(Problem::new(
                field,
                format!("{} is a {}, not an ingested document", id.short(), entry.record.kind),
            ));
            return None;
        };
        if entry.status != crate::state::Status::Valid {
            problems.push(Problem::new(
                field,
                format!("{} is an old version of {}; cite the current one (by its path)", id.short(), source.path),
            ));
            return None;
        }
        match source.section(heading) {
            Some(s) => Some(crate::record::Citation { id, section: s.heading.clone() }),
            None => {
                let some: Vec<&str> = source.sections.iter().take(12).map(|s| s.heading.as_str()).collect();
                problems.push(Problem::new(
                    field,
                    format!("{} has no section {:?}; its sections: {}", source.path, heading.trim(), some.join(", ")),
                ));
                None
            }
        }
    }

    /// Build and validate the fact record for `req` without writing it.
    pub fn prepare_fact(&self, req: &AddRequest, ctx: &WriteContext) -> Result<Record> {
        self.prepare_valid(req, ctx).map(plan::Valid::into_record)
    }

    /// [`Memory::prepare_fact`], kept checked: a plan commits it without checking it again.
    pub(crate) fn prepare_valid(&self, req: &AddRequest, ctx: &WriteContext) -> Result<plan::Valid> {
        let mut problems = Vec::new();
        match self.build_fact(req, ctx, &mut problems)? {
            Some(valid) if problems.is_empty() => Ok(valid),
            _ => Err(Error::Invalid(Problems(problems))),
        }
    }

    /// The `extends` and `derives_from` links of `req`, each resolved to a fact of this memory.
    fn relations_of(&self, req: &AddRequest, problems: &mut Vec<Problem>) -> Vec<Relation> {
        let mut relations = Vec::new();
        for (field, rel, prefixes) in [
            ("extends", RelationType::Extends, &req.extends),
            ("derives_from", RelationType::Derives, &req.derives_from),
        ] {
            for p in prefixes {
                let Some(id) = self.resolve_into(field, p, problems) else { continue };
                if self.state.entries[&id].record.kind != Kind::Fact {
                    problems.push(Problem::new(field, format!("{} is not a fact; link facts to facts", id.short())));
                } else if !relations.iter().any(|r: &Relation| r.id == id) {
                    relations.push(Relation { rel, id });
                }
            }
        }
        relations
    }

    /// The fact record for `req`, checked once ([`plan::Valid::check`]), with every problem
    /// found added to `problems`: `None` when there was one (the request's words and links are
    /// read first, then the record built with placeholders is checked, so that every problem is
    /// said at once); errors are for failures to read the repository.
    pub(super) fn build_fact(
        &self,
        req: &AddRequest,
        ctx: &WriteContext,
        problems: &mut Vec<Problem>,
    ) -> Result<Option<plan::Valid>> {
        let at_entry = problems.len();
        let (fact_type, provenance, confidence) = words_of(req, problems);
        let mut time = |field: &str, v: &Option<String>| {
            v.as_ref().and_then(|s| {
                let t = Timestamp::parse(s.trim());
                if t.is_none() {
                    problems.push(Problem::new(
                        field,
                        format!("{s:?} is not a date; use YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ"),
                    ));
                }
                t
            })
        };
        let valid_from = time("valid_from", &req.valid_from);
        let valid_to = time("valid_to", &req.valid_to);
        let depends_on: Vec<RecordId> =
            req.depends_on.iter().filter_map(|p| self.resolve_into("depends_on", p, problems)).collect();
        let relations = self.relations_of(req, problems);
        let cites: Vec<crate::record::Citation> = req
            .sources
            .iter()
            .enumerate()
            .filter_map(|(i, s)| self.citation(s, &format!("sources[{i}]"), problems))
            .collect();
        let mut anchors = Vec::new();
        for (i, spec) in req.anchors.iter().enumerate() {
            if let Some(a) = self.anchor(spec, &format!("anchors[{i}].path"), problems)? {
                anchors.push(a);
            }
        }
        let key = key_of(req, problems);
        // Tags and the slot are lowercased and reshaped before they are stored, which would turn
        // a credential into something the filter no longer knows: they are filtered as given.
        for (i, t) in req.tags.iter().enumerate() {
            crate::redact::check_given(problems, &format!("tags[{i}]"), t);
        }
        if let Some(slot) = &req.slot {
            crate::redact::check_given(problems, "slot", slot);
        }
        let mut tags: Vec<String> = req.tags.iter().map(|t| t.trim().to_lowercase()).collect();
        tags.sort();
        tags.dedup();
        // Unparseable words get placeholders so the remaining rules still run: every problem at once.
        let (fact_type, provenance) =
            (fact_type.unwrap_or(FactType::Constraint), provenance.unwrap_or(Provenance::Observed));
        let record = Record {
            kind: Kind::Fact,
            payload: Payload::Fact(Fact {
                fact_type,
                subject: req.subject.trim().to_string(),
                scope: req.area.as_deref().map(str::trim).unwrap_or(self.scope.default_area()).to_string(),
                tags,
                key,
                provenance,
                confidence,
                valid_from,
                valid_to,
                depends_on,
                relations,
                anchors,
                suggestion: req.suggestion.clone().filter(|s| !s.trim().is_empty()),
                cites,
            }),
            author: ctx.identity.author_field(),
            created_at: req.created_at.unwrap_or(ctx.now),
            body: canonical::normalize_body(&req.body),
        };
        let clean = problems.len() == at_entry;
        let valid = plan::Valid::check(record, ctx.now, problems)?;
        Ok(valid.filter(|_| clean))
    }

    /// Add a fact. An identical valid fact (same type, scope, subject and body, normalised) is not
    /// written again: its id is returned with `deduplicated: true`. Supersession runs by explicit
    /// id, by key and the frame rule; similarity needs a model, which the session measures with
    /// (the tests' add without a model).
    #[cfg(test)]
    pub fn add(&mut self, req: &AddRequest, ctx: &WriteContext) -> Result<AddOutcome> {
        use crate::api::write::supersede::{AddStep, Similarity};
        let plan = match self.plan_add(req, ctx)? {
            AddStep::Planned(plan) => plan,
            AddStep::NeedsSimilarity(pending) => {
                let none = Similarity::Unavailable("no embedding model was given".into());
                self.finish_add(pending, none, ctx)?
            }
        };
        self.apply_add(plan, ctx)
    }

    /// Forget a record: append a retraction. The record stays in history.
    pub fn forget(&mut self, prefix: &str, reason: &str, ctx: &WriteContext) -> Result<AddOutcome> {
        let target = self.resolve("id", prefix)?;
        let entry = &self.state.entries[&target];
        if let Some(by) = entry.retracted_by {
            return Err(Error::invalid(
                "id",
                format!("{} is already forgotten (by retraction {})", target.short(), by.short()),
            ));
        }
        let summary = entry.record.summary();
        let message = format!("neo: forget {} \"{}\" ({{id}})", target.short(), short_message(&summary));
        let payload = Payload::Retraction(Retraction { target, reason: reason.trim().to_string() });
        self.write_checked(Kind::Retraction, payload, message, ctx)
    }

    /// Build a body-less record of `kind` written by `ctx` and write it (apply's filter checks it).
    pub(crate) fn write_checked(
        &mut self,
        kind: Kind,
        payload: Payload,
        message: String,
        ctx: &WriteContext,
    ) -> Result<AddOutcome> {
        let record =
            Record { kind, payload, author: ctx.identity.author_field(), created_at: ctx.now, body: String::new() };
        self.write(record, message, ctx)
    }

    /// Write one prepared record through the write mode (auto, review, off). `{id}` in `message`
    /// becomes the short id.
    pub(crate) fn write(&mut self, record: Record, message: String, ctx: &WriteContext) -> Result<AddOutcome> {
        self.write_all(vec![record], message, ctx)
    }

    /// Write several records in one commit (a fact and the supersessions it brings) through
    /// [`Memory::apply`]; the outcome names the first. `{id}` in `message` becomes the first
    /// record's short id.
    pub(crate) fn write_all(
        &mut self,
        records: Vec<Record>,
        message: String,
        ctx: &WriteContext,
    ) -> Result<AddOutcome> {
        self.write_planned(records.into_iter().map(plan::Planned::New).collect(), message, ctx)
    }

    /// [`Memory::write_all`] of records git-neo made itself: one that does not validate is
    /// reported as a bug ([`plan::Origin::Generated`]).
    pub(crate) fn write_generated(
        &mut self,
        records: Vec<Record>,
        message: String,
        ctx: &WriteContext,
    ) -> Result<AddOutcome> {
        let records = records.into_iter().map(plan::Planned::New).collect();
        self.write_plan(records, plan::Origin::Generated, message, ctx)
    }

    /// [`Memory::write_all`] of planned records (some checked already).
    pub(crate) fn write_planned(
        &mut self,
        records: Vec<plan::Planned>,
        message: String,
        ctx: &WriteContext,
    ) -> Result<AddOutcome> {
        self.write_plan(records, plan::Origin::Given, message, ctx)
    }

    fn write_plan(
        &mut self,
        records: Vec<plan::Planned>,
        origin: plan::Origin,
        message: String,
        ctx: &WriteContext,
    ) -> Result<AddOutcome> {
        let plan = plan::WritePlan {
            expected_tip: self.own_tip(),
            origin,
            ..plan::WritePlan::of(plan::Destination::ByMode, message, records)
        };
        let applied = self.apply(plan, ctx)?;
        let Some(&(id, kind)) = applied.ids.first() else {
            return Err(Error::Internal("a write with no records".into()));
        };
        let mut outcome = AddOutcome::written(id, kind, applied.commit());
        outcome.proposed = applied.proposed;
        outcome.dry_run = applied.dry_run.is_some();
        outcome.plan = applied.dry_run;
        Ok(outcome)
    }

    /// Where writes go under the repository's `neo.mode`: here, the proposals, or nowhere.
    pub(super) fn target(&mut self) -> Result<&mut Memory> {
        match self.store.write_mode() {
            WriteMode::Auto => Ok(self),
            WriteMode::Off => Err(Error::Config {
                key: crate::store::MODE_CONFIG_KEY.into(),
                message: "is off: this repository takes no memory writes; `git config neo.mode auto` turns them on"
                    .into(),
            }),
            WriteMode::Review => Ok(self.ensure_proposals()?),
        }
    }

    pub(super) fn ensure_proposals(&mut self) -> Result<&mut Memory> {
        if self.proposals.is_none() {
            self.proposals = Some(Box::new(Memory::load(self.store.proposals()?)?));
        }
        Ok(self.proposals.as_deref_mut().expect("just loaded"))
    }

    /// Create the memory ref with only `FORMAT`, if it does not exist yet.
    pub fn init(&mut self, ctx: &WriteContext) -> Result<InitOutcome> {
        let ref_name = self.store.ref_name().to_string();
        if let Some(tip) = self.store.local_tip()? {
            return Ok(InitOutcome { ref_name, created: false, tip: tip.to_string() });
        }
        let plan = plan::WritePlan {
            create: true,
            ..plan::WritePlan::one(plan::Destination::Own, "neo: initialise memory".into(), Vec::new())
        };
        let applied = self.apply(plan, ctx)?;
        let tip = match applied.commits.last().copied() {
            Some(c) => c,
            None => self
                .store
                .local_tip()?
                .ok_or_else(|| Error::Integrity(format!("{ref_name} vanished after it was created")))?,
        };
        Ok(InitOutcome { ref_name, created: !applied.commits.is_empty(), tip: tip.to_string() })
    }
}

/// The type, provenance and confidence `req` names, each problem reported (the confidence
/// defaults to the provenance's).
fn words_of(req: &AddRequest, problems: &mut Vec<Problem>) -> (Option<FactType>, Option<Provenance>, Milli) {
    let fact_type = FactType::from_word(req.fact_type.trim());
    if fact_type.is_none() {
        problems.push(Problem::new(
            "type",
            format!("{:?} is not a fact type; use one of: {}", req.fact_type, FactType::expected()),
        ));
    }
    let provenance = match &req.provenance {
        None => Some(Provenance::Observed),
        Some(p) => {
            let v = Provenance::from_word(p.trim());
            if v.is_none() {
                problems.push(Problem::new(
                    "provenance",
                    format!("{p:?} is not a provenance; use one of: {}", Provenance::expected()),
                ));
            }
            v
        }
    };
    let confidence = match req.confidence {
        None => provenance.map(default_confidence).unwrap_or_default(),
        Some(c) if (0.0..=1.0).contains(&c) => Milli::from_f64(c).unwrap_or_default(),
        Some(c) => {
            problems.push(Problem::new("confidence", format!("{c} is outside 0.0 to 1.0; give a number such as 0.7")));
            Milli(0)
        }
    };
    (fact_type, provenance, confidence)
}

/// The key `req` gives, directly or as a slot (`subject / predicate`); the two must agree.
fn key_of(req: &AddRequest, problems: &mut Vec<Problem>) -> Option<String> {
    let key = req.key.as_deref().map(|k| k.trim().to_string());
    match req.slot.as_deref().map(crate::frame::slot_key) {
        None => key,
        Some(Err(message)) => {
            problems.push(Problem::new("slot", message));
            key
        }
        Some(Ok(slot)) => match key {
            Some(k) if k != slot => {
                problems.push(Problem::new(
                    "slot",
                    format!("names the key {slot:?} but the key given is {k:?}; give one of them"),
                ));
                Some(k)
            }
            _ => Some(slot),
        },
    }
}
