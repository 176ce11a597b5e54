//! Import: many fact requests validated first, then written in batches, duplicates skipped.

use super::plan;
use crate::api::memory::short_message;
use crate::api::memory::Memory;
use crate::api::write::supersede::PlannedSupersession;
use crate::api::write::AddRequest;
use crate::api::write::WriteContext;
use crate::error::{Error, Result};
use crate::record::{Kind, Problem, Problems, Record, RecordId};
use crate::state::{self, State, Status};
use std::collections::HashMap;

/// What `import` did.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct ImportOutcome {
    /// Records written.
    pub added: usize,
    /// Requests whose content was already stored (or repeated earlier in the same import).
    pub duplicates: usize,
    /// Commits made on the memory ref.
    pub commits: usize,
    /// The id of every request written or already stored, in input order (existing ids for
    /// duplicates; skipped requests have none).
    pub ids: Vec<RecordId>,
    /// Current facts the imported ones replaced (by key, or by the frame rule), as `add` reports
    /// them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub superseded: Vec<crate::api::write::supersede::PlannedSupersession>,
    /// Requests left out because they were invalid (only with `skip_invalid`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<Skipped>,
    /// In a dry run, the plan that was not applied (its commits and records).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<super::plan::PlanView>,
}

/// A request `import` left out, and why.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Skipped {
    /// Its position in the requests, from 0.
    pub index: usize,
    /// Every problem found, `field: message`.
    pub problems: Vec<String>,
}

/// The supersession decision of an import: the memory's state, plus what the import wrote so far.
///
/// The frame rule's candidates are found through an index by what a fact is about: its thing
/// ([`state::thing_key`]) and the values inside its subject ("Service 426"), since statements
/// whose subjects hold different values are about different things ([`crate::frame::compare`]).
/// So an import of N lines that share one kind of thing costs O(N): each line meets only the
/// facts about its own thing, and a fact read as a candidate is framed once.
#[derive(Default)]
struct ImportDecider {
    /// Current facts (of the state, then imported) by thing, then by the values in the subject
    /// (`""`: none), each with its place in the order facts arrived.
    things: HashMap<String, HashMap<String, Vec<(usize, RecordId)>>>,
    /// Whether the state's facts are in `things` yet (on the first decision that needs them).
    state_indexed: bool,
    arrived: usize,
    keys: HashMap<(String, String), Vec<RecordId>>,
    facts: HashMap<RecordId, crate::record::Fact>,
    /// Where each indexed fact is in `things`, to take it out once superseded.
    placed: HashMap<RecordId, (String, String)>,
    /// Frames of the facts read as candidates, so that none is framed twice.
    frames: HashMap<RecordId, std::sync::Arc<crate::frame::Frame>>,
    /// Facts (of the state or imported) this import superseded.
    superseded: std::collections::HashSet<RecordId>,
}

/// Where a fact goes in [`ImportDecider::things`]: its thing, and the values its subject holds.
pub(crate) struct Bucket {
    thing: String,
    values: String,
    frame: crate::frame::Frame,
}

impl Bucket {
    pub(crate) fn of(fact: &crate::record::Fact) -> Option<Bucket> {
        let frame = crate::frame::frame(&fact.subject);
        let thing = format!("{}\u{0}{}", fact.fact_type, frame.thing_key()?);
        let values = frame.thing_values.iter().map(String::as_str).collect::<Vec<_>>().join("\u{1}");
        Some(Bucket { thing, values, frame })
    }
}

impl ImportDecider {
    fn admit(&mut self, id: RecordId, fact: &crate::record::Fact, bucket: Option<Bucket>) {
        if let Some(b) = bucket {
            self.place(id, b.thing, b.values);
        }
        if let Some(k) = &fact.key {
            self.keys.entry((k.clone(), fact.scope.clone())).or_default().push(id);
        }
        self.facts.insert(id, fact.clone());
    }

    /// Whether `id` is a current fact: valid in the state or imported, and not superseded since.
    fn current(&self, state: &State, id: &RecordId) -> bool {
        !self.superseded.contains(id)
            && (self.facts.contains_key(id)
                || state.entries.get(id).is_some_and(|e| e.status == Status::Valid && e.record.kind == Kind::Fact))
    }

    /// Put the state's valid facts in the index, in fold order, before anything imported.
    fn index_state(&mut self, state: &State) {
        if std::mem::replace(&mut self.state_indexed, true) {
            return;
        }
        let mut imported = std::mem::take(&mut self.things);
        for e in state.iter().filter(|e| e.status == Status::Valid) {
            let Some(b) = e.record.as_fact().filter(|f| !f.fact_type.is_event()).and_then(Bucket::of) else {
                continue;
            };
            self.place(e.id, b.thing, b.values);
        }
        // Anything imported before the state was needed comes after it, in its own order.
        let mut later: Vec<(usize, RecordId, String, String)> = imported
            .drain()
            .flat_map(|(thing, by_values)| {
                by_values.into_iter().flat_map(move |(values, ids)| {
                    let thing = thing.clone();
                    ids.into_iter().map(move |(n, id)| (n, id, thing.clone(), values.clone()))
                })
            })
            .collect();
        later.sort_unstable_by_key(|l| l.0);
        for (_, id, thing, values) in later {
            self.place(id, thing, values);
        }
    }

    fn place(&mut self, id: RecordId, thing: String, values: String) {
        self.arrived += 1;
        self.things.entry(thing.clone()).or_default().entry(values.clone()).or_default().push((self.arrived, id));
        self.placed.insert(id, (thing, values));
    }

    /// `id` was superseded by this import: it is no candidate any more.
    fn supersede(&mut self, id: RecordId) {
        self.superseded.insert(id);
        self.frames.remove(&id);
        if let Some((thing, values)) = self.placed.remove(&id) {
            if let Some(ids) = self.things.get_mut(&thing).and_then(|t| t.get_mut(&values)) {
                ids.retain(|(_, i)| *i != id);
            }
        }
    }

    /// The facts about `b`'s thing whose subject values may meet its own, newest first.
    fn candidates(&self, b: &Bucket) -> Vec<RecordId> {
        let Some(by_values) = self.things.get(&b.thing) else { return Vec::new() };
        let mut out: Vec<(usize, RecordId)> = if b.values.is_empty() {
            by_values.values().flatten().copied().collect()
        } else {
            let same = by_values.get(&b.values).into_iter().flatten();
            let none = by_values.get("").into_iter().flatten();
            same.chain(none).copied().collect()
        };
        out.sort_unstable_by_key(|c| std::cmp::Reverse(c.0));
        out.into_iter().map(|(_, id)| id).collect()
    }

    fn confidence(&self, state: &State, id: RecordId) -> i32 {
        match self.facts.get(&id) {
            Some(f) => f.confidence.0,
            None => state.entries.get(&id).map(|e| e.confidence.0).unwrap_or(0),
        }
    }

    /// What `add` would supersede for `fact` (the key rule, then the frame rule), over the state
    /// and the facts imported before it.
    fn decide(
        &mut self,
        state: &State,
        fact: &crate::record::Fact,
        bucket: Option<&Bucket>,
        req: &AddRequest,
        frame_on: bool,
    ) -> Vec<crate::api::write::supersede::PlannedSupersession> {
        use crate::record::SupersessionMethod;
        let reason = req.reason.as_deref().map(str::trim).filter(|r| !r.is_empty());
        let mut planned = Vec::new();
        if let Some(key) = &fact.key {
            let in_state = state.iter().filter(|e| {
                e.status == Status::Valid
                    && e.record
                        .as_fact()
                        .is_some_and(|f| f.key.as_deref() == Some(key.as_str()) && f.scope == fact.scope)
            });
            let ids: Vec<(RecordId, String)> = in_state
                .map(|e| (e.id, e.record.summary()))
                .chain(
                    self.keys
                        .get(&(key.clone(), fact.scope.clone()))
                        .into_iter()
                        .flatten()
                        .map(|id| (*id, self.facts[id].subject.clone())),
                )
                .filter(|(id, _)| self.current(state, id))
                .collect();
            for (old, subject) in ids {
                let why = reason.map(str::to_string).unwrap_or_else(|| format!("same key `{key}`"));
                planned.push(PlannedSupersession::new(old, subject, SupersessionMethod::Key, why));
            }
        }
        // Failures and reviews are events: a second one about the same thing is another event.
        if !planned.is_empty() || !frame_on || fact.fact_type.is_event() {
            return planned;
        }
        self.index_state(state);
        let Some(bucket) = bucket else { return planned };
        let linked: std::collections::BTreeSet<RecordId> = fact.relations.iter().map(|r| r.id).collect();
        for id in self.candidates(bucket) {
            let scope = self
                .facts
                .get(&id)
                .map(|f| f.scope.clone())
                .or_else(|| state.entries.get(&id).and_then(|e| e.record.as_fact()).map(|f| f.scope.clone()));
            if !self.current(state, &id)
                || linked.contains(&id)
                || fact.depends_on.contains(&id)
                || scope.as_ref() != Some(&fact.scope)
            {
                continue;
            }
            let old = match self.facts.get(&id) {
                Some(f) => f.subject.clone(),
                None => state.entries[&id].record.summary(),
            };
            let old_frame = match self.frames.get(&id) {
                Some(f) => f.clone(),
                None => {
                    let f = std::sync::Arc::new(crate::frame::frame(&old));
                    self.frames.insert(id, f.clone());
                    f
                }
            };
            if let (crate::frame::Relation::Update, Some(u)) =
                crate::api::write::updates::judge_framed(id, &old, &old_frame, &bucket.frame)
            {
                let why = reason.map(str::to_string).unwrap_or_else(|| u.reason());
                planned.push(PlannedSupersession::new(id, old, SupersessionMethod::Frame, why));
            }
        }
        planned
    }
}

impl Memory {
    /// Add many facts: validate all of them first (every problem, prefixed with its request's
    /// number, and nothing written), or with `skip_invalid` leave the invalid ones out and report
    /// each in [`ImportOutcome::skipped`]; then write them `batch_size` records per commit. `progress(done, total)` is called
    /// after each commit. If the process dies midway, the ref holds the batches that landed.
    pub fn import(
        &mut self,
        requests: &[AddRequest],
        batch_size: usize,
        skip_invalid: bool,
        ctx: &WriteContext,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<ImportOutcome> {
        let mut problems = Vec::new();
        let mut skipped = Vec::new();
        let mut prepared = Vec::with_capacity(requests.len());
        for (i, req) in requests.iter().enumerate() {
            match self.prepare_valid(req, ctx) {
                Ok(r) => prepared.push((i, r)),
                Err(Error::Invalid(p)) if skip_invalid => skipped.push(Skipped {
                    index: i,
                    problems: p.0.iter().map(|p| format!("{}: {}", p.field, p.message)).collect(),
                }),
                Err(Error::Invalid(p)) => problems
                    .extend(p.0.into_iter().map(|p| Problem::new(format!("record {}: {}", i + 1, p.field), p.message))),
                Err(e) => return Err(e),
            }
        }
        if !problems.is_empty() {
            return Err(Error::Invalid(Problems(problems)));
        }
        let mut outcome = ImportOutcome { skipped, ..ImportOutcome::default() };
        // Facts as they were checked, and their supersessions (checked when applied).
        let mut fresh: Vec<(RecordId, plan::Planned)> = Vec::new();
        let mut seen: HashMap<String, RecordId> = HashMap::new();
        // The same supersession decision as `add` makes record by record (key, then the frame
        // rule; similarity needs a model per record and is add's alone), over the memory as it
        // stood and the facts imported before this one.
        let frame_on = self.store.frame_updates()?;
        let mut decider = ImportDecider::default();
        for (i, mut valid) in prepared {
            let req = &requests[i];
            let fact = valid.record().as_fact().expect("prepare_fact builds facts").clone();
            let key = state::dedup_key(&fact, &valid.record().body);
            if let Some(existing) =
                self.state.duplicate_of(&fact, &valid.record().body).or_else(|| seen.get(&key).copied())
            {
                outcome.duplicates += 1;
                outcome.ids.push(existing);
                continue;
            }
            // Failures and reviews are events: never indexed as candidates of the frame rule.
            let bucket = if frame_on && !fact.fact_type.is_event() { Bucket::of(&fact) } else { None };
            let planned = if req.no_supersede {
                Vec::new()
            } else {
                decider.decide(&self.state, &fact, bucket.as_ref(), req, frame_on)
            };
            if req.confidence.is_none() && !planned.is_empty() {
                let carried = planned.iter().map(|p| decider.confidence(&self.state, p.old)).max().unwrap_or(0);
                valid = valid.with_confidence(crate::record::Milli(
                    (carried + crate::api::write::supersede::CARRY_OVER_BONUS.0).min(1000),
                ));
            }
            let id = valid.id();
            seen.insert(key, id);
            outcome.ids.push(id);
            let fact = valid.record().as_fact().expect("a fact").clone();
            decider.admit(id, &fact, bucket);
            let reqs_reason = req.reason.as_deref().map(str::trim).filter(|r| !r.is_empty());
            fresh.push((id, plan::Planned::Valid(valid)));
            for p in planned {
                decider.supersede(p.old);
                let sup = self.supersession_record(
                    &PlannedSupersession {
                        reason: reqs_reason.map(str::to_string).unwrap_or(p.reason.clone()),
                        ..p.clone()
                    },
                    id,
                    ctx,
                );
                let (sid, _) = sup.encode();
                outcome.superseded.push(p);
                fresh.push((sid, plan::Planned::New(sup)));
            }
        }
        // Batches of `batch_size` records, cut only before a fact: a fact and the supersessions
        // it makes land in one commit, so no reader sees one without the other.
        let mut bounds = vec![0];
        for (i, (_, r)) in fresh.iter().enumerate() {
            let start = *bounds.last().expect("starts with 0");
            if i > start && i - start >= batch_size.max(1) && r.record().is_some_and(|r| r.kind == Kind::Fact) {
                bounds.push(i);
            }
        }
        bounds.push(fresh.len());
        let commits = bounds
            .windows(2)
            .map(|w| &fresh[w[0]..w[1]])
            .filter(|c| !c.is_empty())
            .map(|chunk| plan::PlannedCommit {
                message: match chunk {
                    [(id, plan::Planned::Valid(r))] => format!(
                        "neo: add {} {} \"{}\"",
                        r.record().as_fact().map(|f| f.fact_type.as_str()).unwrap_or("fact"),
                        id.short(),
                        short_message(&r.record().summary())
                    ),
                    _ => format!("neo: import {} facts", chunk.len()),
                },
                records: chunk.iter().map(|(_, r)| r.clone()).collect(),
            })
            .collect();
        let plan = plan::WritePlan {
            commits,
            expected_tip: self.own_tip(),
            ..plan::WritePlan::one(plan::Destination::ByMode, String::new(), Vec::new())
        };
        let applied = self.apply_with_progress(plan, ctx, progress)?;
        outcome.commits = applied.commits.len();
        let sups = fresh.iter().filter(|(_, r)| r.record().is_some_and(|r| r.kind == Kind::Supersession)).count();
        outcome.added = applied.added.saturating_sub(sups);
        outcome.plan = applied.dry_run;
        Ok(outcome)
    }
}

/// What an import from another tool did: the facts (as `Memory::import` reports them, over
/// every level) and the supersessions it recorded.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct ForeignOutcome {
    #[serde(flatten)]
    pub facts: ImportOutcome,
    /// Supersessions (and outdated marks) written for the other tool's own.
    pub supersessions: usize,
    /// Links that name a fact which was not imported (left out, or invalid and skipped).
    pub links_dropped: usize,
    /// The git-neo id of each imported fact, by the other tool's id.
    #[serde(skip)]
    pub ids: HashMap<String, RecordId>,
}

/// The write request for another tool's fact, without its links (they name ids known only once
/// the facts they point at are written).
pub fn request_of(f: &crate::foreign::ForeignFact) -> AddRequest {
    AddRequest {
        fact_type: f.fact_type.to_string(),
        subject: f.subject.clone(),
        body: f.body.clone(),
        area: f.area.clone(),
        tags: f.tags.clone(),
        confidence: f.confidence,
        provenance: f.provenance.clone(),
        created_at: f.created_at,
        no_supersede: true,
        ..AddRequest::default()
    }
}

impl Memory {
    /// Import another tool's facts and links ([`crate::foreign`]): facts in levels, each fact
    /// after those it names (so its links resolve; a cycle's last edge is dropped), each level
    /// through `Memory::import`; then the other tool's supersessions, in one commit, dated as
    /// it dated them. Running it again writes nothing new.
    pub fn import_foreign(
        &mut self,
        foreign: &crate::foreign::Foreign,
        batch_size: usize,
        skip_invalid: bool,
        ctx: &WriteContext,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<ForeignOutcome> {
        // Everything is validated before the first level is written: a fact's links do not
        // change whether it is valid, so it is checked here without them.
        if !skip_invalid {
            self.check_foreign(foreign, ctx)?;
        }
        let mut out = ForeignOutcome::default();
        let keys: std::collections::HashSet<&str> = foreign.facts.iter().map(|f| f.key.as_str()).collect();
        let mut pending: Vec<&crate::foreign::ForeignFact> = foreign.facts.iter().collect();
        let total = pending.len();
        let mut done_before = 0;
        while !pending.is_empty() {
            let names = |f: &crate::foreign::ForeignFact| -> Vec<String> {
                f.depends_on.iter().chain(&f.extends).chain(&f.derives_from).cloned().collect()
            };
            // Ready: every fact it names is imported, or will never be (not in the file).
            let ready_at = |f: &&crate::foreign::ForeignFact| {
                names(f).iter().all(|k| out.ids.contains_key(k) || !keys.contains(k.as_str()))
            };
            let (mut level, rest): (Vec<_>, Vec<_>) = pending.into_iter().partition(ready_at);
            pending = rest;
            if level.is_empty() {
                // A cycle: take the first waiting fact; its links into the cycle are dropped.
                level.push(pending.remove(0));
            }
            let resolve = |ks: &[String], dropped: &mut usize| -> Vec<String> {
                ks.iter()
                    .filter_map(|k| {
                        let id = out.ids.get(k).map(|id| id.to_hex());
                        if id.is_none() {
                            *dropped += 1;
                        }
                        id
                    })
                    .collect()
            };
            let mut dropped = 0;
            let requests: Vec<AddRequest> = level
                .iter()
                .map(|f| AddRequest {
                    depends_on: resolve(&f.depends_on, &mut dropped),
                    extends: resolve(&f.extends, &mut dropped),
                    derives_from: resolve(&f.derives_from, &mut dropped),
                    ..request_of(f)
                })
                .collect();
            out.links_dropped += dropped;
            let mut report = |done: usize, _: usize| progress(done_before + done, total);
            let got = self.import(&requests, batch_size, skip_invalid, ctx, &mut report)?;
            let skipped: std::collections::HashSet<usize> = got.skipped.iter().map(|s| s.index).collect();
            let mut ids = got.ids.iter();
            for (i, f) in level.iter().enumerate() {
                if !skipped.contains(&i) {
                    if let Some(id) = ids.next() {
                        out.ids.insert(f.key.clone(), *id);
                    }
                }
            }
            out.facts.added += got.added;
            out.facts.duplicates += got.duplicates;
            out.facts.commits += got.commits;
            out.facts.ids.extend(got.ids);
            out.facts.skipped.extend(got.skipped.into_iter().map(|mut s| {
                s.index += done_before;
                s
            }));
            done_before += level.len();
        }
        // The other tool's supersessions, skipping what this memory already says.
        let records = self.foreign_supersessions(foreign, &mut out, ctx)?;
        if !records.is_empty() {
            out.supersessions = records.len();
            let n = records.len();
            self.write_all(records, format!("neo: import {n} supersession{}", if n == 1 { "" } else { "s" }), ctx)?;
        }
        Ok(out)
    }

    /// The other tool's supersessions as records, between facts this import wrote and only of a
    /// fact still valid here; each link that names a fact not imported is counted as dropped.
    fn foreign_supersessions(
        &mut self,
        foreign: &crate::foreign::Foreign,
        out: &mut ForeignOutcome,
        ctx: &WriteContext,
    ) -> Result<Vec<Record>> {
        use crate::record::{Payload, Supersession, SupersessionMethod};
        let mut records = Vec::new();
        for l in &foreign.links {
            let (Some(&old), new) = (out.ids.get(&l.old), l.new.as_ref().map(|n| out.ids.get(n).copied())) else {
                out.links_dropped += 1;
                continue;
            };
            let new = match new {
                Some(None) => {
                    out.links_dropped += 1;
                    continue;
                }
                Some(Some(n)) => Some(n),
                None => None,
            };
            let target = self.target()?;
            if target.state.entries.get(&old).is_none_or(|e| e.status != crate::state::Status::Valid)
                || new == Some(old)
            {
                continue;
            }
            let at = l.at.unwrap_or(ctx.now);
            records.push(Record {
                kind: Kind::Supersession,
                payload: Payload::Supersession(Supersession {
                    old,
                    old_scope: None,
                    new,
                    reason: l.reason.clone(),
                    method: if new.is_some() { SupersessionMethod::Explicit } else { SupersessionMethod::Outdated },
                    score: None,
                }),
                author: ctx.identity.author_field(),
                created_at: at,
                body: String::new(),
            });
        }
        Ok(records)
    }

    /// Every fact of `foreign` validated as a request (without its links, which do not change
    /// whether it is valid): every problem, each naming its record.
    fn check_foreign(&self, foreign: &crate::foreign::Foreign, ctx: &WriteContext) -> Result<()> {
        let mut problems = Vec::new();
        for (i, f) in foreign.facts.iter().enumerate() {
            if let Err(Error::Invalid(p)) = self.prepare_fact(&request_of(f), ctx) {
                problems.extend(
                    p.0.into_iter()
                        .map(|p| Problem::new(format!("record {} ({}): {}", i + 1, f.key, p.field), p.message)),
                );
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(Error::Invalid(Problems(problems)))
        }
    }
}
