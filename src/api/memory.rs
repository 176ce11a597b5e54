//! The memory of one repository: its store, the fold of the records it holds, the tips it was
//! read from, and what only a fetched copy holds. Loading, resolving ids, and the reads every
//! concern shares (show, list, log); each concern adds its own use cases in its folder.

use crate::api::view::{self, ListFilter, ShownRecord};
use crate::error::{Error, Result};
use crate::record::{self, FactType, Kind, Payload, Problem, Problems, Record, RecordId};
use crate::state::{self, Entry, State, Status};
use crate::store::ObjectId;
use crate::store::{CommitInfo, Store, StrayEntry, WriteMode};
use std::collections::HashMap;

/// The memory of one repository: the store, and the folded state of what it holds.
pub(crate) struct Memory {
    pub(in crate::api) store: Store,
    pub(in crate::api) state: State,
    pub(in crate::api) blobs: HashMap<RecordId, ObjectId>,
    pub(in crate::api) invalid: Vec<StrayEntry>,
    pub(in crate::api) tips: Vec<(String, ObjectId)>,
    /// Records only a remote-tracking copy holds (fetched, not merged), with its ref.
    pub(in crate::api) remote_only: std::collections::BTreeMap<RecordId, String>,
    /// Review-mode proposals (`refs/neo/proposed/...`), loaded when the mode or a command needs them.
    pub(in crate::api) proposals: Option<Box<Memory>>,
    /// The scope this memory is (the project unless the session says otherwise).
    pub(in crate::api) scope: crate::scope::Scope,
    /// Records this process wrote through [`Memory::apply`] and nobody has taken yet: a live
    /// session counts them as its own (`recall::pin`). Carried across reloads; drained by the
    /// session after each command or recall.
    pub(crate) written: Vec<RecordId>,
    /// How the fold came to hold what it holds (see [`Lineage`]).
    pub(in crate::api) lineage: Lineage,
    /// This process's last commits on the ref, oldest first, each with the records it added:
    /// what a catch-up of the caches reads instead of diffing the two trees
    /// ([`Memory::records_added_since`]: 1.3 ms at 100k records, after every write).
    pub(in crate::api) advances: std::collections::VecDeque<Advance>,
}

/// One commit this process made on the memory's ref: the tip it was made on, the commit, and
/// the records it added to the tree.
#[derive(Clone, Debug)]
pub(crate) struct Advance {
    pub from: ObjectId,
    pub to: ObjectId,
    pub added: Vec<RecordId>,
}

/// How many of a memory's own commits are remembered ([`Memory::advances`]).
const ADVANCES_KEPT: usize = 64;

/// How a memory's fold came to hold its records: a generation, new whenever records may have
/// left it (a load, a purge), and the records taken in place since, in the order they came. A
/// fold built on top of this one (the union of several scopes) that saw generation `g` with `n`
/// records appended catches up with `appended[n..]` alone while the generation stays `g`:
/// without it, every write at 100,000 records made the union look at every record of every scope.
#[derive(Debug)]
pub(crate) struct Lineage {
    pub generation: u64,
    pub appended: Vec<RecordId>,
}

impl Lineage {
    /// A generation no memory of this process had before.
    pub(in crate::api) fn fresh() -> Lineage {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        Lineage { generation: NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed), appended: Vec::new() }
    }
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
            proposals: None,
            scope: crate::scope::Scope::Project,
            written: Vec::new(),
            lineage: Lineage::fresh(),
            advances: std::collections::VecDeque::new(),
        };
        if memory.store.write_mode() == WriteMode::Review {
            memory.ensure_proposals()?;
        }
        Ok(memory)
    }

    /// Remember commits this process just made on the ref ([`Memory::advances`]).
    pub(in crate::api) fn advanced(&mut self, advances: Vec<Advance>) {
        for a in advances {
            if self.advances.len() == ADVANCES_KEPT {
                self.advances.pop_front();
            }
            self.advances.push_back(a);
        }
    }

    /// The records this process's own commits added on the way from `old` to `new`, when one
    /// chain of them leads there.
    pub(in crate::api) fn added_by_own_commits(&self, old: ObjectId, new: ObjectId) -> Option<Vec<RecordId>> {
        let start = self.advances.iter().position(|a| a.from == old)?;
        let mut at = old;
        let mut added = Vec::new();
        for a in self.advances.iter().skip(start) {
            if a.from != at {
                return None;
            }
            added.extend_from_slice(&a.added);
            at = a.to;
            if at == new {
                return Some(added);
            }
        }
        None
    }

    /// Say which scope this memory is (new facts' default area label follows it).
    pub fn set_scope(&mut self, scope: crate::scope::Scope) {
        self.scope = scope;
    }

    /// The folded state.
    pub fn state(&self) -> &State {
        &self.state
    }

    /// How the fold came to hold what it holds.
    pub fn lineage(&self) -> &Lineage {
        &self.lineage
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
                problems.push(e.as_problem().unwrap_or_else(|| Problem::new(field, e.plain())));
                None
            }
        }
    }

    /// A record's file text and derived state.
    pub fn show(&self, prefix: &str) -> Result<ShownRecord> {
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
        Ok(ShownRecord { path: Record::path(entry.record.kind, &id), text, entry })
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
