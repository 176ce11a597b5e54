//! Use cases: what `git neo` and the MCP server do, with no I/O of their own beyond the store.
//!
//! Every function here takes its inputs as data (including who writes and what time it is, so
//! tests fix the clock and author), validates everything before writing anything, and reports
//! every problem at once. Nothing here prints or reads the environment.

use crate::error::{Error, Result};
use crate::record::{self, FactType, Kind, Milli, Payload, Problem, Problems, Provenance, Record, RecordId};
use crate::state::{self, Entry, State};
use crate::store::ObjectId;
use crate::store::{CommitInfo, Store, StrayEntry, WriteMode};
use std::collections::HashMap;

// One folder per concern; each use case has one home, named by its one path
// (`api::learn::telemetry`).
pub mod inspect;
pub mod learn;
pub mod recall;
pub mod session;
pub mod share;
pub mod view;
pub mod write;

// The facade's vocabulary: the `Session` a front end holds, and the requests it hands it and
// the views it gets back, each defined in its concern and named here once for the front ends.
// Code inside `api` names each by its concern's path, so that its dependencies show.
pub use crate::config::DEFAULT_SERVER_MEMORY;
pub use inspect::export::ExportedFact;
pub use learn::outcomes::{Explanation, Step};
pub use session::scopes::{Promoted, Promotion};
pub use session::{Clock, LiveKey, LivePin, Notice, RecallQuery, Refreshed, Session, SessionOptions};
pub use view::{LoggedCommit, RecordState, Reindexed, Status};
pub use write::confirm::{Confirmation, Moved};
pub use write::correct::{History, HistoryEvent, Rechecked, Repair};
pub use write::import::{request_of, ForeignOutcome, ImportOutcome, Skipped};
pub use write::plan::{CommitView, PlanView, RecordView};
pub use write::proposals::ReviewOutcome;
pub use write::purge::PurgeOutcome;
pub use write::supersede::{PlannedSupersession, SimilarityCheck};
pub use write::{AddOutcome, AddRequest, InitOutcome};

pub use crate::store::Identity;
/// For a front end's signal handler while the process ends: how many memory ref updates are
/// under way, and the removal of their temporary files (async-signal-safe).
pub use crate::store::{cleanup_tempfiles_signal_safe, ref_updates_in_flight};

/// How many of the nearest candidates similarity supersession compares exactly.
pub const SIMILARITY_SHORTLIST: usize = 8;

/// Candidates whose indexed vector scores more than this under the type's supersession threshold
/// are not compared on subject and body: the type, scope and tags they share with the new fact
/// in the indexed text only raise the indexed score. Measured with the real model on every
/// same-type pair of the recall fixture (303): the subject-and-body score was always at least
/// 0.052 below the indexed one, so a margin of 0.05 leaves room to spare
/// (`supersede::the_indexed_score_never_falls_far_below_the_subject_and_body_score`).
pub const SIMILARITY_MARGIN: f32 = 0.05;

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
    /// Records only a remote-tracking copy holds (fetched, not merged), with its ref.
    remote_only: std::collections::BTreeMap<RecordId, String>,
    /// Records of a remote-tracking copy that wait for `sync` (they would change local ones).
    held_back: usize,
    /// Review-mode proposals (`refs/neo/proposed/...`), loaded when the mode or a command needs them.
    proposals: Option<Box<Memory>>,
    /// The scope this memory is (the project unless the session says otherwise).
    scope: crate::scope::Scope,
    /// The sections of the ingested documents and their vectors, kept between recalls of a warm
    /// session (see `documents.rs`).
    documents: std::sync::Mutex<Option<recall::documents::DocumentCache>>,
    /// Records this process wrote through [`Memory::apply`] and nobody has taken yet: a live
    /// session counts them as its own (`recall::pin`). Carried across reloads; drained by the
    /// session after each command or recall.
    pub(crate) written: Vec<RecordId>,
}

/// A record's file and its derived state, for `show`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Shown {
    pub path: String,
    pub text: String,
    #[serde(flatten)]
    pub entry: view::RecordState,
}

/// Filters for `list`.
#[derive(Clone, Debug, Default)]
pub struct ListFilter {
    pub kind: Option<String>,
    pub fact_type: Option<String>,
    /// Only facts and attempts with this area label.
    pub area: Option<String>,
    pub tag: Option<String>,
    /// Include retracted, superseded and outdated records.
    pub all: bool,
    /// Only valid records flagged as needing review.
    pub needs_review: bool,
}

/// A commit message's quoted summary: its first 60 characters.
pub(crate) fn short_message(s: &str) -> String {
    let one_line: String = s.chars().take(60).collect();
    if one_line.chars().count() < s.chars().count() {
        format!("{one_line}…")
    } else {
        one_line
    }
}

impl Memory {
    /// Read every record visible from the store and fold it.
    pub fn load(store: Store) -> Result<Memory> {
        let snapshot = store.load()?;
        let blobs = snapshot.records.iter().map(|r| (r.id, r.blob)).collect();
        let state = state::fold(snapshot.records.into_iter().map(|r| (r.id, r.record)));
        let mut memory = Memory {
            store,
            state,
            blobs,
            invalid: snapshot.invalid,
            tips: snapshot.tips,
            remote_only: snapshot.remote_only,
            held_back: snapshot.held_back,
            proposals: None,
            scope: crate::scope::Scope::Project,
            documents: std::sync::Mutex::new(None),
            written: Vec::new(),
        };
        if memory.store.write_mode() == WriteMode::Review {
            memory.ensure_proposals()?;
        }
        Ok(memory)
    }

    /// Say which scope this memory is (new facts' default area label follows it).
    pub fn set_scope(&mut self, scope: crate::scope::Scope) {
        self.scope = scope;
    }

    /// The scope this memory is.
    pub fn scope(&self) -> &crate::scope::Scope {
        &self.scope
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

    /// The remote-tracking ref `id` was read from when only a fetched copy holds it (it has not
    /// been merged by `sync`).
    pub fn fetched_from(&self, id: &RecordId) -> Option<&str> {
        self.remote_only.get(id).map(String::as_str)
    }

    /// Every record only a remote-tracking copy holds (fetched, not merged), with its ref.
    pub fn fetched(&self) -> &std::collections::BTreeMap<RecordId, String> {
        &self.remote_only
    }

    /// How many records of remote-tracking copies wait for `sync` because they would change
    /// records of the local ref.
    pub fn held_back(&self) -> usize {
        self.held_back
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

    pub(super) fn resolve_into(&self, field: &str, prefix: &str, problems: &mut Vec<Problem>) -> Option<RecordId> {
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

    /// A record's file text and derived state.
    pub fn show(&self, prefix: &str) -> Result<Shown> {
        let id = self.resolve("id", prefix)?;
        let entry = view::RecordState::from(&self.state.entries[&id]);
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
                filter.area.as_deref().is_none_or(|s| match &e.record.payload {
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
