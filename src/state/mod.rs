//! The fold: PURE. All records in, current meaning out; nothing here is stored.
//!
//! Ordering rule (documented in `docs/format.md` and tested with shuffled input): records are
//! applied in ascending `(created_at, id)` order. Every rule below is also written so that its
//! answer does not depend on that order at all, except where "the earliest" is the rule:
//! - A retraction is *effective* unless an effective retraction targets it (retracting a
//!   retraction revives its target). Ids are hashes of content that names earlier ids, so this
//!   relation has no cycles and the recursion ends.
//! - A record targeted by an effective retraction is `retracted`; `retracted_by` is the earliest.
//! - A fact or attempt named as `old` by a non-retracted supersession is `superseded` (with a new
//!   record) or `outdated` (without one). Retraction wins over supersession.
//! - Outcomes that are not retracted adjust their target's confidence: the earliest outcome per
//!   idempotency key counts, later ones with the same key are ignored. The sum is clamped to
//!   0.0..=1.0 once, at the end, so order cannot change it.
//! - De-duplication: among valid facts, the earliest with a given normalised
//!   (type, scope, subject, body) owns that content; adding it again returns that id.
//! - Needs review (derived, never written): a valid fact whose `depends_on` or `derives` relation
//!   names a record that is superseded, outdated or forgotten; and, when several valid facts each
//!   supersede the same old fact (two clones replaced it independently and their memories were
//!   merged), every one of them, as a conflict; and a valid record with a counted `anchor-changed`
//!   outcome (the code it is anchored to was rewritten). The cascade is one level deep: a fact that depends
//!   on a fact needing review is not itself flagged, since its source is still valid.

use crate::record::{Anchor, Fact, Kind, Milli, Payload, Record, RecordId, RelationType, Timestamp};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};

/// Where a record stands now.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Valid,
    Superseded,
    Outdated,
    Retracted,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Valid => "valid",
            Status::Superseded => "superseded",
            Status::Outdated => "outdated",
            Status::Retracted => "retracted",
        }
    }
}

/// Why a valid record needs a person's review.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", rename_all = "kebab-case")]
pub enum ReviewFlag {
    /// `depends_on` names a record that is no longer valid.
    DependsOn { id: RecordId, status: Status },
    /// A `derives` relation names a source that is no longer valid.
    DerivesFrom { id: RecordId, status: Status },
    /// This fact and `others` each supersede `old`: merged histories disagree on its replacement.
    Conflict { old: RecordId, others: Vec<RecordId> },
    /// The code it is anchored to was rewritten or deleted (an `anchor-changed` outcome).
    AnchorChanged { outcome: RecordId, paths: Vec<String> },
    /// A section it cites changed in a later version of its document, left it, or the document
    /// went away.
    SourceChanged { id: RecordId, path: String, section: String, change: String },
}

impl std::fmt::Display for ReviewFlag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReviewFlag::DependsOn { id, status } => {
                write!(f, "depends on {}, which is {}", id.short(), status.as_str())
            }
            ReviewFlag::DerivesFrom { id, status } => {
                write!(f, "derived from {}, which is {}", id.short(), status.as_str())
            }
            ReviewFlag::SourceChanged { path, section, change, .. } => {
                write!(f, "cites \"{section}\" of {path}, which {change}")
            }
            ReviewFlag::AnchorChanged { outcome, paths } => {
                write!(f, "the code it is anchored to changed ({}; outcome {})", paths.join(", "), outcome.short())
            }
            ReviewFlag::Conflict { old, others } => {
                let others: Vec<String> = others.iter().map(|o| o.short()).collect();
                write!(
                    f,
                    "conflict: {} also replace{} {}",
                    others.join(", "),
                    if others.len() == 1 { "s" } else { "" },
                    old.short()
                )
            }
        }
    }
}

/// A record and what the fold derived for it.
#[derive(Clone, Debug, Serialize)]
pub struct Entry {
    pub id: RecordId,
    pub record: Record,
    pub status: Status,
    /// Initial confidence plus counted outcome deltas, clamped to 0.0..=1.0 (facts only; 0 otherwise).
    pub confidence: Milli,
    /// Outcomes with signal `accepted` (or `helped`, implicit feedback) that counted.
    pub successes: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retracted_by: Option<RecordId>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub superseded_by: Vec<RecordId>,
    /// Outcomes that counted towards the confidence, in fold order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub outcomes: Vec<RecordId>,
    /// Why this valid record needs review (empty: it does not). Derived, never written.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub needs_review: Vec<ReviewFlag>,
    /// The latest time a person checked this fact against the code (`git neo confirm`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confirmed: Option<Confirmed>,
}

/// A person's check of a fact at a commit: an outcome record with signal `confirmed`, whose
/// paths are the fact's anchors from then on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Confirmed {
    /// The outcome record.
    pub by: RecordId,
    pub at: Timestamp,
    /// The commit checked (HEAD then).
    pub commit: String,
    /// Where the fact is anchored now (each taken at `commit`).
    pub anchors: Vec<Anchor>,
}

/// Where an attempt's confidence starts: its checks' outcomes move it from the middle (a
/// regression on a passing attempt lowers it, a re-check that passes again raises it).
pub const ATTEMPT_CONFIDENCE: Milli = Milli(500);

/// A record's confidence before any outcome: a fact's own, an attempt's [`ATTEMPT_CONFIDENCE`].
pub fn initial_confidence(record: &Record) -> Milli {
    match (&record.payload, record.kind) {
        (Payload::Fact(f), _) => f.confidence,
        (_, Kind::Attempt) => ATTEMPT_CONFIDENCE,
        _ => Milli(0),
    }
}

/// The signal of a person's confirmation.
pub const CONFIRMED: &str = "confirmed";

impl Entry {
    /// When a person last checked this fact (`git neo confirm`), else when it was written.
    pub fn checked_at(&self) -> Timestamp {
        self.confirmed.as_ref().map_or(self.record.created_at, |c| c.at.max(self.record.created_at))
    }

    /// Whole days from [`Entry::checked_at`] to `now`.
    pub fn unconfirmed_days(&self, now: Timestamp) -> u32 {
        ((now.0 - self.checked_at().0).max(0) / 86_400) as u32
    }

    /// The anchors a fact has now: the latest confirmation's, else its own.
    pub fn anchors(&self) -> &[Anchor] {
        match (&self.confirmed, self.record.as_fact()) {
            (Some(c), _) => &c.anchors,
            (None, Some(f)) => &f.anchors,
            (None, None) => &[],
        }
    }
}

/// Anchors from a confirmation's paths (`PATH` or `PATH:START-END`), taken at `commit`.
pub fn anchors_from_paths(paths: &[String], commit: Option<&str>) -> Vec<Anchor> {
    paths
        .iter()
        .filter_map(|p| Anchor::split_spec(p).ok())
        .map(|(path, lines)| Anchor { path: path.to_string(), lines, blob: None, commit: commit.map(str::to_string) })
        .collect()
}

impl Entry {
    pub(crate) fn new(id: RecordId, record: Record, status: Status, confidence: Milli) -> Entry {
        Entry {
            id,
            record,
            status,
            confidence,
            successes: 0,
            retracted_by: None,
            superseded_by: Vec::new(),
            outcomes: Vec::new(),
            needs_review: Vec::new(),
            confirmed: None,
        }
    }

    /// Whether a fact's own validity window (`valid_from`, `valid_to`) contains `t`; records
    /// without a window, and other kinds, are always in effect.
    pub fn in_effect_at(&self, t: Timestamp) -> bool {
        match self.record.as_fact() {
            Some(f) => f.valid_from.is_none_or(|from| from <= t) && f.valid_to.is_none_or(|to| t < to),
            None => true,
        }
    }
}

/// The review flags a record's own links raise against `entries` (dependencies and sources that
/// are no longer valid).
fn link_flags(own: RecordId, record: &Record, entries: &BTreeMap<RecordId, Entry>) -> Vec<ReviewFlag> {
    let Some(f) = record.as_fact() else { return Vec::new() };
    let status = |id: &RecordId| entries.get(id).map(|e| e.status).filter(|s| *s != Status::Valid);
    let mut flags: Vec<ReviewFlag> = f
        .depends_on
        .iter()
        .filter_map(|id| status(id).map(|status| ReviewFlag::DependsOn { id: *id, status }))
        .collect();
    flags.extend(
        f.relations
            .iter()
            .filter(|r| r.rel == RelationType::Derives)
            // A fact that replaced what it derives from (a synthesis of near-duplicates) is
            // their successor, not something their retirement puts in doubt.
            .filter(|r| !entries.get(&r.id).is_some_and(|e| e.superseded_by.contains(&own)))
            .filter_map(|r| status(&r.id).map(|status| ReviewFlag::DerivesFrom { id: r.id, status })),
    );
    for c in &f.cites {
        if let Some((path, change)) = citation_change(c, entries) {
            flags.push(ReviewFlag::SourceChanged { id: c.id, path, section: c.section.clone(), change });
        }
    }
    flags
}

/// Whether the section a citation names is still what it was: follows the cited source through
/// its later versions (a moved document keeps its sections) and says what happened to the section
/// (its text changed, it is gone) or to the document (outdated: deleted; forgotten). `None` while
/// the text is the same in the current version.
fn citation_change(c: &crate::record::Citation, entries: &BTreeMap<RecordId, Entry>) -> Option<(String, String)> {
    let start = entries.get(&c.id)?;
    let source = start.record.as_source()?;
    let base = source.section(&c.section)?.hash.clone();
    let path = source.path.clone();
    let mut cur = start;
    for _ in 0..256 {
        match cur.status {
            Status::Valid => return None,
            Status::Retracted => return Some((path, "was forgotten".into())),
            Status::Outdated => {
                let why = cur
                    .superseded_by
                    .iter()
                    .filter_map(|s| entries.get(s))
                    .find_map(|s| match &s.record.payload {
                        Payload::Supersession(x) => Some(x.reason.clone()),
                        _ => None,
                    })
                    .unwrap_or_else(|| "no longer holds".into());
                return Some((path, format!("is outdated: {why}")));
            }
            Status::Superseded => {
                let next = cur
                    .superseded_by
                    .iter()
                    .rev()
                    .filter_map(|n| entries.get(n))
                    .find(|e| e.record.as_source().is_some())?;
                let now = next.record.as_source()?;
                match now.section(&c.section) {
                    None => {
                        return Some((
                            path,
                            format!("no longer has that section ({} is now {})", now.path, next.id.short()),
                        ))
                    }
                    Some(s) if s.hash != base => {
                        return Some((path, format!("changed there ({} is now {})", now.path, next.id.short())))
                    }
                    Some(_) => cur = next,
                }
            }
        }
    }
    None
}

/// The current meaning of a set of records.
#[derive(Clone, Debug, Default)]
pub struct State {
    pub entries: BTreeMap<RecordId, Entry>,
    /// Record ids in fold order.
    pub order: Vec<RecordId>,
    /// Normalised content of every fact -> their ids in fold order (a lookup takes the first
    /// valid one); built on first use, since only writes need it and it costs a string per fact.
    dedup: std::sync::OnceLock<HashMap<String, Vec<RecordId>>>,
    /// Fact id -> the facts whose relations name it; built on first use (recall's linked facts).
    reverse_links: std::sync::OnceLock<HashMap<RecordId, Vec<(RelationType, RecordId)>>>,
    /// [`thing_key`] -> the facts about that thing, whatever their status, in fold order: the
    /// frame rule's candidates. Built on the second [`State::same_thing`] (a warm session's
    /// second write; the first scans), and grown with every write after.
    things: std::sync::OnceLock<HashMap<String, Vec<RecordId>>>,
    /// Set once [`State::same_thing`] has scanned.
    scanned_things: std::sync::OnceLock<()>,
    /// Record id -> the supersession records that name it as the old one, whatever their status,
    /// in fold order (what recall says replaced a fact); built on first use.
    supersessions: std::sync::OnceLock<HashMap<RecordId, Vec<RecordId>>>,
    /// Every constraint fact, whatever its status (recall shows every valid one on every call);
    /// built on first use.
    constraints: std::sync::OnceLock<Vec<RecordId>>,
    /// What recall weighs of each constraint on every call, kept together ([`ConstraintRow`]);
    /// built on first use, kept up to date by the writes [`State::with_records`] applies in
    /// place, and dropped by a fold.
    constraint_rows: std::sync::OnceLock<Vec<ConstraintRow>>,
    /// [`State::constraint_rows`]' places, newest first ([`State::constraints_newest_first`]),
    /// and each row's place by id ([`State::constraint_row_of`]); built on first use and kept up
    /// to date with the rows.
    constraint_order: std::sync::OnceLock<(Vec<u32>, HashMap<RecordId, u32>)>,
    /// Every document source record, whatever its status (recall's documents layer lists the
    /// current ones on the first call after each write); built on first use.
    sources: std::sync::OnceLock<Vec<RecordId>>,
    /// Record id -> the facts that depend on it or derive from it, whatever their status: whose
    /// link flags a supersession of it changes. Built on the first supersession applied in place
    /// (before, each one looked at every record: 3 ms at 100,000) and grown with every write.
    dependents: std::sync::OnceLock<HashMap<RecordId, Vec<RecordId>>>,
    /// A fact's `key` -> the facts that carry it, whatever their status (what recall of several
    /// scopes reads to let the strongest scope's value of a key shadow the others'); built on
    /// first use and grown with every write.
    keyed: std::sync::OnceLock<HashMap<String, Vec<RecordId>>>,
    /// What each of [`State::constraint_rows`] is to the last few pins' bases (what a live
    /// session had seen when it started): [`State::with_pinned_rows`].
    pinned: PinnedRows,
}

/// Per base version (what a live session had seen when it started), what each constraint row
/// is to it: a live session asks the same of every constraint on every recall, and asking it
/// looks each of 16k constraints up in a set of every record the session had seen (100k at
/// 100k records, a cache miss each): 2 ms a recall. Rows keep their places while writes are
/// applied in place (rows are added at the end, and only a valid row is replaced, once), so
/// what is kept survives them; a fold makes a new state, which starts empty.
#[derive(Debug, Default)]
struct PinnedRows(std::sync::Mutex<Vec<(u64, Vec<PinnedRow>)>>);

/// What one constraint row is to a pin's base.
#[derive(Clone, Debug)]
pub struct PinnedRow {
    /// The base holds the row's record.
    pub in_base: bool,
    /// Once the row is no longer valid (it stays so until the next fold): the records that
    /// replaced or retracted it, and whether the base holds any of them (`None` while valid, or
    /// when the row's record is not in the state).
    pub replaced_by: Option<(bool, Box<[RecordId]>)>,
}

/// How many bases' rows are kept (an HTTP server's few live sessions on one memory).
const PINNED_KEPT: usize = 4;

impl Clone for PinnedRows {
    /// A copy starts empty: what it keeps is worked out again on first use.
    fn clone(&self) -> Self {
        PinnedRows::default()
    }
}

/// The records whose retirement puts `f` in doubt: what it depends on, what it derives from.
fn leans_on(f: &Fact) -> impl Iterator<Item = RecordId> + '_ {
    f.depends_on.iter().copied().chain(f.relations.iter().filter(|r| r.rel == RelationType::Derives).map(|r| r.id))
}

/// A constraint as recall weighs it on every call: what its filter, score and budget read, in one
/// place, so that a memory of thousands of constraints is scanned without touching each record
/// (a profile at 10k facts, 2,466 of them constraints, spent 1.7 ms a recall on the lookups).
#[derive(Clone, Debug, PartialEq)]
pub struct ConstraintRow {
    pub id: RecordId,
    pub status: Status,
    pub created_at: Timestamp,
    pub valid_from: Option<Timestamp>,
    pub valid_to: Option<Timestamp>,
    pub confidence: Milli,
    pub successes: u32,
    /// Characters the budget counts: the summary and the body without its trailing space.
    pub chars: usize,
}

/// The sort key of [`State::constraints_newest_first`].
fn newest_first_key(r: &ConstraintRow) -> (std::cmp::Reverse<Timestamp>, RecordId) {
    (std::cmp::Reverse(r.created_at), r.id)
}

impl ConstraintRow {
    /// The row of `e`, when it is a constraint fact.
    fn of(e: &Entry) -> Option<ConstraintRow> {
        let f = e.record.as_fact().filter(|f| f.fact_type == crate::record::FactType::Constraint)?;
        Some(ConstraintRow {
            id: e.id,
            status: e.status,
            created_at: e.record.created_at,
            valid_from: f.valid_from,
            valid_to: f.valid_to,
            confidence: e.confidence,
            successes: e.successes,
            chars: e.record.summary_len() + e.record.body.trim_end().len(),
        })
    }

    /// Whether it is in effect at `t` (its validity window), as [`Entry::in_effect_at`].
    pub fn in_effect_at(&self, t: Timestamp) -> bool {
        self.valid_from.is_none_or(|from| from <= t) && self.valid_to.is_none_or(|to| t < to)
    }
}

/// The key under which facts about the same thing meet: type and the frame's thing (identity and
/// subject phrase, [`crate::frame`]), across areas; `None` when the subject names no thing.
pub fn thing_key(fact: &Fact) -> Option<String> {
    let thing = crate::frame::frame(&fact.subject).thing_key()?;
    Some(format!("{}\u{0}{thing}", fact.fact_type))
}

/// The normalised content that de-duplication compares: type, scope, subject and body, lowercased
/// with whitespace runs collapsed and a final `.`, `!` or `?` dropped.
pub fn dedup_key(fact: &Fact, body: &str) -> String {
    // A final full stop, question or exclamation mark does not make another statement.
    let norm = |s: &str| {
        s.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase().trim_end_matches(['.', '!', '?']).to_string()
    };
    format!("{}\u{0}{}\u{0}{}\u{0}{}", fact.fact_type, norm(&fact.scope), norm(&fact.subject), norm(body))
}

/// A content index (key -> ids, whatever their status) with the `added` facts joined.
fn grown(mut index: HashMap<String, Vec<RecordId>>, added: Vec<(RecordId, String)>) -> HashMap<String, Vec<RecordId>> {
    for (id, key) in added {
        let ids = index.entry(key).or_default();
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    index
}

fn effective(
    id: RecordId,
    retractions_of: &HashMap<RecordId, Vec<RecordId>>,
    memo: &mut HashMap<RecordId, bool>,
) -> bool {
    if let Some(&v) = memo.get(&id) {
        return v;
    }
    let v = !retractions_of.get(&id).is_some_and(|rs| rs.iter().any(|&r| effective(r, retractions_of, memo)));
    memo.insert(id, v);
    v
}

/// Needs review, from the statuses the fold settled (so the answer does not depend on order):
/// links to records no longer valid, anchor flags about the anchors a fact has now, and merged
/// histories that replaced one fact twice.
fn flag_for_review(
    state: &mut State,
    anchor_changes: Vec<(RecordId, Option<String>, ReviewFlag)>,
    replacements: BTreeMap<RecordId, Vec<RecordId>>,
) {
    let flags: Vec<(RecordId, Vec<ReviewFlag>)> = state
        .entries
        .values()
        .filter(|e| e.status == Status::Valid && e.record.kind == Kind::Fact)
        .map(|e| (e.id, link_flags(e.id, &e.record, &state.entries)))
        .filter(|(_, f)| !f.is_empty())
        .collect();
    for (id, f) in flags {
        state.entries.get_mut(&id).expect("flagged entry exists").needs_review = f;
    }
    // An anchor flag stands while it is about the anchors the fact has now: a confirmation
    // clears the flags about the anchors it replaced, whatever order the records fold in.
    for (target, generation, flag) in anchor_changes {
        if let Some(e) = state.entries.get_mut(&target).filter(|e| e.status == Status::Valid) {
            if e.confirmed.as_ref().map(|c| c.by.short()) == generation {
                e.needs_review.push(flag);
            }
        }
    }
    for (old, mut news) in replacements {
        news.sort();
        news.dedup();
        news.retain(|n| state.entries.get(n).is_some_and(|e| e.status == Status::Valid));
        if news.len() < 2 {
            continue;
        }
        for n in &news {
            let others = news.iter().filter(|o| *o != n).copied().collect();
            state.entries.get_mut(n).expect("kept above").needs_review.push(ReviewFlag::Conflict { old, others });
        }
    }
}

/// Fold `records` into the current state. The input order does not matter.
pub fn fold(records: impl IntoIterator<Item = (RecordId, Record)>) -> State {
    let mut all: Vec<(RecordId, Record)> = records.into_iter().collect();
    all.sort_by_key(|a| (a.1.created_at, a.0));
    all.dedup_by_key(|(id, _)| *id);

    // Which retractions target which records, then which retractions stand.
    let mut retractions_of: HashMap<RecordId, Vec<RecordId>> = HashMap::new();
    for (id, r) in &all {
        if let Payload::Retraction(ret) = &r.payload {
            retractions_of.entry(ret.target).or_default().push(*id);
        }
    }
    let mut memo = HashMap::new();
    let standing: HashSet<RecordId> =
        all.iter().map(|(id, _)| *id).filter(|&id| effective(id, &retractions_of, &mut memo)).collect();

    let mut state = State { order: all.iter().map(|(id, _)| *id).collect(), ..State::default() };
    let mut effects: Vec<(RecordId, Payload, Timestamp)> = Vec::new();
    for (id, record) in all {
        if standing.contains(&id) && matches!(record.kind, Kind::Supersession | Kind::Outcome | Kind::Retraction) {
            effects.push((id, record.payload.clone(), record.created_at));
        }
        let confidence = initial_confidence(&record);
        let status = if standing.contains(&id) { Status::Valid } else { Status::Retracted };
        state.entries.insert(id, Entry::new(id, record, status, confidence));
    }

    let mut counted_keys: HashSet<(RecordId, String)> = HashSet::new();
    let mut replacements: BTreeMap<RecordId, Vec<RecordId>> = BTreeMap::new();
    let mut anchor_changes: Vec<(RecordId, Option<String>, ReviewFlag)> = Vec::new();
    for (id, payload, at) in effects {
        match payload {
            Payload::Retraction(r) => {
                if let Some(target) = state.entries.get_mut(&r.target) {
                    target.retracted_by.get_or_insert(id);
                }
            }
            Payload::Supersession(s) => {
                if let Some(new) = s.new {
                    replacements.entry(s.old).or_default().push(new);
                }
                if let Some(old) = state.entries.get_mut(&s.old) {
                    old.superseded_by.push(s.new.unwrap_or(id));
                    if old.status == Status::Valid {
                        old.status = if s.new.is_some() { Status::Superseded } else { Status::Outdated };
                    } else if old.status == Status::Outdated && s.new.is_some() {
                        old.status = Status::Superseded;
                    }
                }
            }
            Payload::Outcome(o) if counted_keys.insert((o.target, o.key.clone())) => {
                if o.signal == CONFIRMED {
                    // A person checked the fact: its anchors are the latest confirmation's from
                    // now on, and only evidence about those flags it (below).
                    if let Some(target) =
                        state.entries.get_mut(&o.target).filter(|t| t.confirmed.as_ref().is_none_or(|c| c.at <= at))
                    {
                        target.confirmed = Some(Confirmed {
                            by: id,
                            at,
                            commit: o.commits.first().cloned().unwrap_or_default(),
                            anchors: anchors_from_paths(&o.paths, o.commits.first().map(String::as_str)),
                        });
                    }
                }
                if o.signal == "anchor-changed" {
                    let generation = o.key.rsplit_once('@').map(|(_, g)| g.to_string());
                    anchor_changes.push((
                        o.target,
                        generation,
                        ReviewFlag::AnchorChanged { outcome: id, paths: o.paths.clone() },
                    ));
                }
                if let Some(target) = state.entries.get_mut(&o.target) {
                    target.confidence.0 += o.delta.0;
                    // `helped`: implicit feedback, a related follow-up question (api/learn/feedback.rs).
                    if o.signal == "accepted" || o.signal == "helped" {
                        target.successes += 1;
                    }
                    target.outcomes.push(id);
                }
            }
            _ => {}
        }
    }

    for entry in state.entries.values_mut() {
        entry.confidence.0 = entry.confidence.0.clamp(0, 1000);
    }

    flag_for_review(&mut state, anchor_changes, replacements);
    state
}

impl State {
    /// The memory as it stood at `t`: the fold of the records written by then (`--as-of`).
    pub fn as_of(&self, t: Timestamp) -> State {
        fold(self.entries.values().filter(|e| e.record.created_at <= t).map(|e| (e.id, e.record.clone())))
    }

    /// This state with `new` records added: the same result as folding everything again.
    ///
    /// The common writes are applied in place: new facts and attempts (wherever they sort, they
    /// change nothing else), and supersessions of a valid record that nothing replaced before
    /// (a write with a key or a near-duplicate). Anything else (retractions, outcomes, a second
    /// replacement, a record already present) folds everything again. In place relies on what the
    /// fold's header says of ids: a record can only name records that existed before it, so no
    /// existing record names a new one.
    pub fn with_records(mut self, new: Vec<(RecordId, Record)>) -> State {
        if !self.in_place(&new) {
            return self.refolded(new);
        }
        let mut replaced: Vec<RecordId> = Vec::new();
        let mut added: Vec<RecordId> = Vec::new();
        for (id, record) in new {
            if let (Some(index), Some(f)) = (self.dedup.get_mut(), record.as_fact()) {
                index.entry(dedup_key(f, &record.body)).or_default().push(id);
            }
            if let (Some(index), Some(key)) = (self.things.get_mut(), record.as_fact().and_then(thing_key)) {
                index.entry(key).or_default().push(id);
            }
            if let (Some(index), Some(key)) = (self.keyed.get_mut(), record.as_fact().and_then(|f| f.key.as_ref())) {
                index.entry(key.clone()).or_default().push(id);
            }
            if let (Some(index), Some(f)) = (self.dependents.get_mut(), record.as_fact()) {
                for on in leans_on(f) {
                    index.entry(on).or_default().push(id);
                }
            }
            if let (Some(index), Some(f)) = (self.reverse_links.get_mut(), record.as_fact()) {
                for r in &f.relations {
                    index.entry(r.id).or_default().push((r.rel, id));
                }
            }
            if let (Some(ids), Some(f)) = (self.constraints.get_mut(), record.as_fact()) {
                if f.fact_type == crate::record::FactType::Constraint {
                    ids.push(id);
                }
            }
            if let (Some(index), Payload::Supersession(sup)) = (self.supersessions.get_mut(), &record.payload) {
                index.entry(sup.old).or_default().push(id);
            }
            if let (Some(ids), Some(_)) = (self.sources.get_mut(), record.as_source()) {
                ids.push(id);
            }
            if let Payload::Supersession(s) = &record.payload {
                let old = self.entries.get_mut(&s.old).expect("checked by in_place");
                old.superseded_by.push(s.new.unwrap_or(id));
                old.status = if s.new.is_some() { Status::Superseded } else { Status::Outdated };
                // The fold flags valid records only.
                old.needs_review.clear();
                replaced.push(s.old);
            }
            let key = (record.created_at, id);
            let entries = &self.entries;
            let at = self.order.partition_point(|o| (entries[o].record.created_at, *o) < key);
            self.order.insert(at, id);
            let confidence = initial_confidence(&record).clamp_unit();
            let entry = Entry::new(id, record, Status::Valid, confidence);
            if let (Some(rows), Some(row)) = (self.constraint_rows.get_mut(), ConstraintRow::of(&entry)) {
                let at = rows.len() as u32;
                if let Some((newest, places)) = self.constraint_order.get_mut() {
                    let key = newest_first_key(&row);
                    let i = newest.partition_point(|&o| newest_first_key(&rows[o as usize]) < key);
                    newest.insert(i, at);
                    places.insert(row.id, at);
                }
                rows.push(row);
            }
            self.entries.insert(id, entry);
            added.push(id);
        }
        // The constraints replaced above are weighed with their new status.
        if let Some(rows) = self.constraint_rows.get_mut() {
            for row in rows.iter_mut().filter(|r| replaced.contains(&r.id)) {
                row.status = self.entries[&row.id].status;
            }
        }
        // Link flags, from the statuses settled above: the new facts', and those of the valid
        // facts that depend on or derive from a record just replaced. Link flags come first in
        // a record's list (the fold adds anchor and conflict flags after them).
        let mut relink: Vec<RecordId> = added;
        if !replaced.is_empty() {
            let entries = &self.entries;
            let index = self.dependents.get_or_init(|| {
                let mut index: HashMap<RecordId, Vec<RecordId>> = HashMap::new();
                for e in entries.values() {
                    for on in e.record.as_fact().into_iter().flat_map(leans_on) {
                        index.entry(on).or_default().push(e.id);
                    }
                }
                index
            });
            let mut named: Vec<RecordId> = replaced
                .iter()
                .flat_map(|old| index.get(old).into_iter().flatten().copied())
                .filter(|id| entries.get(id).is_some_and(|e| e.status == Status::Valid))
                .collect();
            // In id order, once each, as a scan of the entries would list them.
            named.sort_unstable();
            named.dedup();
            relink.extend(named);
        }
        for id in relink {
            let entry = &self.entries[&id];
            if entry.status != Status::Valid {
                continue;
            }
            let mut flags = link_flags(id, &entry.record, &self.entries);
            let entry = self.entries.get_mut(&id).expect("listed above");
            flags.extend(entry.needs_review.drain(..).filter(|f| {
                !matches!(
                    f,
                    ReviewFlag::DependsOn { .. } | ReviewFlag::DerivesFrom { .. } | ReviewFlag::SourceChanged { .. }
                )
            }));
            entry.needs_review = flags;
        }
        self
    }

    /// This state with `new` records added by folding everything again, the indexes already
    /// built carried over and grown (what [`State::with_records`] does when a write is not one it
    /// applies in place).
    fn refolded(mut self, new: Vec<(RecordId, Record)>) -> State {
        // The content index lists facts whatever their status (a lookup checks it), so it
        // stays right across the re-fold: only the new facts join it.
        let dedup = self.dedup.take();
        let things = self.things.take();
        let supersessions = self.supersessions.take();
        let constraints = self.constraints.take();
        let sources = self.sources.take();
        let dependents = self.dependents.take();
        let keyed = self.keyed.take();
        let new_keys: Vec<(RecordId, String)> =
            new.iter().filter_map(|(id, r)| Some((*id, r.as_fact()?.key.clone()?))).collect();
        let mut all: Vec<(RecordId, Record)> =
            std::mem::take(&mut self.entries).into_values().map(|e| (e.id, e.record)).collect();
        let added: Vec<(RecordId, String)> =
            new.iter().filter_map(|(id, r)| r.as_fact().map(|f| (*id, dedup_key(f, &r.body)))).collect();
        let about: Vec<(RecordId, String)> =
            new.iter().filter_map(|(id, r)| r.as_fact().and_then(thing_key).map(|k| (*id, k))).collect();
        let new_constraints: Vec<RecordId> = new
            .iter()
            .filter(|(_, r)| r.as_fact().is_some_and(|f| f.fact_type == crate::record::FactType::Constraint))
            .map(|(id, _)| *id)
            .collect();
        let new_sources: Vec<RecordId> =
            new.iter().filter(|(_, r)| r.as_source().is_some()).map(|(id, _)| *id).collect();
        let naming: Vec<(RecordId, RecordId)> = new
            .iter()
            .filter_map(|(id, r)| match &r.payload {
                Payload::Supersession(sup) => Some((sup.old, *id)),
                _ => None,
            })
            .collect();
        let leaning: Vec<(RecordId, RecordId)> = new
            .iter()
            .filter_map(|(id, r)| r.as_fact().map(|f| (*id, f)))
            .flat_map(|(id, f)| leans_on(f).map(move |on| (on, id)))
            .collect();
        all.extend(new);
        let state = fold(all);
        if let Some(mut index) = dependents {
            for (on, id) in leaning {
                let ids = index.entry(on).or_default();
                if !ids.contains(&id) {
                    ids.push(id);
                }
            }
            let _ = state.dependents.set(index);
        }
        if let Some(mut index) = keyed {
            for (id, key) in new_keys {
                let ids = index.entry(key).or_default();
                if !ids.contains(&id) {
                    ids.push(id);
                }
            }
            let _ = state.keyed.set(index);
        }
        if let Some(index) = dedup {
            let _ = state.dedup.set(grown(index, added));
        }
        if let Some(index) = things {
            let _ = state.things.set(grown(index, about));
        }
        if let Some(mut index) = supersessions {
            for (old, id) in naming {
                let ids = index.entry(old).or_default();
                if !ids.contains(&id) {
                    ids.push(id);
                }
            }
            let _ = state.supersessions.set(index);
        }
        if let Some(mut ids) = constraints {
            for id in new_constraints {
                if !ids.contains(&id) {
                    ids.push(id);
                }
            }
            let _ = state.constraints.set(ids);
        }
        if let Some(mut ids) = sources {
            ids.extend(new_sources.into_iter().filter(|id| !ids.contains(id)).collect::<Vec<_>>());
            let _ = state.sources.set(ids);
        }
        state
    }

    /// Whether `new` can be applied without folding again (see [`State::with_records`]).
    fn in_place(&self, new: &[(RecordId, Record)]) -> bool {
        let ids: HashSet<RecordId> = new.iter().map(|(id, _)| *id).collect();
        if ids.len() != new.len() || ids.iter().any(|id| self.entries.contains_key(id)) {
            return false;
        }
        let mut olds = HashSet::new();
        new.iter().all(|(_, r)| match &r.payload {
            // A citation's flag depends on the versions after the one it names: fold again.
            Payload::Fact(f) if !f.cites.is_empty() => false,
            Payload::Fact(_) | Payload::Attempt(_) => true,
            Payload::Supersession(s) if self.entries.get(&s.old).is_some_and(|o| o.record.as_source().is_some()) => {
                false
            }
            Payload::Supersession(s) => {
                // Replacing a valid record (so nothing replaced it before: its replacements list
                // is empty) that replaced nothing in conflict: no other record's flags or
                // order-dependent lists change.
                let replaceable = self.entries.get(&s.old).is_some_and(|old| {
                    old.status == Status::Valid
                        && !old.needs_review.iter().any(|f| matches!(f, ReviewFlag::Conflict { .. }))
                });
                let new_known = s.new.is_none_or(|n| ids.contains(&n) || self.entries.contains_key(&n));
                replaceable && new_known && olds.insert(s.old)
            }
            _ => false,
        })
    }

    /// The valid fact whose normalised content equals `fact` + `body`, if any.
    pub fn duplicate_of(&self, fact: &Fact, body: &str) -> Option<RecordId> {
        // Every fact by content, in fold order, whatever its status: statuses change on every
        // supersession, content never does, so the index is built once and only grows.
        let index = self.dedup.get_or_init(|| {
            let mut index: HashMap<String, Vec<RecordId>> = HashMap::new();
            for e in self.iter() {
                if let Some(f) = e.record.as_fact() {
                    index.entry(dedup_key(f, &e.record.body)).or_default().push(e.id);
                }
            }
            index
        });
        index
            .get(&dedup_key(fact, body))?
            .iter()
            .find(|id| self.entries.get(id).is_some_and(|e| e.status == Status::Valid))
            .copied()
    }

    /// The valid facts about the same thing as `fact` (same type and [`thing_key`], in any area),
    /// in fold order: the frame rule's candidates for one write. The first call scans: a fact
    /// about the same thing holds its thing's longest word in its subject, so only the subjects
    /// that do are read as frames (a write in a fresh process does not pay for reading them all).
    /// A second call (a warm session writing again) builds the index of every fact's thing once.
    pub fn same_thing(&self, fact: &Fact) -> Vec<RecordId> {
        let frame = crate::frame::frame(&fact.subject);
        let Some(key) = frame.thing_key().map(|k| format!("{}\u{0}{k}", fact.fact_type)) else { return Vec::new() };
        let valid = |id: &&RecordId| self.entries.get(id).is_some_and(|e| e.status == Status::Valid);
        if self.things.get().is_some() || self.scanned_things.set(()).is_err() {
            let index = self.things_index();
            return index.get(&key).map(|ids| ids.iter().filter(valid).copied().collect()).unwrap_or_default();
        }
        let probe = frame.thing.iter().max_by_key(|w| w.len()).cloned().unwrap_or_default();
        // Slot synonyms read "resolution" as "status": probe for both spellings.
        let probes: Vec<&str> = match probe.as_str() {
            "status" => vec!["status", "resolution", "state", "stage"],
            p => vec![p],
        };
        self.iter()
            .filter(|e| e.status == Status::Valid)
            .filter(|e| {
                e.record.as_fact().is_some_and(|f| {
                    f.fact_type == fact.fact_type
                        && {
                            let lower = f.subject.to_lowercase();
                            probes.iter().any(|p| lower.contains(p))
                        }
                        && thing_key(f).as_deref() == Some(key.as_str())
                })
            })
            .map(|e| e.id)
            .collect()
    }

    /// The index of every fact's thing that [`State::same_thing`] reads from its second call on.
    fn things_index(&self) -> &HashMap<String, Vec<RecordId>> {
        self.things.get_or_init(|| {
            let mut index: HashMap<String, Vec<RecordId>> = HashMap::new();
            for e in self.iter() {
                if let Some(k) = e.record.as_fact().and_then(thing_key) {
                    index.entry(k).or_default().push(e.id);
                }
            }
            index
        })
    }

    /// Build the index [`State::same_thing`] reads from its second call on, once its first call
    /// has scanned (a write was made): what a long-lived front end does between requests, so
    /// that the next write does not build it on its clock (every fact's subject read as a frame:
    /// 170 ms at 10k facts, in the second add of a warm session).
    pub fn prepare_same_thing(&self) {
        if self.scanned_things.get().is_some() {
            self.things_index();
        }
    }

    /// Every constraint fact, whatever its status, as recall weighs it ([`ConstraintRow`]).
    pub fn constraint_rows(&self) -> &[ConstraintRow] {
        self.constraint_rows.get_or_init(|| {
            self.constraint_ids().iter().filter_map(|id| ConstraintRow::of(self.entries.get(id)?)).collect()
        })
    }

    /// The places in [`State::constraint_rows`], newest first (by `created_at`, then by id): the
    /// order of the constraints a recall's candidate lists did not find, whose score is the
    /// recency term alone (`rank::score` with no relevance), so that recall need not score and
    /// sort thousands of them on every call.
    pub fn constraints_newest_first(&self) -> &[u32] {
        &self.constraint_order_init().0
    }

    /// The place of constraint `id` in [`State::constraint_rows`].
    pub fn constraint_row_of(&self, id: &RecordId) -> Option<usize> {
        self.constraint_order_init().1.get(id).map(|&at| at as usize)
    }

    fn constraint_order_init(&self) -> &(Vec<u32>, HashMap<RecordId, u32>) {
        self.constraint_order.get_or_init(|| {
            let rows = self.constraint_rows();
            let mut newest: Vec<u32> = (0..rows.len() as u32).collect();
            newest.sort_by_key(|&o| newest_first_key(&rows[o as usize]));
            let places = rows.iter().enumerate().map(|(at, r)| (r.id, at as u32)).collect();
            (newest, places)
        })
    }

    /// `f` over what each of [`State::constraint_rows`] is to the base whose version is
    /// `version` (`in_base` answers for it), worked out once per base and row: rows added since
    /// the last call, and rows no longer valid, are worked out on the way.
    pub fn with_pinned_rows<R>(
        &self,
        version: u64,
        in_base: impl Fn(&RecordId) -> bool,
        f: impl FnOnce(&[ConstraintRow], &[PinnedRow]) -> R,
    ) -> R {
        let rows = self.constraint_rows();
        let mut kept = self.pinned.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let at = match kept.iter().position(|(v, _)| *v == version) {
            Some(at) => at,
            None => {
                if kept.len() == PINNED_KEPT {
                    kept.remove(0);
                }
                kept.push((version, Vec::with_capacity(rows.len())));
                kept.len() - 1
            }
        };
        let mut found = kept.remove(at);
        let known = &mut found.1;
        known.truncate(rows.len());
        for row in &rows[known.len()..] {
            known.push(PinnedRow { in_base: in_base(&row.id), replaced_by: None });
        }
        for (row, known) in rows.iter().zip(known.iter_mut()) {
            if row.status != Status::Valid && known.replaced_by.is_none() {
                known.replaced_by = self.entries.get(&row.id).map(|e| {
                    let by: Box<[RecordId]> = e.retracted_by.iter().chain(&e.superseded_by).copied().collect();
                    (by.iter().any(&in_base), by)
                });
            }
        }
        let answer = f(rows, known);
        kept.push(found);
        answer
    }

    /// Facts by their `key`, whatever their status.
    pub fn keyed(&self) -> &HashMap<String, Vec<RecordId>> {
        self.keyed.get_or_init(|| {
            let mut index: HashMap<String, Vec<RecordId>> = HashMap::new();
            for e in self.iter() {
                if let Some(key) = e.record.as_fact().and_then(|f| f.key.as_ref()) {
                    index.entry(key.clone()).or_default().push(e.id);
                }
            }
            index
        })
    }

    /// Every document source record, whatever its status.
    pub fn source_ids(&self) -> &[RecordId] {
        self.sources.get_or_init(|| self.iter().filter(|e| e.record.as_source().is_some()).map(|e| e.id).collect())
    }

    /// Every constraint fact, whatever its status.
    pub fn constraint_ids(&self) -> &[RecordId] {
        self.constraints.get_or_init(|| {
            self.iter()
                .filter(|e| e.record.as_fact().is_some_and(|f| f.fact_type == crate::record::FactType::Constraint))
                .map(|e| e.id)
                .collect()
        })
    }

    /// The supersession records that name `old` as the record they replace, whatever their
    /// status, in fold order.
    pub fn supersessions_of(&self, old: RecordId) -> &[RecordId] {
        let index = self.supersessions.get_or_init(|| {
            let mut index: HashMap<RecordId, Vec<RecordId>> = HashMap::new();
            for e in self.iter() {
                if let Payload::Supersession(sup) = &e.record.payload {
                    index.entry(sup.old).or_default().push(e.id);
                }
            }
            index
        });
        index.get(&old).map(Vec::as_slice).unwrap_or_default()
    }

    /// The facts whose relations name `id` (relation type, source), in fold order.
    pub fn linked_to(&self, id: RecordId) -> &[(RelationType, RecordId)] {
        let index = self.reverse_links.get_or_init(|| {
            let mut index: HashMap<RecordId, Vec<(RelationType, RecordId)>> = HashMap::new();
            for e in self.iter() {
                for r in e.record.as_fact().map(|f| f.relations.as_slice()).unwrap_or_default() {
                    index.entry(r.id).or_default().push((r.rel, e.id));
                }
            }
            index
        });
        index.get(&id).map(Vec::as_slice).unwrap_or_default()
    }

    /// Every id starting with the hex `prefix`, in id order.
    pub fn ids_with_prefix(&self, prefix: &str) -> Vec<RecordId> {
        let lower = prefix.to_ascii_lowercase();
        self.entries.keys().filter(|id| id.to_hex().starts_with(&lower)).copied().collect()
    }

    /// Entries in fold order.
    pub fn iter(&self) -> impl Iterator<Item = &Entry> {
        self.order.iter().filter_map(|id| self.entries.get(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Fact, FactType, Kind, Payload, Record, Timestamp};

    fn fact(i: i64, subject: &str) -> (RecordId, Record) {
        let record = Record {
            kind: Kind::Fact,
            payload: Payload::Fact(Fact::new(FactType::Pattern, subject)),
            author: "Ada <ada@example.com>".into(),
            created_at: Timestamp(1_770_000_000 + i),
            body: String::new(),
        };
        (record.encode().0, record)
    }

    /// The index of things is built between requests only once a write has scanned for its
    /// candidates (a session that only reads never pays for it), and answers as the scan did.
    #[test]
    fn the_thing_index_is_prepared_only_after_a_write_scanned() {
        let subjects = ["The deadline is January 10", "Retries use a fixed 1s delay", "The deadline moved to May 2"];
        let state = fold(subjects.iter().enumerate().map(|(i, s)| fact(i as i64, s)));
        state.prepare_same_thing();
        assert!(state.things.get().is_none(), "no write yet: nothing built");
        let probe = Fact::new(FactType::Pattern, "The deadline is February 1");
        let scanned = state.same_thing(&probe);
        assert_eq!(scanned.len(), 2, "{scanned:?}");
        assert!(state.things.get().is_none(), "the first write scans");
        state.prepare_same_thing();
        assert!(state.things.get().is_some(), "built between requests");
        assert_eq!(state.same_thing(&probe), scanned);
    }
}
