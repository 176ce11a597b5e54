//! The views a front end gets back from the session: plain data, so that the fold and the store
//! behind them can change without a front end noticing. Each serialises as the internal value
//! it is made from did (the JSON a front end prints is unchanged by the boundary).

use crate::record::{Kind, Milli, Record, RecordId, Timestamp};
use serde::Serialize;

pub use crate::state::{Confirmed, ReviewFlag, Status};

/// A record and what the memory derived for it: its status, confidence and review flags.
#[derive(Clone, Debug, Serialize)]
pub struct RecordState {
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
    /// Why this valid record needs review (empty: it does not).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub needs_review: Vec<ReviewFlag>,
    /// The latest time a person checked this fact against the code (`git neo confirm`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confirmed: Option<Confirmed>,
}

impl From<&crate::state::Entry> for RecordState {
    fn from(e: &crate::state::Entry) -> RecordState {
        RecordState {
            id: e.id,
            record: e.record.clone(),
            status: e.status,
            confidence: e.confidence,
            successes: e.successes,
            retracted_by: e.retracted_by,
            superseded_by: e.superseded_by.clone(),
            outcomes: e.outcomes.clone(),
            needs_review: e.needs_review.clone(),
            confirmed: e.confirmed.clone(),
        }
    }
}

/// A record's file and its derived state, for `show`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ShownRecord {
    pub path: String,
    pub text: String,
    #[serde(flatten)]
    pub entry: RecordState,
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

/// One commit on the memory ref, for `log`.
#[derive(Clone, Debug, Serialize)]
pub struct LoggedCommit {
    pub commit: String,
    pub parents: Vec<String>,
    pub author: String,
    pub time: Timestamp,
    pub message: String,
    /// Records this commit added, relative to its first parent.
    pub added: Vec<AddedRecord>,
    /// Record files this commit removed or changed relative to its first parent (never done by
    /// git-neo).
    pub other_changes: Vec<ChangedFile>,
}

/// A record a commit added.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct AddedRecord {
    pub kind: Kind,
    pub id: RecordId,
}

/// A file a commit changed otherwise.
#[derive(Clone, Debug, Serialize)]
pub struct ChangedFile {
    pub path: String,
    /// `added`, `removed` or `modified`.
    pub change: &'static str,
}

impl From<crate::store::CommitInfo> for LoggedCommit {
    fn from(c: crate::store::CommitInfo) -> LoggedCommit {
        LoggedCommit {
            commit: c.commit,
            parents: c.parents,
            author: c.author,
            time: c.time,
            message: c.message,
            added: c.added.into_iter().map(|a| AddedRecord { kind: a.kind, id: a.id }).collect(),
            other_changes: c
                .other_changes
                .into_iter()
                .map(|t| ChangedFile { path: t.path, change: t.change })
                .collect(),
        }
    }
}

/// What `reindex` rebuilt: why, and what the caches now reflect.
#[derive(Clone, Debug, Serialize)]
pub struct Reindexed {
    pub refresh: crate::index::Refresh,
    pub stamp: crate::index::Stamp,
}
