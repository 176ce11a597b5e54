//! The one write path. Every write (a fact and its supersessions, an attempt and its check, a
//! retraction, a correction, an outcome, an import's batches, an ingest, a curation step, an
//! approval, a published proposal) builds a [`WritePlan`]: the records, grouped into commits,
//! where they go and the tip they were decided against. `Memory::apply` then runs, in this
//! order and the same way for every caller:
//!
//! 1. **the filter**: each record validated and checked for secrets (every problem at once, naming
//!    the record and field; nothing is written when one fails), and each copied record's bytes
//!    checked to hash to its id, so a forged proposal cannot be approved;
//! 2. **de-duplication**: records the destination already holds are left out of the commit;
//! 3. the **compare-and-swap commit** of each group (the store re-reads the ref and retries, so a
//!    concurrent writer's records and these all land);
//! 4. the update of the memory's **state**, which the recall indexes catch up from on the next
//!    recall (they are a cache of the records, never written ahead of them).
//!
//! The supersession decision is made while planning (it needs the similarity model, which the
//! session owns), and its records are part of the plan, so they pass the same filter. A dry run
//! is the same plan, filtered and de-duplicated, and rendered ([`PlanView`]) instead of committed.
//! Telemetry records what recall showed, not writes, so no write step touches it.

use crate::api::memory::Memory;
use crate::api::write::WriteContext;
use crate::error::{Error, Result};
use crate::record::{self, Kind, Problem, Problems, Record, RecordId};
use crate::store::{ObjectId, Store, WriteMode};

/// Where a plan's commits go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Destination {
    /// The memory's ref, or under `neo.mode review` its proposals; refused under `neo.mode off`.
    ByMode,
    /// The memory's own ref whatever the mode: approving proposals moves them there.
    Own,
}

/// One record of a plan: new (apply encodes it), or a byte-exact copy of a record stored on
/// another ref (a proposal being approved or published), kept byte for byte.
// Nearly every planned record is new; boxing them to shrink the rare copy would cost an allocation
// per record of an import.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
pub enum Planned {
    New(Record),
    /// A new record the planner checked already ([`Valid::check`]): committed as it is.
    Valid(Valid),
    Copy {
        id: RecordId,
        bytes: Vec<u8>,
    },
}

impl Planned {
    /// The record, when the plan holds it decoded (not a byte-exact copy).
    pub fn record(&self) -> Option<&Record> {
        match self {
            Planned::New(r) => Some(r),
            Planned::Valid(v) => Some(&v.record),
            Planned::Copy { .. } => None,
        }
    }
}

/// A new record that passed the filter's checks (its fields, the secret filter, a date not in
/// the future, bytes its own reader takes back), with its id and canonical bytes. Only
/// [`Valid::check`] makes one, and a plan commits it without checking it again: a planner that
/// must report problems before it plans further (an add, before it asks the model for
/// similarity) checks its record once, and the filter does not repeat it.
#[derive(Clone, Debug)]
pub struct Valid {
    record: Record,
    id: RecordId,
    bytes: Vec<u8>,
}

#[cfg(test)]
thread_local! {
    /// Records checked on this thread (tests count that each is checked once).
    pub(crate) static CHECKS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

impl Valid {
    /// Check `record` as of `now`, adding what is wrong with it to `problems`: the valid record,
    /// or `None` when a problem was found. An error is a bug (the canonical bytes do not parse).
    pub fn check(record: Record, now: crate::record::Timestamp, problems: &mut Vec<Problem>) -> Result<Option<Valid>> {
        #[cfg(test)]
        CHECKS.with(|c| c.set(c.get() + 1));
        let before = problems.len();
        problems.extend(record::validate::validate(&record));
        problems.extend(crate::redact::check(&record));
        problems.extend(record::validate::check_not_future(record.created_at, now));
        if problems.len() > before {
            return Ok(None);
        }
        // The writer must never emit bytes its own reader rejects (checked once the record is
        // valid, so a bad field is reported as that field, not as unreadable bytes).
        let (id, bytes) = record.encode();
        if let Err(p) = record::parse::parse(&bytes) {
            return Err(Error::Internal(format!("the canonical form of a new record does not parse: {p}")));
        }
        Ok(Some(Valid { record, id, bytes }))
    }

    pub fn record(&self) -> &Record {
        &self.record
    }

    pub fn id(&self) -> RecordId {
        self.id
    }

    pub fn into_record(self) -> Record {
        self.record
    }

    /// The same fact with another confidence (any `Milli` in 0..=1000 is valid; the bytes and
    /// id are made again).
    pub(crate) fn with_confidence(mut self, confidence: crate::record::Milli) -> Valid {
        if let crate::record::Payload::Fact(f) = &mut self.record.payload {
            f.confidence = crate::record::Milli(confidence.0.clamp(0, 1000));
        }
        (self.id, self.bytes) = self.record.encode();
        self
    }
}

/// One commit of a plan. `{id}` in the message becomes the first record's short id.
#[derive(Clone, Debug)]
pub struct PlannedCommit {
    pub message: String,
    pub records: Vec<Planned>,
}

/// What a write will do, decided before anything is written.
#[derive(Clone, Debug)]
pub struct WritePlan {
    pub destination: Destination,
    pub commits: Vec<PlannedCommit>,
    /// The destination's tip when the plan was decided (`None`: it had none). The commit lands on
    /// whatever tip the ref has then (records are content-addressed files, so nothing another
    /// writer added is lost); [`Applied::moved`] says when it had moved.
    pub expected_tip: Option<ObjectId>,
    /// Write a commit even with no records when the ref does not exist yet (`init`).
    pub create: bool,
    /// Whose records these are: a problem with one is the caller's input to fix, or a bug.
    pub origin: Origin,
}

/// Who made a plan's records, which decides what a record that fails the filter is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Origin {
    /// From a person's or an agent's input: a problem is invalid input, naming the field.
    #[default]
    Given,
    /// Made by git-neo itself (outcomes, implicit feedback, curation): a problem is a bug.
    Generated,
}

impl WritePlan {
    /// A plan of one commit.
    pub fn one(destination: Destination, message: String, records: Vec<Record>) -> WritePlan {
        WritePlan::of(destination, message, records.into_iter().map(Planned::New).collect())
    }

    /// [`WritePlan::one`] of planned records (some checked already).
    pub fn of(destination: Destination, message: String, records: Vec<Planned>) -> WritePlan {
        WritePlan {
            destination,
            commits: vec![PlannedCommit { message, records }],
            expected_tip: None,
            create: false,
            origin: Origin::Given,
        }
    }
}

/// A record that passed the filter, encoded.
#[derive(Clone, Debug)]
struct Checked {
    id: RecordId,
    record: Record,
    bytes: Vec<u8>,
    /// The destination holds it already: it is left out of the commit.
    present: bool,
}

/// What `Memory::apply` did (or, in a dry run, would do).
#[derive(Clone, Debug, Default)]
pub struct Applied {
    /// Every record of the plan, in order, whether it was new to the destination or not.
    pub ids: Vec<(RecordId, Kind)>,
    /// Records new to the destination.
    pub added: usize,
    /// The commits written, in order (none in a dry run, or when every record was there).
    pub commits: Vec<ObjectId>,
    /// The records went to the review-mode proposals.
    pub proposed: bool,
    /// The destination's tip had moved since the plan was decided (another writer landed first).
    pub moved: bool,
    /// The plan rendered, in a dry run.
    pub dry_run: Option<PlanView>,
}

impl Applied {
    /// The last commit written, if any.
    pub fn commit(&self) -> Option<String> {
        self.commits.last().map(|c| c.to_string())
    }
}

/// A plan rendered: what `--dry-run` prints (text or JSON).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct PlanView {
    /// The ref the commits would go to.
    #[serde(rename = "ref")]
    pub ref_name: String,
    /// Its tip the plan was decided against.
    pub expected_tip: Option<String>,
    pub commits: Vec<CommitView>,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct CommitView {
    pub message: String,
    pub records: Vec<RecordView>,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct RecordView {
    pub id: String,
    pub kind: String,
    pub path: String,
    pub summary: String,
    /// The destination holds this record already: it would not be written again.
    pub present: bool,
}

/// Step 1, the filter, over a whole plan: every problem of every record, each prefixed with the
/// record's place when the plan has more than one.
fn filter(plan: &WritePlan, now: crate::record::Timestamp) -> Result<Vec<Vec<Checked>>> {
    let many = plan.commits.iter().map(|c| c.records.len()).sum::<usize>() > 1;
    let mut problems = Vec::new();
    let mut out = Vec::with_capacity(plan.commits.len());
    let mut n = 0;
    for commit in &plan.commits {
        let mut group = Vec::with_capacity(commit.records.len());
        for planned in &commit.records {
            n += 1;
            let mut found = Vec::new();
            let checked = match planned {
                Planned::New(record) => Valid::check(record.clone(), now, &mut found)?,
                Planned::Valid(valid) => Some(valid.clone()),
                Planned::Copy { id, bytes } => {
                    if RecordId::of_bytes(bytes) != *id {
                        return Err(Error::Integrity(format!(
                            "record {} does not hash to its id: it was changed after it was written; nothing was copied",
                            id.short()
                        )));
                    }
                    let record = record::parse::parse(bytes).map_err(|p| {
                        Error::Invalid(Problems(
                            p.0.into_iter()
                                .map(|p| Problem::new(format!("record {n} ({}): {}", id.short(), p.field), p.message))
                                .collect(),
                        ))
                    })?;
                    #[cfg(test)]
                    CHECKS.with(|c| c.set(c.get() + 1));
                    found.extend(record::validate::validate(&record));
                    found.extend(crate::redact::check(&record));
                    Some(Valid { record, id: *id, bytes: bytes.clone() })
                }
            };
            let id = match (&checked, planned) {
                (Some(v), _) => v.id,
                (None, Planned::New(record)) => record.encode().0,
                (None, Planned::Valid(v)) => v.id,
                (None, Planned::Copy { id, .. }) => *id,
            };
            let clean = found.is_empty();
            problems.extend(found.into_iter().map(|p| {
                if many {
                    Problem::new(format!("record {n} ({}): {}", id.short(), p.field), p.message)
                } else {
                    p
                }
            }));
            if let (Some(Valid { record, id, bytes }), true) = (checked, clean) {
                group.push(Checked { id, record, bytes, present: false });
            }
        }
        out.push(group);
    }
    match (problems.is_empty(), plan.origin) {
        (true, _) => Ok(out),
        (false, Origin::Given) => Err(Error::Invalid(Problems(problems))),
        (false, Origin::Generated) => {
            Err(Error::Internal(format!("a record git-neo made does not validate: {}", Problems(problems))))
        }
    }
}

/// The CAS commit of each group on `store`, in order. A failure after some groups landed says
/// how many records did, so the caller can tell the user what to run again.
fn commit_groups(
    store: &Store,
    groups: &[(String, Vec<Checked>)],
    ctx: &WriteContext,
    create: bool,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<(Vec<ObjectId>, usize, Vec<crate::api::memory::Advance>)> {
    let total: usize = groups.iter().map(|(_, g)| g.len()).sum();
    let (mut commits, mut added, mut done) = (Vec::new(), 0, 0);
    let mut advances = Vec::new();
    for (message, group) in groups {
        let encoded: Vec<(Kind, RecordId, Vec<u8>)> =
            group.iter().filter(|c| !c.present).map(|c| (c.record.kind, c.id, c.bytes.clone())).collect();
        if encoded.is_empty() && !create {
            done += group.len();
            progress(done, total);
            continue;
        }
        match store.write_records(&encoded, message, &ctx.identity, ctx.now, create) {
            Ok(w) => {
                commits.extend(w.commit);
                added += w.added;
                if let (Some(from), Some(to)) = (w.parent, w.commit) {
                    advances.push(crate::api::memory::Advance { from, to, added: w.added_records });
                }
            }
            Err(e) if done > 0 => return Err(Error::ImportInterrupted { landed: done, total, source: Box::new(e) }),
            Err(e) => return Err(e),
        }
        done += group.len();
        progress(done, total);
    }
    Ok((commits, added, advances))
}

fn view(store: &Store, expected_tip: Option<ObjectId>, groups: &[(String, Vec<Checked>)]) -> PlanView {
    PlanView {
        ref_name: store.ref_name().to_string(),
        expected_tip: expected_tip.map(|t| t.to_string()),
        commits: groups
            .iter()
            .map(|(message, group)| CommitView {
                message: message.clone(),
                records: group
                    .iter()
                    .map(|c| RecordView {
                        id: c.id.to_hex(),
                        kind: c.record.kind.as_str().to_string(),
                        path: Record::path(c.record.kind, &c.id),
                        summary: c.record.summary(),
                        present: c.present,
                    })
                    .collect(),
            })
            .collect(),
    }
}

/// The messages with `{id}` filled in from each group's first record.
fn messages(plan: &WritePlan, checked: Vec<Vec<Checked>>) -> Vec<(String, Vec<Checked>)> {
    plan.commits
        .iter()
        .zip(checked)
        .map(|(c, group)| {
            let message = match group.first() {
                Some(first) => c.message.replace("{id}", &first.id.short()),
                None => c.message.clone(),
            };
            (message, group)
        })
        .collect()
}

impl Memory {
    /// The tip of this memory's own ref as it was loaded (or last written).
    pub(crate) fn own_tip(&self) -> Option<ObjectId> {
        self.tips.iter().find(|(name, _)| name == self.store.ref_name()).map(|(_, c)| *c)
    }

    /// Carry out `plan`: filter, de-duplicate, commit, update the state (see the module header).
    /// In a dry run (`ctx.dry_run`) the first two steps run and the plan comes back rendered.
    pub fn apply(&mut self, plan: WritePlan, ctx: &WriteContext) -> Result<Applied> {
        self.apply_with_progress(plan, ctx, &mut |_, _| {})
    }

    /// `Memory::apply`, calling `progress(done, total)` after each commit.
    pub fn apply_with_progress(
        &mut self,
        plan: WritePlan,
        ctx: &WriteContext,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Applied> {
        let proposed = plan.destination == Destination::ByMode && self.store.write_mode() == WriteMode::Review;
        let target: &mut Memory = match plan.destination {
            Destination::ByMode => self.target()?,
            Destination::Own => self,
        };
        let checked = filter(&plan, ctx.now)?;
        let mut groups = messages(&plan, checked);
        for (_, group) in &mut groups {
            for c in group.iter_mut() {
                c.present = target.state.entries.contains_key(&c.id) && !target.remote_only.contains_key(&c.id);
            }
        }
        // Under review the plan was decided against the memory, but lands in the proposals.
        let expected_tip = if proposed { target.own_tip() } else { plan.expected_tip };
        let ids = groups.iter().flat_map(|(_, g)| g.iter().map(|c| (c.id, c.record.kind))).collect();
        if ctx.dry_run {
            let dry = view(&target.store, expected_tip, &groups);
            return Ok(Applied { ids, proposed, dry_run: Some(dry), ..Applied::default() });
        }
        let before = target.store.local_tip()?;
        let moved = plan.expected_tip.is_some() && before != expected_tip;
        let (commits, added, advances) = commit_groups(&target.store, &groups, ctx, plan.create, progress)?;
        target.absorb(groups, commits.last().copied())?;
        target.advanced(advances);
        // A live session sees its own writes at once (`recall::pin`).
        self.written.extend(ids.iter().map(|(id, _)| *id));
        Ok(Applied { ids, added, commits, proposed, moved, dry_run: None })
    }

    /// Step 4: the records just written join the state (and their blobs the blob map).
    fn absorb(&mut self, groups: Vec<(String, Vec<Checked>)>, last: Option<ObjectId>) -> Result<()> {
        let mut fresh = Vec::new();
        for c in groups.into_iter().flat_map(|(_, g)| g) {
            if c.present {
                continue;
            }
            self.blobs.insert(c.id, self.store.hash_blob(&c.bytes)?);
            fresh.push((c.id, c.record));
        }
        if let Some(commit) = last {
            self.tips.retain(|(name, _)| name != self.store.ref_name());
            self.tips.insert(0, (self.store.ref_name().to_string(), commit));
        }
        if !fresh.is_empty() {
            self.lineage.appended.extend(fresh.iter().map(|(id, _)| *id));
            self.state = std::mem::take(&mut self.state).with_records(fresh);
        }
        Ok(())
    }
}

/// Carry out `plan` on a ref no loaded memory stands for (the org outbox a proposal is built
/// on): the same filter and commit, with nothing to de-duplicate against but the ref's tree.
pub(crate) fn apply_to_store(store: &Store, plan: &WritePlan, ctx: &WriteContext) -> Result<Applied> {
    let checked = filter(plan, ctx.now)?;
    let groups = messages(plan, checked);
    let ids = groups.iter().flat_map(|(_, g)| g.iter().map(|c| (c.id, c.record.kind))).collect();
    if ctx.dry_run {
        return Ok(Applied { ids, dry_run: Some(view(store, plan.expected_tip, &groups)), ..Applied::default() });
    }
    let (commits, added, _) = commit_groups(store, &groups, ctx, plan.create, &mut |_, _| {})?;
    Ok(Applied { ids, added, commits, ..Applied::default() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::write::AddRequest;
    use crate::record::{Payload, Timestamp};
    use crate::store::{Identity, StoreOptions};

    fn request(subject: &str) -> AddRequest {
        AddRequest { fact_type: "decision".into(), subject: subject.into(), ..AddRequest::default() }
    }

    #[test]
    fn apply_filters_every_record_and_leaves_out_what_is_stored() {
        let dir = crate::store::test_repo();
        let tip = || Store::discover(dir.path(), StoreOptions::default()).expect("store").local_tip().expect("tip");
        let ctx = WriteContext::new(
            Identity { name: "Ada Tester".into(), email: "ada@example.com".into() },
            Timestamp(1_772_366_400),
        );
        let mut memory =
            Memory::load(Store::discover(dir.path(), StoreOptions::default()).expect("store")).expect("load");
        let good = memory.prepare_fact(&request("Builds run on two cores"), &ctx).expect("fact");
        memory
            .apply(WritePlan::one(Destination::ByMode, "neo: add {id}".into(), vec![good.clone()]), &ctx)
            .expect("apply");
        let landed = tip();

        // Stored already: planned, marked present, and no commit is made.
        let again = WritePlan::one(Destination::ByMode, "neo: add {id}".into(), vec![good.clone()]);
        let dry = memory.apply(again.clone(), &WriteContext { dry_run: true, ..ctx.clone() }).expect("dry");
        let view = dry.dry_run.expect("a rendered plan");
        assert!(view.commits[0].records[0].present, "{view:?}");
        assert!(view.commits[0].message.starts_with("neo: add "), "{view:?}");
        let applied = memory.apply(again, &ctx).expect("apply again");
        assert_eq!((applied.added, applied.commits.len()), (0, 0), "{applied:?}");
        assert_eq!(tip(), landed);

        // Two bad records in one plan: both are named, nothing is written, the good one neither.
        let mut no_subject = good.clone();
        if let Payload::Fact(f) = &mut no_subject.payload {
            f.subject = String::new();
        }
        let mut leaky = memory.prepare_fact(&request("Tokens live in the vault"), &ctx).expect("fact");
        leaky.body = format!("use {}{}\n", "ghp_", "abcdefghijklmnopqrstuvwxyz0123456789AB");
        let fresh = memory.prepare_fact(&request("Releases are tagged vX.Y.Z"), &ctx).expect("fact");
        let bad = WritePlan::one(Destination::ByMode, "m".into(), vec![fresh, no_subject, leaky]);
        let err = memory.apply(bad, &ctx).expect_err("refused").to_string();
        assert!(err.contains("record 2") && err.contains("subject"), "{err}");
        assert!(err.contains("record 3"), "{err}");
        assert_eq!(tip(), landed, "a refused plan wrote something");
    }
}
