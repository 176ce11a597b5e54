//! Use cases: what `git neo` and the MCP server do, with no I/O of their own beyond the store.
//!
//! Every function here takes its inputs as data (including who writes and what time it is, so
//! tests fix the clock and author), validates everything before writing anything, and reports
//! every problem at once. Nothing here prints or reads the environment.

use crate::error::{Error, Result};
use crate::record::{
    self, canonical, Anchor, Fact, FactType, Kind, LineRange, Milli, Payload, Problem, Problems, Provenance, Record,
    RecordId, Relation, RelationType, Retraction, Timestamp,
};
use crate::state::{self, Entry, State, Status};
use crate::store::{CommitInfo, Identity, Store, StrayEntry, WriteMode};
use gix::ObjectId;
use std::collections::HashMap;

mod supersede;
pub use supersede::{
    no_similarity, AddPlan, History, HistoryEvent, PlannedSupersession, Similarity, SimilarityCheck, SimilarityFn,
    CARRY_OVER_BONUS, DEFAULT_THRESHOLD,
};

/// Who is writing, and when. The CLI fills this from git config and the clock; tests fix both.
#[derive(Clone, Debug)]
pub struct WriteContext {
    pub identity: Identity,
    pub now: Timestamp,
}

/// How many of the nearest candidates similarity supersession compares exactly.
pub const SIMILARITY_SHORTLIST: usize = 8;

/// The scope used when none is given.
pub const DEFAULT_SCOPE: &str = "project";

/// The initial confidence for a provenance when none is given: what the code's structure shows is
/// surest, what someone observed is likely, what was inferred is a hypothesis.
pub fn default_confidence(p: Provenance) -> Milli {
    match p {
        Provenance::Structural => Milli(800),
        Provenance::Observed => Milli(700),
        Provenance::Inferred => Milli(500),
    }
}

/// The memory of one repository: the store, and the folded state of what it holds.
pub struct Memory {
    store: Store,
    state: State,
    blobs: HashMap<RecordId, ObjectId>,
    invalid: Vec<StrayEntry>,
    tips: Vec<(String, ObjectId)>,
    /// Review-mode proposals (`refs/neo/proposed/...`), loaded when the mode or a command needs them.
    proposals: Option<Box<Memory>>,
}

/// A request to add a fact. Strings are parsed and validated here so that every problem is
/// reported at once, each naming its field.
#[derive(Clone, Debug, Default)]
pub struct AddRequest {
    pub fact_type: String,
    pub subject: String,
    pub body: String,
    pub scope: Option<String>,
    pub tags: Vec<String>,
    pub key: Option<String>,
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
}

/// What `add` did.
#[derive(Clone, Debug, serde::Serialize)]
pub struct AddOutcome {
    pub id: RecordId,
    /// True when an identical valid fact already existed and its id was returned; nothing was written.
    pub deduplicated: bool,
    /// True when the record went to the review-mode proposals ref instead of the memory ref.
    pub proposed: bool,
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
    /// True when this was a dry run and nothing was written.
    pub dry_run: bool,
}

impl AddOutcome {
    fn written(id: RecordId, kind: Kind, commit: Option<String>) -> AddOutcome {
        AddOutcome {
            id,
            deduplicated: false,
            proposed: false,
            commit,
            path: Record::path(kind, &id),
            superseded: Vec::new(),
            similarity: None,
            dry_run: false,
        }
    }
}

/// A record's file and its derived state, for `show`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Shown {
    pub path: String,
    pub text: String,
    #[serde(flatten)]
    pub entry: Entry,
}

/// Filters for `list`.
#[derive(Clone, Debug, Default)]
pub struct ListFilter {
    pub kind: Option<String>,
    pub fact_type: Option<String>,
    pub scope: Option<String>,
    pub tag: Option<String>,
    /// Include retracted, superseded and outdated records.
    pub all: bool,
    /// Only valid records flagged as needing review.
    pub needs_review: bool,
}

/// What `init` did.
#[derive(Clone, Debug, serde::Serialize)]
pub struct InitOutcome {
    pub ref_name: String,
    pub created: bool,
    pub tip: String,
}

fn short_message(s: &str) -> String {
    let one_line: String = s.chars().take(60).collect();
    if one_line.chars().count() < s.chars().count() {
        format!("{one_line}…")
    } else {
        one_line
    }
}

/// Parse `PATH[:START-END]`.
fn parse_anchor_spec(spec: &str, field: &str, problems: &mut Vec<Problem>) -> Option<(String, Option<LineRange>)> {
    let (path, lines) = match spec.rsplit_once(':') {
        Some((p, range)) if !range.is_empty() && range.chars().all(|c| c.is_ascii_digit() || c == '-') => {
            let (a, b) = range.split_once('-').unwrap_or((range, range));
            match (a.parse::<u32>(), b.parse::<u32>()) {
                (Ok(start), Ok(end)) if start >= 1 && end >= start => (p, Some(LineRange { start, end })),
                _ => {
                    problems.push(Problem::new(
                        field,
                        format!("{range:?} is not a line range; use PATH:START-END with 1 <= START <= END"),
                    ));
                    return None;
                }
            }
        }
        _ => (spec, None),
    };
    let before = problems.len();
    record::validate::check_repo_path(problems, field, path);
    (problems.len() == before).then(|| (path.to_string(), lines))
}

impl Memory {
    /// Read every record visible from the store and fold it.
    pub fn load(store: Store) -> Result<Memory> {
        let snapshot = store.load()?;
        let blobs = snapshot.records.iter().map(|r| (r.id, r.blob)).collect();
        let state = state::fold(snapshot.records.into_iter().map(|r| (r.id, r.record)));
        let mut memory =
            Memory { store, state, blobs, invalid: snapshot.invalid, tips: snapshot.tips, proposals: None };
        if memory.store.write_mode() == WriteMode::Review {
            memory.ensure_proposals()?;
        }
        Ok(memory)
    }

    /// The folded state.
    pub fn state(&self) -> &State {
        &self.state
    }

    /// The store underneath.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Entries on the ref that are not readable records (the CLI warns about them once).
    pub fn invalid(&self) -> &[StrayEntry] {
        &self.invalid
    }

    /// The tips that were read.
    pub fn tips(&self) -> &[(String, ObjectId)] {
        &self.tips
    }

    /// Resolve a unique id prefix, like git does for object names.
    pub fn resolve(&self, field: &str, prefix: &str) -> Result<RecordId> {
        let prefix = prefix.trim();
        if prefix.len() < record::id::MIN_PREFIX_LEN || !prefix.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(Error::invalid(
                field,
                format!(
                    "{prefix:?} is not an id prefix; give at least {} hex digits of a record id",
                    record::id::MIN_PREFIX_LEN
                ),
            ));
        }
        let matches = self.state.ids_with_prefix(prefix);
        match matches.as_slice() {
            [one] => Ok(*one),
            [] => Err(Error::NotFound { field: field.into(), prefix: prefix.into() }),
            many => Err(Error::Ambiguous {
                field: field.into(),
                prefix: prefix.into(),
                candidates: many
                    .iter()
                    .map(|id| {
                        let e = &self.state.entries[id];
                        format!("  {} {} {}", id.short(), e.record.kind, e.record.summary())
                    })
                    .collect(),
            }),
        }
    }

    fn resolve_into(&self, field: &str, prefix: &str, problems: &mut Vec<Problem>) -> Option<RecordId> {
        match self.resolve(field, prefix) {
            Ok(id) => Some(id),
            Err(e) => {
                let msg = e.to_string();
                let msg = msg.strip_prefix(&format!("{field}: ")).unwrap_or(&msg).to_string();
                problems.push(Problem::new(field, msg));
                None
            }
        }
    }

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

    /// Build and validate the fact record for `req` without writing it.
    pub fn prepare_fact(&self, req: &AddRequest, ctx: &WriteContext) -> Result<Record> {
        let mut problems = Vec::new();
        let record = self.build_fact(req, ctx, &mut problems)?;
        if problems.is_empty() {
            Ok(record)
        } else {
            Err(Error::Invalid(Problems(problems)))
        }
    }

    /// The fact record for `req`, with every problem found added to `problems` (the record is
    /// only meaningful when none were); errors are for failures to read the repository.
    fn build_fact(&self, req: &AddRequest, ctx: &WriteContext, problems: &mut Vec<Problem>) -> Result<Record> {
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
                problems
                    .push(Problem::new("confidence", format!("{c} is outside 0.0 to 1.0; give a number such as 0.7")));
                Milli(0)
            }
        };
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
        let mut anchors = Vec::new();
        for (i, spec) in req.anchors.iter().enumerate() {
            if let Some(a) = self.anchor(spec, &format!("anchors[{i}].path"), problems)? {
                anchors.push(a);
            }
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
                scope: req.scope.as_deref().map(str::trim).unwrap_or(DEFAULT_SCOPE).to_string(),
                tags,
                key: req.key.as_deref().map(|k| k.trim().to_string()),
                provenance,
                confidence,
                valid_from,
                valid_to,
                depends_on,
                relations,
                anchors,
                suggestion: req.suggestion.clone().filter(|s| !s.trim().is_empty()),
            }),
            author: ctx.identity.author_field(),
            created_at: ctx.now,
            body: canonical::normalize_body(&req.body),
        };
        problems.extend(record::validate::validate(&record));
        problems.extend(crate::redact::check(&record));
        Ok(record)
    }

    /// Add a fact. An identical valid fact (same type, scope, subject and body, normalised) is not
    /// written again: its id is returned with `deduplicated: true`. Supersession runs by explicit
    /// id and by key; similarity needs a model, so [`Memory::plan_add`] with a similarity function
    /// is the full path.
    pub fn add(&mut self, req: &AddRequest, ctx: &WriteContext) -> Result<AddOutcome> {
        let plan = self.plan_add(req, ctx, &mut no_similarity("no embedding model was given"))?;
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

    /// Build a body-less record of `kind` written by `ctx`, validate it and pass it through the
    /// write-time filter (every problem at once), then write it.
    pub(crate) fn write_checked(
        &mut self,
        kind: Kind,
        payload: Payload,
        message: String,
        ctx: &WriteContext,
    ) -> Result<AddOutcome> {
        let record =
            Record { kind, payload, author: ctx.identity.author_field(), created_at: ctx.now, body: String::new() };
        let mut problems = record::validate::validate(&record);
        problems.extend(crate::redact::check(&record));
        if !problems.is_empty() {
            return Err(Error::Invalid(Problems(problems)));
        }
        self.write(record, message, ctx)
    }

    /// Write one prepared record through the write mode (auto, review, off). `{id}` in `message`
    /// becomes the short id.
    pub(crate) fn write(&mut self, record: Record, message: String, ctx: &WriteContext) -> Result<AddOutcome> {
        self.write_all(vec![record], message, ctx)
    }

    /// Write several records in one commit (a fact and the supersessions it brings); the outcome
    /// names the first. `{id}` in `message` becomes the first record's short id.
    pub(crate) fn write_all(
        &mut self,
        records: Vec<Record>,
        message: String,
        ctx: &WriteContext,
    ) -> Result<AddOutcome> {
        let review = self.store.write_mode() == WriteMode::Review;
        let mut outcome = self.target()?.write_here(records, message, ctx)?;
        outcome.proposed = review;
        Ok(outcome)
    }

    /// Where writes go under the repository's `neo.mode`: here, the proposals, or nowhere.
    fn target(&mut self) -> Result<&mut Memory> {
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

    fn ensure_proposals(&mut self) -> Result<&mut Memory> {
        if self.proposals.is_none() {
            self.proposals = Some(Box::new(Memory::load(self.store.proposals()?)?));
        }
        Ok(self.proposals.as_deref_mut().expect("just loaded"))
    }

    fn write_here(&mut self, records: Vec<Record>, message: String, ctx: &WriteContext) -> Result<AddOutcome> {
        let mut encoded = Vec::with_capacity(records.len());
        for record in &records {
            let (id, bytes) = record.encode();
            // The writer must never emit bytes its own reader rejects.
            if let Err(problems) = record::parse::parse(&bytes) {
                return Err(Error::Integrity(format!(
                    "internal: the canonical form of a new record does not parse: {problems}"
                )));
            }
            encoded.push((record.kind, id, bytes));
        }
        let (first_kind, id) = match encoded.first() {
            Some((kind, id, _)) => (*kind, *id),
            None => return Err(Error::Integrity("internal: a write with no records".into())),
        };
        let message = message.replace("{id}", &id.short());
        let outcome = self.store.write_records(&encoded, &message, &ctx.identity, ctx.now, false)?;
        for (_, rid, bytes) in &encoded {
            self.blobs.insert(*rid, self.store.hash_blob(bytes)?);
        }
        if let Some(commit) = outcome.commit {
            self.tips.retain(|(name, _)| name != self.store.ref_name());
            self.tips.insert(0, (self.store.ref_name().to_string(), commit));
        }
        let added = encoded.iter().map(|(_, rid, _)| *rid).zip(records).collect();
        self.state = std::mem::take(&mut self.state).with_records(added);
        Ok(AddOutcome::written(id, first_kind, outcome.commit.map(|c| c.to_string())))
    }

    /// Create the memory ref with only `FORMAT`, if it does not exist yet.
    pub fn init(&mut self, ctx: &WriteContext) -> Result<InitOutcome> {
        let ref_name = self.store.ref_name().to_string();
        if let Some(tip) = self.store.local_tip()? {
            return Ok(InitOutcome { ref_name, created: false, tip: tip.to_string() });
        }
        let outcome = self.store.write_records(&[], "neo: initialise memory", &ctx.identity, ctx.now, true)?;
        let tip = match outcome.commit {
            Some(c) => c,
            None => self
                .store
                .local_tip()?
                .ok_or_else(|| Error::Integrity(format!("{ref_name} vanished after it was created")))?,
        };
        Ok(InitOutcome { ref_name, created: outcome.commit.is_some(), tip: tip.to_string() })
    }

    /// A record's file text and derived state.
    pub fn show(&self, prefix: &str) -> Result<Shown> {
        let id = self.resolve("id", prefix)?;
        let entry = self.state.entries[&id].clone();
        let blob = self
            .blobs
            .get(&id)
            .copied()
            .ok_or_else(|| Error::Integrity(format!("record {} has no blob", id.short())))?;
        let bytes = self.store.read_blob(blob)?;
        let text =
            String::from_utf8(bytes).map_err(|_| Error::Integrity(format!("record {} is not UTF-8", id.short())))?;
        Ok(Shown { path: Record::path(entry.record.kind, &id), text, entry })
    }

    /// Entries matching `filter`, in fold order (oldest first).
    pub fn list(&self, filter: &ListFilter) -> Result<Vec<&Entry>> {
        let mut problems = Vec::new();
        let kind = filter.kind.as_deref().and_then(|k| {
            let v = Kind::from_word(k.trim());
            if v.is_none() {
                problems.push(Problem::new("kind", format!("{k:?} is not a kind; use one of: {}", Kind::expected())));
            }
            v
        });
        let fact_type = filter.fact_type.as_deref().and_then(|t| {
            let v = FactType::from_word(t.trim());
            if v.is_none() {
                problems.push(Problem::new(
                    "type",
                    format!("{t:?} is not a fact type; use one of: {}", FactType::expected()),
                ));
            }
            v
        });
        if !problems.is_empty() {
            return Err(Error::Invalid(Problems(problems)));
        }
        let tag = filter.tag.as_deref().map(|t| t.trim().to_lowercase());
        Ok(self
            .state
            .iter()
            .filter(|e| filter.all || e.status == Status::Valid)
            .filter(|e| !filter.needs_review || (e.status == Status::Valid && !e.needs_review.is_empty()))
            .filter(|e| match kind {
                Some(k) => e.record.kind == k,
                // By default: what the memory knows (facts, attempts); --all or --kind for the rest.
                None => filter.all || matches!(e.record.kind, Kind::Fact | Kind::Attempt),
            })
            .filter(|e| fact_type.is_none_or(|t| e.record.as_fact().is_some_and(|f| f.fact_type == t)))
            .filter(|e| {
                filter.scope.as_deref().is_none_or(|s| match &e.record.payload {
                    Payload::Fact(f) => f.scope == s.trim(),
                    Payload::Attempt(a) => a.scope == s.trim(),
                    _ => false,
                })
            })
            .filter(|e| {
                tag.as_deref().is_none_or(|t| match &e.record.payload {
                    Payload::Fact(f) => f.tags.iter().any(|x| x == t),
                    Payload::Attempt(a) => a.tags.iter().any(|x| x == t),
                    _ => false,
                })
            })
            .collect())
    }

    /// The memory ref's history, newest first, at most `limit` commits.
    pub fn log(&self, limit: usize) -> Result<Vec<CommitInfo>> {
        match self.store.local_tip()?.or_else(|| self.tips.first().map(|(_, c)| *c)) {
            Some(tip) => self.store.history(tip, limit),
            None => Ok(Vec::new()),
        }
    }
}

/// What `import` did.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct ImportOutcome {
    /// Records written.
    pub added: usize,
    /// Requests whose content was already stored (or repeated earlier in the same import).
    pub duplicates: usize,
    /// Commits made on the memory ref.
    pub commits: usize,
    /// The id of every request, in input order (existing ids for duplicates).
    pub ids: Vec<RecordId>,
}

impl Memory {
    /// Add many facts: validate all of them first (every problem, prefixed with its request's
    /// number), then write them `batch_size` records per commit. `progress(done, total)` is called
    /// after each commit. If the process dies midway, the ref holds the batches that landed.
    pub fn import(
        &mut self,
        requests: &[AddRequest],
        batch_size: usize,
        ctx: &WriteContext,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<ImportOutcome> {
        let mut problems = Vec::new();
        let mut prepared = Vec::with_capacity(requests.len());
        for (i, req) in requests.iter().enumerate() {
            match self.prepare_fact(req, ctx) {
                Ok(r) => prepared.push(r),
                Err(Error::Invalid(p)) => problems
                    .extend(p.0.into_iter().map(|p| Problem::new(format!("record {}: {}", i + 1, p.field), p.message))),
                Err(e) => return Err(e),
            }
        }
        if !problems.is_empty() {
            return Err(Error::Invalid(Problems(problems)));
        }
        let mut outcome = ImportOutcome::default();
        let mut fresh: Vec<(RecordId, Record)> = Vec::new();
        let mut seen: HashMap<String, RecordId> = HashMap::new();
        for record in prepared {
            let fact = record.as_fact().expect("prepare_fact builds facts");
            let key = state::dedup_key(fact, &record.body);
            if let Some(existing) = self.state.duplicate_of(fact, &record.body).or_else(|| seen.get(&key).copied()) {
                outcome.duplicates += 1;
                outcome.ids.push(existing);
                continue;
            }
            let (id, _) = record.encode();
            seen.insert(key, id);
            outcome.ids.push(id);
            fresh.push((id, record));
        }
        let total = fresh.len();
        let mut done = 0;
        for chunk in fresh.chunks(batch_size.max(1)) {
            let encoded: Vec<(Kind, RecordId, Vec<u8>)> =
                chunk.iter().map(|(id, r)| (r.kind, *id, r.encode().1)).collect();
            let message = match chunk {
                [(id, r)] => format!(
                    "neo: add {} {} \"{}\"",
                    r.as_fact().map(|f| f.fact_type.as_str()).unwrap_or("fact"),
                    id.short(),
                    short_message(&r.summary())
                ),
                _ => format!("neo: import {} facts", chunk.len()),
            };
            let target = self.target()?;
            let written = target.store.write_records(&encoded, &message, &ctx.identity, ctx.now, false)?;
            if written.commit.is_some() {
                outcome.commits += 1;
            }
            outcome.added += written.added;
            for (_, id, bytes) in &encoded {
                let blob = target.store.hash_blob(bytes)?;
                target.blobs.insert(*id, blob);
            }
            done += chunk.len();
            progress(done, total);
        }
        if total > 0 {
            let target = self.target()?;
            target.state = std::mem::take(&mut target.state).with_records(fresh);
        }
        Ok(outcome)
    }
}

/// What `approve` or `reject` did.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ReviewOutcome {
    /// The proposals approved or rejected.
    pub ids: Vec<RecordId>,
    /// The new commit on the memory ref (approve only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
}

impl Memory {
    /// Records waiting in the review-mode proposals ref, oldest first.
    pub fn proposed(&mut self) -> Result<Vec<Entry>> {
        Ok(self.ensure_proposals()?.state.iter().cloned().collect())
    }

    fn pick_proposals(&mut self, prefixes: &[String], all: bool) -> Result<Vec<RecordId>> {
        let proposals = self.ensure_proposals()?;
        if all {
            return Ok(proposals.state.order.clone());
        }
        if prefixes.is_empty() {
            return Err(Error::invalid(
                "id",
                "name the proposals to act on (ids from `git neo list --proposed`), or pass --all",
            ));
        }
        prefixes.iter().map(|p| proposals.resolve("id", p)).collect()
    }

    /// Move proposals onto the memory ref (one commit), then drop them from the proposals ref.
    pub fn approve(&mut self, prefixes: &[String], all: bool, ctx: &WriteContext) -> Result<ReviewOutcome> {
        if self.store.write_mode() == WriteMode::Off {
            self.target()?;
        }
        let ids = self.pick_proposals(prefixes, all)?;
        if ids.is_empty() {
            return Ok(ReviewOutcome { ids, commit: None });
        }
        let proposals = self.proposals.as_deref().expect("picked from loaded proposals");
        let mut records = Vec::with_capacity(ids.len());
        let mut encoded = Vec::with_capacity(ids.len());
        for id in &ids {
            let entry = &proposals.state.entries[id];
            let blob = proposals.blobs[id];
            encoded.push((entry.record.kind, *id, proposals.store.read_blob(blob)?));
            records.push((*id, entry.record.clone()));
        }
        let paths: Vec<String> = encoded.iter().map(|(k, id, _)| Record::path(*k, id)).collect();
        let message = format!("neo: approve {} proposed record{}", ids.len(), if ids.len() == 1 { "" } else { "s" });
        let written = self.store.write_records(&encoded, &message, &ctx.identity, ctx.now, false)?;
        for (_, id, bytes) in &encoded {
            self.blobs.insert(*id, self.store.hash_blob(bytes)?);
        }
        self.state = std::mem::take(&mut self.state).with_records(records);
        let store = self.store.proposals()?;
        store.remove_records(&paths, &format!("neo: approved {}", ids.len()), &ctx.identity, ctx.now)?;
        self.proposals = None;
        Ok(ReviewOutcome { ids, commit: written.commit.map(|c| c.to_string()) })
    }

    /// Drop proposals without moving them to the memory ref.
    pub fn reject(&mut self, prefixes: &[String], ctx: &WriteContext) -> Result<ReviewOutcome> {
        let ids = self.pick_proposals(prefixes, false)?;
        let proposals = self.proposals.as_deref().expect("picked from loaded proposals");
        let paths: Vec<String> =
            ids.iter().map(|id| Record::path(proposals.state.entries[id].record.kind, id)).collect();
        let store = self.store.proposals()?;
        store.remove_records(&paths, &format!("neo: reject {}", ids.len()), &ctx.identity, ctx.now)?;
        self.proposals = None;
        Ok(ReviewOutcome { ids, commit: None })
    }
}

/// What `purge` did.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PurgeOutcome {
    pub id: RecordId,
    pub path: String,
    /// The new tip of the memory ref: the purge note on top of the rewritten history.
    pub commit: String,
    /// The tip before the rewrite (what a `--force-with-lease` push expects on the remote).
    pub old_tip: String,
    /// Commits written anew, of all commits walked.
    pub rewritten: usize,
    pub commits: usize,
    /// Remote-tracking refs that still hold the record until the rewritten history is pushed.
    pub remote_copies: Vec<String>,
}

impl Memory {
    /// Remove a record physically: rewrite the local memory ref's whole history so that no commit
    /// on it holds the record's file, and end it with a commit carrying a `Neo-Purge: <id>`
    /// trailer (the note that says it was done on purpose, without the content). For leaked
    /// secrets only; forgetting is the normal, history-keeping path. What remotes and other
    /// clones need afterwards is in [`PurgeOutcome`] and docs/security.md.
    pub fn purge(&mut self, prefix: &str, reason: &str, ctx: &WriteContext) -> Result<PurgeOutcome> {
        if self.store.write_mode() == WriteMode::Off {
            self.target()?;
        }
        let id = self.resolve("id", prefix)?;
        let mut problems = Vec::new();
        record::validate::check_line(
            &mut problems,
            "reason",
            reason.trim(),
            record::validate::MAX_LINE_CHARS,
            "why the record is purged",
        );
        // The reason lands in a commit message: it must not carry the secret being purged.
        if let Some(f) = crate::redact::scan(reason).first() {
            problems.push(Problem::new(
                "reason",
                format!("contains {} (rule {}); describe the leak without quoting it", f.what, f.rule),
            ));
        }
        if !problems.is_empty() {
            return Err(Error::Invalid(Problems(problems)));
        }
        let kind = self.state.entries[&id].record.kind;
        let path = Record::path(kind, &id);
        let message = format!(
            "neo: purge {kind} {}\n\nReason: {}\nNeo-Purge: {}\n",
            id.short(),
            reason.trim().replace('\n', " "),
            id.to_hex()
        );
        let scrub = crate::store::scrub_texts(&self.state.entries[&id].record.summary());
        let rewrite = self.store.rewrite_without(&path, &scrub, &message, &ctx.identity, ctx.now)?;
        self.store.remember_purged(&[id])?;
        let mut remote_copies = Vec::new();
        for (name, tip) in &self.tips {
            if name != self.store.ref_name() && self.store.commit_has_path(*tip, &path)? {
                remote_copies.push(name.clone());
            }
        }
        self.tips.retain(|(name, _)| name != self.store.ref_name());
        self.tips.insert(0, (self.store.ref_name().to_string(), rewrite.new_tip));
        self.blobs.remove(&id);
        self.state.entries.remove(&id);
        self.state = state::fold(std::mem::take(&mut self.state.entries).into_values().map(|e| (e.id, e.record)));
        Ok(PurgeOutcome {
            id,
            path,
            commit: rewrite.new_tip.to_string(),
            old_tip: rewrite.old_tip.to_string(),
            rewritten: rewrite.rewritten,
            commits: rewrite.commits,
            remote_copies,
        })
    }
}

impl Memory {
    /// Where the derived caches live: `<common git dir>/neo/index`, shared by linked worktrees.
    pub fn index_dir(&self) -> std::path::PathBuf {
        self.store.common_dir().join("neo").join("index")
    }

    /// The tips this memory was read from, as commit ids (what the caches are stamped with).
    pub fn tip_ids(&self) -> Vec<String> {
        self.tips.iter().map(|(_, c)| c.to_string()).collect()
    }

    /// Open (catch up, or rebuild) the recall indexes for this memory.
    pub fn open_indexes(
        &self,
        embedder: Option<&mut dyn crate::embed::Embedder>,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<(crate::index::Indexes, crate::index::Refresh)> {
        let added_since = |old: &[String]| self.records_added_since(old);
        Ok(crate::index::Indexes::open(
            &self.index_dir(),
            &self.state,
            &self.tip_ids(),
            &added_since,
            embedder,
            progress,
        )?)
    }

    /// The records added between the single old tip `old` and the single current tip, from a tree
    /// diff; `None` when that cannot be told that way (several tips, unrelated history, or a change
    /// that is not an addition).
    fn records_added_since(&self, old: &[String]) -> Option<Vec<RecordId>> {
        let ([old], [(_, new)]) = (old, self.tips.as_slice()) else { return None };
        let old = ObjectId::from_hex(old.as_bytes()).ok()?;
        if !self.store.is_ancestor(old, *new).ok()? {
            return None;
        }
        let changes =
            self.store.diff_trees(Some(self.store.tree_of(old).ok()?), Some(self.store.tree_of(*new).ok()?)).ok()?;
        let mut added = Vec::new();
        for c in changes {
            if c.change != "added" {
                return None;
            }
            if let Some(id) = c.path.rsplit('/').next().and_then(|f| f.strip_suffix(".md")).and_then(RecordId::from_hex)
            {
                added.push(id);
            }
        }
        added.sort_by_key(|id| self.state.entries.get(id).map(|e| (e.record.created_at, *id)));
        Some(added)
    }

    /// Delete the caches and build them again.
    pub fn reindex(
        &self,
        embedder: Option<&mut dyn crate::embed::Embedder>,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<(crate::index::Indexes, crate::index::Refresh)> {
        let dir = self.index_dir();
        if dir.exists() {
            std::fs::remove_dir_all(&dir)
                .map_err(|e| Error::Io { context: format!("removing {}", dir.display()), source: e })?;
        }
        self.open_indexes(embedder, progress)
    }

    /// The memory as it stood at `t`: the fold of the records written by then.
    pub fn state_as_of(&self, t: Timestamp) -> State {
        state::fold(self.state.entries.values().filter(|e| e.record.created_at <= t).map(|e| (e.id, e.record.clone())))
    }

    /// The time of a commit (for `--as-of <commit>`).
    pub fn commit_time(&self, spec: &str) -> Result<Timestamp> {
        let id = self.store.resolve_commit(spec)?;
        self.store.commit_time(id)
    }

    /// Cosine similarity of `record` to the closest of `candidates`: the vector index shortlists
    /// the nearest [`SIMILARITY_SHORTLIST`] candidates, which are then embedded again on their
    /// subject and body alone (the indexed text also holds type, scope and tags, which every
    /// candidate shares with the new fact and which would inflate the score) and compared exactly.
    pub fn similarity_scores(
        &self,
        indexes: &crate::index::Indexes,
        embedder: &mut dyn crate::embed::Embedder,
        record: &Record,
        candidates: &[RecordId],
    ) -> Result<Vec<(RecordId, f32)>> {
        let embed_err = |e| Error::Index(crate::index::IndexError::Embed(e));
        let Some(text) = crate::index::index_text(record) else { return Ok(Vec::new()) };
        let q = embedder.embed(std::slice::from_ref(&text)).map_err(embed_err)?.pop().unwrap_or_default();
        let wanted: std::collections::HashSet<&RecordId> = candidates.iter().collect();
        let shortlist: Vec<RecordId> = indexes
            .search_vectors(&q, 256)?
            .into_iter()
            .filter(|(id, _)| wanted.contains(id))
            .take(SIMILARITY_SHORTLIST)
            .map(|(id, _)| id)
            .collect();
        if shortlist.is_empty() {
            return Ok(Vec::new());
        }
        let own = |r: &Record| format!("{}\n{}", r.summary(), r.body.trim_end());
        let mut texts = vec![own(record)];
        texts.extend(shortlist.iter().map(|id| own(&self.state.entries[id].record)));
        let vectors = embedder.embed(&texts).map_err(embed_err)?;
        let cosine = |a: &[f32], b: &[f32]| {
            let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
            let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
            let n = norm(a) * norm(b);
            if n > 0.0 {
                dot / n
            } else {
                0.0
            }
        };
        Ok(shortlist.into_iter().zip(&vectors[1..]).map(|(id, v)| (id, cosine(&vectors[0], v))).collect())
    }

    /// Recall for `req` with open `indexes`; the query is embedded with `embedder` when given.
    pub fn recall(
        &self,
        indexes: &crate::index::Indexes,
        embedder: Option<&mut dyn crate::embed::Embedder>,
        req: &crate::recall::Request,
    ) -> Result<crate::recall::Recall> {
        let lexical = indexes.search_lexical(&req.query, crate::recall::CANDIDATES)?;
        let (vector, semantic, query_vector) = match (embedder, &indexes.vectors) {
            (Some(e), Some(_)) => {
                let q = e.embed(std::slice::from_ref(&req.query)).map_err(crate::index::IndexError::Embed)?;
                let q = q.into_iter().next().unwrap_or_default();
                let found = indexes.search_vectors(&q, crate::recall::CANDIDATES)?;
                (found, true, Some((e.model_id().to_string(), q)))
            }
            _ => (Vec::new(), false, None),
        };
        let then;
        let (state, req) = match req.as_of {
            Some(t) => {
                then = (self.state_as_of(t), crate::recall::Request { now: t, ..req.clone() });
                (&then.0, &then.1)
            }
            None => (&self.state, req),
        };
        let mut out = crate::recall::recall(state, req, &lexical, &vector, semantic);
        out.query_vector = query_vector;
        // Attempts say whether their check still applies, and where their task stands now.
        for item in &mut out.attempts {
            if let Some(Payload::Attempt(a)) = state.entries.get(&item.id).map(|e| &e.record.payload) {
                item.freshness =
                    Some(crate::attempts::freshness(&self.store, a.check.commit.as_deref(), &a.files)?.to_string());
                item.task_status = state
                    .iter()
                    .filter_map(|e| match &e.record.payload {
                        Payload::Attempt(x) if x.task == a.task => Some(x.check.result.to_string()),
                        _ => None,
                    })
                    .last();
            }
        }
        Ok(out)
    }
}
